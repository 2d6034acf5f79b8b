//! The body limit holds, and the server survives clients that abuse it.
//!
//! `tiny_http` 0.12, when it drops a request whose body it has not read, first reads
//! the rest into a buffer as large as the declared remainder: `Content-Length:
//! 100000000000` made it try to allocate 100 GB and abort the whole process. The door
//! in `src/http.rs` answers `413` from the headers and closes the connection unread.
//! These tests send such requests over raw sockets and check that the server answers
//! them and then goes on answering others.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use mcp_workbook::replay::RunningServer;

const PING: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;

fn start(binary: &str, args: &[&str]) -> RunningServer {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    RunningServer::start(Path::new(binary), &args).expect("server starts")
}

fn connect(address: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// Send `head` (which must end in a blank line) and `body`, keep the connection open,
/// and read until the server closes it. Returns everything read, and how long it took.
fn send_and_read(address: SocketAddr, head: &str, body: &[u8]) -> (String, Duration) {
    let mut stream = connect(address);
    let started = Instant::now();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    // A reset after the answer is fine: the server closed with our bytes unread.
    let _ = stream.read_to_end(&mut answer);
    (String::from_utf8_lossy(&answer).into_owned(), started.elapsed())
}

fn ping(address: SocketAddr) -> String {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        PING.len()
    );
    send_and_read(address, &head, PING.as_bytes()).0
}

#[test]
fn a_huge_declared_body_is_answered_413_unread_and_the_server_goes_on() {
    let server = start(env!("CARGO_BIN_EXE_ch01-envelope"), &[]);
    let address = server.address;
    // Declares 100 GB, sends 27 bytes, and keeps its side open.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n"
    );
    let (answer, took) = send_and_read(address, &head, br#"{"jsonrpc": "2.0", "id": 1,"#);
    assert!(answer.starts_with("HTTP/1.1 413"), "expected 413, got: {answer:?}");
    assert!(answer.contains(r#""code":-32600"#), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    // Answered from the headers, and the connection closed by the server: no waiting.
    assert!(took < Duration::from_secs(5), "took {took:?}");

    let next = ping(address);
    assert!(next.starts_with("HTTP/1.1 200"), "the server must still answer, got: {next:?}\n{}", server.stderr());
    assert!(next.contains(r#""id": 1"#) || next.contains(r#""id":1"#), "{next}");
}

#[test]
fn a_client_that_holds_a_refused_connection_open_blocks_nobody() {
    let server = start(env!("CARGO_BIN_EXE_ch01-envelope"), &[]);
    let address = server.address;
    // Declares a body just over the limit, sends none of it, and never closes.
    let mut holder = connect(address);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        4 * 1024 * 1024 + 1
    );
    holder.write_all(head.as_bytes()).unwrap();
    let mut status = [0u8; 12];
    holder.read_exact(&mut status).unwrap();
    assert_eq!(&status, b"HTTP/1.1 413");
    // While it is still connected, others are served.
    for _ in 0..3 {
        assert!(ping(address).starts_with("HTTP/1.1 200"));
    }
    drop(holder);
}

#[test]
fn the_limit_is_a_flag_and_holds_for_sent_and_chunked_bodies() {
    let server = start(env!("CARGO_BIN_EXE_ch05-errors"), &["--max-body-bytes", "1024"]);
    let address = server.address;
    let big =
        format!(r#"{{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {{"pad": "{}"}}}}"#, "x".repeat(2000));

    // Declared and sent in full: refused all the same.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        big.len()
    );
    let (answer, _) = send_and_read(address, &head, big.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("larger than 1024 bytes"), "{answer}");

    // Chunked, so no length is declared: refused once more than the limit has arrived.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let chunked = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let (answer, _) = send_and_read(address, &head, chunked.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Under the limit, as usual.
    assert!(ping(address).starts_with("HTTP/1.1 200"));
}

#[test]
fn requests_under_the_limit_share_one_connection() {
    let server = start(env!("CARGO_BIN_EXE_ch01-envelope"), &[]);
    let address = server.address;
    let mut stream = connect(address);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        PING.len()
    );
    // Two requests, one after the other, on the same connection (keep-alive): the door
    // passes each to tiny_http and each answer back, and keeps the connection open.
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    for _ in 0..2 {
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(PING.as_bytes()).unwrap();
        let mut status = String::new();
        std::io::BufRead::read_line(&mut reader, &mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 200"), "{status:?}");
        let mut length = 0;
        loop {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        assert!(String::from_utf8_lossy(&body).contains(r#""id":1"#), "{body:?}");
    }
}
