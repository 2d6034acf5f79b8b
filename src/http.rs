//! The base every chapter stands on: a synchronous HTTP loop on `tiny_http`.
//!
//! It does three things and nothing else:
//! 1. listens, and prints the URL it really listens on (port 0 picks a free port);
//! 2. turns each `tiny_http` request into a plain [`Request`] value (method, path,
//!    headers, body), refusing a body over the size limit before reading it;
//! 3. hands that value to the chapter's handler, a pure function, and writes the
//!    [`Response`] value it returns back to the socket.
//!
//! All MCP knowledge lives in the chapters. This file depends on nothing but the
//! standard library and `tiny_http`, so the starter (chapter 10) can carry a copy of it
//! into a crate of your own.

// ANCHOR: types
use std::io::{self, Read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;

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
    let server = tiny_http::Server::http(bind).map_err(io::Error::other)?;
    let address = server.server_addr().to_ip().expect("a TCP address");
    println!("listening on http://{address}/mcp");

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

fn to_tiny_http(response: Response) -> tiny_http::Response<io::Cursor<Vec<u8>>> {
    let length = response.body.len();
    let mut converted = tiny_http::Response::new(
        tiny_http::StatusCode(response.status),
        Vec::new(),
        io::Cursor::new(response.body),
        Some(length),
        None,
    );
    for (name, value) in &response.headers {
        let header = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
            .expect("handlers write ASCII header names and values");
        converted.add_header(header);
    }
    converted
}
