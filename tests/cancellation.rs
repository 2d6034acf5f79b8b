//! Cancellation (chapter 14, carried by every chapter after it) where a transcript cannot
//! show it: two clients at once, and a notice that arrives late.
//!
//! A `notifications/cancelled` names a call by its id, and ids are unique only "by the
//! requestor within the same session" (`2025-11-25/basic/index.mdx`). Client B's
//! request `8` is answered; B's notice for it arrives after the answer ("cancellation
//! notifications may arrive after request processing has completed", Timing
//! Considerations), while client A's call `8` runs. The notice must not stop A's call:
//! it is not A's. Over HTTP outside a session nothing says whose a notice is, so it
//! stops no call there; in a session (chapter 16 on) it stops only that session's call.

use std::io::Read;
use std::net::SocketAddr;
use std::time::Duration;

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::{open_session, post, read_until, request};
use common::{chapter_binaries_from, start};

/// A long call `8` of client A, in `session` when there is one; client B (in
/// `other_session`) has a request `8` answered and then sends its late notice for it.
/// What A's stream holds at its end.
fn late_notice_of_another(address: SocketAddr, session: Option<&str>, other_session: Option<&str>) -> String {
    let call = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": { "name": "run_payroll", "_meta": { "progressToken": "a-1" } } });
    let mut stream = replay::open(address, &post(session, &call)).expect("A's call is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, r#""progress":1"#);

    let list = json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list" });
    let listed = replay::send(address, &post(other_session, &list)).expect("B's request is answered");
    assert_eq!(listed.status, 200, "{}", listed.body);
    let late = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 8, "reason": "B's user pressed stop, too late." } });
    let noticed = replay::send(address, &post(other_session, &late)).expect("B's notice is answered");
    assert_eq!(noticed.status, 202, "{}", noticed.body);

    stream.read_to_end(&mut raw).expect("A's stream is read to its end");
    String::from_utf8_lossy(&raw).into_owned()
}

/// A's stream ends with its call's result: nothing stopped the call.
fn ran_to_its_result(binary: &str, stream: &str) {
    let last = messages(stream).pop().expect("at least one event");
    assert_eq!(last["id"], 8, "{binary}: A's call was stopped by B's notice:\n{stream}");
    let text = last["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("Payroll for 3"), "{binary}: {last}");
}

#[test]
fn a_late_notice_from_another_client_does_not_stop_a_call_outside_a_session() {
    for binary in &chapter_binaries_from(14) {
        let server = start(binary, &[]);
        let stream = late_notice_of_another(server.address, None, None);
        ran_to_its_result(binary, &stream);
    }
}

#[test]
fn a_late_notice_in_another_session_does_not_stop_a_call() {
    for binary in &chapter_binaries_from(16) {
        let server = start(binary, &[]);
        let (a, b) = (open_session(server.address, json!({})), open_session(server.address, json!({})));
        let stream = late_notice_of_another(server.address, Some(&a), Some(&b));
        ran_to_its_result(binary, &stream);
    }
}

#[test]
fn a_late_notice_outside_a_session_does_not_stop_a_call_in_one() {
    for binary in &chapter_binaries_from(16) {
        let server = start(binary, &[]);
        let a = open_session(server.address, json!({}));
        let stream = late_notice_of_another(server.address, Some(&a), None);
        ran_to_its_result(binary, &stream);
    }
}

/// Client A's call asks its user (`approve_payroll`, chapter 16) and waits; `stop` ends
/// the wait somehow. What A's stream holds at its end.
fn a_question_given_up(address: SocketAddr, stop: impl FnOnce(&str)) -> String {
    let session = open_session(address, json!({ "elicitation": {} }));
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "approve_payroll" } });
    let mut stream = replay::open(address, &post(Some(&session), &call)).expect("the call is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, r#""id":"ask-1","method":"elicitation/create""#);
    stop(&session);
    // Past the call's deadline (`MAX_CALL_TIME`, a minute), when `stop` does nothing.
    stream.set_read_timeout(Some(Duration::from_secs(90))).unwrap();
    stream.read_to_end(&mut raw).expect("the stream is read to its end");
    String::from_utf8_lossy(&raw).into_owned()
}

/// The messages of an event stream, as JSON.
fn messages(raw: &str) -> Vec<Value> {
    let response = replay::parse_response(raw.as_bytes()).expect("an HTTP response");
    let events = replay::events(&response.body).expect("an event stream");
    events.iter().map(|event| serde_json::from_str(&event.data).expect("JSON")).collect()
}

/// The server is the sender of its question, and "When the request has not received a
/// success or error response within the timeout period, the sender SHOULD issue a
/// cancellation notification for that request" (`2025-11-25/basic/lifecycle.mdx`,
/// Timeouts): when it stops waiting, it says so, before the call's answer.
fn withdrawn_then_answered(binary: &str, stream: &str, reason: &str) {
    let messages = messages(stream);
    let withdrawn = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": "ask-1", "reason": reason } });
    let at = messages.iter().position(|message| *message == withdrawn);
    assert!(at.is_some(), "{binary}: the question is not withdrawn:\n{stream}");
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 2, "{binary}: {stream}");
    assert!(at.unwrap() < messages.len() - 1, "{binary}: the notice comes before the answer:\n{stream}");
}

#[test]
fn the_server_withdraws_its_question_when_the_session_ends() {
    for binary in &chapter_binaries_from(16) {
        let server = start(binary, &[]);
        let stream = a_question_given_up(server.address, |session| {
            let headers =
                [("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-11-25"), ("Accept", "application/json")];
            let ended = replay::send(server.address, &request("DELETE", &headers, "")).expect("DELETE is answered");
            assert_eq!(ended.status, 204, "{binary}: {}", ended.body);
        });
        withdrawn_then_answered(binary, &stream, "the session ended before the client answered");
    }
}

/// The deadline is `MAX_CALL_TIME`, a minute: this test waits that long, once for
/// every chapter at the same time.
#[test]
fn the_server_withdraws_its_question_at_the_deadline() {
    let chapters = chapter_binaries_from(16);
    let waits: Vec<_> = chapters
        .into_iter()
        .map(|binary| {
            std::thread::spawn(move || {
                let server = start(&binary, &[]);
                let stream = a_question_given_up(server.address, |_| {});
                withdrawn_then_answered(&binary, &stream, "no answer came in time");
                let last = messages(&stream).pop().unwrap();
                assert_eq!(last["error"]["code"], -32603, "{binary}: the deadline's error: {last}");
            })
        })
        .collect();
    for wait in waits {
        wait.join().expect("a chapter's wait");
    }
}
