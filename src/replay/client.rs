//! A small HTTP/1.1 client, just enough for a transcript: send a request as the
//! transcript writes it ([`send`], [`send_raw`]), act while its answer streams in
//! ([`send_interrupted`]), and parse what comes back, chunked or not
//! ([`parse_response`]). Every request goes on a fresh connection.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

use super::TIMEOUT;
use super::compare::compare;
use crate::transcript::{During, Exchange, HttpRequest, HttpResponse, Interruption};

// ANCHOR: send
/// Send one request on a fresh connection and read the whole response.
pub fn send(address: SocketAddr, request: &HttpRequest) -> io::Result<HttpResponse> {
    let mut stream = open(address, request)?;
    let mut raw = Vec::new();
    // A server may close without reading a body it refused (413): what it sent
    // before closing still counts, so a reset after some bytes is not an error.
    if let Err(error) = stream.read_to_end(&mut raw)
        && raw.is_empty()
    {
        return Err(error);
    }
    parse_response(&raw)
}

/// Connect to `address` and send `request`, with `Host` and `Content-Length` added
/// when it has none, and `Connection: close`. The answer is left to read.
pub fn open(address: SocketAddr, request: &HttpRequest) -> io::Result<TcpStream> {
    let mut head = format!("{} {} HTTP/1.1\r\n", request.method, request.path);
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if request.header("host").is_none() {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    if request.header("content-length").is_none() && request.header("transfer-encoding").is_none() {
        head.push_str(&format!("Content-Length: {}\r\n", request.body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");

    let mut stream = TcpStream::connect_timeout(&address, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(request.body.as_bytes())?;
    Ok(stream)
}
// ANCHOR_END: send

/// Send an exchange's request, as its transcript writes it (`http` or `raw`), and do
/// what its `<!-- client: ... -->` lines say while the answer streams in.
pub fn send_exchange(address: SocketAddr, exchange: &Exchange) -> io::Result<HttpResponse> {
    match &exchange.raw {
        Some(raw) => send_raw(address, &raw.bytes),
        None if exchange.during.is_empty() => send(address, &exchange.request),
        None => send_interrupted(address, &exchange.request, &exchange.during),
    }
}

// ANCHOR: interrupted
/// Send `request`, and act while its answer streams in: for each action in turn, read
/// until the answer's head and `after_events` events have come, then half-close the
/// connection, or send another request (whose answer must be the one expected). Then
/// read on until the server closes the connection, and give what came, however it
/// ended: a stream cut short is the point of such an exchange. A server that has not
/// closed it within [`TIMEOUT`] gives no answer: a stream that should have ended (its
/// session did) and goes on is a difference too.
pub fn send_interrupted(address: SocketAddr, request: &HttpRequest, during: &[During]) -> io::Result<HttpResponse> {
    let mut stream = open(address, request)?;
    let deadline = Instant::now() + TIMEOUT;
    let mut raw = Vec::new();
    let mut buffer = [0u8; 4096];
    for action in during {
        // The head first, even for `after 0 events`: what the server does once it has
        // answered (a stream it has opened) is then in place.
        while !has_head(&raw) || events_in(&raw) < action.after_events {
            let read = stream.read(&mut buffer)?;
            if read == 0 || Instant::now() > deadline {
                break; // the answer ended before that many events: compare what came
            }
            raw.extend_from_slice(&buffer[..read]);
        }
        match &action.action {
            Interruption::Close => stream.shutdown(std::net::Shutdown::Write)?,
            Interruption::Send { request, expected } => {
                let answer = send(address, request)?;
                if !compare(expected, &answer).is_empty() {
                    return Err(io::Error::other(format!(
                        "{SIDE_ANSWER_DIFFERS} {} {}, not {} {}",
                        answer.status,
                        answer.body.trim(),
                        expected.status,
                        expected.body.trim()
                    )));
                }
            }
        }
    }
    // Read on: a server that goes on sending shows it here.
    if let Err(error) = stream.read_to_end(&mut raw)
        && matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut)
    {
        return Err(io::Error::other(format!("{STILL_OPEN} {TIMEOUT:?} after the client's last action")));
    }
    parse_partial_response(&raw)
}

/// How [`send_interrupted`]'s error begins when the server kept the answer open.
pub const STILL_OPEN: &str = "the server had not ended its answer";

/// Whether the bytes so far hold a whole head (a `100 Continue` aside).
fn has_head(raw: &[u8]) -> bool {
    parse_partial_response(raw).is_ok()
}

/// How [`send_interrupted`]'s error begins when the request sent during the stream got
/// another answer than the transcript's.
pub const SIDE_ANSWER_DIFFERS: &str = "the request sent during the stream was answered";

/// How many whole events the body so far holds (each ends with a blank line).
fn events_in(raw: &[u8]) -> usize {
    let Ok(response) = parse_partial_response(raw) else { return 0 };
    response.body.replace("\r\n", "\n").matches("\n\n").count()
}
// ANCHOR_END: interrupted

/// Send `bytes` as they are on a fresh connection, say that nothing more will come
/// (half-close), and read the whole response.
pub fn send_raw(address: SocketAddr, bytes: &[u8]) -> io::Result<HttpResponse> {
    let mut stream = TcpStream::connect_timeout(&address, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.write_all(bytes)?;
    stream.shutdown(std::net::Shutdown::Write)?;
    let mut raw = Vec::new();
    if let Err(error) = stream.read_to_end(&mut raw)
        && raw.is_empty()
    {
        return Err(error);
    }
    parse_response(&raw)
}

/// Parse raw HTTP/1.1 response bytes, skipping any `100 Continue`.
pub fn parse_response(raw: &[u8]) -> io::Result<HttpResponse> {
    parse_response_with(raw, false)
}

/// [`parse_response`] of a response that may have been cut short: a chunked body is
/// what its whole chunks hold.
fn parse_partial_response(raw: &[u8]) -> io::Result<HttpResponse> {
    parse_response_with(raw, true)
}

fn parse_response_with(mut raw: &[u8], partial: bool) -> io::Result<HttpResponse> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("bad HTTP response: {what}"));
    loop {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| invalid("no end of headers"))?;
        let head = std::str::from_utf8(&raw[..end]).map_err(|_| invalid("head is not UTF-8"))?;
        let body = &raw[end + 4..];
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid("no status line"))?;
        if status == 100 {
            raw = body;
            continue;
        }
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
            .collect();
        let header = |name: &str| headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str());
        let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            let (body, complete) = dechunk(body);
            if !complete && !partial {
                return Err(invalid("broken chunked body"));
            }
            body
        } else if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
            body.get(..length).ok_or_else(|| invalid("body shorter than Content-Length"))?.to_vec()
        } else {
            body.to_vec()
        };
        let body = String::from_utf8(body).map_err(|_| invalid("body is not UTF-8"))?;
        return Ok(HttpResponse { status, headers, body });
    }
}

/// A chunked body's bytes, and whether it was whole (up to its last, empty chunk);
/// when not, the bytes of its whole chunks.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") else { return (body, false) };
        let size_text = std::str::from_utf8(&raw[..line_end]).unwrap_or("");
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16) else {
            return (body, false);
        };
        raw = &raw[line_end + 2..];
        if size == 0 {
            return (body, true);
        }
        let (Some(chunk), Some(rest)) = (raw.get(..size), raw.get(size + 2..)) else { return (body, false) };
        body.extend_from_slice(chunk);
        raw = rest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_responses() {
        let plain = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((plain.status, plain.body.as_str()), (200, "{}"));
        let chunked =
            parse_response(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n").unwrap();
        assert_eq!((chunked.status, chunked.body.as_str()), (200, "{}"));
    }
}
