//! Asking the client, as chapters 15 and 16 teach it, held in every chapter that asks.
//! Chapter 15's and 16's transcripts show each rule; a later chapter's transcript is
//! about its own piece, and the last chapter is the full starter a reader copies, so
//! these tests run the same rules against every chapter that asks (from 15; in a
//! session, from 16):
//! - a form goes only to a client that takes forms (`elicitation` empty or with `form`),
//!   in both eras (`2025-11-25/client/elicitation.mdx` and 2026-07-28's, Capabilities);
//! - a 2026-07-28 `requestState` is used once (`2026-07-28/basic/patterns/mrtr.mdx`,
//!   Server Requirements 5);
//! - in a session, nothing is asked before `notifications/initialized`
//!   (`2025-11-25/basic/lifecycle.mdx`, Initialization).

use std::net::SocketAddr;

use mcp_workbook::replay;
use mcp_workbook::transcript::HttpResponse;
use serde_json::{Value, json};

mod common;
use common::session_client::{open_session, post, request};
use common::{chapter_binaries_from, start};

/// Every chapter that asks the client: chapter 15 adds it.
fn asking() -> Vec<String> {
    chapter_binaries_from(15)
}

/// Every chapter that asks in a session: chapter 16 adds sessions.
fn in_sessions() -> Vec<String> {
    chapter_binaries_from(16)
}

/// A 2026-07-28 call of `approve_payroll` from a client that declares `capabilities`,
/// with `extra` params (the state, the answer).
fn call_2026(address: SocketAddr, id: u64, capabilities: Value, extra: Value) -> (HttpResponse, Value) {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities });
    let mut params = json!({ "name": "approve_payroll", "_meta": meta });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "approve_payroll"),
    ];
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered");
    let message = serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body));
    (answer, message)
}

#[test]
fn a_form_goes_only_to_a_client_that_takes_forms_2026() {
    for binary in &asking() {
        let server = start(binary, &[]);
        let (answer, url_only) = call_2026(server.address, 1, json!({ "elicitation": { "url": {} } }), json!({}));
        assert_eq!(answer.status, 400, "{binary}: {}", answer.body);
        assert_eq!(url_only["error"]["code"], -32021, "{binary}");
        assert_eq!(url_only["error"]["data"]["requiredCapabilities"], json!({ "elicitation": { "form": {} } }));
        for forms in [json!({}), json!({ "form": {} }), json!({ "form": {}, "url": {} })] {
            let (_, asked) = call_2026(server.address, 2, json!({ "elicitation": forms }), json!({}));
            assert_eq!(asked["result"]["resultType"], "input_required", "{binary}: {asked}");
        }
    }
}

#[test]
fn an_approved_retry_runs_once() {
    for binary in &asking() {
        let server = start(binary, &[]);
        let forms = || json!({ "elicitation": {} });
        let (_, asked) = call_2026(server.address, 1, forms(), json!({}));
        let state = asked["result"]["requestState"].clone();
        let yes = json!({ "requestState": state, "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } } });
        let (_, ran) = call_2026(server.address, 2, forms(), yes.clone());
        assert_eq!(ran["result"]["content"][0]["text"], "Payroll approved by the user and run for this week.");
        let (_, again) = call_2026(server.address, 2, forms(), yes);
        assert_eq!(again["error"]["code"], -32602, "{binary}: {again}");
        assert!(again["error"]["message"].as_str().unwrap().contains("used already"), "{binary}: {again}");
    }
}

/// A handshake-era call of `approve_payroll` in `session`: the text of its result.
fn call_in_session(address: SocketAddr, session: &str) -> String {
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "approve_payroll" } });
    replay::send(address, &post(Some(session), &call)).expect("the call is answered").body
}

#[test]
fn a_session_is_asked_only_after_initialized_and_only_in_forms() {
    for binary in &in_sessions() {
        let server = start(binary, &[]);
        // `initialize` alone: the session is open, but the handshake is not done.
        let params = json!({ "protocolVersion": "2025-11-25", "capabilities": { "elicitation": {} }, "clientInfo": { "name": "test", "version": "1" } });
        let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params });
        let opened = replay::send(server.address, &post(None, &initialize)).unwrap();
        let hasty = opened.header("Mcp-Session-Id").expect("a session").to_string();
        let refused = call_in_session(server.address, &hasty);
        assert!(refused.contains("has not sent `notifications/initialized`"), "{binary}: {refused}");
        assert!(!refused.contains("elicitation/create"), "{binary}: {refused}");
        // URL mode only: never a form.
        let url_only = open_session(server.address, json!({ "elicitation": { "url": {} } }));
        let refused = call_in_session(server.address, &url_only);
        assert!(refused.contains("capability for forms"), "{binary}: {refused}");
        assert!(!refused.contains("elicitation/create"), "{binary}: {refused}");
    }
}
