//! Bytes on a socket, for the tests that send what no HTTP client would (the HTTP
//! base's): connect, send, read until the server closes, or read one answer and keep the
//! connection for the next request. Answers are read with the workbook's own reader
//! (`replay::read_response`), the one the learner's check uses.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mcp_workbook::replay;
use mcp_workbook::transcript::HttpResponse;

/// A connection to `address` whose reads give up after 10 s.
pub fn connect(address: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// Send `bytes` on a new connection, then read until the server closes (or 10 s pass):
/// all it said.
pub fn send(address: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = connect(address);
    stream.write_all(bytes).unwrap();
    read_all(&mut stream)
}

/// Send `bytes`, stop sending (FIN), and read until the server closes.
pub fn send_then_stop(address: SocketAddr, bytes: &[u8]) -> String {
    let mut stream = connect(address);
    stream.write_all(bytes).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    read_all(&mut stream)
}

/// Everything `stream` says until the server closes it.
pub fn read_all(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    // A reset after some bytes is fine: they were the answer.
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// One answer from a kept-alive connection, its body read by its length or its chunks
/// and nothing after it, so that the same connection can carry the next request.
pub fn read_answer(stream: &mut TcpStream) -> HttpResponse {
    replay::read_response(stream).unwrap_or_else(|e| panic!("no whole answer on the connection: {e}"))
}

/// The status code of the (first) answer in `answer`, as `send` gives it.
pub fn status(answer: &str) -> u16 {
    answer.get(9..12).and_then(|code| code.parse().ok()).unwrap_or_else(|| panic!("no status line in {answer:?}"))
}
