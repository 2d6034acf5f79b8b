//! Connections that hold what the server has: every resource has a cap, and no client
//! can take it from the others. A client that holds a refused connection open, or sends
//! and never reads, blocks nobody; at the cap a newcomer is served, and the connection
//! that has waited longest for its client makes room; a crowd of idle, slowloris or
//! slow-body connections past the cap takes room only from itself, and when it has gone
//! no thread or open file is left behind; only when every connection is being served
//! does a newcomer hear 503. The starter's own binary, and the base in this process for
//! what needs a handler that waits.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::http::{Config, Response};

use crate::common::raw::{connect, read_all, read_answer, send};
use crate::support::{PING_ME, assert_no_leak, assert_serves, echo, footprint, patient, post, serve, start};

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
/// longest is closed to make room; a newcomer is not refused while any connection
/// only waits for its client. (The 503 that is left, when every connection is being
/// served: `when_every_connection_is_being_served_a_newcomer_hears_503`.)
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

/// Hundreds of idle connections, more than the cap: the server holds at most its cap
/// (so never nears the process's limit on open files), refuses the rest, goes on
/// accepting, and serves again once they are gone, with its threads and files back
/// where they were.
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
// A crowd at the door: idle and slow connections past the cap lock nobody out. Each
// attack holds its crowd open while a client calls PingME on a new connection each
// time; every call must be answered, the threads stay within the cap and its slack (the
// base page), and once the crowd has gone nothing is left behind. How many calls are
// answered while a crowd keeps reconnecting, and how fast, is the benchmark's business:
// `bench/crowd.py`.
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

/// Connections that never send a byte, past the cap: the crowd takes room only from
/// itself, and a kept-alive client from before it is not touched.
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

/// New connections, one after another, while idle kept-alive ones are held open:
/// every request must be answered. Counted, not timed. (A server that hands each new
/// connection to a pool of threads can leave it queued behind threads parked on idle
/// connections, and never answer it: about one in 300 here with `tiny_http`'s own
/// server, which the next test shows. The door gives every connection a thread of its
/// own instead.)
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

/// Why the base reads every connection itself and uses `tiny_http` only to write answers:
/// `tiny_http` 0.12's own server strands a connection that arrives just after another
/// one (its `TaskPool::spawn` counts a thread it has just woken as still waiting, queues
/// the second connection's task, and the woken thread takes the first). If the first
/// stays open, idle, the second is never served. Seen in about 3 rounds of 4 here; the
/// test asks for one in 20, and fails the day the race is fixed upstream.
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
// The same cap on the base in this process: which connection makes room (one whose
// client has sent nothing first, then the one idle longest), and, with a handler that
// waits, that one whose request is with the handler or whose answer streams never does.
// ---------------------------------------------------------------------------

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
