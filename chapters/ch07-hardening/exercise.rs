// TODO(exercise): this file is your copy of chapter 7's server, with the piece the
// chapter adds left for you to write. Each part sits between a `// TODO` line and its
// `// END TODO`: replace what is between them, and leave the rest as it is.
// Check your work: `cargo run -- check 7`. The solution: `main.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_variables)]
// END TODO

//! Chapter 7: hardening.
//!
//! Chapter 6's server, made fit to leave running. Before a request reaches the
//! JSON-RPC layer, `Guard::admit` checks who is asking:
//! - `Host` must be a name this server answers as (against DNS rebinding): else 403;
//! - `Origin`, when present, must be allowed (against pages on other sites): else 403;
//! - with a token set (`--token` or `MCP_WORKBOOK_TOKEN`), `Authorization: Bearer`
//!   must carry it: else 401 with `WWW-Authenticate: Bearer realm="mcp"`.
//!
//! It listens on loopback unless told otherwise, and warns when told otherwise. An
//! unsupported `MCP-Protocol-Version` is refused with 400 before any method runs
//! (never on `initialize`). `--workers` threads answer requests, so one slow client
//! does not stall the others.
//! Read it top to bottom: the HTTP layer, then the JSON-RPC layer, then the methods.

use std::net::ToSocketAddrs;
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

// ANCHOR: args
#[derive(Parser)]
#[command(about = "Chapter 7: hardening: Host and Origin checks, a bearer token, loopback by default, workers")]
struct Args {
    /// Address to listen on. Port 0 picks a free port. An address other machines can
    /// reach (anything but 127.0.0.1 or [::1]) is your explicit choice: it prints a warning.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: String,
    /// The largest request body, in bytes. A larger one is answered 413 unread.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    max_body_bytes: usize,
    /// Also offer `split_shift`, a tool with a bug, to see what a panicking tool does.
    #[arg(long)]
    demo_faults: bool,
    /// Threads that answer requests [default: one per CPU core].
    #[arg(long, value_name = "N")]
    workers: Option<NonZeroUsize>,
    /// Client connections open at once. Each costs a thread and a file descriptor, so
    /// keep it well below `ulimit -n`. One more makes room: the connection that has
    /// waited longest for its client is closed; only when every one is being served is
    /// the newcomer answered 503.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// On SIGTERM or Ctrl-C, how long the requests in progress may take to finish,
    /// while no new connection is accepted (a drain; 3 s more for the last answers).
    #[arg(long, value_name = "SECONDS", default_value_t = Config::default().drain_timeout.as_secs())]
    drain_secs: u64,
    /// Also answer requests whose `Host` header names this host (repeatable), e.g. the
    /// name a reverse proxy forwards. localhost, 127.0.0.1 and [::1] always work.
    #[arg(long = "allowed-host", value_name = "NAME")]
    allowed_hosts: Vec<String>,
    /// Also accept requests sent with this `Origin` (repeatable), e.g.
    /// https://app.example.com. http://localhost, http://127.0.0.1 and http://[::1],
    /// on any port, always work.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
    /// Require `Authorization: Bearer TOKEN` on every request. Prefer the environment
    /// variable MCP_WORKBOOK_TOKEN: other users of the machine can read flags with `ps`.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
}

/// The environment variable that holds the bearer token when `--token` is not given.
const TOKEN_VARIABLE: &str = "MCP_WORKBOOK_TOKEN";

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let workers = args.workers.or_else(|| std::thread::available_parallelism().ok()).map_or(1, NonZeroUsize::get);
    let config = Config {
        workers,
        max_body_bytes: args.max_body_bytes,
        max_connections: args.max_connections,
        drain_timeout: Duration::from_secs(args.drain_secs),
        ..Config::default()
    };
    // The tools are built once, from the flags; every request reads the same list.
    let tools = tools(args.demo_faults);
    let token = args.token.or_else(|| std::env::var(TOKEN_VARIABLE).ok()).filter(|token| !token.is_empty());
    let guard = Guard::new(&args.bind, &args.allowed_hosts, &args.allowed_origins, token);
    http::serve(&args.bind, config, move |request| handle(request, &tools, &guard))
}
// ANCHOR_END: args

// ---------------------------------------------------------------------------
// HTTP layer: one path, one method.
// ---------------------------------------------------------------------------

// ANCHOR: handle
/// The whole server as a pure function: an HTTP request in, an HTTP response out.
fn handle(request: &Request, tools: &[Tool], guard: &Guard) -> Response {
    // Who is asking comes first: a request the guard refuses learns nothing else.
    if let Err(refusal) = guard.admit(request) {
        return refusal;
    }
    if request.path != "/mcp" {
        return Response::empty(404);
    }
    if request.method != "POST" {
        // 405 tells a client "this endpoint exists, use POST"; `Allow` says which.
        return Response::empty(405).with_header("Allow", "POST");
    }
    // Headers first: there is no point reading a body we cannot understand, or
    // answering in a form the client cannot read. Both errors are about the request
    // as a whole, so they carry `"id": null`, like every error before the body is parsed.
    let Some(format) = response_format(request.header("Accept")) else {
        let error = RpcError::invalid_request("`Accept` must allow application/json or text/event-stream");
        return reply(406, Value::Null, Err(error));
    };
    if !is_json(request.header("Content-Type")) {
        let error = RpcError::invalid_request("`Content-Type` must be application/json");
        return reply(415, Value::Null, Err(error));
    }
    let message = match parse_message(&request.body) {
        Ok(message) => message,
        // Not a message at all: the error goes back with the body's id when one could be
        // read, else with `"id": null` (see `readable_id`).
        Err(error) => return reply(400, readable_id(&request.body), Err(error)),
    };
    // Before any method runs: a revision this server does not speak is refused.
    if let Err(error) = check_protocol_version(request, &message) {
        return reply(400, message.id(), Err(error));
    }
    match message {
        Message::Request { id, method, params } => {
            format.wrap(reply(200, id, dispatch(&method, params.as_ref(), tools)))
        }
        // Nobody waits for an answer to these: acknowledge, with no body.
        Message::Notification { method } => {
            eprintln!("notification: {:?}", echo(&method));
            Response::empty(202)
        }
        Message::Response => Response::empty(202),
    }
}
// ANCHOR_END: handle

// ANCHOR: headers
/// How the client will read the response to a request.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    /// `Content-Type: application/json`, one JSON-RPC response.
    Json,
    /// `Content-Type: text/event-stream`, the same response as one server-sent event.
    EventStream,
}

/// Read `Accept`: JSON when it allows JSON, an event stream when it allows only that,
/// `None` when it allows neither. No `Accept` at all means anything goes.
fn response_format(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept else { return Some(Format::Json) };
    if weight(accept, "application/json") > 0.0 {
        Some(Format::Json)
    } else if weight(accept, "text/event-stream") > 0.0 {
        Some(Format::EventStream)
    } else {
        None
    }
}

/// The weight `Accept` gives `media_type`: 0 is "not acceptable", up to 1, the default
/// (RFC 9110, section 12.4.2). `Accept` is a list of media ranges, each with optional
/// parameters, and the range that decides is the most specific one that names the type:
/// the type itself, then `type/*`, then `*/*` (section 12.5.1). So
/// `*/*, application/json;q=0` refuses JSON and allows everything else. No range: 0.
fn weight(accept: &str, media_type: &str) -> f64 {
    let any_subtype = format!("{}/*", media_type.split('/').next().unwrap_or_default());
    let most_specific_first = [media_type, any_subtype.as_str(), "*/*"];
    accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            let rank = most_specific_first.iter().position(|name| *name == media)?;
            // A number: `q=0.0` is 0 too. One that is no number is ignored.
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(1.0, |(_, value)| value.trim().parse().unwrap_or(1.0));
            Some((rank, q))
        })
        .min_by_key(|&(rank, _)| rank) // of two ranges alike, the first
        .map_or(0.0, |(_, q)| q)
}

impl Format {
    /// Put a JSON response in the form the client asked for.
    fn wrap(self, response: Response) -> Response {
        match self {
            Format::Json => response,
            // One event named `message` whose data is the JSON-RPC response, then a
            // blank line; the stream ends with the response.
            Format::EventStream => {
                let mut body = b"event: message\ndata: ".to_vec();
                body.extend_from_slice(&response.body);
                body.extend_from_slice(b"\n\n");
                Response::empty(response.status).with_header("Content-Type", "text/event-stream").with_body(body)
            }
        }
    }
}

/// `application/json`, in any case, with or without parameters such as `charset`.
fn is_json(content_type: Option<&str>) -> bool {
    let media = content_type.and_then(|value| value.split(';').next()).unwrap_or("");
    media.trim().eq_ignore_ascii_case("application/json")
}
// ANCHOR_END: headers

// ANCHOR: guard
// ANCHOR: guard_state
/// Who may talk to this server. Every request passes [`Guard::admit`] before its body
/// is even parsed.
struct Guard {
    /// Host names (lowercase, no port) this server answers as, besides the loopback ones.
    hosts: Vec<String>,
    /// Origins (lowercase) allowed besides the loopback ones.
    origins: Vec<String>,
    /// The bearer token every request must carry, when one is set.
    token: Option<String>,
}

/// The names a server on this machine is always reachable as, on any port.
const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];
// ANCHOR_END: guard_state

impl Guard {
    /// The guard for a server bound to `bind`. Warns, on stderr, when that address is
    /// reachable from other machines.
    fn new(bind: &str, hosts: &[String], origins: &[String], token: Option<String>) -> Guard {
        let mut hosts: Vec<String> = hosts.iter().filter_map(|h| host_name(h)).map(str::to_ascii_lowercase).collect();
        for address in bind.to_socket_addrs().into_iter().flatten().filter(|a| !a.ip().is_loopback()) {
            eprintln!(
                "warning: binding to {address}, which other machines can reach. Anyone who reaches it can \
                 call its tools: set a token ({TOKEN_VARIABLE}) and name the hosts clients use with --allowed-host."
            );
            // A specific address is a name the server answers as; 0.0.0.0 and [::] are not.
            if !address.ip().is_unspecified() {
                let name = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
                hosts.push(name);
            }
        }
        let origins = origins.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()).collect();
        Guard { hosts, origins, token }
    }

    // ANCHOR: admit
    /// Let a request through, or answer it with the reason it may not pass.
    fn admit(&self, request: &Request) -> Result<(), Response> {
        // TODO: refuse, before anything is read, a request from where this server does not answer, then one
        // without the token, saying which (until then, all pass). Proven by "No token: 401 and a challenge",
        // "A wrong token: 401, and the challenge says so" and "Host and Origin come before the token".
        Ok(())
        // END TODO
    }
    // ANCHOR_END: admit

    // ANCHOR: names
    /// Is `host` (a `Host` header: name and optional port) one of our names? Any port
    /// goes: a port forward or a proxy changes the port, a rebinding attack the name.
    fn answers_as(&self, host: &str) -> bool {
        // TODO: the names this server answers as. Proven by "A look-alike name is another name",
        // "localhost answers on any port" and "Host names are case-insensitive".
        todo!("check the Host")
        // END TODO
    }

    /// Is `origin` (scheme, host, optional port) allowed? The loopback ones on any
    /// port, and those given with `--allowed-origin`, exactly.
    fn allows_origin(&self, origin: &str) -> bool {
        // TODO: the pages this server lets in. Proven by "A look-alike origin is another origin",
        // "The same host over another scheme is another origin" and "The `null` origin is refused".
        todo!("check the Origin")
        // END TODO
    }
    // ANCHOR_END: names
}

// ANCHOR: guard_helpers
/// `localhost:8080` -> `localhost`, `[::1]:8080` -> `[::1]`, `127.0.0.1` -> `127.0.0.1`.
/// `None` when what follows the name is not a port: `localhost.evil.example` is a name
/// of its own, and `localhost/x` or `localhost:80@evil.example` are not a host at all.
fn host_name(authority: &str) -> Option<&str> {
    let end = if authority.starts_with('[') {
        authority.find(']')? + 1
    } else {
        authority.find(':').unwrap_or(authority.len())
    };
    let (name, rest) = authority.split_at(end);
    let port_ok = rest.is_empty()
        || rest.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = !name.is_empty() && !name.contains(['/', '@', '?', '#']);
    (port_ok && name_ok).then_some(name)
}

/// The token in `Authorization: Bearer <token>` (the scheme is case-insensitive).
fn bearer_token(request: &Request) -> Option<&str> {
    let (scheme, token) = request.header("Authorization")?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("Bearer").then(|| token.trim())
}

/// Compare two secrets in time that does not depend on where they first differ, so
/// that timing the 401s cannot reveal the token a byte at a time. (The time does
/// depend on the expected token's length, which is not the secret.) `black_box` keeps
/// the compiler from turning the loop back into an early return in practice, but Rust
/// promises that only on a best-effort basis: a precaution, not a proof; a long random
/// token is what makes guessing hopeless.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(i).copied().unwrap_or(0));
    }
    std::hint::black_box(difference) == 0
}

/// A refusal before the body was read: a JSON-RPC error with `"id": null`, so that a
/// client shows the reason, with the HTTP status that says what kind of refusal.
fn refusal(status: u16, message: &str) -> Response {
    let error = RpcError { code: -32600, message: message.to_string() };
    reply(status, Value::Null, Err(error))
}
// ANCHOR_END: guard_helpers
// ANCHOR_END: guard

// ANCHOR: protocol_version
/// `MCP-Protocol-Version`: the revision a client agreed to in `initialize`, sent on
/// every later request. A revision this server does not speak is refused with `400`
/// before the method runs, so the client is not misled by answers in a dialect it
/// did not ask for. No header is fine: clients of 2025-03-26 and before never send
/// one. `initialize` itself is never checked: it is where the revision is chosen.
fn check_protocol_version(request: &Request, message: &Message) -> Result<(), RpcError> {
    // TODO: refuse a revision this server does not speak, where a revision has been agreed (until then,
    // all pass). Proven by "An unsupported `MCP-Protocol-Version`: 400", "`initialize` is never checked"
    // and "No `MCP-Protocol-Version` at all is fine".
    Ok(())
    // END TODO
}
// ANCHOR_END: protocol_version

// ---------------------------------------------------------------------------
// JSON-RPC layer: the envelope every message travels in.
// ---------------------------------------------------------------------------

// ANCHOR: message
/// The three kinds of message a client can POST.
#[derive(Debug)]
enum Message {
    /// Has an `id`: the client waits for a response with that same id.
    Request { id: Value, method: String, params: Option<Value> },
    /// Has no `id` member at all: fire and forget.
    Notification { method: String },
    /// A client's answer to a request the server sent. This server sends none, so
    /// nothing is waiting for it.
    Response,
}

impl Message {
    /// The id to answer with: the request's own, else `null`.
    fn id(&self) -> Value {
        match self {
            Message::Request { id, .. } => id.clone(),
            _ => Value::Null,
        }
    }

    fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method } => Some(method),
            Message::Response => None,
        }
    }
}

/// A JSON-RPC error object: `{"code": -32601, "message": "..."}`.
#[derive(Debug, Serialize)]
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn parse_error(detail: &str) -> RpcError {
        RpcError { code: -32700, message: format!("Parse error: {detail}") }
    }

    fn invalid_request(detail: &str) -> RpcError {
        RpcError { code: -32600, message: format!("Invalid Request: {detail}") }
    }

    fn method_not_found(method: &str) -> RpcError {
        RpcError { code: -32601, message: format!("Method not found: {}", echo(method)) }
    }

    fn invalid_params(detail: &str) -> RpcError {
        RpcError { code: -32602, message: format!("Invalid params: {detail}") }
    }

    fn internal_error(detail: &str) -> RpcError {
        RpcError { code: -32603, message: format!("Internal error: {detail}") }
    }
}
/// Something the client sent, for an error message or the log: at most 80 characters.
/// An answer never repeats a long input back: a 4 MiB name is answered in a line, not
/// in 4 MiB (or many times that once its control characters are escaped).
fn echo(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
// ANCHOR_END: message

// ANCHOR: parse
/// Read a body as one JSON-RPC message, or say why it is not one.
fn parse_message(body: &[u8]) -> Result<Message, RpcError> {
    let json: Value = serde_json::from_slice(body).map_err(|e| RpcError::parse_error(&e.to_string()))?;
    // One object per message. (2025-03-26 allowed an array, a "batch"; the next
    // revision removed it again, so an array is not a message.)
    let Value::Object(object) = json else {
        return Err(RpcError::invalid_request("expected one JSON object"));
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(RpcError::invalid_request(r#"`jsonrpc` must be "2.0""#));
    }
    // MCP narrows JSON-RPC's "object or array" to an object:
    // `params?: { [key: string]: unknown }`.
    let params = match object.get("params") {
        None | Some(Value::Object(_)) => object.get("params").cloned(),
        Some(_) => return Err(RpcError::invalid_request("`params` must be an object")),
    };
    // Absent is not the same as null: no `id` member makes a notification, while
    // `"id": null` is a request with an id nobody could answer to.
    let id = object.get("id").map(valid_id).transpose()?;

    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method: method.clone(), params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method: method.clone() }),
        (Some(_), _) => Err(RpcError::invalid_request("`method` must be a string")),
        (None, Some(_)) if is_response(&object) => Ok(Message::Response),
        // An error response may leave its `id` out (the schema's `JSONRPCErrorResponse`
        // has `id?: RequestId`): its sender could not read the id of what it answers.
        (None, None) if is_response(&object) && object.contains_key("error") => Ok(Message::Response),
        (None, _) => {
            Err(RpcError::invalid_request("a message has a `method`, or a `result` with an `id`, or an `error`"))
        }
    }
}

/// An id is a string or an integer, and comes back exactly as it was sent: `"7"`
/// stays a string, `7` a number.
fn valid_id(id: &Value) -> Result<Value, RpcError> {
    match id {
        Value::String(_) => Ok(id.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(id.clone()),
        _ => Err(RpcError::invalid_request("`id` must be a string or an integer")),
    }
}

/// A response has exactly one of `result` and `error`.
fn is_response(object: &Map<String, Value>) -> bool {
    object.contains_key("result") != object.contains_key("error")
}

/// The id an error about `body` goes back with. Error responses "MUST include the same
/// ID as the request they correspond to (except in error cases where the ID could not
/// be read due a malformed request)": so the body's own id whenever it can be read,
/// that is when the body is a JSON object, not a response (a response's id names a
/// request of the server's, not one of the client's), with a valid `id`. Otherwise
/// `Value::Null`: no id could be read (chapter 1, "The choices this chapter makes").
fn readable_id(body: &[u8]) -> Value {
    let Ok(Value::Object(object)) = serde_json::from_slice(body) else {
        return Value::Null;
    };
    if object.contains_key("result") || object.contains_key("error") {
        return Value::Null;
    }
    object.get("id").and_then(|id| valid_id(id).ok()).unwrap_or(Value::Null)
}
// ANCHOR_END: parse

// ANCHOR: reply
/// The response envelope. Field order is the order on the wire:
/// `{"jsonrpc": "2.0", "id": ..., "result": ...}` or `{..., "error": ...}`.
#[derive(Serialize)]
struct RpcResponse {
    jsonrpc: &'static str,
    /// The request's id; `null` when it could not be read (chapter 1).
    id: Value,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Result(Value),
    Error(RpcError),
}

/// Wrap a method's outcome in the envelope, with the request's own id.
fn reply(status: u16, id: Value, outcome: Result<Value, RpcError>) -> Response {
    let outcome = match outcome {
        Ok(result) => Outcome::Result(result),
        Err(error) => Outcome::Error(error),
    };
    let body = serde_json::to_string(&RpcResponse { jsonrpc: "2.0", id, outcome }).expect("serializable");
    Response::json(status, body)
}
// ANCHOR_END: reply

// ---------------------------------------------------------------------------
// MCP layer: the methods.
// ---------------------------------------------------------------------------

// ANCHOR: dispatch
/// Answer a request by its method.
fn dispatch(method: &str, params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    match method {
        "initialize" => initialize(params),
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params, tools),
        "tools/call" => tools_call(params, tools),
        _ => Err(RpcError::method_not_found(method)),
    }
}
// ANCHOR_END: dispatch

// ANCHOR: initialize
/// The protocol revisions this server speaks, newest first.
const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Who this server is, for `serverInfo`. The version is the chapter's.
const SERVER_NAME: &str = "pingme";
const SERVER_VERSION: &str = "0.7.0";

/// The handshake: agree on a revision and say what this server can do.
fn initialize(params: Option<&Value>) -> Result<Value, RpcError> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`protocolVersion` must be a string"))?;
    // Negotiation: answer the client's revision when we speak it, else our newest.
    // Never an error: the client reads our answer and decides whether to go on.
    let version = if SUPPORTED_VERSIONS.contains(&requested) { requested } else { SUPPORTED_VERSIONS[0] };
    Ok(json!({
        "protocolVersion": version,
        // "I have tools": the client may call `tools/list` and `tools/call`. No
        // `listChanged`: this server's tools never change while it runs.
        "capabilities": { "tools": {} },
        "serverInfo": { "name": SERVER_NAME, "version": SERVER_VERSION },
        "instructions": INSTRUCTIONS,
    }))
}
// ANCHOR_END: initialize

// ANCHOR: tools_list
/// `tools/list`: every tool, on one page.
fn tools_list(params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    // Lists may come in pages: a result with `nextCursor` asks the client to send that
    // cursor back for the next page. This server's list is one page, so it never hands
    // out a cursor, and any cursor it receives is one it did not issue.
    match params.and_then(|p| p.get("cursor")) {
        None => Ok(json!({ "tools": tools.iter().map(|tool| &tool.definition).collect::<Vec<_>>() })),
        Some(Value::String(cursor)) => Err(RpcError::invalid_params(&format!(
            "unknown cursor \"{}\": this server issues no cursors",
            echo(cursor)
        ))),
        Some(_) => Err(RpcError::invalid_params("`cursor` must be a string")),
    }
}
// ANCHOR_END: tools_list

// ANCHOR: tools_call
/// `tools/call`: find the tool by its name and run it with the arguments.
fn tools_call(params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
    // `arguments` may be left out; the tool then runs with none, as if sent `{}`.
    let no_arguments = Map::new();
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None => &no_arguments,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let tool = tools
        .iter()
        .find(|tool| tool.definition["name"] == name)
        .ok_or_else(|| RpcError::invalid_params(&format!("unknown tool \"{}\"", echo(name))))?;
    // Arguments that break the tool's schema are the model's mistake, and the model can
    // fix it: a failed result saying what to fix, not a protocol error (2025-11-25).
    let problems = check_arguments(&tool.definition["inputSchema"], arguments);
    let result = if problems.is_empty() {
        // A tool that panics is a bug in the server, not a mistake of the model's:
        // `-32603` with this request's id, and the server goes on to the next request.
        catch_unwind(AssertUnwindSafe(|| (tool.run)(arguments)))
            .map_err(|_| RpcError::internal_error(&format!("the tool {name} failed; the server's log says why")))?
    } else {
        ToolResult::error(format!(
            "Invalid arguments for {name}: {}. Correct the arguments and call {name} again.",
            problems.join("; ")
        ))
    };
    Ok(serde_json::to_value(result).expect("a tool result always serializes"))
}
// ANCHOR_END: tools_call

// ANCHOR: check_arguments
/// Check arguments against a tool's `inputSchema`, and say what is wrong in words a
/// model can act on. It knows the keywords this server's schemas use: `required` and
/// `additionalProperties: false`, and per property `type`, `enum`, `minimum` and
/// `maximum`. (A full JSON Schema validator knows them all; chapter 6's test uses one.)
fn check_arguments(schema: &Value, arguments: &Map<String, Value>) -> Vec<String> {
    // A request may hold thousands of wrong arguments. The answer lists the first few
    // and counts the rest, and repeats each name through `echo`: whatever the request,
    // the answer stays a few lines long.
    const LISTED: usize = 5;
    let mut problems = Vec::new();
    let mut unlisted = 0;
    let mut note = |problem: String| if problems.len() < LISTED { problems.push(problem) } else { unlisted += 1 };
    let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str);
    for name in required.filter(|name| !arguments.contains_key(*name)) {
        note(format!("`{}` is missing", echo(name)));
    }
    for (name, value) in arguments {
        let property = schema["properties"].get(name);
        let name = echo(name); // the client chose it
        let Some(property) = property else {
            if schema["additionalProperties"] == false {
                note(format!("`{name}` is not an argument of this tool"));
            }
            continue;
        };
        if let Some(expected) = property["type"].as_str()
            && !has_type(value, expected)
        {
            note(format!("`{name}` must be of type {expected}, not {}", echo(&value.to_string())));
            continue;
        }
        if let Some(allowed) = property["enum"].as_array()
            && !allowed.contains(value)
        {
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            note(format!("`{name}` must be one of {}, not {}", allowed.join(", "), echo(&value.to_string())));
        }
        if let (Some(number), Some(minimum)) = (value.as_f64(), property["minimum"].as_f64())
            && number < minimum
        {
            note(format!("`{name}` must be at least {}, not {}", property["minimum"], echo(&value.to_string())));
        }
        if let (Some(number), Some(maximum)) = (value.as_f64(), property["maximum"].as_f64())
            && number > maximum
        {
            note(format!("`{name}` must be at most {}, not {}", property["maximum"], echo(&value.to_string())));
        }
    }
    if unlisted > 0 {
        problems.push(format!("and {unlisted} more"));
    }
    problems
}

/// JSON Schema's types. An integer is a number without a fractional part, so `2.0` is one.
fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}
// ANCHOR_END: check_arguments

// ANCHOR: result
/// What a tool hands back (`CallToolResult`): content blocks, the same result as JSON
/// for programs, and whether the tool failed. A failure is still a result, not a
/// JSON-RPC error: the model reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult {
    content: Vec<Content>,
    /// A JSON object that conforms to the tool's `outputSchema`. Left out by tools
    /// without one, and by failed calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    /// Left out when false, which is what a client assumes when it is absent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// One content block, tagged by its `type`. The protocol has five kinds (text, image,
/// audio, resource_link, resource); these tools only need text.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    Text { text: String },
}

impl ToolResult {
    /// A result of one text block.
    fn text(text: impl Into<String>) -> ToolResult {
        ToolResult { content: vec![Content::Text { text: text.into() }], structured_content: None, is_error: false }
    }

    /// A result for programs and models alike: `value` as JSON in `structuredContent`,
    /// and the same JSON, serialized, in a text block, for clients that only read
    /// `content` (`2025-11-25/server/tools.mdx`, "Structured Content").
    fn structured(value: &impl Serialize) -> ToolResult {
        let text = serde_json::to_string(value).expect("a tool's output always serializes");
        let json = serde_json::to_value(value).expect("a tool's output always serializes");
        ToolResult { content: vec![Content::Text { text }], structured_content: Some(json), is_error: false }
    }

    /// A failed call, with a text saying what went wrong.
    fn error(text: impl Into<String>) -> ToolResult {
        ToolResult { is_error: true, ..ToolResult::text(text) }
    }
}
// ANCHOR_END: result

// ---------------------------------------------------------------------------
// The tools: defined once, here.
// ---------------------------------------------------------------------------

// ANCHOR: instructions
/// What the model should know of this server as a whole, beyond each tool's own
/// description. `initialize` sends it as `instructions`, and a host may put it in the
/// model's system prompt. Like a description it is a hint: it asks, it cannot make sure.
const INSTRUCTIONS: &str = "The pay rules of this server are one employer's, not the law of any country. \
    When you give the user a pay amount this server computed, say that it is gross pay under these rules.";
// ANCHOR_END: instructions

// ANCHOR: tools
/// A tool: its definition, as `tools/list` shows it, and the function `tools/call` runs.
struct Tool {
    definition: Value,
    run: fn(&Map<String, Value>) -> ToolResult,
}

/// Every tool this server offers. The host hands the definitions to the model, and
/// they are all the model knows of a tool: it calls a tool when the `description`
/// matches what the user asked, and fills in the arguments from `inputSchema`,
/// property descriptions included.
fn tools(demo_faults: bool) -> Vec<Tool> {
    let mut tools = vec![
        Tool {
            definition: json!({
                "name": "PingME",
                "title": "Ping me",
                "description": "Checks that this MCP server is reachable: it answers with the single word \
                    BISMILLAH. Call it when the user asks to ping or test this server or the connection to it. \
                    Do not call it for anything else: it takes no input and returns no information.",
                // No arguments: an object with no properties, and no others allowed.
                "inputSchema": { "type": "object", "additionalProperties": false },
                // Hints for the host, which may skip asking the user before a call that
                // changes nothing (`readOnlyHint`) and reaches nothing outside this
                // server (`openWorldHint`, true when left out).
                "annotations": { "readOnlyHint": true, "openWorldHint": false },
            }),
            run: ping_me,
        },
        Tool {
            definition: json!({
                "name": "calculate_overtime",
                "title": "Calculate overtime pay",
                "description": "Calculates the gross pay for one day's work, overtime included. On a weekday \
                    the first 8 hours are paid at the hourly rate and each further hour at 1.5 times the rate; \
                    every hour on a Saturday is paid at 1.5 times, on a Sunday at 2 times and on a public \
                    holiday at 2.5 times. Call it when the user asks what a day's work pays or how much of it \
                    is overtime. Do not call it for a whole week or month (call it once per day), for salaried \
                    staff, or for taxes and deductions: it computes gross pay only.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "hours": {
                            "type": "number",
                            "minimum": 0,
                            "maximum": 24,
                            "description": "Hours worked on that day, for example 10 or 7.5.",
                        },
                        "rate": {
                            "type": "number",
                            "minimum": 0,
                            "maximum": 1_000_000,
                            "description": "The hourly base rate, in the user's currency, for example 20. \
                                The tool does not convert currencies.",
                        },
                        "dayType": {
                            "type": "string",
                            "enum": ["weekday", "saturday", "sunday", "holiday"],
                            "description": "The kind of day the hours were worked on. Use `holiday` for a \
                                public holiday, whatever day of the week it falls on.",
                        },
                    },
                    "required": ["hours", "rate", "dayType"],
                    "additionalProperties": false,
                },
                // What every successful result's `structuredContent` looks like: the
                // fields of `OvertimePay`, as serde writes them.
                "outputSchema": {
                    "type": "object",
                    "properties": {
                        "hours": { "type": "number", "description": "Hours worked, as given." },
                        "rate": { "type": "number", "description": "The hourly base rate, as given." },
                        "dayType": {
                            "type": "string",
                            "enum": ["weekday", "saturday", "sunday", "holiday"],
                            "description": "The kind of day, as given.",
                        },
                        "regularHours": { "type": "number", "description": "Hours paid at the base rate." },
                        "overtimeHours": { "type": "number", "description": "Hours paid at the overtime rate." },
                        "overtimeMultiplier": {
                            "type": "number",
                            "description": "How many base rates an overtime hour pays: 1.5, 2 or 2.5.",
                        },
                        "regularPay": { "type": "number", "description": "regularHours times rate, rounded to cents." },
                        "overtimePay": {
                            "type": "number",
                            "description": "overtimeHours times rate times overtimeMultiplier, rounded to cents.",
                        },
                        "totalPay": { "type": "number", "description": "regularPay plus overtimePay." },
                    },
                    "required": [
                        "hours", "rate", "dayType", "regularHours", "overtimeHours", "overtimeMultiplier",
                        "regularPay", "overtimePay", "totalPay",
                    ],
                    "additionalProperties": false,
                },
                "annotations": { "readOnlyHint": true, "openWorldHint": false },
            }),
            run: calculate_overtime,
        },
    ];
    if demo_faults {
        tools.push(Tool {
            definition: json!({
                "name": "split_shift",
                "title": "Split minutes into shifts (fault demo)",
                "description": "A fault demo, offered only when the server runs with --demo-faults. \
                    Divides a number of minutes evenly into shifts. It has a bug: its schema lets `shifts` \
                    be 0, and dividing by zero panics. Call it only to see what the server does then.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "minutes": { "type": "integer", "minimum": 0, "description": "The minutes to split." },
                        "shifts": { "type": "integer", "minimum": 0, "description": "How many shifts." },
                    },
                    "required": ["minutes", "shifts"],
                    "additionalProperties": false,
                },
                "annotations": { "readOnlyHint": true, "openWorldHint": false },
            }),
            run: split_shift,
        });
    }
    tools
}
// ANCHOR_END: tools

// ANCHOR: ping_me
/// `PingME`: the magic word, and nothing else.
fn ping_me(_arguments: &Map<String, Value>) -> ToolResult {
    ToolResult::text("BISMILLAH")
}
// ANCHOR_END: ping_me

// ANCHOR: calculate_overtime
/// `calculate_overtime`'s arguments, read from JSON by serde.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OvertimeArguments {
    hours: f64,
    rate: f64,
    day_type: DayType,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum DayType {
    Weekday,
    Saturday,
    Sunday,
    Holiday,
}

/// A day's pay, split into its regular and overtime parts: the tool's typed output.
/// Serde writes it as the JSON object the `outputSchema` describes.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct OvertimePay {
    hours: f64,
    rate: f64,
    day_type: DayType,
    regular_hours: f64,
    overtime_hours: f64,
    overtime_multiplier: f64,
    regular_pay: f64,
    overtime_pay: f64,
    total_pay: f64,
}

fn calculate_overtime(arguments: &Map<String, Value>) -> ToolResult {
    let arguments: OvertimeArguments = match serde_json::from_value(Value::Object(arguments.clone())) {
        Ok(arguments) => arguments,
        Err(error) => return ToolResult::error(format!("Invalid arguments: {}", echo(&error.to_string()))),
    };
    ToolResult::structured(&overtime_pay(&arguments))
}

/// The pay rules the tool's description promises.
fn overtime_pay(arguments: &OvertimeArguments) -> OvertimePay {
    let OvertimeArguments { hours, rate, day_type } = *arguments;
    // On a weekday the first 8 hours are regular; on other days every hour is overtime.
    let (regular_hours, overtime_multiplier) = match day_type {
        DayType::Weekday => (hours.min(8.0), 1.5),
        DayType::Saturday => (0.0, 1.5),
        DayType::Sunday => (0.0, 2.0),
        DayType::Holiday => (0.0, 2.5),
    };
    let overtime_hours = hours - regular_hours;
    let regular_pay = cents(regular_hours * rate);
    let overtime_pay = cents(overtime_hours * rate * overtime_multiplier);
    OvertimePay {
        hours,
        rate,
        day_type,
        regular_hours,
        overtime_hours,
        overtime_multiplier,
        regular_pay,
        overtime_pay,
        total_pay: cents(regular_pay + overtime_pay),
    }
}

/// Round money to whole cents, so that 0.1 + 0.2 shows as 0.3.
fn cents(amount: f64) -> f64 {
    (amount * 100.0).round() / 100.0
}
// ANCHOR_END: calculate_overtime

// ANCHOR: split_shift
/// `split_shift`, the fault demo: integer division by zero panics in Rust, and
/// nothing here stops `shifts` from being 0.
fn split_shift(arguments: &Map<String, Value>) -> ToolResult {
    // The schema's `integer` admits `480.0` as well as `480` (see `has_type`).
    let minutes = arguments["minutes"].as_f64().unwrap_or(0.0) as u64;
    let shifts = arguments["shifts"].as_f64().unwrap_or(0.0) as u64;
    ToolResult::text(format!("{} minutes per shift", minutes / shifts))
}
// ANCHOR_END: split_shift
