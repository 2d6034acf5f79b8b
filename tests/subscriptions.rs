//! Chapter 17's subscriptions where a transcript does not show them: the replay talks to
//! one session's stream at a time, in one era. Here a stream ends when its session is
//! ended to make room (`--max-sessions`), two subscribed sessions each hear a change on
//! their own stream, and a change made by a 2026-07-28 call reaches a handshake-era
//! subscriber. And a session's subscriptions are bounded: this server has five
//! resources, fewer than `MAX_SUBSCRIPTIONS` (16), so the hidden flag
//! `--max-subscriptions` lowers the bound to two for the test to reach it. A session whose
//! client listens on its stream is in use: it does not expire while the stream is open,
//! and is the last to be ended to make room; a GET for a session that has expired is 404
//! (`--session-idle-secs` makes a second idle). (One stream per session, and
//! `--max-streams` in all, are in the transcript.) And 2026-07-28's
//! `subscriptions/listen` (listen.rs) where the transcript, with `--max-streams 1`, cannot
//! show it: several subscriptions open at once over HTTP, beside a session's stream, each
//! hears a change it named once, tagged with its own id, and one that did not name it
//! hears nothing; and its URIs are bounded by `--max-subscriptions` too.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::{listen, open_session, ping_status, post, read_until, request};
use common::start;

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
    let server = start(BINARY, &["--max-sessions", "1"]);
    let first = subscribed_session(server.address);
    let (mut stream, mut raw) = open_stream(server.address, &first);
    // A second session takes the only place: the first ends, and its stream with it.
    let _second = subscribed_session(server.address);
    assert!(ends(&mut stream, &mut raw), "the stream outlived its session");
    assert!(messages(&raw).is_empty());
}

#[test]
fn every_subscribed_session_hears_on_its_own_stream_whoever_made_the_change() {
    let server = start(BINARY, &[]);
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
    let server = start(BINARY, &["--max-subscriptions", "2"]);
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

#[test]
fn a_listening_session_is_the_last_to_be_ended_to_make_room() {
    let server = start(BINARY, &["--max-sessions", "2"]);
    let listening = subscribed_session(server.address);
    let (_stream, _raw) = open_stream(server.address, &listening);
    let idle = subscribed_session(server.address);
    // A third session needs a place: the listening one has been idle longer by the clock,
    // but its client is listening; the other one ends.
    let _third = subscribed_session(server.address);
    assert_eq!(ping_status(server.address, &idle), 404, "the idle session should have made room");
    assert_eq!(ping_status(server.address, &listening), 200, "the listening session was ended to make room");
}

#[test]
fn a_listening_session_does_not_expire_and_a_stream_for_an_expired_one_is_404() {
    let server = start(BINARY, &["--session-idle-secs", "1"]);
    let listening = subscribed_session(server.address);
    let (stream, _raw) = open_stream(server.address, &listening);
    let away = subscribed_session(server.address);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // Idle for longer than a session may be: the one whose client listened is still open.
    assert_eq!(ping_status(server.address, &listening), 200, "a listening session expired");
    // The other expired: its GET is 404, like any request in it, and opens no stream.
    let get = request("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &away)], "");
    let answer = replay::send(server.address, &get).expect("the GET is answered");
    assert_eq!(answer.status, 404, "a stream opened for an expired session: {}", answer.body);
    // Once the stream ends, the session's idle time starts then.
    drop(stream);
    std::thread::sleep(std::time::Duration::from_millis(3500));
    assert_eq!(ping_status(server.address, &listening), 404, "a session outlived its idle time after its stream");
}

#[test]
fn several_listen_subscriptions_each_hear_what_they_named_tagged_with_their_own_id() {
    let server = start(BINARY, &[]);
    let (mut a, mut raw_a) = listen(server.address, json!("a"), &[LAST_RUN]);
    let (mut b, mut raw_b) = listen(server.address, json!(2), &["docs://pay-rules", LAST_RUN]);
    let (mut c, mut raw_c) = listen(server.address, json!("c"), &["docs://pay-rules"]);
    let session = subscribed_session(server.address);
    let (mut s, mut raw_s) = open_stream(server.address, &session);

    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "run_payroll" } });
    let answer = replay::send(server.address, &post(None, &call)).unwrap();
    assert!(answer.body.contains("Payroll for 3 employees"), "{}", answer.body);
    for (stream, raw) in [(&mut a, &mut raw_a), (&mut b, &mut raw_b), (&mut s, &mut raw_s)] {
        read_until(stream, raw, UPDATED);
    }

    // The clients leave: each subscription ends, with no result (the client closed it).
    for stream in [&mut a, &mut b, &mut c] {
        stream.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let tag = |message: &Value| message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    for (id, stream, raw, hears) in [
        (json!("a"), &mut a, &mut raw_a, true),
        (json!(2), &mut b, &mut raw_b, true),
        (json!("c"), &mut c, &mut raw_c, false),
    ] {
        assert!(ends(stream, raw), "subscription {id} outlived its client");
        let heard = messages(raw);
        assert_eq!(heard[0]["method"], "notifications/subscriptions/acknowledged", "{heard:?}");
        assert!(heard.iter().all(|message| tag(message) == id), "{heard:?}");
        let updates: Vec<&Value> = heard.iter().filter(|m| m["method"] == "notifications/resources/updated").collect();
        assert_eq!(updates.len(), usize::from(hears), "{id}: {heard:?}");
        assert!(updates.iter().all(|update| update["params"]["uri"] == LAST_RUN), "{heard:?}");
        assert!(heard.iter().all(|message| message.get("id").is_none()), "a result after the client left: {heard:?}");
    }
    // The session's stream heard it too, untagged: it is no subscription's.
    let delete = request("DELETE", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(replay::send(server.address, &delete).unwrap().status, 204);
    assert!(ends(&mut s, &mut raw_s));
    let heard = messages(&raw_s);
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0]["params"], json!({ "uri": LAST_RUN }));
}

#[test]
fn a_listen_names_a_bounded_number_of_resources() {
    let server = start(BINARY, &["--max-subscriptions", "2"]);
    let (mut stream, mut raw) = listen(server.address, json!(1), &["docs://pay-rules", "images://logo.png", LAST_RUN]);
    assert!(ends(&mut stream, &mut raw), "a refused listen left its stream open");
    let body = replay::parse_response(&raw).expect("an answer").body;
    let refused: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("at most 2 resources"), "{refused}");
}
