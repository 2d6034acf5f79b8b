//! What goes back to the client: whole, and only once it can be read. A HEAD answer
//! has no body; a refusal's body is JSON whatever it repeats; a connection is closed
//! gently, so that a client still sending reads its answer and not a reset; a streamed
//! body reaches the client as it is written, ends even when its writer panics, and is
//! cancelled when the client leaves; a handler that panics, or answers with what HTTP
//! cannot carry, is a 500; and the handler works on at most `Config::workers` requests
//! at once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use mcp_workbook::http::{Config, Response};

use crate::common::raw::{connect, read_all, send, status};
use crate::support::{PING_ME, assert_serves, body_of, door_refusal, echo, post, quick, serve, start};

/// A HEAD answer has headers and no body, whatever length they declare, and the
/// connection carries on to the next request: a client must not wait for a body that
/// never comes, nor read the next answer as one.
#[test]
fn a_head_answer_has_no_body_and_the_connection_goes_on() {
    let server = start(&[]);
    let mut stream = connect(server.address);
    // Refused by the starter's guard (a foreign Host): a 403, with no body.
    stream.write_all(b"HEAD /mcp HTTP/1.1\r\nHost: evil.example\r\n\r\n").unwrap();
    stream.write_all(&post("Connection: close\r\n", PING_ME)).unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer:?}");
    let second = answer.find("HTTP/1.1 200").expect("the next request is answered");
    assert!(!answer[..second].contains("jsonrpc"), "a HEAD answer carries no body: {answer:?}");
    assert!(answer[second..].contains("BISMILLAH"), "{answer:?}");
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

/// A streamed body reaches the client event by event: the handler's second event is
/// only written after the test has read the first, so a door that buffered the body
/// whole would never let this test finish.
#[test]
fn a_streamed_body_reaches_the_client_as_it_is_written() {
    let (read_first, first_read) = mpsc::channel::<()>();
    let first_read = std::sync::Mutex::new(Some(first_read));
    let address = serve(quick(), move |_request| {
        let first_read = first_read.lock().unwrap().take().expect("one request");
        Response::stream(200, "text/event-stream", move |body| {
            body.send(b"data: one\n\n").unwrap();
            first_read.recv_timeout(Duration::from_secs(10)).expect("the client read the first event");
            body.send(b"data: two\n\n").unwrap();
        })
    });
    let mut stream = connect(address);
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        reader.read_line(&mut head).unwrap();
    }
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Transfer-Encoding: chunked"), "{head}");
    assert!(head.contains("Content-Type: text/event-stream"), "{head}");
    let chunk = |reader: &mut BufReader<TcpStream>| {
        let mut size = String::new();
        reader.read_line(&mut size).unwrap();
        let size = usize::from_str_radix(size.trim_end(), 16).unwrap();
        let mut data = vec![0; size + 2];
        reader.read_exact(&mut data).unwrap();
        String::from_utf8(data[..size].to_vec()).unwrap()
    };
    assert_eq!(chunk(&mut reader), "data: one\n\n");
    read_first.send(()).unwrap();
    assert_eq!(chunk(&mut reader), "data: two\n\n");
    assert_eq!(chunk(&mut reader), "", "the last chunk ends the body");
}

/// A client that leaves a streamed answer cancels it: the writer learns so (the
/// 2026-07-28 revision makes a closed stream the cancellation), and the worker's turn
/// the stream held serves the next request.
#[test]
fn a_client_that_leaves_a_stream_cancels_it() {
    let (stopped, writer_stopped) = mpsc::channel::<usize>();
    let stopped = std::sync::Mutex::new(stopped);
    let config = Config { workers: 1, ..quick() };
    let address = serve(config, move |request| {
        if request.method == "GET" {
            return echo(request);
        }
        let stopped = stopped.lock().unwrap().clone();
        Response::stream(200, "text/event-stream", move |body| {
            let mut sent = 0;
            while body.send(b"data: tick\n\n").is_ok() && sent < 1000 {
                sent += 1;
                thread::sleep(Duration::from_millis(20));
            }
            let _ = stopped.send(sent);
        })
    });
    let mut stream = connect(address);
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n").unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    drop(stream);
    let sent = writer_stopped.recv_timeout(Duration::from_secs(10)).expect("the writer stops");
    assert!(sent < 1000, "the writer ran to the end: the client's leaving was not noticed");
    // The one worker's turn is free again: every next request is served.
    for _ in 0..8 {
        let mut stream = connect(address);
        stream.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        assert!(read_all(&mut stream).starts_with("HTTP/1.1 200"));
    }
}

/// HTTP/1.0 has no chunks: a streamed answer to it is collected, and sent whole, with
/// its length, when the writer is done.
#[test]
fn a_stream_to_an_http_1_0_client_arrives_whole() {
    let address = serve(quick(), |_request| {
        Response::stream(200, "text/event-stream", |body| {
            body.send(b"data: one\n\n").unwrap();
            body.send(b"data: two\n\n").unwrap();
        })
    });
    let mut stream = connect(address);
    stream.write_all(b"POST /mcp HTTP/1.0\r\nContent-Length: 0\r\n\r\n").unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    assert!(answer.contains("Connection: close") && !answer.contains("Transfer-Encoding"), "{answer:?}");
    assert!(answer.contains("Content-Length: 22\r\n"), "{answer:?}");
    assert!(answer.ends_with("\r\n\r\ndata: one\n\ndata: two\n\n"), "{answer:?}");
}

/// A writer that panics halfway still ends its body, so the client sees a complete
/// (short) answer and the connection stays in step: the next request on it is answered.
#[test]
fn a_stream_whose_writer_panics_still_ends() {
    let address = serve(Config { workers: 1, ..quick() }, |request| {
        if request.method == "GET" {
            return echo(request);
        }
        Response::stream(200, "text/event-stream", |body| {
            body.send(b"data: one\n\n").unwrap();
            panic!("a bug in the writer");
        })
    });
    let mut stream = connect(address);
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n").unwrap();
    stream.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.contains("b\r\ndata: one\n\n\r\n0\r\n\r\nHTTP/1.1 200"), "{answer:?}");
}

/// A handler's response that HTTP cannot carry (a CR LF in a header value would end the
/// head early and make the rest a body: response splitting) becomes a 500.
#[test]
fn a_header_value_with_a_line_break_is_not_sent() {
    let address = serve(quick(), |_request| Response::empty(200).with_header("X-Echo", "a\r\n\r\nHTTP/1.1 200 OK"));
    let mut stream = connect(address);
    stream.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer:?}");
    assert_eq!(answer.matches("HTTP/1.1").count(), 1, "{answer:?}");
}

/// A handler that panics is a 500, and the worker goes on.
#[test]
fn a_panicking_handler_is_a_500() {
    let address = serve(Config { workers: 1, ..quick() }, |request| {
        if request.path == "/panic" {
            panic!("a bug in the handler");
        }
        echo(request)
    });
    for path in ["/panic", "/mcp", "/panic", "/mcp"] {
        let mut stream = connect(address);
        stream
            .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
            .unwrap();
        let answer = read_all(&mut stream);
        let expected = if path == "/panic" { "HTTP/1.1 500" } else { "HTTP/1.1 200" };
        assert!(answer.starts_with(expected), "{path}: {answer:?}");
    }
}

/// `Config::workers` is how many requests the handler works on at once: with one, a
/// call that waits makes the next request wait for its turn; with two, it does not.
#[test]
fn workers_are_turns_in_the_handler() {
    for workers in [1, 2] {
        let (release, released) = mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let address = serve(Config { workers, ..quick() }, move |request| {
            if request.path == "/wait" {
                let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(10));
            }
            echo(request)
        });
        let mut waiting = connect(address);
        waiting.write_all(b"GET /wait HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        thread::sleep(Duration::from_millis(200)); // the handler is now waiting
        let mut next = connect(address);
        next.write_all(b"GET /next HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        next.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let mut first = [0u8; 12];
        let answered_at_once = next.read_exact(&mut first).is_ok();
        assert_eq!(answered_at_once, workers == 2, "workers: {workers}");
        release.send(()).unwrap();
        next.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let rest = read_all(&mut next);
        assert!(answered_at_once || rest.starts_with("HTTP/1.1 200"), "{rest:?}");
        assert!(read_all(&mut waiting).starts_with("HTTP/1.1 200"));
    }
}
