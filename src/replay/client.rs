//! A small HTTP/1.1 client, just enough for a transcript: send a request as the
//! transcript writes it ([`send`], [`send_raw`]), act while its answer streams in
//! ([`send_interrupted`]), and parse what comes back, chunked or not
//! ([`parse_response`]). Every request goes on a fresh connection.
//!
//! Its reader is the workbook's one: the tests that talk to a server byte by byte
//! ([`read_response`] on a kept-alive connection) and the conformance fixtures' proxy
//! ([`read_head`], then [`read_chunk`] as an event stream comes in) read answers with it.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

use super::TIMEOUT;
use super::compare::compare;
use super::server::RunningServer;
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
/// what its `<!-- client: ... -->` and `<!-- operator: ... -->` lines say while the
/// answer streams in (an operator acts on `server`, the process the replay started).
pub fn send_exchange(
    address: SocketAddr,
    exchange: &Exchange,
    server: Option<&RunningServer>,
) -> io::Result<HttpResponse> {
    match &exchange.raw {
        Some(raw) => send_raw(address, &raw.bytes),
        None if exchange.during.is_empty() => send(address, &exchange.request),
        None => send_interrupted(address, &exchange.request, &exchange.during, server),
    }
}

// ANCHOR: interrupted
/// Send `request`, and act while its answer streams in: for each action in turn, read
/// until the answer's head and `after_events` events have come, then half-close the
/// connection, or send another request (whose answer must be the one expected), or
/// have the operator switch tools off on `server` (chapter 17). Then
/// read on until the server closes the connection, and give what came, however it
/// ended: a stream cut short is the point of such an exchange. A server that has not
/// closed it within [`TIMEOUT`] gives no answer: a stream that should have ended (its
/// session did) and goes on is a difference too.
pub fn send_interrupted(
    address: SocketAddr,
    request: &HttpRequest,
    during: &[During],
    server: Option<&RunningServer>,
) -> io::Result<HttpResponse> {
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
            Interruption::ToolsOff(names) => match server {
                Some(server) => server.tools_off(names)?,
                None => return Err(io::Error::other(OPERATOR_NEEDS_THE_PROCESS)),
            },
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

/// Why an operator line cannot run against a server at a URL: it writes the server's
/// file and signals its process.
pub const OPERATOR_NEEDS_THE_PROCESS: &str =
    "an operator line writes the server's --tools-off file and signals it: run the check without --url";

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
    let head = read_head(&mut raw)?;
    let body = read_body_with(&mut raw, &head, partial)?;
    let body = String::from_utf8(body).map_err(|_| invalid("body is not UTF-8"))?;
    Ok(HttpResponse { status: head.status, headers: head.headers, body })
}

/// A response's status and headers: what comes before its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
}

impl ResponseHead {
    /// The first header of that name (any case), trimmed.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// Whether the body comes in chunks (`Transfer-Encoding: chunked`).
    pub fn is_chunked(&self) -> bool {
        self.header("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked"))
    }
}

/// Read one whole response from `reader`, and nothing after it: the head, then the body
/// by its chunks, or its `Content-Length`, or (with neither) up to the end of the
/// stream. So a kept-alive connection can carry the next request.
pub fn read_response(reader: &mut impl Read) -> io::Result<HttpResponse> {
    let head = read_head(reader)?;
    let body = read_body(reader, &head)?;
    let body = String::from_utf8(body).map_err(|_| invalid("body is not UTF-8"))?;
    Ok(HttpResponse { status: head.status, headers: head.headers, body })
}

/// Read a response's head, past any `100 Continue`, up to its empty line. It reads a
/// byte at a time, so that nothing after the head is taken: the body is left to read,
/// as it comes ([`read_chunk`]) or whole ([`read_body`]).
pub fn read_head(reader: &mut impl Read) -> io::Result<ResponseHead> {
    loop {
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            head.push(read_byte(reader)?.ok_or_else(|| invalid("no end of headers"))?);
        }
        let head = std::str::from_utf8(&head[..head.len() - 4]).map_err(|_| invalid("head is not UTF-8"))?;
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid("no status line"))?;
        if status == 100 {
            continue;
        }
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
            .collect();
        return Ok(ResponseHead { status, headers });
    }
}

/// Read the body that `head` announces: its chunks, its `Content-Length` bytes, or
/// (with neither) up to the end of the stream.
pub fn read_body(reader: &mut impl Read, head: &ResponseHead) -> io::Result<Vec<u8>> {
    read_body_with(reader, head, false)
}

/// Read the next chunk of a chunked body, and nothing after it: `None` at the last
/// (empty) chunk. (The trailer fields after it, which the workbook's servers never
/// send, are left unread.)
pub fn read_chunk(reader: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        line.push(read_byte(reader)?.ok_or_else(|| invalid("the chunked body ended early"))?);
    }
    let line = std::str::from_utf8(&line[..line.len() - 2]).unwrap_or("");
    let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
        .map_err(|_| invalid("a chunk size that is not hexadecimal"))?;
    if size == 0 {
        return Ok(None);
    }
    let mut chunk = vec![0; size + 2]; // the chunk and the CRLF after it
    reader.read_exact(&mut chunk)?;
    chunk.truncate(size);
    Ok(Some(chunk))
}

/// [`read_body`]; when `partial`, a chunked body cut short is what its whole chunks hold.
fn read_body_with(reader: &mut impl Read, head: &ResponseHead, partial: bool) -> io::Result<Vec<u8>> {
    if head.is_chunked() {
        let mut body = Vec::new();
        loop {
            match read_chunk(reader) {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => return Ok(body),
                Err(_) if partial => return Ok(body),
                Err(_) => return Err(invalid("broken chunked body")),
            }
        }
    }
    if let Some(length) = head.header("content-length").and_then(|value| value.parse::<usize>().ok()) {
        let mut body = vec![0; length];
        reader.read_exact(&mut body).map_err(|_| invalid("body shorter than Content-Length"))?;
        return Ok(body);
    }
    // A reset after some bytes still counts: they were the answer.
    let mut body = Vec::new();
    if let Err(error) = reader.read_to_end(&mut body)
        && body.is_empty()
    {
        return Err(error);
    }
    Ok(body)
}

/// One byte, or `None` at the end of the stream.
fn read_byte(reader: &mut impl Read) -> io::Result<Option<u8>> {
    let mut byte = [0u8; 1];
    loop {
        match reader.read(&mut byte) {
            Ok(0) => return Ok(None),
            Ok(_) => return Ok(Some(byte[0])),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad HTTP response: {what}"))
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
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n{}").is_err(), "short body");
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}").is_err());
        let cut = parse_partial_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n5\r\nab");
        assert_eq!(cut.unwrap().body, "{}", "a cut stream is its whole chunks");
    }

    #[test]
    fn a_response_is_read_and_nothing_after_it() {
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\n\
Transfer-Encoding: chunked\r\n\r\n1\r\n[\r\n1\r\n]\r\n0\r\n\r\nHTTP/1.1 404 Not Found\r\n\r\n";
        let mut stream = &two[..];
        assert_eq!(read_response(&mut stream).unwrap().body, "{}");
        let head = read_head(&mut stream).unwrap();
        assert_eq!((head.status, head.is_chunked()), (200, true));
        assert_eq!(read_chunk(&mut stream).unwrap(), Some(b"[".to_vec()));
        assert_eq!(read_chunk(&mut stream).unwrap(), Some(b"]".to_vec()));
        assert_eq!(read_chunk(&mut stream).unwrap(), None);
        assert_eq!(stream, b"\r\nHTTP/1.1 404 Not Found\r\n\r\n", "the rest is left to read");
    }
}
