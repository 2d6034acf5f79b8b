//! Reading one answer from a kept-alive connection, by its `Content-Length`, so that
//! the same connection can carry the next request (`tests/base.rs`, `tests/door.rs`).

use std::io::Read;
use std::net::TcpStream;

/// Read one answer from `stream`: its head, then as many bytes of body as its
/// `Content-Length` says. If the server closes first, what came until then.
pub fn read_answer(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return String::from_utf8_lossy(&head).into_owned(),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length: usize =
        head.lines().find_map(|line| line.strip_prefix("Content-Length: ")).map_or(0, |n| n.trim().parse().unwrap());
    let mut body = vec![0; length];
    stream.read_exact(&mut body).unwrap();
    head + &String::from_utf8_lossy(&body)
}
