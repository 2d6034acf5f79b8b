//! Chapter 15's consent page (`connect.rs`, carried by every chapter after it), where a
//! transcript cannot show it: a transcript's server runs without a token, and a link
//! there is never one of too many. In each chapter that has it:
//! - with chapter 7's `--token`, `/mcp` still wants the token, but the consent page does
//!   not: a browser opening the link carries none. It shows, and its button connects;
//! - the open links are capped (`MAX_OPEN_LINKS`, 100): one call more is told to wait,
//!   with a failed tool result, and no link;
//! - a link expires: its page, and its button, answer the same 404 as an unknown link.
//!   On the transcript's fixed clock none ever does; the hidden flag `--link-ttl-secs`
//!   makes one expire in a second.

use std::net::SocketAddr;

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::{consent_page, request};
use common::{chapter_binaries_from, start};

const TOKEN: &str = "s3cret";
/// The chapters' `MAX_OPEN_LINKS`.
const MAX_OPEN_LINKS: usize = 100;

/// A 2026-07-28 `tools/call` of `bank_balance` by a client that takes URL mode, with the token.
fn bank_balance(address: SocketAddr) -> Value {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "url": {} } } });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "bank_balance", "_meta": meta } });
    let bearer = format!("Bearer {TOKEN}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "bank_balance"),
        ("Authorization", bearer.as_str()),
    ];
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

/// The consent page's path in an answer that asks, if it asks.
fn link(asked: &Value) -> Option<String> {
    let url = asked.pointer("/result/inputRequests/connect/params/url")?.as_str()?;
    Some(url[url.find("/connect/")?..].to_string())
}

#[test]
fn the_consent_page_needs_no_token_where_mcp_does() {
    for binary in chapter_binaries_from(15) {
        let server = start(&binary, &["--token", TOKEN]);
        let asked = bank_balance(server.address);
        let path = link(&asked).unwrap_or_else(|| panic!("{binary}: not asked at a URL: {asked}"));
        let unauthorized =
            replay::send(server.address, &request("POST", &[("Content-Type", "application/json")], "{}"));
        assert_eq!(unauthorized.expect("answered").status, 401, "{binary}: /mcp without the token");
        assert_eq!(consent_page(server.address, "GET", &path), 200, "{binary}: the page without a token");
        assert_eq!(consent_page(server.address, "POST", &path), 200, "{binary}: the button without a token");
        let connected = bank_balance(server.address);
        let text = connected.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_default();
        assert!(text.contains("48,250.00"), "{binary}: not connected: {connected}");
    }
}

#[test]
fn the_open_links_are_capped() {
    for binary in chapter_binaries_from(15) {
        let server = start(&binary, &["--token", TOKEN, "--max-calls-per-minute", "1000"]);
        for i in 0..MAX_OPEN_LINKS {
            let asked = bank_balance(server.address);
            assert!(link(&asked).is_some(), "{binary}: call {i} made no link: {asked}");
        }
        let refused = bank_balance(server.address);
        assert!(link(&refused).is_none(), "{binary}: a link past the cap: {refused}");
        assert_eq!(refused.pointer("/result/isError"), Some(&json!(true)), "{binary}: {refused}");
        let text = refused.pointer("/result/content/0/text").and_then(Value::as_str).unwrap_or_default();
        assert!(text.starts_with("Too many bank connections"), "{binary}: {text}");
    }
}

#[test]
fn an_expired_link_is_the_same_404() {
    for binary in chapter_binaries_from(15) {
        let server = start(&binary, &["--link-ttl-secs", "1"]);
        let asked = bank_balance(server.address);
        let path = link(&asked).unwrap_or_else(|| panic!("{binary}: not asked at a URL: {asked}"));
        assert_eq!(consent_page(server.address, "GET", &path), 200, "{binary}: the page before it expires");
        std::thread::sleep(std::time::Duration::from_millis(2100));
        assert_eq!(consent_page(server.address, "GET", &path), 404, "{binary}: the page after it expired");
        assert_eq!(consent_page(server.address, "POST", &path), 404, "{binary}: the button after it expired");
    }
}
