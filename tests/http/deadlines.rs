//! Slow clients against the clock: every wait ends. A whole request has a deadline
//! from its first byte, and on the way its head, then its body, must keep a minimum
//! rate after a short grace, so a head or a body trickled a byte at a time is cut off
//! (408, the connection closed) however patient each single read is; a body that
//! arrives steadily earns the time it needs; a kept-alive connection that sends nothing
//! more is closed after its timeout. On the base in this process, with deadlines of a
//! second or so, so that no test waits 30.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::raw::{connect, read_all};
use crate::support::{echo, patient, quick, serve};

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

/// Slowloris sends a byte every few seconds, each in time for any per-read timeout, to
/// hold its connection for the whole request timeout. Below the minimum rate, a head,
/// or a body after its whole head, is answered 408 once the grace is over, long before
/// that.
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
