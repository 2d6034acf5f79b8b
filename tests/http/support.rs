//! What the modules share: the starter's own binary, attacked over raw sockets, which
//! must still answer a normal `tools/call` after each attack; and the base itself,
//! served in this process with knobs a binary does not have.

use std::net::{SocketAddr, TcpListener};
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::http::{self, Config, Request, Response};
use mcp_workbook::replay::RunningServer;

use crate::common;
use crate::common::raw::send;

pub const STARTER: &str = env!("CARGO_BIN_EXE_ch10-starter");
pub const PING_ME: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"PingME"}}"#;

/// The starter, with `args`.
pub fn start(args: &[&str]) -> RunningServer {
    common::start(STARTER, args)
}

/// A POST of `body` to /mcp with the headers a real client sends, plus `extra` lines.
pub fn post(extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         {extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The server answers a normal tool call, whole.
pub fn assert_serves(server: &mut RunningServer, after: &str) {
    assert!(server.is_running(), "the starter died after {after}:\n{}", server.stderr());
    let answer = send(server.address, &post("Connection: close\r\n", PING_ME));
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"),
        "after {after}, a normal call got {answer:?}\n{}",
        server.stderr()
    );
}

/// Threads and open files of a process (Linux).
pub fn footprint(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let threads = status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap();
    let files = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    (threads, files)
}

/// Wait (a few seconds at most: refusals linger up to 2 s) until the footprint is back.
pub fn assert_no_leak(server: &RunningServer, baseline: (usize, usize)) {
    let started = Instant::now();
    let mut now = footprint(server.pid());
    while now != baseline && started.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(100));
        now = footprint(server.pid());
    }
    assert_eq!(now, baseline, "threads and files, after vs before");
}

/// A refusal from the door, byte for byte: it has no `Date`, so all of it is fixed.
pub fn door_refusal(status_line: &str, message: &str) -> String {
    let body = format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{message}"}}}}"#);
    format!(
        "{status_line}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The body of the (last) answer in `answer`.
pub fn body_of(answer: &str) -> &str {
    answer.rsplit_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// Serve `handler` on a free port with these deadlines, in a thread of this process.
pub fn serve(config: Config, handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || http::serve_listener(listener, config, handler));
    address
}

pub fn quick() -> Config {
    Config { keep_alive_timeout: Duration::from_secs(1), request_timeout: Duration::from_secs(1), ..Config::default() }
}

/// Deadlines long enough that nothing in these tests times out by itself, but for a
/// short grace before a request must keep the minimum rate (500 bytes a second).
pub fn patient() -> Config {
    Config {
        keep_alive_timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(20),
        request_grace: Duration::from_millis(500),
        min_bytes_per_second: 500,
        ..Config::default()
    }
}

pub fn echo(request: &Request) -> Response {
    Response::json(200, format!(r#"{{"method":"{}","bytes":{}}}"#, request.method, request.body.len()))
}
