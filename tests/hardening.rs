//! Chapter 7's hardening, where a transcript cannot show it: several connections at
//! once (the workers), a request with no `Host` at all, the token read from the
//! environment, and the warning printed for an address other machines can reach.
//!
//! What a slow client holds, precisely: the base gives every connection a thread of
//! its own, which reads the whole request (head and body, within the request timeout)
//! before it takes a worker's turn. So a client that sends half its headers, half a
//! small body or half a large one holds only its own connection's thread, never a
//! worker, even when there is only one. (A slow tool holds its turn until it returns:
//! `tests/http/answers.rs` shows that with a handler that waits.)

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript::HttpRequest;

mod common;
use common::raw::send;

const BINARY: &str = env!("CARGO_BIN_EXE_ch07-hardening");

/// The chapter's server on a free loopback port, with `MCP_WORKBOOK_TOKEN` as `env`
/// sets it and otherwise unset, whatever the test's own environment holds.
fn start(args: &[&str], env: &[(&str, &str)]) -> RunningServer {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    let mut vars = vec![("MCP_WORKBOOK_TOKEN", None)];
    vars.extend(env.iter().map(|&(name, value)| (name, Some(value))));
    RunningServer::start_with_env(Path::new(BINARY), &args, &vars).expect("the chapter binary starts")
}

fn ping(headers: &[(&str, &str)]) -> HttpRequest {
    let mut all = vec![("Content-Type".to_string(), "application/json".to_string())];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers: all,
        body: r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#.into(),
    }
}

/// Open a connection and send `bytes` of a request, then leave it hanging.
fn hang(address: SocketAddr, bytes: &str) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.write_all(bytes.as_bytes()).unwrap();
    // Give the server time to queue the request and hand it to a worker.
    std::thread::sleep(Duration::from_millis(300));
    stream
}

/// A request head that promises a 4 KiB body, and the first bytes of it.
const SLOW_UPLOAD: &str = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                           Content-Length: 4096\r\n\r\n{\"jsonrpc\": \"2.0\", ";

#[test]
fn a_slow_upload_stalls_nobody_even_with_one_worker() {
    let server = start(&["--workers", "1"], &[]);
    let _slow = hang(server.address, SLOW_UPLOAD);
    let answer = replay::send(server.address, &ping(&[])).expect("the one worker answers");
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[test]
fn half_a_request_head_stalls_nobody_even_with_one_worker() {
    let server = start(&["--workers", "1"], &[]);
    let _half = hang(server.address, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le");
    assert_eq!(replay::send(server.address, &ping(&[])).unwrap().status, 200);
}

#[test]
fn half_a_small_body_stalls_nobody_even_with_one_worker() {
    let server = start(&["--workers", "1"], &[]);
    let head =
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{";
    let _half = hang(server.address, head);
    assert_eq!(replay::send(server.address, &ping(&[])).unwrap().status, 200);
}

#[test]
fn a_request_without_host_is_refused() {
    let server = start(&[], &[]);
    let body = r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;
    let request =
        format!("POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    let response = send(server.address, request.as_bytes());
    // HTTP/1.0 may leave `Host` out, so the base lets it through; the guard refuses.
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
}

#[test]
fn the_token_can_come_from_the_environment() {
    let server = start(&[], &[("MCP_WORKBOOK_TOKEN", "from-the-environment")]);
    assert_eq!(replay::send(server.address, &ping(&[])).unwrap().status, 401);
    let with_token = ping(&[("Authorization", "Bearer from-the-environment")]);
    assert_eq!(replay::send(server.address, &with_token).unwrap().status, 200);
}

#[test]
fn the_flag_wins_over_the_environment() {
    let server = start(&["--token", "from-the-flag"], &[("MCP_WORKBOOK_TOKEN", "from-the-environment")]);
    let old = ping(&[("Authorization", "Bearer from-the-environment")]);
    assert_eq!(replay::send(server.address, &old).unwrap().status, 401);
    let new = ping(&[("Authorization", "Bearer from-the-flag")]);
    assert_eq!(replay::send(server.address, &new).unwrap().status, 200);
}

#[test]
fn an_empty_token_is_no_token() {
    let server = start(&[], &[("MCP_WORKBOOK_TOKEN", "")]);
    assert_eq!(replay::send(server.address, &ping(&[])).unwrap().status, 200);
}

/// 192.0.2.1 is reserved for documentation (RFC 5737): no machine has it, so the bind
/// fails after the warning and nothing is ever exposed.
#[test]
fn an_address_other_machines_reach_prints_a_warning() {
    let output = Command::new(BINARY).args(["--bind", "192.0.2.1:0"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: binding to 192.0.2.1:0"), "{stderr}");
    assert!(!output.status.success());

    let mut quiet = Command::new(BINARY)
        .args(["--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(quiet.stdout.take().unwrap()).read_line(&mut line).unwrap();
    quiet.kill().unwrap();
    let output = quiet.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stderr), "", "a loopback address needs no warning");
}
