//! Chapter 16's sessions where a transcript cannot show them: a client acts once while
//! a transcript's stream comes in, so it cannot send a wrong answer and then the right
//! one to the same waiting call. Here a second client tries to answer the first
//! client's question, and the first client then answers it.

use std::io::Read;
use std::path::Path;

use mcp_workbook::replay::{self, RunningServer};
use serde_json::{Value, json};

#[path = "common/session_client.rs"]
mod session_client;
use session_client::{open_session, post, read_until};

const BINARY: &str = env!("CARGO_BIN_EXE_ch16-sessions");

#[test]
fn an_answer_counts_only_in_the_session_that_was_asked() {
    let server = RunningServer::start(Path::new(BINARY), &[]).expect("the server starts");
    let forms = || json!({ "elicitation": {} });
    let (asked, other) = (open_session(server.address, forms()), open_session(server.address, forms()));
    assert_ne!(asked, other);

    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "approve_payroll" } });
    let mut stream = replay::open(server.address, &post(Some(&asked), &call)).expect("the call is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, r#""id":"ask-1","method":"elicitation/create""#);

    // Another client, in its own session, answers the question by its id: refused, and
    // the call goes on waiting.
    let yes =
        json!({ "jsonrpc": "2.0", "id": "ask-1", "result": { "action": "accept", "content": { "approve": true } } });
    let stolen = replay::send(server.address, &post(Some(&other), &yes)).unwrap();
    assert_eq!(stolen.status, 400, "{}", stolen.body);
    assert_eq!(serde_json::from_str::<Value>(&stolen.body).unwrap()["error"]["code"], -32600);

    // The client that was asked answers: accepted, and the call completes with it.
    let answered = replay::send(server.address, &post(Some(&asked), &yes)).unwrap();
    assert_eq!((answered.status, answered.body.as_str()), (202, ""));
    stream.read_to_end(&mut raw).unwrap();
    let events = replay::events(&replay::parse_response(&raw).unwrap().body).expect("an event stream");
    let result: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    assert_eq!(result["id"], 2);
    assert_eq!(result["result"]["content"][0]["text"], "Payroll approved by the user and run for this week.");
}
