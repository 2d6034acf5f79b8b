//! Chapter 16's sessions where a transcript cannot show them: a client acts once while
//! a transcript's stream comes in, so it cannot send a wrong answer and then the right
//! one to the same waiting call. Here a second client tries to answer the first
//! client's question, and the first client then answers it.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::path::Path;

use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript::HttpRequest;
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_ch16-sessions");

/// A POST of `body`, in `session` when there is one.
fn post(session: Option<&str>, body: Value) -> HttpRequest {
    let mut headers = vec![
        ("Content-Type".to_string(), "application/json".to_string()),
        ("Accept".to_string(), "application/json, text/event-stream".to_string()),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id".to_string(), session.to_string()));
    }
    HttpRequest { method: "POST".into(), path: "/mcp".into(), headers, body: body.to_string() }
}

/// `initialize` from a client that answers forms: the new session's id.
fn open_session(address: SocketAddr) -> String {
    let params = json!({
        "protocolVersion": "2025-11-25",
        "capabilities": { "elicitation": {} },
        "clientInfo": { "name": "test", "version": "1" },
    });
    let answer = replay::send(
        address,
        &post(None, json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params })),
    )
    .expect("initialize is answered");
    answer.header("Mcp-Session-Id").expect("initialize opens a session").to_string()
}

/// Read `stream` until what came holds `needle` and the blank line that ends its event.
fn read_until(stream: &mut TcpStream, raw: &mut Vec<u8>, needle: &str) {
    let mut buffer = [0u8; 4096];
    let whole = |raw: &[u8]| {
        let text = String::from_utf8_lossy(raw);
        text.find(needle).is_some_and(|at| text[at..].contains("\n\n"))
    };
    while !whole(raw) {
        let read = stream.read(&mut buffer).expect("the stream goes on");
        assert!(read > 0, "the stream ended early: {}", String::from_utf8_lossy(raw));
        raw.extend_from_slice(&buffer[..read]);
    }
}

#[test]
fn an_answer_counts_only_in_the_session_that_was_asked() {
    let server = RunningServer::start(Path::new(BINARY), &[]).expect("the server starts");
    let (asked, other) = (open_session(server.address), open_session(server.address));
    assert_ne!(asked, other);

    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "approve_payroll" } });
    let mut stream = replay::open(server.address, &post(Some(&asked), call)).expect("the call is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, r#""id":"ask-1","method":"elicitation/create""#);

    // Another client, in its own session, answers the question by its id: refused, and
    // the call goes on waiting.
    let yes =
        json!({ "jsonrpc": "2.0", "id": "ask-1", "result": { "action": "accept", "content": { "approve": true } } });
    let stolen = replay::send(server.address, &post(Some(&other), yes.clone())).unwrap();
    assert_eq!(stolen.status, 400, "{}", stolen.body);
    assert_eq!(serde_json::from_str::<Value>(&stolen.body).unwrap()["error"]["code"], -32600);

    // The client that was asked answers: accepted, and the call completes with it.
    let answered = replay::send(server.address, &post(Some(&asked), yes)).unwrap();
    assert_eq!((answered.status, answered.body.as_str()), (202, ""));
    stream.read_to_end(&mut raw).unwrap();
    let events = replay::events(&replay::parse_response(&raw).unwrap().body).expect("an event stream");
    let result: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(result["result"]["content"][0]["text"], "Payroll approved by the user and run for this week.");
}
