//! The drain (the base, `src/http.rs`, "Stopping without dropping"), which no transcript
//! can show: it begins with a signal. SIGTERM to a chapter's server:
//! - every chapter's server, idle, exits 0 at once, with `--drain-secs 0` too;
//! - `GET /ready` answers 200 while serving, and 503 from the start of the drain on a
//!   connection still open; a new connection is refused;
//! - a long call in progress (chapter 14 on) runs on to its result, and the server exits 0
//!   after it, not before;
//! - a call that would outlast `--drain-secs` ends with the drain's error at its deadline
//!   (a call that waits for an answer that never comes: chapter 16 on, in a session);
//! - an open `subscriptions/listen` (chapter 17 on) ends at once with its result, and a
//!   session's stream (GET) ends.
#![cfg(unix)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mcp_workbook::replay::{self, RunningServer};
use serde_json::{Value, json};

mod common;
use common::session_client::{open_session, post, read_until, request};
use common::{chapter_binaries_from, start};

/// How long an idle server, or one whose last call is about to end, may take to exit
/// after SIGTERM: the drain's watcher looks for the signal ten times a second.
const PROMPTLY: Duration = Duration::from_secs(3);

/// SIGTERM, then the exit status within `within`: a test fails if the server still runs.
fn terminate_and_wait(server: &mut RunningServer, binary: &str, within: Duration) -> std::process::ExitStatus {
    server.terminate().expect("SIGTERM is sent");
    server.wait_for_exit(within).unwrap_or_else(|| panic!("{binary} still runs {within:?} after SIGTERM"))
}

/// The JSON-RPC messages of an event stream read raw (head and chunks included).
fn messages(raw: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(raw);
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

/// A `GET /ready` on `stream`, kept alive: the status and the body.
fn ready(stream: &mut TcpStream) -> (u16, String) {
    stream.write_all(b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").expect("the probe is sent");
    let mut raw = Vec::new();
    read_until(stream, &mut raw, "\r\n\r\n");
    let head = String::from_utf8_lossy(&raw).into_owned();
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let length: usize = head
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_string))
        .and_then(|length| length.trim().parse().ok())
        .unwrap_or(0);
    let at = raw.windows(4).position(|window| window == b"\r\n\r\n").expect("a head") + 4;
    while raw.len() < at + length {
        let mut buffer = [0; 256];
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
        }
    }
    (status, String::from_utf8_lossy(&raw[at..]).into_owned())
}

#[test]
fn a_drain_of_no_seconds_still_ends() {
    // The watcher wakes the accept loop with a connection of its own, whatever the deadline.
    for binary in &chapter_binaries_from(7) {
        let mut server = start(binary, &["--drain-secs", "0"]);
        let status = terminate_and_wait(&mut server, binary, PROMPTLY);
        assert!(status.success(), "{binary}: {status}\n{}", server.stderr());
    }
}

#[test]
fn every_chapter_exits_0_at_once_when_idle() {
    for binary in &chapter_binaries_from(1) {
        let mut server = start(binary, &[]);
        let started = Instant::now();
        let status = terminate_and_wait(&mut server, binary, PROMPTLY);
        assert!(status.success(), "{binary}: {status}\n{}", server.stderr());
        // What it said on its way out (the pipe may still be read for a moment).
        let said = Instant::now() + Duration::from_secs(1);
        while !server.stderr().contains("http: draining") && Instant::now() < said {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(server.stderr().contains("http: draining"), "{binary}: {}", server.stderr());
        assert!(started.elapsed() < PROMPTLY, "{binary}");
    }
}

/// A long call (`run_payroll`, three steps of 100 ms) with a progress token, read up to
/// its first progress: the connection, and what came.
fn long_call_under_way(address: SocketAddr) -> (TcpStream, Vec<u8>) {
    let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": { "name": "run_payroll", "_meta": { "progressToken": "p" } } });
    let mut stream = replay::open(address, &post(None, &call)).expect("the call is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, r#""progress":1"#);
    assert!(String::from_utf8_lossy(&raw).contains(r#""progress":1"#), "{}", String::from_utf8_lossy(&raw));
    (stream, raw)
}

#[test]
fn a_call_in_progress_ends_with_its_result_and_readiness_turns_503() {
    for binary in &chapter_binaries_from(14) {
        let mut server = start(binary, &[]);
        let mut probe = TcpStream::connect(server.address).expect("the probe connects");
        probe.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(ready(&mut probe), (200, "ready\n".to_string()), "{binary}");

        let (mut call, mut raw) = long_call_under_way(server.address);
        server.terminate().expect("SIGTERM is sent");
        std::thread::sleep(Duration::from_millis(150)); // the watcher looks ten times a second
        // Draining: the open connection hears 503; a new one is refused.
        assert_eq!(ready(&mut probe), (503, "draining\n".to_string()), "{binary}");
        assert!(TcpStream::connect(server.address).is_err(), "{binary}: a new connection was accepted");

        call.read_to_end(&mut raw).expect("the call's stream is read to its end");
        let last = messages(&raw).pop().expect("at least one event");
        assert_eq!(last["id"], 7, "{binary}: {last}");
        let text = last["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("Payroll for 3 employees"), "{binary}: the call was cut: {last}");
        let status = server.wait_for_exit(PROMPTLY).unwrap_or_else(|| panic!("{binary} still runs"));
        assert!(status.success(), "{binary}: {status}");
    }
}

#[test]
fn a_call_past_the_drain_deadline_ends_with_the_drains_error() {
    for binary in &chapter_binaries_from(16) {
        let mut server = start(binary, &["--drain-secs", "1"]);
        // approve_payroll asks its client, in the session, and this client never answers.
        let session = open_session(server.address, json!({ "elicitation": {} }));
        let call =
            json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "approve_payroll" } });
        let mut stream = replay::open(server.address, &post(Some(&session), &call)).expect("the call is sent");
        let mut raw = Vec::new();
        read_until(&mut stream, &mut raw, "elicitation/create");
        assert!(
            String::from_utf8_lossy(&raw).contains("elicitation/create"),
            "{binary}: {}",
            String::from_utf8_lossy(&raw)
        );

        let signalled = Instant::now();
        let status = terminate_and_wait(&mut server, binary, Duration::from_secs(5));
        assert!(status.success(), "{binary}: {status}");
        assert!(signalled.elapsed() >= Duration::from_secs(1), "{binary}: exited before the drain's deadline");
        stream.read_to_end(&mut raw).expect("the stream is read to its end");
        let last = messages(&raw).pop().expect("at least one event");
        assert_eq!(last["id"], 5, "{binary}: {last}");
        assert_eq!(last["error"]["code"], -32603, "{binary}: {last}");
        assert_eq!(
            last["error"]["message"],
            "Internal error: the server is stopping, and the call did not end in time"
        );
    }
}

/// A 2026-07-28 `subscriptions/listen` for `payroll://last-run`, read up to its
/// acknowledgment.
fn listen(address: SocketAddr) -> (TcpStream, Vec<u8>) {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let params = json!({ "_meta": meta, "notifications": { "resourceSubscriptions": ["payroll://last-run"] } });
    let body = json!({ "jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    let mut stream = replay::open(address, &request("POST", &headers, &body.to_string())).expect("the listen is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "}}\n\n");
    (stream, raw)
}

#[test]
fn a_listen_ends_with_its_result_and_a_sessions_stream_ends() {
    for binary in &chapter_binaries_from(17) {
        let mut server = start(binary, &[]);
        let (mut listening, mut raw) = listen(server.address);
        let session = open_session(server.address, json!({}));
        let get = request("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], "");
        let mut session_stream = replay::open(server.address, &get).expect("the GET is sent");
        let mut session_raw = Vec::new();
        read_until(&mut session_stream, &mut session_raw, "\r\n\r\n");
        assert!(String::from_utf8_lossy(&session_raw).starts_with("HTTP/1.1 200"), "{binary}");

        let status = terminate_and_wait(&mut server, binary, PROMPTLY);
        assert!(status.success(), "{binary}: {status}");
        listening.read_to_end(&mut raw).expect("the listen is read to its end");
        let last = messages(&raw).pop().expect("at least the acknowledgment");
        assert_eq!(last["id"], "l", "{binary}: the listen ended without its result: {last}");
        assert!(last.get("result").is_some(), "{binary}: {last}");
        session_stream.read_to_end(&mut session_raw).expect("the session's stream ends");
        assert!(String::from_utf8_lossy(&session_raw).ends_with("0\r\n\r\n"), "{binary}: not ended as a chunked body");
    }
}
