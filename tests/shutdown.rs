//! The drain (the base, `src/http.rs`, "Stopping without dropping"), which no transcript
//! can show: it begins with a signal. SIGTERM (or SIGINT, Ctrl-C) to a chapter's server:
//! - every chapter's server, idle, exits 0 at once, on either signal, and with
//!   `--drain-secs 0` or the largest number (chapter 7 on, where the flag is);
//! - a kept-alive connection with no request on it is closed at the drain's start, and a
//!   new connection is refused; a request already on its way is answered, `GET /ready`
//!   with `503` and `Connection: close`;
//! - a long call in progress (chapter 14 on) runs on to its result, and the server exits 0
//!   after it, not before;
//! - a call that would outlast `--drain-secs` ends with the drain's error at its deadline
//!   (a call that waits for an answer that never comes: chapter 16 on, in a session); a
//!   second signal then ends the process at once;
//! - an open `subscriptions/listen` (chapter 17 on) ends at once with its result, and a
//!   session's stream (GET) ends.
//!
//! - `GET /ready` and `HEAD /ready` are answered by the base before a chapter's checks
//!   (no token, any `Host`);
//! - SIGHUP ends every chapter's server run without `--tools-off`: chapter 17's reload
//!   takes the signal only when there is a file to reload.
//!
//! (A chapter 19 task that the drain waits for: `tests/tasks.rs`.)
#![cfg(unix)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::replay::{self, RunningServer};
use serde_json::{Value, json};

mod common;
use common::session_client::{listen, open_session, post, read_until, request};
use common::{chapter_binaries_from, start};

/// How long an idle server, or one whose last call is about to end, may take to exit
/// after SIGTERM: the drain's watcher looks for the signal ten times a second.
const PROMPTLY: Duration = Duration::from_secs(3);

/// SIGTERM, then the exit status within `within`: a test fails if the server still runs.
fn terminate_and_wait(server: &mut RunningServer, binary: &str, within: Duration) -> std::process::ExitStatus {
    server.terminate().expect("SIGTERM is sent");
    server.wait_for_exit(within).unwrap_or_else(|| panic!("{binary} still runs {within:?} after SIGTERM"))
}

/// Give the drain's watcher time to see the signal (it looks ten times a second).
fn let_the_drain_begin() {
    thread::sleep(Duration::from_millis(250));
}

/// Read `stream` to its end on a thread of its own, as a client does while the server
/// drains: what came, `raw` first.
fn read_to_end_meanwhile(mut stream: TcpStream, mut raw: Vec<u8>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let _ = stream.read_to_end(&mut raw);
        raw
    })
}

/// The JSON-RPC messages of an event stream read raw (head and chunks included).
fn messages(raw: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(raw);
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

/// What the server said on its way out (the pipe may still be read for a moment).
fn said_draining(server: &RunningServer) -> bool {
    let said = Instant::now() + Duration::from_secs(1);
    while !server.stderr().contains("http: draining") && Instant::now() < said {
        thread::sleep(Duration::from_millis(10));
    }
    server.stderr().contains("http: draining")
}

#[test]
fn every_chapter_exits_0_at_once_when_idle() {
    for binary in &chapter_binaries_from(1) {
        for signal in ["TERM", "INT"] {
            let mut server = start(binary, &[]);
            server.signal(signal).expect("the signal is sent");
            let status = server.wait_for_exit(PROMPTLY).unwrap_or_else(|| panic!("{binary} still runs after {signal}"));
            assert!(status.success(), "{binary}, SIG{signal}: {status}\n{}", server.stderr());
            assert!(said_draining(&server), "{binary}: {}", server.stderr());
        }
    }
}

/// SIGHUP is a terminal's hang-up as well as an operator's reload (chapter 17's
/// `--tools-off`): a server run without that flag keeps the signal's default and ends,
/// so a closed terminal does not leave it holding its port.
#[test]
fn a_hang_up_ends_every_chapter_run_without_a_file_to_reload() {
    for binary in &chapter_binaries_from(1) {
        let mut server = start(binary, &[]);
        server.signal("HUP").expect("the signal is sent");
        let status = server.wait_for_exit(PROMPTLY).unwrap_or_else(|| panic!("{binary} still runs after SIGHUP"));
        assert!(!status.success(), "{binary} ended by SIGHUP, not by itself: {status}");
    }
}

#[test]
fn ready_answers_get_and_head_before_the_chapters_checks() {
    // Chapter 7 refuses a request without its token; the probe carries none.
    for binary in &chapter_binaries_from(7) {
        let server =
            RunningServer::start_with_env(std::path::Path::new(binary), &[], &[("MCP_WORKBOOK_TOKEN", Some("s3cret"))])
                .expect("it starts");
        for (method, body) in [("GET", "ready\n"), ("HEAD", "")] {
            let mut probe = TcpStream::connect(server.address).expect("it connects");
            probe
                .write_all(
                    format!("{method} /ready HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n").as_bytes(),
                )
                .unwrap();
            let mut answer = Vec::new();
            let _ = probe.read_to_end(&mut answer);
            let answer = String::from_utf8_lossy(&answer);
            assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{binary} {method}: {answer}");
            assert!(answer.contains("\r\nContent-Length: 6\r\n"), "{binary} {method}: {answer}");
            assert!(answer.ends_with(&format!("\r\n\r\n{body}")), "{binary} {method}: {answer}");
        }
    }
}

#[test]
fn a_drain_of_no_seconds_or_of_ever_still_ends() {
    // The watcher wakes the accept loop with a connection of its own, whatever the
    // deadline; one past a day is a day (an `Instant` that far would overflow).
    for binary in &chapter_binaries_from(7) {
        for seconds in ["0", &u64::MAX.to_string()] {
            let mut server = start(binary, &["--drain-secs", seconds]);
            let status = terminate_and_wait(&mut server, binary, PROMPTLY);
            assert!(status.success(), "{binary} --drain-secs {seconds}: {status}\n{}", server.stderr());
        }
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
fn a_call_in_progress_ends_with_its_result_and_idle_connections_close() {
    for binary in &chapter_binaries_from(14) {
        let mut server = start(binary, &[]);
        // A kept-alive connection, answered once and then idle.
        let mut idle = TcpStream::connect(server.address).expect("it connects");
        idle.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        idle.write_all(b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut answer = Vec::new();
        read_until(&mut idle, &mut answer, "ready\n");
        assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200 OK\r\n"), "{binary}");

        let (call, raw) = long_call_under_way(server.address);
        let call = read_to_end_meanwhile(call, raw);
        server.terminate().expect("SIGTERM is sent");
        let_the_drain_begin();
        // The idle connection is closed, before any request of its client's; a new one is refused.
        let mut rest = Vec::new();
        assert!(idle.read_to_end(&mut rest).is_ok() && rest.is_empty(), "{binary}: the idle connection stayed open");
        assert!(TcpStream::connect(server.address).is_err(), "{binary}: a new connection was accepted");

        let last = messages(&call.join().unwrap()).pop().expect("at least one event");
        assert_eq!(last["id"], 7, "{binary}: {last}");
        let text = last["result"]["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("Payroll for 3 employees"), "{binary}: the call was cut: {last}");
        let status = server.wait_for_exit(PROMPTLY).unwrap_or_else(|| panic!("{binary} still runs"));
        assert!(status.success(), "{binary}: {status}");
    }
}

#[test]
fn a_request_on_its_way_is_answered_and_ready_turns_503() {
    for binary in &chapter_binaries_from(1) {
        let mut server = start(binary, &[]);
        let mut probe = TcpStream::connect(server.address).expect("it connects");
        probe.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // Half a head, then the drain, then the rest: the request had begun.
        probe.write_all(b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
        thread::sleep(Duration::from_millis(100));
        server.terminate().expect("SIGTERM is sent");
        let_the_drain_begin();
        probe.write_all(b"\r\n").unwrap();
        let mut answer = Vec::new();
        let _ = probe.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{binary}: {answer}");
        assert!(
            answer.contains("\r\nConnection: close\r\n") && answer.ends_with("\r\n\r\ndraining\n"),
            "{binary}: {answer}"
        );
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
        let stream = read_to_end_meanwhile(stream, raw);

        let signalled = Instant::now();
        let status = terminate_and_wait(&mut server, binary, Duration::from_secs(6));
        assert!(status.success(), "{binary}: {status}");
        assert!(signalled.elapsed() >= Duration::from_secs(1), "{binary}: exited before the drain's deadline");
        let last = messages(&stream.join().unwrap()).pop().expect("at least one event");
        assert_eq!(last["id"], 5, "{binary}: {last}");
        assert_eq!(last["error"]["code"], -32603, "{binary}: {last}");
        assert_eq!(
            last["error"]["message"],
            "Internal error: the server is stopping, and the call did not end in time"
        );
    }
}

#[test]
fn a_second_signal_ends_the_drain_at_once() {
    let binary = &chapter_binaries_from(16)[0];
    let mut server = start(binary, &[]);
    let session = open_session(server.address, json!({ "elicitation": {} }));
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": { "name": "approve_payroll" } });
    let mut stream = replay::open(server.address, &post(Some(&session), &call)).expect("the call is sent");
    read_until(&mut stream, &mut Vec::new(), "elicitation/create");
    server.terminate().expect("SIGTERM is sent");
    let_the_drain_begin();
    assert!(server.wait_for_exit(Duration::from_millis(500)).is_none(), "{binary}: the call's drain did not hold it");
    // Still running, draining: a new connection is refused.
    assert!(TcpStream::connect(server.address).is_err(), "{binary}: a new connection was accepted in the drain");
    let status = terminate_and_wait(&mut server, binary, PROMPTLY);
    assert!(!status.success(), "{binary}: the second SIGTERM drained again: {status}");
}

#[test]
fn a_listen_ends_with_its_result_and_a_sessions_stream_ends() {
    for binary in &chapter_binaries_from(17) {
        let mut server = start(binary, &[]);
        let (listening, raw) = listen(server.address, json!("l"), &["payroll://last-run"]);
        let listening = read_to_end_meanwhile(listening, raw);
        let session = open_session(server.address, json!({}));
        let get = request("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], "");
        let mut session_stream = replay::open(server.address, &get).expect("the GET is sent");
        let mut session_raw = Vec::new();
        read_until(&mut session_stream, &mut session_raw, "\r\n\r\n");
        assert!(String::from_utf8_lossy(&session_raw).starts_with("HTTP/1.1 200"), "{binary}");
        let session_stream = read_to_end_meanwhile(session_stream, session_raw);

        let status = terminate_and_wait(&mut server, binary, PROMPTLY);
        assert!(status.success(), "{binary}: {status}");
        let last = messages(&listening.join().unwrap()).pop().expect("at least the acknowledgment");
        assert_eq!(last["id"], "l", "{binary}: the listen ended without its result: {last}");
        assert!(last.get("result").is_some(), "{binary}: {last}");
        let session_raw = session_stream.join().unwrap();
        assert!(String::from_utf8_lossy(&session_raw).ends_with("0\r\n\r\n"), "{binary}: not ended as a chunked body");
    }
}
