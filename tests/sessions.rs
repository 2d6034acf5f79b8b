//! Sessions (chapter 16, carried by every chapter after it) where a transcript cannot
//! show them:
//! - an answer counts only in the session that was asked: a client acts once while a
//!   transcript's stream comes in, so it cannot send a wrong answer and then the right
//!   one to the same waiting call. Here a second client tries to answer the first
//!   client's question, and the first client then answers it;
//! - opening one more session than `--max-sessions` ends the one idle longest, not the
//!   oldest: chapter 16's transcript shows a session ended to make room, but the one it
//!   ends is both (checked in every chapter with sessions);
//! - a session idle too long ends (`SESSION_IDLE_TIME`, half an hour; the hidden flag
//!   `--session-idle-secs` makes it a second), in every chapter with sessions;
//! - `--session-prefix` begins every id with the instance's prefix, for a proxy to route
//!   the session by (the appendix "Behind a reverse proxy"; `tests/interop/run proxy`
//!   runs it behind nginx), and refuses a prefix the spec would not allow in an id.

use std::io::Read;
use std::time::Duration;

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::{open_session, ping_status, post, read_until};
use common::{chapter_binaries_from, start};

const BINARY: &str = env!("CARGO_BIN_EXE_ch16-sessions");

/// Every chapter with sessions: chapter 16 adds them.
fn in_sessions() -> Vec<String> {
    chapter_binaries_from(16)
}

#[test]
fn an_answer_counts_only_in_the_session_that_was_asked() {
    let server = start(BINARY, &[]);
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

#[test]
fn opening_one_session_too_many_ends_the_one_idle_longest() {
    for binary in &in_sessions() {
        let server = start(binary, &["--max-sessions", "2"]);
        let first = open_session(server.address, json!({}));
        let second = open_session(server.address, json!({}));
        // The first, opened first, is used again: now the second is the one idle longest.
        assert_eq!(ping_status(server.address, &first), 200, "{binary}");
        let third = open_session(server.address, json!({}));
        assert_eq!(ping_status(server.address, &second), 404, "{binary}: the session idle longest made room");
        assert_eq!(ping_status(server.address, &first), 200, "{binary}: the oldest session, used lately, goes on");
        assert_eq!(ping_status(server.address, &third), 200, "{binary}");
    }
}

#[test]
fn a_session_idle_too_long_ends() {
    for binary in &in_sessions() {
        let server = start(binary, &["--session-idle-secs", "1"]);
        // `initialize` alone opens the session: one request, so that no other has to come
        // within the second.
        let params = json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } });
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params });
        let opened = replay::send(server.address, &post(None, &initialize)).unwrap();
        let session = opened.header("Mcp-Session-Id").expect("a session").to_string();
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(ping_status(server.address, &session), 404, "{binary}: the session outlived its idle time");
    }
}

#[test]
fn session_ids_begin_with_the_instance_prefix() {
    for binary in &in_sessions() {
        let server = start(binary, &["--session-prefix", "a-"]);
        let session = open_session(server.address, json!({}));
        // The prefix, then the 32 hex digits that are the secret, unchanged.
        let secret = session.strip_prefix("a-").unwrap_or_else(|| panic!("{binary}: {session} begins with a-"));
        assert!(secret.len() == 32 && secret.bytes().all(|b| b.is_ascii_hexdigit()), "{binary}: {session}");
        assert_eq!(ping_status(server.address, &session), 200, "{binary}: the session is found by its whole id");
        assert_eq!(ping_status(server.address, secret), 404, "{binary}: the id without its prefix is no session");
        // "The session ID MUST only contain visible ASCII characters": nor may its start.
        for wrong in ["a b", "\u{e9}-", &"a".repeat(33)] {
            let refused = std::process::Command::new(binary).args(["--session-prefix", wrong]).output().unwrap();
            assert!(!refused.status.success(), "{binary}: --session-prefix {wrong:?} is refused");
        }
    }
}
