//! The base itself, served in this process with short deadlines: every wait ends, and
//! a streamed answer reaches the client as it is written, not when it is complete.
//! (`tests/door.rs` attacks the starter's binary; this file needs knobs a binary does
//! not have.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::http::{self, Config, Request, Response};

mod common;
use common::raw::{connect, read_all, read_answer};

/// Serve `handler` on a free port with these deadlines, in a thread of this process.
fn serve(config: Config, handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    thread::spawn(move || http::serve_listener(listener, config, handler));
    address
}

fn quick() -> Config {
    Config { keep_alive_timeout: Duration::from_secs(1), request_timeout: Duration::from_secs(1), ..Config::default() }
}

fn echo(request: &Request) -> Response {
    Response::json(200, format!(r#"{{"method":"{}","bytes":{}}}"#, request.method, request.body.len()))
}

const GET: &[u8] = b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n";

/// A slowloris client sends its head a byte at a time, each byte in time for a
/// per-read timeout. The deadline is for the whole request: 408, and the door closes.
#[test]
fn a_head_trickled_a_byte_at_a_time_is_cut_off_at_the_deadline() {
    let address = serve(quick(), echo);
    let answer = trickle(address, b"", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: ");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

/// The same for a body: its length declared, its bytes trickled.
#[test]
fn a_body_trickled_a_byte_at_a_time_is_cut_off_at_the_deadline() {
    let address = serve(quick(), echo);
    let answer = trickle(address, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n", b"x");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

/// Send `start`, then `bytes` over and over, one byte every 50 ms, until the server
/// answers (or 10 s pass); return the answer.
fn trickle(address: SocketAddr, start: &[u8], bytes: &[u8]) -> String {
    let mut stream = connect(address);
    stream.write_all(start).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    for byte in bytes.iter().cycle() {
        let _ = stream.write_all(&[*byte]);
        let mut buffer = [0; 1024];
        if let Ok(read) = stream.read(&mut buffer) {
            answer.extend_from_slice(&buffer[..read]);
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the trickle was never cut off");
    }
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    answer.extend(read_all(&mut stream).into_bytes());
    String::from_utf8_lossy(&answer).into_owned()
}

/// A kept-alive connection that sends nothing more is closed after its timeout,
/// silently: there is no request to answer.
#[test]
fn an_idle_connection_is_closed_after_the_keep_alive_timeout() {
    let address = serve(quick(), echo);
    let mut stream = connect(address);
    stream.write_all(GET).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert!(line.starts_with("HTTP/1.1 200"), "{line:?}");
    let started = Instant::now();
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap(); // returns when the server closes
    assert!(started.elapsed() < Duration::from_secs(5));
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
/// 2026-07-28 revision makes a closed stream the cancellation), and the lane the
/// stream used serves the next request.
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
    // Every lane is usable afterwards.
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
/// (short) answer and the lane stays in step for the next request.
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

// ---------------------------------------------------------------------------
// A crowd at the door: a head or a body must keep a minimum rate, and at the cap the
// connection that has waited longest for its client makes room for a newcomer.
// ---------------------------------------------------------------------------

/// Deadlines long enough that nothing in these tests times out by itself, but for a
/// short grace before a request must keep the minimum rate (500 bytes a second).
fn patient() -> Config {
    Config {
        keep_alive_timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(20),
        request_grace: Duration::from_millis(500),
        min_bytes_per_second: 500,
        ..Config::default()
    }
}

/// Slowloris sends a byte every few seconds, each in time for any per-read timeout,
/// and until now held its connection for the whole request timeout. Below the minimum
/// rate, a head, or a body after its whole head, is answered 408 once the grace is
/// over, long before that.
#[test]
fn a_head_or_a_body_below_the_minimum_rate_is_cut_off_after_the_grace() {
    let address = serve(patient(), echo);
    let cases: [(&[u8], &[u8]); 2] = [
        (b"", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: "),
        (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n", b"x"),
    ];
    for (start, trickled) in cases {
        let started = Instant::now();
        let answer = trickle(address, start, trickled);
        assert!(answer.starts_with("HTTP/1.1 408") && answer.contains("Connection: close"), "{answer:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "cut off after {:?}, not the grace", started.elapsed());
    }
}

/// A body that arrives steadily earns the time it needs: every 500 bytes buy another
/// second, so a body that takes three times the grace to send is still read whole.
#[test]
fn a_body_that_keeps_the_rate_earns_the_time_it_needs() {
    let address = serve(patient(), echo);
    let mut stream = connect(address);
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3000\r\nConnection: close\r\n\r\n")
        .unwrap();
    let started = Instant::now();
    for _ in 0..30 {
        stream.write_all(&[b'x'; 100]).unwrap(); // 2,000 bytes a second
        thread::sleep(Duration::from_millis(50));
    }
    assert!(started.elapsed() > Duration::from_millis(1500), "the body took longer than the grace");
    let answer = read_all(&mut stream);
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains(r#""bytes":3000"#), "{answer:?}");
}

/// Send a GET on `stream` and read its whole answer (the connection stays open): its status.
fn get_kept_alive(stream: &mut TcpStream, path: &str) -> u16 {
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").as_bytes()).unwrap();
    read_answer(stream).status
}

/// Whether the server has closed `stream`: it reads the end of the stream (or a reset).
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    matches!(stream.read(&mut [0; 1]), Ok(0) | Err(_))
}

/// At the cap a newcomer is not refused: a connection whose client has sent nothing
/// goes first, then the kept-alive connection idle longest. The others go on.
#[test]
fn at_the_cap_the_connection_that_waited_longest_makes_room() {
    let address = serve(Config { max_connections: 3, ..patient() }, echo);
    let mut first = connect(address);
    assert_eq!(get_kept_alive(&mut first, "/first"), 200);
    thread::sleep(Duration::from_millis(50));
    let mut second = connect(address);
    assert_eq!(get_kept_alive(&mut second, "/second"), 200);
    let mut silent = connect(address); // connected, and sends nothing
    thread::sleep(Duration::from_millis(100)); // its door is waiting

    let mut newcomer = connect(address);
    assert_eq!(get_kept_alive(&mut newcomer, "/newcomer"), 200);
    assert!(closed_by_server(&mut silent), "the silent connection made room");
    assert_eq!(get_kept_alive(&mut first, "/first"), 200, "kept-alive ones went on");

    // Now every connection has been answered: the one idle longest (the second, as the
    // first has just been used again) makes room for the next newcomer.
    let mut next = connect(address);
    assert_eq!(get_kept_alive(&mut next, "/next"), 200);
    assert!(closed_by_server(&mut second), "the connection idle longest made room");
    assert_eq!(get_kept_alive(&mut first, "/first"), 200);
    assert_eq!(get_kept_alive(&mut newcomer, "/newcomer"), 200);
}

/// A handler that waits at `/wait` and a stream that waits between its two events at
/// `/stream`, both until `release` is called (or 20 s pass). `entered` hears when a
/// call to `/wait` is in the handler.
fn serve_long_calls(config: Config) -> (SocketAddr, impl Fn(), mpsc::Receiver<()>) {
    let (release, released) = mpsc::channel::<()>();
    let released = std::sync::Arc::new(std::sync::Mutex::new(released));
    let (enter, entered) = mpsc::channel::<()>();
    let enter = std::sync::Mutex::new(enter);
    let address = serve(config, move |request| {
        let wait = {
            let released = released.clone();
            move || {
                let _ = released.lock().unwrap().recv_timeout(Duration::from_secs(20));
            }
        };
        match request.path.as_str() {
            "/wait" => {
                let _ = enter.lock().unwrap().send(());
                wait();
                echo(request)
            }
            "/stream" => Response::stream(200, "text/event-stream", move |body| {
                body.send(b"data: one\n\n").unwrap();
                wait();
                body.send(b"data: two\n\n").unwrap();
            }),
            _ => echo(request),
        }
    });
    let release_all = move || {
        for _ in 0..2 {
            let _ = release.send(());
        }
    };
    (address, release_all, entered)
}

/// A connection whose request is with the handler, or whose answer is streaming, is
/// never the one closed: when every connection is being served, a newcomer hears
/// `503`, and the long calls run to their end.
#[test]
fn when_every_connection_is_being_served_a_newcomer_hears_503() {
    let (address, release, entered) = serve_long_calls(Config { max_connections: 2, workers: 2, ..patient() });
    let mut long_call = connect(address);
    long_call.write_all(b"GET /wait HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    entered.recv_timeout(Duration::from_secs(10)).expect("the long call is in its handler");
    let mut stream = connect(address);
    stream.write_all(b"GET /stream HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    let mut first = [0u8; 12];
    stream.read_exact(&mut first).unwrap(); // the stream has begun

    let answer = read_all(&mut connect(address));
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.contains("too many connections"), "{answer:?}");

    release();
    assert!(read_all(&mut long_call).starts_with("HTTP/1.1 200"), "the long call ran to its end");
    let rest = read_all(&mut stream);
    assert!(rest.contains("data: two") && rest.ends_with("0\r\n\r\n"), "the stream ran to its end: {rest:?}");
    // The two are done: a newcomer is served again (once the refusal above, which
    // lingers a moment to close gently, has gone).
    let started = Instant::now();
    loop {
        let mut next = connect(address);
        next.write_all(b"GET /next HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        if read_all(&mut next).starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the connections never came back");
        thread::sleep(Duration::from_millis(50));
    }
}

/// A long call keeps running while a crowd comes and goes: 100 silent connections
/// and 20 clients that talk pass through a cap of 4, and none of them closes the
/// connection whose call is with the handler.
#[test]
fn a_long_call_keeps_running_while_a_crowd_passes_the_cap() {
    let (address, release, entered) = serve_long_calls(Config { max_connections: 4, workers: 2, ..patient() });
    let mut long_call = connect(address);
    long_call.write_all(b"GET /wait HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
    entered.recv_timeout(Duration::from_secs(10)).expect("the long call is in its handler");
    let crowd: Vec<TcpStream> = (0..100).map(|_| connect(address)).collect();
    for _ in 0..20 {
        let mut stream = connect(address);
        stream.write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").unwrap();
        let answer = read_all(&mut stream);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer:?}");
    }
    release();
    assert!(read_all(&mut long_call).starts_with("HTTP/1.1 200"), "the long call ran to its end");
    drop(crowd);
}
