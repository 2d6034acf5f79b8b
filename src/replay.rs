//! The client side of a transcript: start a chapter's server, send each request over
//! a real socket, and compare what comes back with what the transcript expects.
//!
//! The cargo tests and the learner's `check` command both use this, so a learner's
//! exercise is held to exactly the same standard as the chapter.
//!
//! HTTP exchanges go to one server started on port 0 ([`RunningServer`], [`replay`]);
//! each stdio exchange runs its own process, started with `--stdio`, fed its lines
//! and closed ([`run_stdio`], [`replay_stdio`]).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::transcript::{During, Exchange, HttpRequest, HttpResponse, Interruption, StdioExchange, Transcript};

/// How long one exchange may take before the replay gives up on it.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Response headers worth keeping when a transcript is blessed, besides the ones
/// the transcript already lists.
const HEADERS_THAT_MATTER: &[&str] = &["content-type", "allow", "www-authenticate", "mcp-session-id"];

/// A chapter's server running as a child process; stopped when dropped.
pub struct RunningServer {
    child: Child,
    /// Where it listens, read from the line it prints once listening.
    pub address: SocketAddr,
    /// What it wrote to stderr so far, to explain a failure.
    stderr: Arc<Mutex<String>>,
}

impl RunningServer {
    /// Start `binary --bind 127.0.0.1:0 ARGS...` and wait for its URL line.
    pub fn start(binary: &Path, args: &[String]) -> io::Result<RunningServer> {
        let mut child = Command::new(binary)
            .args(["--bind", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", binary.display())))?;

        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
        });

        // The first stdout line that holds `http://` names the address. Keep
        // draining stdout afterwards so the child never blocks on a full pipe.
        let (found, wait) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = address_in(&line)
                    && let Some(found) = found.take()
                {
                    let _ = found.send(address);
                }
            }
        });

        match wait.recv_timeout(TIMEOUT) {
            Ok(address) => Ok(RunningServer { child, address, stderr }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = stderr.lock().unwrap().clone();
                Err(io::Error::other(format!(
                    "{} printed no `http://` line within {TIMEOUT:?}; its stderr:\n{log}",
                    binary.display()
                )))
            }
        }
    }

    /// The server's process id, to look at its threads and files from a test.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running (it has not crashed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `listening on http://127.0.0.1:43125/mcp` -> `127.0.0.1:43125`.
fn address_in(line: &str) -> Option<SocketAddr> {
    let url = &line[line.find("http://")? + "http://".len()..];
    let authority = url.split(['/', ' ']).next()?;
    authority.to_socket_addrs().ok()?.next()
}

/// Parse `http://HOST:PORT/...` into an address, for a learner's `--url`.
pub fn address_of_url(url: &str) -> Option<SocketAddr> {
    address_in(url)
}

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

/// One way an actual response differs from the expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    Status {
        expected: u16,
        actual: u16,
    },
    Header {
        name: String,
        expected: String,
        actual: Option<String>,
    },
    /// Both sides pretty-printed (JSON in the expected message's key order), ready to diff.
    Body {
        expected: String,
        actual: String,
    },
}

// ANCHOR: compare
/// Compare a response with the transcript's: the status, each listed header, and
/// the body (as JSON when the expected body is JSON, else as text).
pub fn compare(expected: &HttpResponse, actual: &HttpResponse) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    if expected.status != actual.status {
        mismatches.push(Mismatch::Status { expected: expected.status, actual: actual.status });
    }
    for (name, value) in &expected.headers {
        let found = actual.header(name);
        if found != Some(value.as_str()) {
            mismatches.push(Mismatch::Header {
                name: name.clone(),
                expected: value.clone(),
                actual: found.map(str::to_string),
            });
        }
    }
    if !bodies_match(&expected.body, &actual.body) {
        let (wanted, given) = (shown_like(&expected.body, None), shown_like(&actual.body, Some(&expected.body)));
        mismatches.push(Mismatch::Body { expected: wanted, actual: given });
    }
    mismatches
}

fn bodies_match(expected: &str, actual: &str) -> bool {
    if let Some(wanted) = events(expected) {
        return events(actual).is_some_and(|given| {
            given.len() == wanted.len()
                && wanted.iter().zip(&given).all(|(w, g)| w.name == g.name && bodies_match(&w.data, &g.data))
        });
    }
    match (serde_json::from_str::<Value>(expected), serde_json::from_str::<Value>(actual)) {
        (Ok(expected), Ok(actual)) => expected == actual,
        _ => expected.trim_end() == actual.trim_end(),
    }
}

/// One server-sent event: its name (`event:`) and its data (`data:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// A body read as an event stream: events apart by a blank line, each line a field
/// (`event: message`, `data: {...}`; several `data` lines join with a newline, as the
/// HTML standard's event stream does). `None` when the body is not one: empty, or a
/// line that is no field of an event. An empty body is no stream.
pub fn events(body: &str) -> Option<Vec<Event>> {
    let body = body.replace("\r\n", "\n");
    if body.trim().is_empty() {
        return None;
    }
    let mut events = Vec::new();
    for block in body.trim_end_matches('\n').split("\n\n") {
        let (mut name, mut data): (Option<String>, Vec<&str>) = (None, Vec::new());
        for line in block.lines() {
            match line.split_once(':') {
                Some(("event", value)) => name = Some(value.strip_prefix(' ').unwrap_or(value).to_string()),
                Some(("data", value)) => data.push(value.strip_prefix(' ').unwrap_or(value)),
                Some(("id" | "retry", _)) | Some(("", _)) => {} // an id, a retry time, a comment
                _ => return None,
            }
        }
        events.push(Event { name: name.unwrap_or_else(|| "message".into()), data: data.join("\n") });
    }
    Some(events)
}
// ANCHOR_END: compare

// ANCHOR: strictness
/// How strictly a response is held to its transcript.
///
/// What a learner may do differently from the chapter, kept here and nowhere else.
///
/// **Words.** Three kinds of text are sentences for a reader, worded as the server sees
/// fit, which a learner cannot be expected to guess:
/// - `error.message` of a JSON-RPC error (JSON-RPC 2.0, section 5.1: "a String
///   providing a short description of the error");
/// - the `text` of each text block of a failed tool result (`isError: true`): words for
///   the model about what went wrong (`2025-11-25/server/tools.mdx`, "Error Handling").
///   One thing in them is not free: each name the chapter's text quotes in backticks
///   (the arguments to fix, as in "`rate` is missing") must be named in the learner's
///   text too, or the model does not learn what to fix. The same holds for the
///   `error.message` of an invalid-params error (-32602) answering `prompts/get`: a
///   prompt has no failed result, so its arguments' problems are protocol errors, and
///   the client that has to fix them learns which from the message
///   (`2025-11-25/server/prompts.mdx`, "Error Handling");
/// - in a `tools/list` result, every `title` and `description` of a tool and of
///   anything in its schemas: words for the model and for people about what the tool
///   does and when to call it (same file, "Tool").
///
/// **Optional members.** A member the protocol defines as optional, which the chapter
/// leaves out, may be in a learner's answer when it says nothing its absence would not
/// (`"isError": false`, `"listChanged": false`) or only describes the server
/// (`instructions`, and `title`, `description`, `websiteUrl` or `icons` beside the
/// name and version of `serverInfo`): see [`optional_member`]. Any other member the
/// chapter does not send is a difference.
///
/// Free words are not free in length: where the chapter's quote what the client sent
/// cut short (`echo`: 80 characters, then `…`), the learner's may not quote more of it;
/// and wherever they are, they may not repeat a run of more than 80 characters of any
/// string the client sent (the method, a name, a URI) that the chapter's words do not
/// repeat (chapter 1, "Errors, and what they echo").
///
/// With [`Strictness::Learner`] these are reported as [`Note`]s, and only a text that
/// leaves out a name or quotes or repeats too much, or a member that is not optional, fails the
/// exchange. And a text
/// block that holds JSON (the text copy of `structuredContent`, same file, "Structured
/// Content") compares as JSON: key order and spacing are the serializer's. Everything
/// else still compares exactly (status, headers, `error.code`, `isError: true`, the id
/// and its type, a successful tool's text). The cargo tests compare with
/// [`Strictness::Exact`]: a transcript records what its own chapter says, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    Exact,
    Learner,
}
// ANCHOR_END: strictness

/// Something a learner's answer does differently from the chapter's, which
/// [`Strictness::Learner`] looks at before comparing the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where, as a learner reads it: `error.message`, `result.content[0].text`; for a
    /// stdio exchange, `line 2: result.isError`.
    pub path: String,
    /// Where, as a JSON pointer into the message (for stdio, after the line's number
    /// and a `#`: `1#/result/isError`), to find the lines it explains.
    pub pointer: String,
    pub kind: NoteKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteKind {
    /// Free words, worded differently: fine.
    Reworded { expected: String, actual: String },
    /// A failed call's text that does not name every argument the chapter's names.
    Unnamed { missing: Vec<String> },
    /// Free words that quote more of the client's input than the chapter's, which cut it
    /// after `quote`.
    Overquoted { quote: String },
    /// Free words that repeat more than 80 characters of something the client sent, where
    /// the chapter's words do not: `quote` is how the run starts.
    Repeated { quote: String },
    /// A member the chapter does not send and the protocol defines as optional: fine.
    Optional { reason: &'static str },
    /// A member the chapter does not send, and not an optional one.
    Unexpected,
}

impl Note {
    /// Whether this difference fails the exchange.
    pub fn counts(&self) -> bool {
        matches!(
            self.kind,
            NoteKind::Unnamed { .. } | NoteKind::Overquoted { .. } | NoteKind::Repeated { .. } | NoteKind::Unexpected
        )
    }
}

/// [`compare`], with the differences [`Strictness`] allows let through as notes.
pub fn compare_with(
    expected: &HttpResponse,
    actual: &HttpResponse,
    strictness: Strictness,
) -> (Vec<Mismatch>, Vec<Note>) {
    compare_answer("", expected, actual, strictness)
}

/// [`compare_with`] for the answer to `sent`, the body of the request: the rules of
/// [`Strictness`] that depend on what the client sent (its method, its strings) use it.
pub fn compare_answer(
    sent: &str,
    expected: &HttpResponse,
    actual: &HttpResponse,
    strictness: Strictness,
) -> (Vec<Mismatch>, Vec<Note>) {
    let sent: Option<Value> = serde_json::from_str(sent).ok();
    if strictness == Strictness::Learner
        && let Some((notes, forgiven)) = forgive(&expected.body, &actual.body, sent.as_ref())
    {
        let mut mismatches = compare(expected, &HttpResponse { body: forgiven, ..actual.clone() });
        // The difference shown is the learner's own answer, not the forgiven one.
        for mismatch in &mut mismatches {
            if let Mismatch::Body { actual: shown, .. } = mismatch {
                *shown = shown_like(&actual.body, Some(&expected.body));
            }
        }
        return (mismatches, notes);
    }
    (compare(expected, actual), Vec::new())
}

/// The `actual` message as [`Strictness::Learner`] compares it, and the notes on it:
/// each free text (see [`Strictness`]) that differs but names what the chapter's names
/// is replaced by the expected words; a JSON text block equal as JSON to the expected
/// one is replaced by it; an optional member is taken out. `None` when the messages
/// are not JSON. `sent` is the message the answer answers, when known.
fn forgive(expected: &str, actual: &str, sent: Option<&Value>) -> Option<(Vec<Note>, String)> {
    let expected: Value = serde_json::from_str(expected).ok()?;
    let mut forgiven: Value = serde_json::from_str(actual).ok()?;
    let failed = |body: &Value| body.pointer("/result/isError") == Some(&Value::Bool(true));
    let tool_failed = failed(&expected) && failed(&forgiven);
    let invalid_params = |body: &Value| body.pointer("/error/code") == Some(&Value::from(-32602));
    let prompt_refused = sent.and_then(|s| s.get("method")) == Some(&Value::from("prompts/get"))
        && invalid_params(&expected)
        && invalid_params(&forgiven);
    let blocks = expected.pointer("/result/content").and_then(Value::as_array).map_or(0, Vec::len);
    let mut inputs = Vec::new();
    if let Some(sent) = sent {
        long_strings_in(sent, &mut inputs);
    }
    // Each place as a JSON pointer, as the learner reads it, and how free its words are.
    let message_words = if prompt_refused { Words::Naming } else { Words::Free };
    let mut places = vec![("/error/message".to_string(), "error.message".to_string(), message_words)];
    let block_words = if tool_failed { Words::Naming } else { Words::Exact };
    places.extend(
        (0..blocks).map(|i| (format!("/result/content/{i}/text"), format!("result.content[{i}].text"), block_words)),
    );
    if let Some(Value::Array(tools)) = expected.pointer("/result/tools") {
        for (i, tool) in tools.iter().enumerate() {
            prose_in(tool, &format!("/result/tools/{i}"), &format!("result.tools[{i}]"), &mut places);
        }
    }
    let mut notes = Vec::new();
    for (place, path, words) in places {
        let (Some(Value::String(wanted)), Some(Value::String(given))) =
            (expected.pointer(&place), forgiven.pointer(&place))
        else {
            continue;
        };
        if wanted == given {
            continue;
        }
        let same_json = matches!(
            (serde_json::from_str::<Value>(wanted), serde_json::from_str::<Value>(given)),
            (Ok(a), Ok(b)) if a == b
        );
        if !same_json {
            if words != Words::Exact
                && let Some(quote) = overquoted(wanted, given)
            {
                notes.push(Note { path, pointer: place, kind: NoteKind::Overquoted { quote } });
                continue;
            }
            if words != Words::Exact
                && let Some(quote) = repeated(wanted, given, &inputs)
            {
                notes.push(Note { path, pointer: place, kind: NoteKind::Repeated { quote } });
                continue;
            }
            match words {
                Words::Exact => continue,
                Words::Naming => {
                    let missing: Vec<String> =
                        quoted_names(wanted).into_iter().filter(|name| !names(given, name)).collect();
                    if !missing.is_empty() {
                        notes.push(Note { path, pointer: place, kind: NoteKind::Unnamed { missing } });
                        continue;
                    }
                }
                Words::Free => {}
            }
            let kind = NoteKind::Reworded { expected: wanted.clone(), actual: given.clone() };
            notes.push(Note { path, pointer: place.clone(), kind });
        }
        *forgiven.pointer_mut(&place).expect("just read") = Value::String(wanted.clone());
    }
    let mut extra = Vec::new();
    members_not_in(&expected, &forgiven, &mut Vec::new(), &mut extra);
    for Extra { at, value, added_only } in extra {
        let keys: Vec<&str> = at.iter().map(|s| s.key.as_str()).collect();
        let (path, pointer) = (display_path(&at), json_pointer(&at));
        match optional_member(&keys, &value, &expected) {
            Some(reason) => {
                remove_member(&mut forgiven, &at);
                notes.push(Note { path, pointer, kind: NoteKind::Optional { reason } });
            }
            None if added_only => notes.push(Note { path, pointer, kind: NoteKind::Unexpected }),
            None => {}
        }
    }
    Some((notes, forgiven.to_string()))
}

/// How free the words at one place are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Words {
    /// Compared exactly (a successful tool's output).
    Exact,
    /// Free, as long as they name what the chapter's words quote in backticks.
    Naming,
    /// Free.
    Free,
}

/// Every string `title` or `description` member inside `value` (found at `pointer`,
/// shown as `path`), at any depth, as a free place for [`forgive`].
fn prose_in(value: &Value, pointer: &str, path: &str, places: &mut Vec<(String, String, Words)>) {
    let Value::Object(members) = value else { return };
    for (key, member) in members {
        // A JSON pointer escapes `~` and `/` in a key.
        let (pointer, path) =
            (format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")), format!("{path}.{key}"));
        match member {
            Value::String(_) if key == "title" || key == "description" => places.push((pointer, path, Words::Free)),
            Value::Object(_) => prose_in(member, &pointer, &path, places),
            _ => {}
        }
    }
}

/// The names a text quotes in backticks: "`rate` is missing; `hours` must be ..." ->
/// `rate`, `hours`.
fn quoted_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in text.split('`').skip(1).step_by(2) {
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The start of client input the chapter's words quote cut short (`echo`: at most 80
/// characters, then `…`) and the learner's words quote further: `Some(that start)`.
/// Further means the same characters followed by a letter or digit, not by an end.
fn overquoted(wanted: &str, given: &str) -> Option<String> {
    wanted.match_indices('…').find_map(|(at, _)| {
        let quote: String = {
            let before: Vec<char> = wanted[..at].chars().collect();
            before[before.len().saturating_sub(80)..].iter().collect()
        };
        let long_enough = quote.chars().count() >= 40;
        let further = given
            .match_indices(quote.as_str())
            .any(|(start, _)| given[start + quote.len()..].chars().next().is_some_and(char::is_alphanumeric));
        (long_enough && further).then_some(quote)
    })
}

/// How many characters of client input an answer may repeat: `echo`'s 80.
const ECHOED: usize = 80;

/// Every string in `value` (keys too) longer than [`ECHOED`] characters.
fn long_strings_in<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    let long = |text: &str| text.chars().nth(ECHOED).is_some();
    match value {
        Value::String(text) if long(text) => found.push(text),
        Value::Array(items) => items.iter().for_each(|item| long_strings_in(item, found)),
        Value::Object(members) => {
            for (key, member) in members {
                if long(key) {
                    found.push(key);
                }
                long_strings_in(member, found);
            }
        }
        _ => {}
    }
}

/// Every run of [`ECHOED`] + 1 characters in `text`.
fn runs(text: &str) -> impl Iterator<Item = &str> {
    let bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
    (0..bounds.len().saturating_sub(ECHOED + 1)).map(move |i| &text[bounds[i]..bounds[i + ECHOED + 1]])
}

/// A run of more than [`ECHOED`] characters of one of `inputs` (strings the client sent)
/// that the learner's words repeat and the chapter's do not: `Some(its first 40
/// characters)`.
fn repeated(wanted: &str, given: &str, inputs: &[&str]) -> Option<String> {
    if inputs.is_empty() || given.chars().nth(ECHOED).is_none() {
        return None;
    }
    let sent: std::collections::HashSet<&str> = inputs.iter().flat_map(|input| runs(input)).collect();
    let run = runs(given).find(|run| sent.contains(run) && !wanted.contains(run))?;
    Some(run.chars().take(40).collect())
}

/// Does `text` name `name`, as a word of its own (`rate`, not `generate`)?
fn names(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// One step into a JSON value: an object's key, or an array's index.
#[derive(Debug, Clone)]
struct Segment {
    key: String,
    index: bool,
}

/// Members of `actual` that `expected` lacks, where both have the object that would
/// hold them: their path, their value, and whether they are all that differs in that
/// object's list of members (none of the expected ones is missing). Arrays of the same
/// length are walked item by item.
fn members_not_in(expected: &Value, actual: &Value, at: &mut Vec<Segment>, found: &mut Vec<Extra>) {
    match (expected, actual) {
        (Value::Object(wanted), Value::Object(given)) => {
            let added_only = wanted.keys().all(|key| given.contains_key(key));
            for (key, value) in given {
                at.push(Segment { key: key.clone(), index: false });
                match wanted.get(key) {
                    Some(inner) => members_not_in(inner, value, at, found),
                    None => found.push(Extra { at: at.clone(), value: value.clone(), added_only }),
                }
                at.pop();
            }
        }
        (Value::Array(wanted), Value::Array(given)) if wanted.len() == given.len() => {
            for (i, (inner, value)) in wanted.iter().zip(given).enumerate() {
                at.push(Segment { key: i.to_string(), index: true });
                members_not_in(inner, value, at, found);
                at.pop();
            }
        }
        _ => {}
    }
}

/// A member the learner's answer has and the chapter's lacks.
struct Extra {
    at: Vec<Segment>,
    value: Value,
    /// The object holding it has every member the chapter's has: the learner added
    /// something, rather than sent another shape (`error` for `result`, which the
    /// side-by-side shows well enough).
    added_only: bool,
}

fn display_path(segments: &[Segment]) -> String {
    let mut path = String::new();
    for segment in segments {
        if segment.index {
            path.push_str(&format!("[{}]", segment.key));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&segment.key);
        }
    }
    path
}

fn json_pointer(segments: &[Segment]) -> String {
    segments.iter().map(|s| format!("/{}", s.key.replace('~', "~0").replace('/', "~1"))).collect()
}

fn remove_member(value: &mut Value, segments: &[Segment]) {
    let Some((last, parent)) = segments.split_last() else { return };
    if let Some(Value::Object(members)) = value.pointer_mut(&json_pointer(parent)) {
        members.shift_remove(&last.key);
    }
}

// ANCHOR: optional_member
/// Why a member the chapter's answer lacks may stand in a learner's: `Some(reason)`
/// when the protocol defines it as optional there (`schema/2025-11-25/schema.ts`) and
/// its value says nothing its absence would not, or only describes the server.
/// `keys` is its path, `value` its value, `expected` the chapter's whole message.
pub fn optional_member(keys: &[&str], value: &Value, expected: &Value) -> Option<&'static str> {
    const ABSENT_MEANS_FALSE: &str = "false is what a client assumes when it is left out";
    const DESCRIBES_THE_SERVER: &str = "it describes the server, and a client needs none of it to go on";
    let (is_false, is_text) = (value == &Value::Bool(false), value.is_string());
    // The answers that introduce a server: `initialize`'s and `server/discover`'s.
    let introduces =
        ["/result/protocolVersion", "/result/supportedVersions"].iter().any(|p| expected.pointer(p).is_some());
    match keys {
        ["result", "isError"] if is_false => Some(ABSENT_MEANS_FALSE),
        ["result", "capabilities", _, "listChanged" | "subscribe"] if is_false => Some(ABSENT_MEANS_FALSE),
        ["result", "instructions"] if is_text && introduces => Some(DESCRIBES_THE_SERVER),
        ["result", "serverInfo" | "_meta", .., "title" | "description" | "websiteUrl"] if is_text => {
            Some(DESCRIBES_THE_SERVER)
        }
        ["result", "serverInfo" | "_meta", .., "icons"] if value.is_array() => Some(DESCRIBES_THE_SERVER),
        _ => None,
    }
}
// ANCHOR_END: optional_member

/// One line of a message as the check shows it, and the JSON pointer of the member
/// it belongs to (the prefix alone for a line of text that is not JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub pointer: String,
}

/// A message pretty-printed, JSON with its keys in the order of `like` (the chapter's
/// message, so that the two sides line up in the order the transcript shows) and the
/// others after them; anything else as it is.
pub fn shown_like(body: &str, like: Option<&str>) -> String {
    shown_lines(body, like, "").iter().map(|line| line.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// [`shown_like`], line by line, each with its pointer after `prefix`.
pub fn shown_lines(body: &str, like: Option<&str>, prefix: &str) -> Vec<Line> {
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        let pointer = prefix.to_string();
        return body.trim_end().lines().map(|text| Line { text: text.to_string(), pointer: pointer.clone() }).collect();
    };
    let like = like.and_then(|like| serde_json::from_str::<Value>(like).ok()).unwrap_or(Value::Null);
    let mut lines = Vec::new();
    pretty_lines(&ordered_like(json, &like), 0, "", &mut prefix.to_string(), false, &mut lines);
    lines
}

/// `value` with each object's keys in the order `like` has them, its other keys after.
fn ordered_like(value: Value, like: &Value) -> Value {
    match (value, like) {
        (Value::Object(mut members), Value::Object(order)) => {
            let mut ordered = Map::new();
            for (key, inner) in order {
                if let Some(value) = members.shift_remove(key) {
                    ordered.insert(key.clone(), ordered_like(value, inner));
                }
            }
            ordered.extend(members);
            Value::Object(ordered)
        }
        (Value::Array(items), Value::Array(order)) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| ordered_like(item, order.get(i).unwrap_or(&Value::Null)))
                .collect(),
        ),
        (value, _) => value,
    }
}

/// Pretty-print `value` as `serde_json::to_string_pretty` does, one [`Line`] at a time.
fn pretty_lines(value: &Value, depth: usize, key: &str, pointer: &mut String, comma: bool, lines: &mut Vec<Line>) {
    let indent = "  ".repeat(depth);
    let comma = if comma { "," } else { "" };
    let mut push = |text: String, pointer: &str| lines.push(Line { text, pointer: pointer.to_string() });
    let (open, close, items): (&str, &str, Vec<(String, &Value)>) = match value {
        Value::Object(members) if !members.is_empty() => {
            ("{", "}", members.iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) if !items.is_empty() => {
            ("[", "]", items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect())
        }
        _ => {
            let text = serde_json::to_string(value).expect("a Value always serializes");
            push(format!("{indent}{key}{text}{comma}"), pointer);
            return;
        }
    };
    push(format!("{indent}{key}{open}"), pointer);
    let last = items.len() - 1;
    for (i, (name, item)) in items.into_iter().enumerate() {
        let before = pointer.len();
        pointer.push('/');
        pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
        let key = if value.is_object() {
            format!("{}: ", serde_json::to_string(&name).expect("a string"))
        } else {
            String::new()
        };
        pretty_lines(item, depth + 1, &key, pointer, i < last, lines);
        pointer.truncate(before);
    }
    lines.push(Line { text: format!("{indent}{close}{comma}"), pointer: pointer.clone() });
}

/// What one exchange of a replay gave.
pub struct Outcome<'a> {
    pub exchange: &'a Exchange,
    /// The response, or why there was none.
    pub actual: Result<HttpResponse, String>,
    /// Empty when the exchange passed.
    pub mismatches: Vec<Mismatch>,
    /// Differences that do not count (see [`Strictness`]); always empty when exact.
    pub notes: Vec<Note>,
}

impl Outcome<'_> {
    pub fn passed(&self) -> bool {
        self.actual.is_ok() && self.mismatches.is_empty()
    }
}

/// Send every exchange of `transcript` to `address`, in order, and compare exactly.
pub fn replay(transcript: &Transcript, address: SocketAddr) -> Vec<Outcome<'_>> {
    transcript.exchanges.iter().map(|exchange| run_exchange(exchange, address, Strictness::Exact)).collect()
}

/// Send one exchange's request to `address` and compare the answer with `strictness`.
pub fn run_exchange(exchange: &Exchange, address: SocketAddr, strictness: Strictness) -> Outcome<'_> {
    match send_exchange(address, exchange) {
        Ok(actual) => {
            let (mismatches, notes) = compare_answer(&exchange.request.body, &exchange.expected, &actual, strictness);
            Outcome { exchange, actual: Ok(actual), mismatches, notes }
        }
        Err(error) => Outcome { exchange, actual: Err(error.to_string()), mismatches: Vec::new(), notes: Vec::new() },
    }
}

/// A failed exchange explained for a reader: what was sent, what differed, and a
/// line diff of the bodies (`-` expected, `+` actual).
pub fn explain(outcome: &Outcome) -> String {
    let exchange = outcome.exchange;
    let mut text = format!("✗ {} (transcript line {})\n", exchange.title, exchange.line);
    let first_line = exchange.request.body.lines().next().unwrap_or("");
    text.push_str(&format!("  sent: {} {} {first_line}\n", exchange.request.method, exchange.request.path));
    if let Err(error) = &outcome.actual {
        text.push_str(&format!("  no response: {error}\n"));
    }
    for mismatch in &outcome.mismatches {
        match mismatch {
            Mismatch::Status { expected, actual } => {
                text.push_str(&format!("  status: expected {expected}, got {actual}\n"));
            }
            Mismatch::Header { name, expected, actual } => {
                let actual = actual.as_deref().unwrap_or("(absent)");
                text.push_str(&format!("  header {name}: expected {expected:?}, got {actual:?}\n"));
            }
            Mismatch::Body { expected, actual } => {
                text.push_str("  body (- expected, + actual):\n");
                for line in line_diff(expected, actual) {
                    text.push_str(&format!("    {line}\n"));
                }
            }
        }
    }
    text
}

/// A minimal line diff (longest common subsequence): ` ` kept, `-` only in `old`,
/// `+` only in `new`.
pub fn line_diff(old: &str, new: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    diff_steps(&a, &b)
        .into_iter()
        .map(|step| match step {
            (Some(i), Some(_)) => format!("  {}", a[i]),
            (Some(i), None) => format!("- {}", a[i]),
            (_, Some(j)) => format!("+ {}", b[j]),
            (None, None) => unreachable!("every step takes a line"),
        })
        .collect()
}

/// The steps of a minimal diff of `a` and `b` (longest common subsequence): `(Some(i),
/// Some(j))` keeps `a[i]`, equal to `b[j]`; `(Some(i), None)` removes `a[i]`;
/// `(None, Some(j))` adds `b[j]`.
pub fn diff_steps<T: PartialEq>(a: &[T], b: &[T]) -> Vec<(Option<usize>, Option<usize>)> {
    // common[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut steps) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            steps.push((Some(i), Some(j)));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            steps.push((Some(i), None));
            i += 1;
        } else {
            steps.push((None, Some(j)));
            j += 1;
        }
    }
    steps
}

/// The response as a transcript should record it: the headers that matter (those
/// the transcript already listed, and a few always worth showing) and the body
/// pretty-printed in the server's own key order.
pub fn as_recorded(actual: &HttpResponse, expected: &HttpResponse) -> HttpResponse {
    let headers = actual
        .headers
        .iter()
        .filter(|(name, _)| {
            expected.header(name).is_some() || HEADERS_THAT_MATTER.iter().any(|h| h.eq_ignore_ascii_case(name))
        })
        .cloned()
        .collect();
    let body = pretty_json(&actual.body).unwrap_or_else(|| actual.body.trim_end().to_string());
    HttpResponse { status: actual.status, headers, body }
}

/// Pretty-print JSON text keeping its key order (two-space indent, as
/// `serde_json::to_string_pretty`). `None` when the text is not JSON.
pub fn pretty_json(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text).ok()?;
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = text.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(c);
                    out.extend(chars.next());
                } else {
                    out.push(c);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth -= 1;
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// stdio: one process per exchange, lines in, lines out.
// ---------------------------------------------------------------------------

/// What a stdio server did with one exchange's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioRun {
    /// Everything it wrote to stdout, as text (invalid UTF-8 replaced).
    pub stdout: String,
    /// How it ended: `None` when it was still running [`TIMEOUT`] after its stdin
    /// was closed (it was then killed).
    pub exit: Option<ExitStatus>,
    /// Its log.
    pub stderr: String,
}

impl StdioRun {
    /// The lines written to stdout, without their `\n`. A last line with no `\n`
    /// is included; [`compare_stdio`] reports it.
    pub fn lines(&self) -> Vec<String> {
        let body = self.stdout.strip_suffix('\n').unwrap_or(&self.stdout);
        if self.stdout.is_empty() { Vec::new() } else { body.split('\n').map(str::to_string).collect() }
    }
}

/// Start `program ARGS`, write each input line followed by `\n`, close its stdin,
/// and collect what it writes until it exits.
pub fn run_stdio(program: &Path, args: &[String], input: &[String]) -> io::Result<StdioRun> {
    let bytes: Vec<u8> = input.iter().flat_map(|line| line.bytes().chain(Some(b'\n'))).collect();
    run_stdio_within(program, args, &bytes, Vec::new(), TIMEOUT)
}

/// [`run_stdio`] with the bytes to write as they are.
pub fn run_stdio_bytes(program: &Path, args: &[String], input: &[u8]) -> io::Result<StdioRun> {
    run_stdio_within(program, args, input, Vec::new(), TIMEOUT)
}

/// Run a stdio exchange's process: its `stdin` block, then each later block
/// (`StdioExchange::then`) once the server has written the lines it waits for; then end
/// of input.
pub fn run_stdio_for(exchange: &StdioExchange, program: &Path, args: &[String]) -> io::Result<StdioRun> {
    let later = exchange.then.iter().map(|then| (then.after_lines, then.bytes())).collect();
    run_stdio_within(program, args, &exchange.bytes(), later, TIMEOUT)
}

/// Start `program ARGS`, write `input`, and for each `(N, bytes)` of `later` in turn,
/// wait until the server has written N lines and write `bytes` too; then close its
/// stdin and collect what it writes until it exits (killed after `timeout`).
fn run_stdio_within(
    program: &Path,
    args: &[String],
    input: &[u8],
    later: Vec<(usize, Vec<u8>)>,
    timeout: Duration,
) -> io::Result<StdioRun> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", program.display())))?;

    // Write from a thread, so a server that answers before reading everything never
    // blocks on a full stdout pipe while we block on a full stdin pipe. Dropping the
    // pipe at the end closes the server's stdin: end of input.
    // stdout is read into `written` as it comes, so the writer can wait for lines.
    let written = Arc::new(Mutex::new(Vec::new()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text = input.to_vec();
    let seen = written.clone();
    thread::spawn(move || {
        let _ = stdin.write_all(&text); // a server that exited early is reported below
        let deadline = Instant::now() + timeout;
        for (lines, bytes) in later {
            while seen.lock().unwrap().iter().filter(|&&b| b == b'\n').count() < lines && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(5));
            }
            let _ = stdin.write_all(&bytes);
        }
    });
    let stdout_pipe = child.stdout.take().expect("stdout is piped");
    let sink = written.clone();
    let stdout = thread::spawn(move || {
        let mut pipe = stdout_pipe;
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = pipe.read(&mut buffer) {
            sink.lock().unwrap().extend_from_slice(&buffer[..read]);
        }
    });
    let stderr_pipe = child.stderr.take().expect("stderr is piped");
    let stderr = thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = { stderr_pipe }.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });

    let started = Instant::now();
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let _ = stdout.join();
    let stdout = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
    let stderr = stderr.join().unwrap_or_default();
    Ok(StdioRun { stdout, exit, stderr })
}

/// One way a stdio run differs from the exchange's expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioMismatch {
    /// The lines differ: both sides, one message after the other, each JSON message
    /// pretty-printed (the actual in the expected's key order), ready to diff.
    Lines { expected: String, actual: String },
    /// The last thing written has no `\n`: a host reading lines waits for it forever.
    Unterminated,
    /// Still running after stdin was closed.
    DidNotExit,
    /// Exited, but not successfully.
    Failed { status: String },
}

/// Compare a run with the exchange: the lines (each as JSON when it is JSON), that
/// the last one ends with `\n`, and that the process exited successfully by itself.
pub fn compare_stdio(expected: &[String], actual: &StdioRun) -> Vec<StdioMismatch> {
    let mut mismatches = Vec::new();
    let lines = actual.lines();
    let same = lines.len() == expected.len() && expected.iter().zip(&lines).all(|(e, a)| bodies_match(e, a));
    if !same {
        let (wanted, given) = (shown_stdio(expected, None), shown_stdio(&lines, Some(expected)));
        mismatches.push(StdioMismatch::Lines { expected: wanted, actual: given });
    }
    if !actual.stdout.is_empty() && !actual.stdout.ends_with('\n') {
        mismatches.push(StdioMismatch::Unterminated);
    }
    match actual.exit {
        None => mismatches.push(StdioMismatch::DidNotExit),
        Some(status) if !status.success() => mismatches.push(StdioMismatch::Failed { status: status.to_string() }),
        Some(_) => {}
    }
    mismatches
}

/// [`compare_stdio`], with free text let through as notes when `strictness` says so:
/// each line written is one message, held to the same rule as an HTTP body.
pub fn compare_stdio_with(
    expected: &[String],
    actual: &StdioRun,
    strictness: Strictness,
) -> (Vec<StdioMismatch>, Vec<Note>) {
    compare_stdio_answers(&[], expected, actual, strictness)
}

/// [`compare_stdio_with`] for the answers to the lines `sent`: each line written is
/// compared as the answer to the message sent with the same id, if any (see
/// [`compare_answer`]).
pub fn compare_stdio_answers(
    sent: &[String],
    expected: &[String],
    actual: &StdioRun,
    strictness: Strictness,
) -> (Vec<StdioMismatch>, Vec<Note>) {
    let sent: Vec<Value> = sent.iter().filter_map(|line| serde_json::from_str(line).ok()).collect();
    let lines = actual.lines();
    if strictness == Strictness::Exact || lines.len() != expected.len() {
        return (compare_stdio(expected, actual), Vec::new());
    }
    let mut notes = Vec::new();
    let mut forgiven_stdout = String::new();
    for (number, (wanted, given)) in expected.iter().zip(&lines).enumerate() {
        let id = serde_json::from_str::<Value>(wanted).ok().and_then(|line| line.get("id").cloned());
        let answered = id.filter(|id| !id.is_null()).and_then(|id| sent.iter().find(|s| s.get("id") == Some(&id)));
        match forgive(wanted, given, answered) {
            Some((line_notes, forgiven)) => {
                // Say which line each note is about.
                notes.extend(line_notes.into_iter().map(|note| Note {
                    path: format!("line {}: {}", number + 1, note.path),
                    pointer: format!("{number}#{}", note.pointer),
                    ..note
                }));
                forgiven_stdout.push_str(&forgiven);
            }
            None => forgiven_stdout.push_str(given),
        }
        forgiven_stdout.push('\n');
    }
    if !actual.stdout.ends_with('\n') {
        forgiven_stdout.pop(); // keep an unterminated last line unterminated
    }
    let forgiven = StdioRun { stdout: forgiven_stdout, ..actual.clone() };
    let mut mismatches = compare_stdio(expected, &forgiven);
    // The difference shown is the learner's own lines, not the forgiven ones.
    for mismatch in &mut mismatches {
        if let StdioMismatch::Lines { actual: shown, .. } = mismatch {
            *shown = shown_stdio(&lines, Some(expected));
        }
    }
    (mismatches, notes)
}

/// Lines written over stdio as the check shows them: each message pretty-printed (in
/// the key order of the same line of `like`), one after the other.
pub fn shown_stdio(lines: &[String], like: Option<&[String]>) -> String {
    shown_stdio_lines(lines, like).iter().map(|line| line.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// [`shown_stdio`], line by line, each pointer after its message's number and a `#`.
pub fn shown_stdio_lines(lines: &[String], like: Option<&[String]>) -> Vec<Line> {
    let like_line = |i: usize| like.and_then(|like| like.get(i)).map(String::as_str);
    lines.iter().enumerate().flat_map(|(i, line)| shown_lines(line, like_line(i), &format!("{i}#"))).collect()
}

/// What one stdio exchange gave.
pub struct StdioOutcome<'a> {
    pub exchange: &'a StdioExchange,
    /// The run, or why there was none.
    pub actual: Result<StdioRun, String>,
    /// Empty when the exchange passed.
    pub mismatches: Vec<StdioMismatch>,
    /// Differences that do not count (see [`Strictness`]); always empty when exact.
    pub notes: Vec<Note>,
}

impl StdioOutcome<'_> {
    pub fn passed(&self) -> bool {
        self.actual.is_ok() && self.mismatches.is_empty()
    }
}

/// Run every stdio exchange of `transcript`, each in a fresh `program` started with
/// [`Transcript::stdio_args`], and compare exactly.
pub fn replay_stdio<'a>(transcript: &'a Transcript, program: &Path) -> Vec<StdioOutcome<'a>> {
    let args = transcript.stdio_args();
    transcript.stdio.iter().map(|exchange| run_stdio_exchange(exchange, program, &args, Strictness::Exact)).collect()
}

/// Run one stdio exchange in a fresh `program ARGS` and compare with `strictness`.
pub fn run_stdio_exchange<'a>(
    exchange: &'a StdioExchange,
    program: &Path,
    args: &[String],
    strictness: Strictness,
) -> StdioOutcome<'a> {
    match run_stdio_for(exchange, program, args) {
        Ok(run) => {
            let sent = exchange.all_input();
            let (mismatches, notes) = compare_stdio_answers(&sent, &exchange.expected, &run, strictness);
            StdioOutcome { exchange, actual: Ok(run), mismatches, notes }
        }
        Err(error) => {
            StdioOutcome { exchange, actual: Err(error.to_string()), mismatches: Vec::new(), notes: Vec::new() }
        }
    }
}

/// A failed stdio exchange explained for a reader: what was written, what differed
/// (a line diff, `-` expected, `+` actual), and the server's stderr.
pub fn explain_stdio(outcome: &StdioOutcome) -> String {
    let exchange = outcome.exchange;
    let mut text = format!("✗ {} (transcript line {}, stdio)\n", exchange.title, exchange.line);
    for line in &exchange.all_input() {
        text.push_str(&format!("  stdin: {line}\n"));
    }
    if let Err(error) = &outcome.actual {
        text.push_str(&format!("  no run: {error}\n"));
    }
    for mismatch in &outcome.mismatches {
        match mismatch {
            StdioMismatch::Lines { expected, actual } => {
                text.push_str("  stdout (- expected, + actual):\n");
                for line in line_diff(expected, actual) {
                    text.push_str(&format!("    {line}\n"));
                }
            }
            StdioMismatch::Unterminated => text.push_str("  the last line on stdout has no newline\n"),
            StdioMismatch::DidNotExit => {
                text.push_str(&format!("  still running {TIMEOUT:?} after stdin was closed (killed)\n"));
            }
            StdioMismatch::Failed { status } => text.push_str(&format!("  exited with {status}\n")),
        }
    }
    if let Ok(run) = &outcome.actual
        && !run.stderr.is_empty()
    {
        text.push_str("  stderr:\n");
        for line in run.stderr.lines() {
            text.push_str(&format!("    {line}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response(status: u16, body: &str) -> HttpResponse {
        HttpResponse { status, headers: vec![("Content-Type".into(), "application/json".into())], body: body.into() }
    }

    #[test]
    fn json_bodies_compare_as_json() {
        let expected = response(200, r#"{"id": 1, "jsonrpc": "2.0"}"#);
        assert!(compare(&expected, &response(200, r#"{"jsonrpc":"2.0","id":1}"#)).is_empty());
        // The id's type is part of the value: "1" is not 1.
        let mismatches = compare(&expected, &response(200, r#"{"jsonrpc":"2.0","id":"1"}"#));
        assert!(matches!(mismatches.as_slice(), [Mismatch::Body { .. }]), "{mismatches:?}");
    }

    #[test]
    fn a_learner_may_word_error_messages_freely() {
        let expected =
            response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: ping"}}"#);
        let reworded = response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method"}}"#);
        let (mismatches, notes) = compare_with(&expected, &reworded, Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let kind = NoteKind::Reworded { expected: "Method not found: ping".into(), actual: "no such method".into() };
        assert_eq!(notes, [Note { path: "error.message".into(), pointer: "/error/message".into(), kind }]);
        // The code still counts, and the cargo tests still want the exact words.
        let wrong_code =
            response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no such method"}}"#);
        assert_eq!(compare_with(&expected, &wrong_code, Strictness::Learner).0.len(), 1);
        assert_eq!(compare_with(&expected, &reworded, Strictness::Exact).0.len(), 1);
        // A message that is not a string is not a message.
        let no_message = response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}"#);
        assert_eq!(compare_with(&expected, &no_message, Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_learner_may_word_a_failed_tool_result_freely() {
        let result = |is_error: bool, text: &str| {
            response(
                200,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"isError":{is_error},"content":[{{"type":"text","text":"{text}"}}]}}}}"#
                ),
            )
        };
        let expected = result(true, "Invalid arguments: `hours` is missing");
        let (mismatches, notes) = compare_with(&expected, &result(true, "hours?"), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert_eq!(notes[0].path, "result.content[0].text");
        assert!(!notes[0].counts());
        // isError itself counts, and a successful tool's text is its output, not prose.
        assert_eq!(compare_with(&expected, &result(false, "hours?"), Strictness::Learner).0.len(), 1);
        let success = result(false, "BISMILLAH");
        assert_eq!(compare_with(&success, &result(false, "bismillah"), Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_failed_call_must_name_each_argument_the_chapter_names() {
        let result = |text: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": text}], "isError": true}});
            response(200, &body.to_string())
        };
        let expected = result("Invalid arguments: `rate` is missing; `hours` must be at most 24, not 30");
        let named = result("fix hours (too many) and give a rate");
        let (mismatches, notes) = compare_with(&expected, &named, Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert!(matches!(notes[0].kind, NoteKind::Reworded { .. }));
        // "bad" names nothing; "generate" is not `rate`: both fail, and say which names are missing.
        for (text, missing) in [("bad", vec!["rate", "hours"]), ("generate 30 hours", vec!["rate"])] {
            let (mismatches, notes) = compare_with(&expected, &result(text), Strictness::Learner);
            assert_eq!(mismatches.len(), 1, "{text}");
            let missing: Vec<String> = missing.into_iter().map(String::from).collect();
            assert_eq!(notes[0].kind, NoteKind::Unnamed { missing }, "{text}");
            assert!(notes[0].counts());
        }
    }

    #[test]
    fn free_words_quote_no_more_of_the_input_than_the_chapters() {
        let method = "tools/call".repeat(12);
        let cut: String = method.chars().take(80).collect();
        let error = |message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error(&format!("Method not found: {cut}…"));
        for fine in [format!("no method {cut}..."), format!("unknown: {}…", &cut[..40]), "unknown method".into()] {
            let (mismatches, _) = compare_with(&expected, &error(&fine), Strictness::Learner);
            assert!(mismatches.is_empty(), "{fine}: {mismatches:?}");
        }
        let (mismatches, notes) = compare_with(&expected, &error(&format!("no method {method}")), Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Overquoted { quote: cut });
    }

    #[test]
    fn free_words_repeat_no_long_run_of_what_the_client_sent() {
        let uri = format!("docs://{}", "pay rules ".repeat(20));
        let sent = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}).to_string();
        let error = |message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error("Invalid params: `uri` must be a URI");
        let cut: String = uri.chars().take(80).collect();
        for fine in ["not a URI".to_string(), format!("not a URI: {cut}…")] {
            let (mismatches, _) = compare_answer(&sent, &expected, &error(&fine), Strictness::Learner);
            assert!(mismatches.is_empty(), "{fine}: {mismatches:?}");
        }
        let whole = error(&format!("{uri} is not a URI"));
        let (mismatches, notes) = compare_answer(&sent, &expected, &whole, Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Repeated { quote: uri.chars().take(40).collect() });
        // Without the request, nothing is known of what the client sent.
        assert!(compare_with(&expected, &whole, Strictness::Learner).0.is_empty());
    }

    #[test]
    fn a_prompts_invalid_params_error_must_name_each_argument_the_chapter_names() {
        let sent = r#"{"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "explain"}}"#;
        let error = |code: i64, message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error(-32602, "Invalid params: missing required argument `question`");
        let named = error(-32602, "the question is missing");
        assert!(compare_answer(sent, &expected, &named, Strictness::Learner).0.is_empty());
        let (mismatches, notes) = compare_answer(sent, &expected, &error(-32602, "bad"), Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Unnamed { missing: vec!["question".into()] });
        // Another method's invalid params, and another code, keep their words free.
        let other = sent.replace("prompts/get", "tools/call");
        assert!(compare_answer(&other, &expected, &error(-32602, "bad"), Strictness::Learner).0.is_empty());
        let internal = error(-32603, "Internal error: `question` failed");
        assert!(compare_answer(sent, &internal, &error(-32603, "bad"), Strictness::Learner).0.is_empty());
    }

    #[test]
    fn an_optional_member_passes_with_a_note_and_another_member_fails() {
        let expected = response(200, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}"#);
        let with = |member: &str| {
            response(
                200,
                &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[],{member},"structuredContent":{{}}}}}}"#),
            )
        };
        let (mismatches, notes) = compare_with(&expected, &with(r#""isError":false"#), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert_eq!(notes[0].path, "result.isError");
        assert!(matches!(notes[0].kind, NoteKind::Optional { .. }) && !notes[0].counts());
        // `true` says something: it is a difference. So is a member the protocol does not make optional.
        for member in [r#""isError":true"#, r#""structured":null"#] {
            let (mismatches, notes) = compare_with(&expected, &with(member), Strictness::Learner);
            assert_eq!(mismatches.len(), 1, "{member}");
            assert_eq!(notes[0].kind, NoteKind::Unexpected, "{member}");
        }
        // The cargo tests still want the chapter's answer exactly.
        assert_eq!(compare_with(&expected, &with(r#""isError":false"#), Strictness::Exact).0.len(), 1);
    }

    #[test]
    fn instructions_and_server_details_are_optional_where_a_server_introduces_itself() {
        let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "pingme", "version": "0.2.0"}}});
        let mut richer = init.clone();
        richer["result"]["instructions"] = json!("Call PingME to test the connection.");
        richer["result"]["serverInfo"]["title"] = json!("Ping me");
        richer["result"]["capabilities"]["tools"]["listChanged"] = json!(false);
        let (mismatches, notes) =
            compare_with(&response(200, &init.to_string()), &response(200, &richer.to_string()), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let paths: Vec<&str> = notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["result.capabilities.tools.listChanged", "result.serverInfo.title", "result.instructions"]);
        // `instructions` in a tool's result is not the server introducing itself.
        let call = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        let mut with_instructions = call.clone();
        with_instructions["result"]["instructions"] = json!("x");
        let (mismatches, _) = compare_with(
            &response(200, &call.to_string()),
            &response(200, &with_instructions.to_string()),
            Strictness::Learner,
        );
        assert_eq!(mismatches.len(), 1);
    }

    #[test]
    fn a_difference_shows_the_keys_in_the_transcripts_order() {
        let expected = response(200, r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"x","capabilities":{}}}"#);
        let actual = response(200, r#"{"result":{"capabilities":{},"protocolVersion":"y"},"id":1,"jsonrpc":"2.0"}"#);
        let mismatches = compare(&expected, &actual);
        let [Mismatch::Body { expected, actual }] = mismatches.as_slice() else { panic!("{mismatches:?}") };
        assert_eq!(
            expected,
            "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"protocolVersion\": \"x\",\n    \"capabilities\": {}\n  }\n}"
        );
        assert_eq!(actual, &expected.replace("\"x\"", "\"y\""));
    }

    #[test]
    fn pretty_lines_match_serde_json_and_carry_pointers() {
        let text = r#"{"a":[1,{"b/c":"x","d":[]}],"e":{},"f":null,"g":10.0}"#;
        let lines = shown_lines(text, None, "");
        let joined: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(joined.join("\n"), serde_json::to_string_pretty(&value).unwrap());
        let x = lines.iter().find(|l| l.text.contains("\"x\"")).unwrap();
        assert_eq!(x.pointer, "/a/1/b~1c");
    }

    #[test]
    fn a_learner_may_word_tool_titles_and_descriptions_freely() {
        let list = |description: &str, property: &str, kind: &str| {
            let tool = json!({"name": "lookup_order", "title": "Look up", "description": description,
                "inputSchema": {"type": "object", "properties": {"orderId": {"type": kind, "description": property}}}});
            response(200, &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool]}}).to_string())
        };
        let expected = list("Looks up one order.", "The order's id.", "string");
        let (mismatches, notes) =
            compare_with(&expected, &list("Finds an order by id.", "Its id.", "string"), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let paths: Vec<&str> = notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            ["result.tools[0].description", "result.tools[0].inputSchema.properties.orderId.description"]
        );
        // The schema itself still counts.
        let wrong_type = list("Looks up one order.", "The order's id.", "number");
        assert_eq!(compare_with(&expected, &wrong_type, Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_json_text_block_compares_as_json_for_a_learner() {
        let result = |text: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
            response(200, &body.to_string())
        };
        let expected = result(r#"{"hours":10.0,"rate":20.0}"#);
        let (mismatches, notes) =
            compare_with(&expected, &result(r#"{"rate": 20.0, "hours": 10.0}"#), Strictness::Learner);
        assert!(mismatches.is_empty() && notes.is_empty(), "{mismatches:?} {notes:?}");
        assert_eq!(compare_with(&expected, &result(r#"{"rate":20.0,"hours":11.0}"#), Strictness::Learner).0.len(), 1);
        assert_eq!(compare_with(&expected, &result(r#"{"rate":20.0,"hours":10.0}"#), Strictness::Exact).0.len(), 1);
    }

    #[test]
    fn status_and_listed_headers_are_compared() {
        let expected = response(405, "").clone();
        let mut expected = expected;
        expected.headers.push(("Allow".into(), "POST".into()));
        let actual = HttpResponse { status: 404, headers: vec![], body: String::new() };
        let mismatches = compare(&expected, &actual);
        assert_eq!(mismatches.len(), 3, "{mismatches:?}");
        assert_eq!(mismatches[0], Mismatch::Status { expected: 405, actual: 404 });
    }

    #[test]
    fn an_empty_expected_body_requires_an_empty_body() {
        let expected = HttpResponse { status: 202, headers: vec![], body: String::new() };
        assert!(compare(&expected, &HttpResponse { body: String::new(), ..expected.clone() }).is_empty());
        assert_eq!(compare(&expected, &HttpResponse { body: "{}".into(), ..expected.clone() }).len(), 1);
    }

    #[test]
    fn parses_plain_and_chunked_responses() {
        let plain = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((plain.status, plain.body.as_str()), (200, "{}"));
        let chunked =
            parse_response(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n1\r\n}\r\n0\r\n\r\n").unwrap();
        assert_eq!((chunked.status, chunked.body.as_str()), (200, "{}"));
    }

    #[test]
    fn pretty_json_keeps_key_order() {
        let pretty = pretty_json(r#"{"jsonrpc":"2.0","id":"a,b","result":{},"list":[1,{"k":"\"x\""}]}"#).unwrap();
        assert_eq!(
            pretty,
            "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"a,b\",\n  \"result\": {},\n  \"list\": [\n    1,\n    {\n      \"k\": \"\\\"x\\\"\"\n    }\n  ]\n}"
        );
        assert_eq!(pretty_json("not json"), None);
    }

    #[test]
    fn line_diff_marks_changes() {
        assert_eq!(line_diff("a\nb\nc", "a\nx\nc"), ["  a", "- b", "+ x", "  c"]);
    }

    #[test]
    fn finds_the_address_in_the_url_line() {
        assert_eq!(address_in("listening on http://127.0.0.1:4242/mcp"), Some("127.0.0.1:4242".parse().unwrap()));
        assert_eq!(address_in("no url here"), None);
    }

    fn run(stdout: &str) -> StdioRun {
        // `true` exits successfully: borrow its status for a made-up run.
        let exit = Command::new("true").status().ok();
        StdioRun { stdout: stdout.into(), exit, stderr: String::new() }
    }

    #[test]
    fn stdio_lines_compare_as_json_in_order() {
        let expected = vec![r#"{"id": 1, "jsonrpc": "2.0"}"#.to_string(), "not json".to_string()];
        assert!(compare_stdio(&expected, &run("{\"jsonrpc\":\"2.0\",\"id\":1}\nnot json\n")).is_empty());
        let swapped = compare_stdio(&expected, &run("not json\n{\"jsonrpc\":\"2.0\",\"id\":1}\n"));
        assert!(matches!(swapped.as_slice(), [StdioMismatch::Lines { .. }]), "{swapped:?}");
        // No line expected: any line is one too many; none is right.
        assert!(compare_stdio(&[], &run("")).is_empty());
        assert_eq!(compare_stdio(&[], &run("{}\n")).len(), 1);
    }

    #[test]
    fn a_last_line_without_newline_is_reported() {
        let mismatches = compare_stdio(&["{}".to_string()], &run("{}"));
        assert_eq!(mismatches, [StdioMismatch::Unterminated]);
    }

    #[test]
    fn splits_stdout_into_lines() {
        assert_eq!(run("").lines(), Vec::<String>::new());
        assert_eq!(run("a\n").lines(), ["a"]);
        assert_eq!(run("a\n\nb").lines(), ["a", "", "b"]);
    }

    #[cfg(unix)]
    #[test]
    fn runs_a_process_over_its_stdin_and_stdout() {
        // `cat` is the simplest stdio server: it answers each line with itself and
        // ends when its stdin closes.
        let input = vec!["{\"a\": 1}".to_string(), String::new()];
        let run = run_stdio(Path::new("cat"), &[], &input).unwrap();
        assert_eq!(run.lines(), input);
        assert!(compare_stdio(&input, &run).is_empty());

        let failing = run_stdio(Path::new("sh"), &["-c".into(), "echo oops >&2; exit 3".into()], &[]).unwrap();
        let mismatches = compare_stdio(&[], &failing);
        assert!(matches!(mismatches.as_slice(), [StdioMismatch::Failed { .. }]), "{mismatches:?}");
        assert_eq!(failing.stderr, "oops\n");

        // One that ignores the end of its input is killed and reported.
        let stuck =
            run_stdio_within(Path::new("sleep"), &["5".into()], &[], Vec::new(), Duration::from_millis(100)).unwrap();
        assert_eq!(stuck.exit, None);
        assert_eq!(compare_stdio(&[], &stuck), [StdioMismatch::DidNotExit]);
    }

    #[test]
    fn a_later_stdin_block_is_written_once_its_lines_are_out() {
        // `sh` reads the first line, says `asked`, then reads the later one, written
        // only once `asked` is out.
        let script = "read first; echo asked; read answer; echo \"$first $answer\"";
        let later = vec![(1, b"yes\n".to_vec())];
        let run = run_stdio_within(Path::new("sh"), &["-c".into(), script.into()], b"question\n", later, TIMEOUT);
        assert_eq!(run.unwrap().lines(), ["asked", "question yes"]);
        // And in three turns, each after the lines before it.
        let script = "read a; echo one; read b; echo two; read c; echo \"$a $b $c\"";
        let later = vec![(1, b"2\n".to_vec()), (2, b"3\n".to_vec())];
        let run = run_stdio_within(Path::new("sh"), &["-c".into(), script.into()], b"1\n", later, TIMEOUT);
        assert_eq!(run.unwrap().lines(), ["one", "two", "1 2 3"]);
    }
}
