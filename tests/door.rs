//! The door holds against hostile clients: each class of attack found against the old
//! base (issue "The base, rebuilt") is here, sent over raw sockets to the starter's
//! own binary, and after each one the starter must still answer a normal `tools/call`.
//!
//! - malformed or ambiguous framing is refused with the right status and the
//!   connection closed, and nothing hidden behind it is ever answered (smuggling);
//! - what `tiny_http` answers (HEAD, its own errors) comes back whole, and the
//!   connection goes on;
//! - every resource has a cap and every wait a deadline: connections, bodies, heads,
//!   clients that never read; after a barrage, no thread or file is left behind.
//!
//! Deadlines are tested on the base itself, in this process, with short timeouts
//! (`tests/base.rs`), so that no test waits 30 seconds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::replay::RunningServer;

mod common;
use common::raw::{connect, read_all, read_answer, send, send_then_stop, status};

const STARTER: &str = env!("CARGO_BIN_EXE_ch10-starter");
const PING_ME: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"PingME"}}"#;

/// The starter, with `args`.
fn start(args: &[&str]) -> RunningServer {
    common::start(STARTER, args)
}

/// A POST of `body` to /mcp with the headers a real client sends, plus `extra` lines.
fn post(extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         {extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The server answers a normal tool call, whole.
fn assert_serves(server: &mut RunningServer, after: &str) {
    assert!(server.is_running(), "the starter died after {after}:\n{}", server.stderr());
    let answer = send(server.address, &post("Connection: close\r\n", PING_ME));
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"),
        "after {after}, a normal call got {answer:?}\n{}",
        server.stderr()
    );
}

/// Threads and open files of a process (Linux).
fn footprint(pid: u32) -> (usize, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let threads = status.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap();
    let files = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    (threads, files)
}

/// Wait (a few seconds at most: refusals linger up to 2 s) until the footprint is back.
fn assert_no_leak(server: &RunningServer, baseline: (usize, usize)) {
    let started = Instant::now();
    let mut now = footprint(server.pid());
    while now != baseline && started.elapsed() < Duration::from_secs(10) {
        thread::sleep(Duration::from_millis(100));
        now = footprint(server.pid());
    }
    assert_eq!(now, baseline, "threads and files, after vs before");
}

/// Each case: what it is, the bytes, the status the door must refuse it with.
const REFUSED: &[(&str, &[u8], u16)] = &[
    (
        "a bare LF hiding a second Content-Length (the old crash: one reader saw 0, the other 100 GB)",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: b\nContent-Length: 0\r\nContent-Length: 100000000000\r\n\r\n",
        400,
    ),
    ("bare LF line ends throughout", b"POST /mcp HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n{}", 400),
    ("a bare CR inside a line", b"POST /mcp HTTP/1.1\r\nHost: localhost\rX: y\r\nContent-Length: 0\r\n\r\n", 400),
    (
        "Content-Length and Transfer-Encoding together",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    (
        "Content-Length: 0 with a chunked body behind it",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "two equal Content-Lengths",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        400,
    ),
    (
        "two different Content-Lengths",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}",
        400,
    ),
    ("a Content-Length list", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2, 2\r\n\r\n{}", 400),
    ("a signed Content-Length", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: +2\r\n\r\n{}", 400),
    ("a negative Content-Length", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n", 400),
    (
        "Transfer-Encoding twice",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    // RFC 9112, section 6.3, rule 4: chunked not the final coding is 400, and the close.
    ("a Transfer-Encoding other than chunked", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    (
        "chunked, not last",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
        400,
    ),
    ("an empty Transfer-Encoding", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ,\r\n\r\n", 400),
    (
        "chunked twice in one Transfer-Encoding",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    // Framed by chunks, but gzip under them, which the door cannot decode: 501 (section 6.1).
    (
        "gzip under chunked",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
    ),
    (
        "Transfer-Encoding in HTTP/1.0",
        b"POST /mcp HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    ("the HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    ("an HTTP/2.0 request line", b"POST /mcp HTTP/2.0\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", 505),
    ("HTTP/1.2", b"GET /mcp HTTP/1.2\r\nHost: localhost\r\n\r\n", 505),
    ("HTTP/0.9", b"GET /mcp\r\n\r\n", 400),
    ("a lowercase version", b"GET /mcp http/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("two spaces in the request line", b"GET  /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a method that is not a token", b"G(T /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a control character in the target", b"GET /m\x01cp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a target that is not a path", b"GET mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("CONNECT's authority form", b"CONNECT localhost:80 HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("no Host in HTTP/1.1", b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400),
    ("two Hosts", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a space in it", b"POST /mcp HTTP/1.1\r\nHost: local host\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with user info", b"POST /mcp HTTP/1.1\r\nHost: user@localhost\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a path", b"POST /mcp HTTP/1.1\r\nHost: localhost/mcp\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host whose port is not digits", b"POST /mcp HTTP/1.1\r\nHost: localhost:80a\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a colon and no port", b"POST /mcp HTTP/1.1\r\nHost: localhost:\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with two ports", b"POST /mcp HTTP/1.1\r\nHost: localhost:80:81\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a bad percent-encoding", b"POST /mcp HTTP/1.1\r\nHost: local%zzhost\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host without its closing bracket", b"POST /mcp HTTP/1.1\r\nHost: [::1\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host that is no address", b"POST /mcp HTTP/1.1\r\nHost: [localhost]\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host followed by no port", b"POST /mcp HTTP/1.1\r\nHost: [::1]8080\r\nContent-Length: 0\r\n\r\n", 400),
    ("a target whose authority has a port that is not digits", b"GET http://localhost:80a/mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a space before the colon", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length : 0\r\n\r\n", 400),
    ("a folded header line", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n", 400),
    ("a NUL in a value", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n", 400),
    ("a byte over 127 in a value", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n", 400),
    ("a line without a colon", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nnonsense\r\nContent-Length: 0\r\n\r\n", 400),
    ("an Expect other than 100-continue", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: magic\r\nContent-Length: 0\r\n\r\n", 417),
    (
        "a declared body of 100 GB",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000000000\r\n\r\n{\"jsonrpc\"",
        413,
    ),
    (
        "a length past u64",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
        413,
    ),
    (
        "a chunk size that is not hexadecimal",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "a chunk size past u64",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nx\r\n",
        400,
    ),
    (
        "a chunk larger than the limit",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nx\r\n",
        413,
    ),
    (
        "a chunk longer than its size",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "a chunk line with a bare LF",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n",
        400,
    ),
];

#[test]
fn every_ambiguous_or_malformed_request_is_refused_and_the_starter_goes_on() {
    let mut server = start(&[]);
    let baseline = footprint(server.pid()); // one thread, accepting
    for (what, bytes, expected) in REFUSED {
        let answer = send(server.address, bytes);
        assert_eq!(status(&answer), *expected, "{what}: {answer:?}");
        assert!(answer.contains("Connection: close"), "{what}: a refusal closes the connection: {answer:?}");
        assert!(answer.contains(r#""code":-32600"#), "{what}: a refusal carries a JSON-RPC error: {answer:?}");
        assert_serves(&mut server, what);
    }
    assert_no_leak(&server, baseline);
}

/// A `Host` that is an IP literal with a port, `[::1]:8080`, is a valid `uri-host [ ":" port ]`:
/// the door lets it through, and the starter's guard takes `[::1]` for loopback.
#[test]
fn a_host_in_brackets_with_a_port_is_served() {
    let server = start(&[]);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
}

#[test]
fn a_head_over_64_kib_or_with_too_many_headers_is_431() {
    let mut server = start(&[]);
    let long = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Long: {}\r\n\r\n", "a".repeat(70 * 1024));
    assert_eq!(status(&send(server.address, long.as_bytes())), 431);
    let many: String = (0..101).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let many = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\n{many}\r\n");
    assert_eq!(status(&send(server.address, many.as_bytes())), 431);
    assert_serves(&mut server, "long heads");
}

/// Two requests in one write: the second is what an attacker hides behind the first.
/// Whatever the first is, the answer to the hidden one (id 666) must never be sent.
#[test]
fn nothing_hidden_behind_a_request_is_ever_answered() {
    let mut server = start(&[]);
    let hidden = String::from_utf8(post("", r#"{"jsonrpc":"2.0","id":666,"method":"ping"}"#)).unwrap();
    let cases = [
        // A Content-Length longer than the chunked body: the old door read the length,
        // tiny_http the chunks, and the rest became "the next request".
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 300\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{hidden}"
        ),
        // A request hidden behind a bare LF, inside what one reader takes for a header.
        format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: b\nContent-Length: {}\r\n\r\n{hidden}", hidden.len()),
        // A Content-Length of 0 before a chunked body that holds the hidden request.
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{hidden}\r\n0\r\n\r\n",
            hidden.len()
        ),
        // A coding that does not say where the body ends: a reader that takes it for no
        // body at all reads the hidden request next (RFC 9112, section 6.3, rule 4).
        format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n{hidden}"),
    ];
    for case in &cases {
        let answer = send(server.address, case.as_bytes());
        assert_eq!(status(&answer), 400, "{answer:?}");
        assert!(!answer.contains("666"), "a hidden request was answered: {answer:?}");
        assert_serves(&mut server, "a smuggling attempt");
    }
}

/// `TE: chunked` asks for a chunked answer; the old door expected a length and took the
/// chunks for the next answer. The door drops `TE`, and the answers come in order.
#[test]
fn a_te_header_changes_nothing_and_pipelined_answers_come_in_order() {
    let server = start(&[]);
    let mut both = post("TE: chunked\r\n", PING_ME);
    both.extend(post("Connection: close\r\n", r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#));
    let answer = send(server.address, &both);
    assert!(!answer.to_ascii_lowercase().contains("transfer-encoding"), "{answer:?}");
    let first = answer.find("BISMILLAH").expect("the first answer");
    let second = answer.find(r#""id":2"#).expect("the second answer");
    assert!(first < second, "{answer:?}");
    assert_eq!(answer.matches("HTTP/1.1 200").count(), 2, "{answer:?}");
}

/// `curl --http2 http://...` asks to switch to HTTP/2 with `Upgrade: h2c`. A server may
/// ignore that (RFC 9110, section 7.8): the request is answered in HTTP/1.1, and the
/// connection goes on (the old base gave the rest of the stream to the request).
#[test]
fn an_upgrade_request_is_answered_in_http_1_1() {
    let server = start(&[]);
    let mut stream = connect(server.address);
    let upgrade = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n";
    stream.write_all(&post(upgrade, PING_ME)).unwrap();
    stream.write_all(&post("Connection: close\r\n", PING_ME)).unwrap();
    let answer = read_all(&mut stream);
    assert_eq!(answer.matches("BISMILLAH").count(), 2, "{answer:?}");
    assert!(!answer.contains("101"), "{answer:?}");
}

/// A HEAD answer has headers and no body (the old door waited for the body `tiny_http`
/// declared and never sent). The connection carries on to the next request.
#[test]
fn a_head_answer_has_no_body_and_the_connection_goes_on() {
    let server = start(&[]);
    let mut stream = connect(server.address);
    // Refused by the starter's guard (a foreign Host), answered by tiny_http: 403.
    stream.write_all(b"HEAD /mcp HTTP/1.1\r\nHost: evil.example\r\n\r\n").unwrap();
    stream.write_all(&post("Connection: close\r\n", PING_ME)).unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer:?}");
    let second = answer.find("HTTP/1.1 200").expect("the next request is answered");
    assert!(!answer[..second].contains("jsonrpc"), "a HEAD answer carries no body: {answer:?}");
    assert!(answer[second..].contains("BISMILLAH"), "{answer:?}");
}

/// Chunked bodies are decoded by the door: extensions and trailer fields are legal.
#[test]
fn chunked_bodies_with_extensions_and_trailers_are_served() {
    let server = start(&[]);
    let (first, second) = PING_ME.split_at(20);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n{:x};name=value\r\n{first}\r\n{:X}\r\n{second}\r\n0\r\nX-Checksum: 1\r\n\r\n",
        first.len(),
        second.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
}

#[test]
fn expect_100_continue_is_answered_by_the_door_then_the_request() {
    let server = start(&[]);
    let answer = send(server.address, &post("Expect: 100-continue\r\nConnection: close\r\n", PING_ME));
    assert!(answer.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"), "{answer:?}");
    // A body over the limit is refused before the client is told to send it.
    let answer = send(
        server.address,
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5000000\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
}

#[test]
fn http_1_0_and_absolute_targets_are_served() {
    let server = start(&[]);
    let answer = send(
        server.address,
        format!(
            "POST /mcp HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{PING_ME}",
            PING_ME.len()
        )
        .as_bytes(),
    );
    assert!(answer.contains("BISMILLAH") && answer.contains("Connection: close"), "{answer:?}");
    // The absolute form names the host itself, and wins over `Host` (RFC 9112, 3.2.2).
    let answer = send(
        server.address,
        format!(
            "POST http://localhost:1/mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{PING_ME}",
            PING_ME.len()
        )
        .as_bytes(),
    );
    assert!(answer.contains("BISMILLAH"), "{answer:?}");
}

/// Python's urllib, requests and httpx send the whole body before they read: the door
/// refuses at the head, then reads and drops what still comes (RFC 9112, section 9.6),
/// so the client reads the 413 instead of a reset.
#[test]
fn a_client_that_sends_its_whole_oversized_body_first_reads_the_413() {
    let mut server = start(&["--max-body-bytes", "1024"]);
    let body = "x".repeat(3 * 1024 * 1024);
    let mut stream = connect(server.address);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n", body.len());
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).expect("the whole body is taken, not reset");
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
    assert!(answer.contains("larger than 1024 bytes"), "{answer:?}");
    assert_serves(&mut server, "an oversized body");
}

#[test]
fn a_client_that_holds_a_refused_connection_open_blocks_nobody() {
    let mut server = start(&[]);
    let mut holder = connect(server.address);
    let head = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n", 4 * 1024 * 1024 + 1);
    holder.write_all(head.as_bytes()).unwrap();
    let mut status = [0u8; 12];
    holder.read_exact(&mut status).unwrap();
    assert_eq!(&status, b"HTTP/1.1 413");
    for _ in 0..3 {
        assert_serves(&mut server, "a held refusal");
    }
}

/// A client that sends request after request and never reads an answer: its door waits
/// (up to the write deadline) while everyone else is served.
#[test]
fn a_client_that_never_reads_blocks_nobody() {
    let mut server = start(&["--workers", "1"]);
    let mut greedy = connect(server.address);
    let list = post("", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let pipelined: Vec<u8> = list.iter().copied().cycle().take(list.len() * 2000).collect();
    greedy.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = greedy.write_all(&pipelined); // stops when the buffers fill up: nobody reads
    for _ in 0..3 {
        assert_serves(&mut server, "a client that never reads");
    }
    drop(greedy);
}

/// Send PingME on a kept-alive connection and read its whole answer: its body.
fn call_kept_alive(stream: &mut TcpStream) -> String {
    stream.write_all(&post("", PING_ME)).unwrap();
    read_answer(stream).body
}

/// The cap on connections: a newcomer past it is served, and the connection idle
/// longest is closed to make room (it used to be the newcomer that heard 503, for as
/// long as the others stayed open). `tests/base.rs` shows the 503 that is left: when
/// every connection is being served.
#[test]
fn at_the_cap_the_connection_idle_longest_makes_room() {
    let mut server = start(&["--max-connections", "4"]);
    let mut held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut stream = connect(server.address);
            assert!(call_kept_alive(&mut stream).contains("BISMILLAH")); // answered, then idle
            thread::sleep(Duration::from_millis(20)); // each idle a little longer than the next
            stream
        })
        .collect();
    let answer = send(server.address, &post("Connection: close\r\n", PING_ME));
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
    assert!(matches!(held[0].read(&mut [0; 1]), Ok(0) | Err(_)), "the connection idle longest was closed");
    for stream in &mut held[1..] {
        assert!(call_kept_alive(stream).contains("BISMILLAH"), "the others go on");
    }
    assert_serves(&mut server, "the cap");
}

/// Hundreds of idle connections (the old base stopped accepting for good at the file
/// limit): the server holds at most its cap, refuses the rest, and serves again once
/// they are gone, with its threads and files back where they were.
#[test]
fn hundreds_of_idle_connections_leave_no_trace() {
    let mut server = start(&[]);
    let baseline = footprint(server.pid()); // one thread, accepting
    let idle: Vec<TcpStream> = (0..400).filter_map(|_| TcpStream::connect(server.address).ok()).collect();
    thread::sleep(Duration::from_millis(500));
    let (threads, files) = footprint(server.pid());
    assert!(files < 512, "{files} files open with 400 idle connections (cap 256)");
    assert!(threads < 256 + 64, "{threads} threads with 400 idle connections (cap 256)");
    drop(idle);
    assert_no_leak(&server, baseline);
    assert_serves(&mut server, "400 idle connections");
}

// ---------------------------------------------------------------------------
// A crowd at the door (issue 24): idle and slow connections past the cap lock nobody
// out. Each attack holds its crowd open while a client calls PingME on a new
// connection each time; every call must be answered, the threads stay within the cap
// and its slack (the base page), and once the crowd has gone nothing is left behind.
// How many calls are answered while a crowd keeps reconnecting, and how fast, is the
// benchmark's business: `bench/crowd.py`.
// ---------------------------------------------------------------------------

/// The cap in these tests, and the threads a server may run past it (`THREADS_PAST_THE_CAP`).
const CAP: usize = 16;
const PAST_THE_CAP: usize = 16;

/// `count` connections to `address`, each sent `first` and then left open.
fn crowd(address: SocketAddr, count: usize, first: &[u8]) -> Vec<TcpStream> {
    (0..count)
        .map(|_| {
            let mut stream = connect(address);
            stream.write_all(first).unwrap();
            stream
        })
        .collect()
}

/// Half a head: slowloris between two of its bytes.
const HALF_A_HEAD: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: a";
/// A whole head, and the first bytes of the body it announces.
const HALF_A_BODY: &[u8] = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\"";

fn assert_a_crowd_locks_nobody_out(what: &str, make_crowd: impl Fn(SocketAddr) -> Vec<TcpStream>) {
    let mut server = start(&["--max-connections", &CAP.to_string()]);
    let baseline = footprint(server.pid());
    let crowd = make_crowd(server.address);
    for call in 0..40 {
        let answer = send(server.address, &post("Connection: close\r\n", PING_ME));
        assert!(
            answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"),
            "{what}: call {call} got {answer:?}"
        );
    }
    let (threads, files) = footprint(server.pid());
    assert!(threads <= 1 + CAP + PAST_THE_CAP, "{what}: {threads} threads with a cap of {CAP}");
    assert!(files <= baseline.1 + CAP + PAST_THE_CAP, "{what}: {files} files open with a cap of {CAP}");
    drop(crowd);
    assert_no_leak(&server, baseline);
    assert_serves(&mut server, what);
}

/// The crowd that used to lock everyone out: connections that never send a byte. It
/// takes room only from itself, and a kept-alive client from before it is not touched.
#[test]
fn an_idle_crowd_past_the_cap_locks_nobody_out() {
    assert_a_crowd_locks_nobody_out("an idle crowd", |address| {
        let mut kept = connect(address);
        assert!(call_kept_alive(&mut kept).contains("BISMILLAH"));
        let mut crowd = crowd(address, 200, b"");
        thread::sleep(Duration::from_millis(200)); // every one has a door
        assert!(call_kept_alive(&mut kept).contains("BISMILLAH"), "the kept-alive client went on");
        crowd.push(kept);
        crowd
    });
}

/// Slowloris: heads that never end.
#[test]
fn a_slowloris_crowd_past_the_cap_locks_nobody_out() {
    assert_a_crowd_locks_nobody_out("a slowloris crowd", |address| crowd(address, 100, HALF_A_HEAD));
}

/// Bodies that never end.
#[test]
fn a_slow_body_crowd_past_the_cap_locks_nobody_out() {
    assert_a_crowd_locks_nobody_out("a slow-body crowd", |address| crowd(address, 100, HALF_A_BODY));
}

/// All of them at once, and clients that send request after request and never read.
#[test]
fn a_mixed_crowd_past_the_cap_locks_nobody_out() {
    assert_a_crowd_locks_nobody_out("a mixed crowd", |address| {
        let list = post("", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        let deaf: Vec<u8> = list.iter().copied().cycle().take(list.len() * 500).collect();
        let mut all = crowd(address, 60, b"");
        all.extend(crowd(address, 30, HALF_A_HEAD));
        all.extend(crowd(address, 30, HALF_A_BODY));
        for _ in 0..10 {
            let mut stream = connect(address);
            stream.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = stream.write_all(&deaf); // until the buffers fill: nobody reads
            all.push(stream);
        }
        all
    });
}

/// The hang the old base showed about once in 300 requests: `tiny_http` gives each new
/// connection to its thread pool, which can leave it queued behind threads parked on
/// idle keep-alive connections. Behind the door `tiny_http` never sees a new
/// connection after start. Counted, not timed: every request must get its answer.
#[test]
fn ten_thousand_new_connections_with_idle_ones_held_are_all_answered() {
    let server = start(&[]);
    let held: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut stream = connect(server.address);
            stream.write_all(&post("", PING_ME)).unwrap();
            let mut first = [0u8; 12];
            stream.read_exact(&mut first).unwrap();
            stream
        })
        .collect();
    let ping = post("Connection: close\r\n", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
    let mut unanswered = 0;
    for _ in 0..10_000 {
        let mut stream = connect(server.address);
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        stream.write_all(&ping).unwrap();
        if !read_all(&mut stream).starts_with("HTTP/1.1 200") {
            unanswered += 1;
        }
    }
    assert_eq!(unanswered, 0, "requests left unanswered");
    drop(held);
}

/// Why the door opens its lanes to `tiny_http` one at a time and never again: alone,
/// `tiny_http` 0.12 strands a connection that arrives just after another one (its
/// `TaskPool::spawn` counts a thread it has just woken as still waiting, queues the
/// second connection's task, and the woken thread takes the first). If the first stays
/// open, idle, the second is never served. Seen in about 3 rounds of 4 here; the test
/// asks for one in 20.
#[test]
fn tiny_http_alone_strands_a_connection_that_arrives_behind_an_idle_one() {
    let mut stranded = 0;
    for _ in 0..20 {
        let server = std::sync::Arc::new(tiny_http::Server::http("127.0.0.1:0").unwrap());
        let address = server.server_addr().to_ip().unwrap();
        let worker = server.clone();
        thread::spawn(move || {
            for request in worker.incoming_requests() {
                let _ = request.respond(tiny_http::Response::from_string("ok"));
            }
        });
        let ask = |stream: &mut TcpStream| {
            stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
            stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n").unwrap();
            let mut status = [0u8; 12];
            stream.read_exact(&mut status).is_ok()
        };
        // Busy the four threads the pool keeps, then let a fifth go idle.
        let busy: Vec<TcpStream> = (0..4)
            .map(|_| {
                let mut stream = TcpStream::connect(address).unwrap();
                assert!(ask(&mut stream));
                stream
            })
            .collect();
        let mut fifth = TcpStream::connect(address).unwrap();
        assert!(ask(&mut fifth));
        drop(fifth);
        thread::sleep(Duration::from_millis(20));
        // Two connections at once: the first stays idle, the second asks.
        let _idle = TcpStream::connect(address).unwrap();
        let mut asking = TcpStream::connect(address).unwrap();
        if !ask(&mut asking) {
            stranded += 1;
        }
        drop(busy);
    }
    assert!(stranded > 0, "tiny_http served every connection: is the TaskPool race fixed upstream?");
}

// ---------------------------------------------------------------------------
// Found by a second audit of a release build (issue 10, second round).
// ---------------------------------------------------------------------------

/// A refusal from the door, byte for byte: it has no `Date`, so all of it is fixed.
fn door_refusal(status_line: &str, message: &str) -> String {
    let body = format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{message}"}}}}"#);
    format!(
        "{status_line}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The body of the (last) answer in `answer`.
fn body_of(answer: &str) -> &str {
    answer.rsplit_once("\r\n\r\n").map_or("", |(_, body)| body)
}

/// A chunk size of 2^64 - 1 after a first chunk: added to the body so far, it wrapped
/// around to a small number (release builds do not check), passed the limit, and the
/// door read "the chunk" into memory without end (400 MiB in a second). Whatever the
/// sizes, the room left under the limit decides.
#[test]
fn a_chunk_size_that_would_overflow_the_running_total_is_413() {
    let mut server = start(&[]);
    for (first, size) in
        [("1\r\n{", "ffffffffffffffff"), ("2\r\n{}", "fffffffffffffffe"), ("1\r\n{", "fffffffffffffff0")]
    {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n{first}\r\n{size}\r\nxxxxxxxx"
        );
        let answer = send_then_stop(server.address, request.as_bytes());
        let expected = door_refusal("HTTP/1.1 413 Content Too Large", "Request body larger than 4194304 bytes");
        assert_eq!(answer, expected, "a chunk of {size} after {first:?}");
        assert_serves(&mut server, "a chunk size that overflows");
    }
}

/// `Connection` names hop-by-hop headers for a proxy to remove. The door is no proxy:
/// a client that lists `Origin` there must not make the door forget its `Origin` (the
/// guard's 403 was skipped), nor any other header the handler reads.
#[test]
fn a_connection_header_cannot_delete_an_end_to_end_header() {
    let server = start(&[]);
    let answer = send(server.address, &post("Origin: http://evil.example\r\nConnection: Origin, close\r\n", PING_ME));
    assert_eq!(status(&answer), 403, "{answer:?}");
    assert_eq!(
        body_of(&answer),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Origin 'http://evil.example' is not allowed"}}"#
    );
    let answer = send(
        server.address,
        &post("MCP-Protocol-Version: 1999-01-01\r\nConnection: MCP-Protocol-Version, close\r\n", PING_ME),
    );
    assert_eq!(status(&answer), 400, "{answer:?}");
    assert!(body_of(&answer).contains("1999-01-01"), "{answer:?}");
}

/// A refusal's body is JSON, whatever the value it repeats: a tab (which a header value
/// may hold) is escaped as JSON requires (`\u0009`), not sent raw.
#[test]
fn a_refusal_body_is_valid_json_whatever_it_repeats() {
    let server = start(&[]);
    let answer = send(server.address, b"POST /mcp HTTP/1.0\r\nTransfer-Encoding: a\tb\x7fc\r\n\r\n");
    // DEL is no field byte, so that one is refused for what it is; a tab alone passes.
    assert_eq!(status(&answer), 400, "{answer:?}");
    let answer = send(server.address, b"POST /mcp HTTP/1.0\r\nTransfer-Encoding: a\tb\r\n\r\n");
    assert_eq!(
        answer,
        door_refusal("HTTP/1.1 400 Bad Request", r"Bad Request: HTTP/1.0 has no Transfer-Encoding (a\u0009b)")
    );
    serde_json::from_str::<serde_json::Value>(body_of(&answer)).expect("the body is JSON");
}

/// RFC 9110, section 10.1.1: a server MUST ignore `100-continue` from an HTTP/1.0
/// client (which does not know the interim answer), and every expectation counts, not
/// only the first `Expect` header's.
#[test]
fn expect_is_read_whole_and_ignored_from_http_1_0() {
    let server = start(&[]);
    let request = format!(
        "POST /mcp HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n\
         Content-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "no 100 Continue for HTTP/1.0: {answer:?}");
    assert!(answer.contains("BISMILLAH"), "{answer:?}");
    let refused =
        door_refusal("HTTP/1.1 417 Expectation Failed", "Expectation Failed: only 100-continue is understood");
    for expect in [
        "Expect: 100-continue\r\nExpect: foo\r\n",
        "Expect: 100-continue, foo\r\n",
        "Expect: foo\r\nExpect: 100-continue\r\n",
    ] {
        assert_eq!(send(server.address, &post(expect, PING_ME)), refused, "{expect:?}");
    }
}

/// RFC 9112, section 3.2.2: the authority of an absolute-form target takes the place
/// of `Host`, also when there is no `Host` to replace (HTTP/1.0 may leave it out).
#[test]
fn an_absolute_target_is_the_host_of_an_http_1_0_request_without_one() {
    let server = start(&[]);
    let request = format!(
        "POST http://127.0.0.1/mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.contains("BISMILLAH"), "{answer:?}");
}

/// A client may send more than the request the door answers before it closes: the
/// rest of a pipeline, or bytes after a `Connection: close` request. Closed with them
/// unread, the connection is reset, and the reset can destroy the answer on its way
/// (RFC 9112, section 9.6). Every close goes through the gentle one: the client reads
/// the whole answer, then the end of the stream, never a reset.
#[test]
fn a_connection_closed_with_unread_input_is_closed_gently() {
    let server = start(&[]);
    let junk = "x".repeat(64 * 1024);
    let requests = [
        String::from_utf8(post("Connection: close\r\n", PING_ME)).unwrap(),
        format!(
            "POST /mcp HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{PING_ME}",
            PING_ME.len()
        ),
    ];
    for request in &requests {
        for _ in 0..5 {
            let mut stream = connect(server.address);
            stream.write_all(format!("{request}{junk}").as_bytes()).unwrap();
            let mut answer = Vec::new();
            let ended = stream.read_to_end(&mut answer);
            let answer = String::from_utf8_lossy(&answer);
            assert!(ended.is_ok(), "{ended:?} after {answer:?}");
            assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
        }
    }
}

/// A client that stops sending in the middle of a head hears that its head is
/// incomplete (it was told about "a bare CR or LF" it never sent, or nothing at all).
#[test]
fn a_head_cut_short_by_the_client_is_refused_as_incomplete() {
    let server = start(&[]);
    let refused = door_refusal(
        "HTTP/1.1 400 Bad Request",
        "Bad Request: the head is incomplete: the client stopped sending before its empty line",
    );
    for cut in ["POST /mcp HTTP/1.1\r\nHost: 127", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", "POST /mcp HTTP/1.1\r"]
    {
        assert_eq!(send_then_stop(server.address, cut.as_bytes()), refused, "{cut:?}");
    }
    // Nothing at all, or blank lines only, is not a request: the connection just ends.
    assert_eq!(send_then_stop(server.address, b"\r\n\r\n"), "");
}
