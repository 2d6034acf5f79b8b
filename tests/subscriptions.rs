//! Chapter 17's subscriptions where a transcript does not show them: the replay talks to
//! one session's stream at a time, in one era. Here a stream ends when its session is
//! ended to make room (`--max-sessions`), two subscribed sessions each hear a change on
//! their own stream, and a change made by a 2026-07-28 call reaches a handshake-era
//! subscriber. And a session's subscriptions are bounded: this server has five
//! resources, fewer than `MAX_SUBSCRIPTIONS` (16), so the hidden flag
//! `--max-subscriptions` lowers the bound to two for the test to reach it. (One stream
//! per session, and `--max-streams` in all, are in the transcript.)

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use mcp_workbook::replay::{self, RunningServer};
use serde_json::{Value, json};

#[path = "common/session_client.rs"]
mod session_client;
use session_client::{open_session, post, read_until, request};

const BINARY: &str = env!("CARGO_BIN_EXE_ch17-subscriptions");
const LAST_RUN: &str = "payroll://last-run";

/// `initialize`, then `resources/subscribe` to `payroll://last-run`: the session's id.
fn subscribed_session(address: SocketAddr) -> String {
    let session = open_session(address, json!({}));
    let subscribe =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": LAST_RUN } });
    let answer = replay::send(address, &post(Some(&session), &subscribe)).expect("the subscription is answered");
    assert_eq!(serde_json::from_str::<Value>(&answer.body).unwrap()["result"], json!({}), "{}", answer.body);
    session
}

/// A GET that opens `session`'s stream, its head read: the connection, and what came.
fn open_stream(address: SocketAddr, session: &str) -> (TcpStream, Vec<u8>) {
    let get = request("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", session)], "");
    let mut stream = replay::open(address, &get).expect("the GET is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "\r\n\r\n");
    assert!(String::from_utf8_lossy(&raw).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&raw));
    (stream, raw)
}

/// Read to the end of `stream`: `true` when the server ended it (not the 10 s timeout).
fn ends(stream: &mut TcpStream, raw: &mut Vec<u8>) -> bool {
    stream.read_to_end(raw).is_ok()
}

/// The JSON-RPC messages the stream's events carried so far.
fn messages(raw: &[u8]) -> Vec<Value> {
    let body = replay::parse_response(&[raw, b"0\r\n\r\n".as_slice()].concat())
        .map(|response| response.body)
        .unwrap_or_default();
    replay::events(&body).unwrap_or_default().iter().map(|event| serde_json::from_str(&event.data).unwrap()).collect()
}

const UPDATED: &str = r#""method":"notifications/resources/updated""#;

#[test]
fn a_stream_ends_when_its_session_is_ended_to_make_room() {
    let server = RunningServer::start(Path::new(BINARY), &["--max-sessions".into(), "1".into()]).unwrap();
    let first = subscribed_session(server.address);
    let (mut stream, mut raw) = open_stream(server.address, &first);
    // A second session takes the only place: the first ends, and its stream with it.
    let _second = subscribed_session(server.address);
    assert!(ends(&mut stream, &mut raw), "the stream outlived its session");
    assert!(messages(&raw).is_empty());
}

#[test]
fn every_subscribed_session_hears_on_its_own_stream_whoever_made_the_change() {
    let server = RunningServer::start(Path::new(BINARY), &[]).unwrap();
    let (a, b) = (subscribed_session(server.address), subscribed_session(server.address));
    let (mut stream_a, mut raw_a) = open_stream(server.address, &a);
    let (mut stream_b, mut raw_b) = open_stream(server.address, &b);

    // A 2026-07-28 call, from no session, changes the resource.
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "run_payroll", "_meta": meta } });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "run_payroll"),
    ];
    let answer = replay::send(server.address, &request("POST", &headers, &call.to_string())).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&answer.body).unwrap()["result"]["resultType"], "complete");

    // Each session hears it once, on its own stream.
    read_until(&mut stream_a, &mut raw_a, UPDATED);
    read_until(&mut stream_b, &mut raw_b, UPDATED);
    for session in [&a, &b] {
        let delete = request("DELETE", &[("Mcp-Session-Id", session)], "");
        assert_eq!(replay::send(server.address, &delete).unwrap().status, 204);
    }
    for (stream, raw) in [(&mut stream_a, &mut raw_a), (&mut stream_b, &mut raw_b)] {
        assert!(ends(stream, raw), "the stream outlived its session");
        let heard = messages(raw);
        assert_eq!(heard.len(), 1, "{heard:?}");
        assert_eq!(heard[0]["params"]["uri"], LAST_RUN);
    }
}

/// `resources/subscribe` or `resources/unsubscribe` of `uri` in `session`: the answer.
fn subscription(address: SocketAddr, session: &str, method: &str, uri: &str) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 2, "method": method, "params": { "uri": uri } });
    let answer = replay::send(address, &post(Some(session), &body)).expect("the request is answered");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

#[test]
fn a_session_subscribes_to_a_bounded_number_of_resources() {
    let server = RunningServer::start(Path::new(BINARY), &["--max-subscriptions".into(), "2".into()]).unwrap();
    let subscribe = |session: &str, uri: &str| subscription(server.address, session, "resources/subscribe", uri);
    let session = open_session(server.address, json!({}));
    for uri in ["docs://pay-rules", "images://logo.png", "docs://pay-rules"] {
        assert_eq!(subscribe(&session, uri)["result"], json!({}), "{uri}: a subscription again counts once");
    }
    let refused = subscribe(&session, LAST_RUN);
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("subscribed to 2 resources"), "{refused}");

    // Unsubscribing makes room; and another session has a bound of its own.
    let unsubscribed = subscription(server.address, &session, "resources/unsubscribe", "docs://pay-rules");
    assert_eq!(unsubscribed["result"], json!({}));
    assert_eq!(subscribe(&session, LAST_RUN)["result"], json!({}));
    let other = open_session(server.address, json!({}));
    assert_eq!(subscribe(&other, "docs://pay-rules")["result"], json!({}));
}
