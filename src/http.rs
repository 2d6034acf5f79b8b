//! The base every chapter stands on: a synchronous HTTP loop on `tiny_http`.
//!
//! It does three things and nothing else:
//! 1. listens, and prints the URL it really listens on (port 0 picks a free port);
//! 2. turns each `tiny_http` request into a plain [`Request`] value (method, path,
//!    headers, body), refusing a body over the size limit before reading it;
//! 3. hands that value to the chapter's handler, a pure function, and writes the
//!    [`Response`] value it returns back to the socket.
//!
//! One wrinkle: `tiny_http` 0.12 cannot drop a request whose body it has not read
//! without first reading the rest, into a buffer the size the client declared. A
//! request that declares 100 GB would abort the process. So a small door (see
//! [`door`]) stands in front of `tiny_http`: it reads each request's headers itself,
//! answers `413` to a declared length over the limit without reading the body, and
//! passes every other request through.
//!
//! All MCP knowledge lives in the chapters. This file depends on nothing but the
//! standard library and `tiny_http`, so the starter (chapter 10) can carry a copy of it
//! into a crate of your own.

// ANCHOR: types
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// An HTTP request, as the chapter's handler sees it: plain data, no socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `POST`, `GET`, ... as sent.
    pub method: String,
    /// The path without the query string: `/mcp`.
    pub path: String,
    /// Every header in the order received; look them up with [`Request::header`].
    pub headers: Vec<(String, String)>,
    /// The raw body; the handler decides whether it is JSON.
    pub body: Vec<u8>,
}

/// An HTTP response, as the chapter's handler returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}
// ANCHOR_END: types

impl Request {
    /// The first header with this name. HTTP header names are case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

impl Response {
    /// A response with no body: `202 Accepted` for a notification, for instance.
    pub fn empty(status: u16) -> Response {
        Response { status, headers: Vec::new(), body: Vec::new() }
    }

    /// A response whose body is `body`, labelled `Content-Type: application/json`.
    pub fn json(status: u16, body: String) -> Response {
        Response::empty(status).with_header("Content-Type", "application/json").with_body(body.into_bytes())
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn with_body(mut self, body: Vec<u8>) -> Response {
        self.body = body;
        self
    }
}

/// How the loop runs. Chapters before 5 use the defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many threads call the handler. One is enough to learn with; chapter 7
    /// makes it a flag so one slow client cannot stall the others.
    pub workers: usize,
    /// The largest body the loop will read. A larger one is answered `413` before a
    /// byte of it is read, so a client cannot make the server hold gigabytes.
    pub max_body_bytes: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 1, max_body_bytes: 4 * 1024 * 1024 }
    }
}

// ANCHOR: serve
/// Listen on `bind` and answer every request with `handler`, forever.
///
/// Once listening it prints one line with the real URL, so that a reader (or a
/// test that asked for port 0) knows where to connect.
pub fn serve<H>(bind: &str, config: Config, handler: H) -> io::Result<()>
where
    H: Fn(&Request) -> Response + Send + Sync + 'static,
{
    // Clients connect to the door; `tiny_http` listens behind it, on a loopback port
    // of its own.
    let listener = TcpListener::bind(bind)?;
    let server = tiny_http::Server::http("127.0.0.1:0").map_err(io::Error::other)?;
    let inner = server.server_addr().to_ip().expect("a TCP address");
    println!("listening on http://{}/mcp", listener.local_addr()?);
    let limit = config.max_body_bytes;
    thread::spawn(move || {
        for client in listener.incoming().flatten() {
            thread::spawn(move || door(client, inner, limit));
        }
    });

    let server = Arc::new(server);
    let handler = Arc::new(handler);
    let workers: Vec<_> = (0..config.workers.max(1))
        .map(|_| {
            let (server, handler, config) = (server.clone(), handler.clone(), config.clone());
            thread::spawn(move || {
                for request in server.incoming_requests() {
                    answer(request, &config, handler.as_ref());
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("worker threads do not panic");
    }
    Ok(())
}

/// One request, from socket to socket: read, convert, handle, convert, write.
fn answer<H>(mut raw: tiny_http::Request, config: &Config, handler: &H)
where
    H: Fn(&Request) -> Response,
{
    let response = match read_request(&mut raw, config.max_body_bytes) {
        Ok(request) => {
            // A bug in a handler must not take the whole server down: answer 500 and
            // go on to the next request. (Chapter 5 catches tool panics earlier, so
            // that the client gets a JSON-RPC error with its id.)
            catch_unwind(AssertUnwindSafe(|| handler(&request))).unwrap_or_else(|_| Response::empty(500))
        }
        Err(BodyError::TooLarge) => too_large(config.max_body_bytes),
        Err(BodyError::Io) => return, // the client went away mid-body: nobody to answer
    };
    let _ = raw.respond(to_tiny_http(response)); // a client that hung up is not an error
}
// ANCHOR_END: serve

enum BodyError {
    TooLarge,
    Io,
}

// ANCHOR: read_request
/// Convert `tiny_http`'s request into ours, reading at most `limit` body bytes.
fn read_request(raw: &mut tiny_http::Request, limit: usize) -> Result<Request, BodyError> {
    // A declared length over the limit is refused before reading (and before
    // `tiny_http` sends `100 Continue` to a client that asked for it).
    if raw.body_length().is_some_and(|length| length > limit) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    // A chunked body has no declared length: read one byte past the limit to tell.
    raw.as_reader().take(limit as u64 + 1).read_to_end(&mut body).map_err(|_| BodyError::Io)?;
    if body.len() > limit {
        return Err(BodyError::TooLarge);
    }
    let url = raw.url();
    Ok(Request {
        method: raw.method().as_str().to_string(),
        path: url.split('?').next().unwrap_or(url).to_string(),
        headers: raw
            .headers()
            .iter()
            .map(|h| (h.field.as_str().as_str().to_string(), h.value.as_str().to_string()))
            .collect(),
        body,
    })
}
// ANCHOR_END: read_request

/// The `413` answer. Its body is a JSON-RPC error like every other error the server
/// sends, with `"id": null` because the request was never read.
fn too_large(limit: usize) -> Response {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"Request body larger than {limit} bytes"}}}}"#
    );
    // `Connection: close`: the unread rest of the body must not be taken for the
    // next request on this connection.
    Response::json(413, body).with_header("Connection", "close")
}

// ANCHOR: door
/// One client connection, in front of `tiny_http`. For each request on it: read the
/// headers; if they declare a body over `limit`, answer `413` and close without
/// reading it; otherwise pass the request to `tiny_http` and its response back, and
/// wait for the client's next request on the same connection (keep-alive).
fn door(client: TcpStream, inner: SocketAddr, limit: usize) {
    // A client that falls silent halfway through a request (or between two) is let go.
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let Ok(reader) = client.try_clone() else { return };
    let mut from_client = BufReader::new(reader);
    let mut to_client = client;
    let Ok(mut to_inner) = TcpStream::connect(inner) else { return };
    let Ok(reader) = to_inner.try_clone() else { return };
    let mut from_inner = BufReader::new(reader);

    while let Some(head) = read_head(&mut from_client) {
        let length = declared_length(&head);
        if length.is_some_and(|length| length > limit) {
            let _ = to_client.write_all(&raw_response(&too_large(limit)));
            // Closing ends the body unread. Shutting down our side first lets the
            // client read the whole answer before it sees the close.
            let _ = to_client.shutdown(Shutdown::Write);
            return;
        }
        let Some(length) = length.or_else(|| (!is_chunked(&head)).then_some(0)) else {
            // A chunked body has no declared end: relay it, and this one response,
            // then close, so the door never has to decode chunks.
            return relay_to_the_end(&head, from_client, to_client, to_inner, from_inner);
        };
        // A client that asked to hear `100 Continue` before sending a body hears it
        // from the door, which has just checked the length itself.
        let head = if header_in(&String::from_utf8_lossy(&head), "expect").is_some() {
            let _ = to_client.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
            replace_header(&head, "expect", None)
        } else {
            head
        };
        // The request, then exactly its body, then exactly the response's.
        let forwarded = to_inner.write_all(&head).is_ok()
            && io::copy(&mut (&mut from_client).take(length as u64), &mut to_inner).is_ok_and(|n| n == length as u64);
        if !forwarded || !pass_response(&mut from_inner, &mut to_client) {
            return;
        }
        if says_close(&head) {
            return;
        }
    }
}

/// Copy one response from `tiny_http` to the client. `false` when either side is
/// gone, or when the response closes the connection.
fn pass_response(from_inner: &mut BufReader<TcpStream>, to_client: &mut TcpStream) -> bool {
    let Some(head) = read_head(from_inner) else { return false };
    // `to_tiny_http` makes every response declare its length.
    let length = declared_length(&head).unwrap_or(0) as u64;
    to_client.write_all(&head).is_ok()
        && io::copy(&mut from_inner.take(length), to_client).is_ok_and(|n| n == length)
        && !says_close(&head)
}

// ANCHOR_END: door

/// The old way, for a chunked request: one request, relayed both ways until the end.
fn relay_to_the_end(
    head: &[u8],
    mut from_client: BufReader<TcpStream>,
    mut to_client: TcpStream,
    mut to_inner: TcpStream,
    mut from_inner: BufReader<TcpStream>,
) {
    if to_inner.write_all(&replace_header(head, "connection", Some("close"))).is_err() {
        return;
    }
    thread::spawn(move || {
        let _ = io::copy(&mut from_client, &mut to_inner);
        // The client hung up or fell silent: say so to `tiny_http`, or the worker
        // reading this body would wait for the rest of it forever (`from_inner`
        // keeps the socket open, so dropping `to_inner` alone does not close it).
        let _ = to_inner.shutdown(Shutdown::Write);
    });
    let _ = io::copy(&mut from_inner, &mut to_client);
    let _ = to_client.shutdown(Shutdown::Both);
}

/// Read up to and including the blank line that ends an HTTP head. `None` if the
/// connection ends first or the head is unreasonably long (64 KiB).
fn read_head(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    loop {
        let read = reader.by_ref().take(64 * 1024).read_until(b'\n', &mut head).ok()?;
        if read == 0 || head.len() >= 64 * 1024 {
            return None;
        }
        if head.ends_with(b"\r\n\r\n") {
            return Some(head);
        }
    }
}

/// The `Content-Length` a request head declares, if any (and if it is a number).
fn declared_length(head: &[u8]) -> Option<usize> {
    header_in(&String::from_utf8_lossy(head), "content-length")?.parse().ok()
}

/// The value of header `name` in an HTTP head, if present.
fn header_in<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then_some(value.trim())
    })
}

fn is_chunked(head: &[u8]) -> bool {
    header_in(&String::from_utf8_lossy(head), "transfer-encoding").is_some()
}

/// Whether a request or response ends its connection: `Connection: close`, or
/// HTTP/1.0 without `Connection: keep-alive`.
fn says_close(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    match header_in(&text, "connection") {
        Some(value) => value.eq_ignore_ascii_case("close"),
        None => text.lines().next().is_some_and(|line| line.contains("HTTP/1.0")),
    }
}

/// The same head without header `name`, and with `name: value` added when given.
fn replace_header(head: &[u8], name: &str, value: Option<&str>) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let mut lines: Vec<String> = text
        .split("\r\n")
        .filter(|line| !line.is_empty())
        .filter(|line| !line.split(':').next().unwrap_or("").trim().eq_ignore_ascii_case(name))
        .map(str::to_string)
        .collect();
    lines.extend(value.map(|value| format!("{name}: {value}")));
    format!("{}\r\n\r\n", lines.join("\r\n")).into_bytes()
}

/// A [`Response`] as bytes on the wire, for the door's own answers.
fn raw_response(response: &Response) -> Vec<u8> {
    let mut raw = format!("HTTP/1.1 {} {}\r\n", response.status, reason(response.status)).into_bytes();
    for (name, value) in &response.headers {
        raw.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", response.body.len()).as_bytes());
    raw.extend_from_slice(&response.body);
    raw
}

fn reason(status: u16) -> &'static str {
    match status {
        413 => "Content Too Large",
        _ => "",
    }
}

fn to_tiny_http(response: Response) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    let length = response.body.len();
    let mut converted = tiny_http::Response::new(
        tiny_http::StatusCode(response.status),
        Vec::new(),
        io::Cursor::new(response.body),
        Some(length),
        None,
    )
    // Always `Content-Length`, never chunked: the door relies on it to find where a
    // response ends.
    .with_chunked_threshold(usize::MAX);
    for (name, value) in &response.headers {
        let header = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
            .expect("handlers write ASCII header names and values");
        converted.add_header(header);
    }
    converted
}
