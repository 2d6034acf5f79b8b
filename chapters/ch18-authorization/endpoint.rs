//! The HTTP layer: the one endpoint, `/mcp`. `handle` is the server as a function from
//! an HTTP request to an HTTP response. It asks the guard who may call (the `Host`, the
//! `Origin`, the bearer token), and the authorization (chapter 18) who is calling and
//! whether they may, checks the headers (`Accept`, `Content-Type`,
//! `MCP-Protocol-Version`), reads the body as one JSON-RPC message (jsonrpc.rs) and
//! hands it to the revision that speaks it (mcp.rs, modern.rs).

use std::net::ToSocketAddrs;

use serde_json::Value;

use crate::authorization::{Authorization, Caller};
use crate::http::{Request, Response};
use crate::jsonrpc::{Message, RpcError, echo, parse_message, readable_id, reply};
use crate::listen::listen_over_http;
use crate::mcp::{ASSUMED_VERSION, MODERN_VERSIONS, SUPPORTED_VERSIONS, dispatch, for_version};
use crate::modern::{all_versions, answer_modern, check_envelope, is_modern};
use crate::rate_limit::RateLimit;
use crate::sessions::{end_session, open_session, session_not_found, take_answer};
use crate::streaming::{Era, answer_long_call, long_call, notice};
use crate::subscriptions::open_stream;
use crate::{Catalog, TOKEN_VARIABLE};

// ANCHOR: handle
/// The whole server as a pure function: an HTTP request in, an HTTP response out.
pub fn handle(
    request: &Request,
    catalog: &'static Catalog,
    guard: &Guard,
    authorization: Option<&Authorization>,
    rate_limit: &RateLimit,
) -> Response {
    // Who is asking comes first: a request the guard refuses learns nothing else.
    if let Err(refusal) = guard.admit(request) {
        return refusal;
    }
    // Chapter 18: where to get a token is public (authorization.rs).
    if let Some(document) = authorization.and_then(|authorization| authorization.metadata(request)) {
        return document;
    }
    if request.path != "/mcp" {
        return Response::empty(404);
    }
    // Chapter 18: who is calling: the subject of a valid access token, or else (no
    // authorization server) the address the request came from.
    let caller = match authorization.map(|authorization| authorization.caller(request)) {
        Some(Ok(caller)) => caller,
        Some(Err(refusal)) => return refusal,
        None => Caller::anonymous(request.peer),
    };
    // Chapter 16: DELETE ends a session (sessions.rs), and a GET (chapter 17) opens its
    // stream: both are requests, so a revision this server does not speak is refused first.
    if (request.method == "DELETE" || request.method == "GET")
        && let Err(error) = check_protocol_version(request, None)
    {
        return reply(400, Value::Null, Err(error));
    }
    // Chapter 18: both need the scope every request needs, and a session is its
    // subject's alone: to another caller it does not exist.
    if request.method == "DELETE" || request.method == "GET" {
        if let Some(Err(refusal)) = authorization.map(|authorization| authorization.check_scopes(&caller, None)) {
            return refusal;
        }
        if let Some(id) = request.header("Mcp-Session-Id")
            && catalog.sessions.owner(id).is_some_and(|owner| owner != caller.subject)
        {
            return session_not_found(Value::Null);
        }
    }
    if request.method == "DELETE" {
        return end_session(request, &catalog.sessions);
    }
    // Chapter 17: GET opens a session's own stream (subscriptions.rs).
    if request.method == "GET" {
        return open_stream(request, &catalog.sessions, caller.stream_time());
    }
    if request.method != "POST" {
        // 405 tells a client "this endpoint exists, use POST"; `Allow` says which.
        return Response::empty(405).with_header("Allow", "GET, POST, DELETE");
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
    // Chapter 18: a token that does not grant what this message needs is refused.
    if let Some(Err(refusal)) = authorization.map(|authorization| authorization.check_scopes(&caller, Some(&message))) {
        return refusal;
    }
    // Each tool call takes one from its caller's share, before anything else is done
    // with it: a caller with none left is refused (see `RateLimit`).
    if let Message::Request { id, method, .. } = &message
        && method == "tools/call"
        && !rate_limit.take(&caller.rate_key())
    {
        return rate_limit.refusal(id.clone());
    }
    let streams = allows_event_stream(request.header("Accept"));
    // A request in the 2026-07-28 envelope is served by that revision's rules.
    if let Message::Request { id, method, params } = &message
        && is_modern(Some(request), method, params.as_ref())
    {
        // A long call, once its envelope is right, goes on after this handler returns.
        if check_envelope(Some(request), method, params.as_ref()).is_ok()
            && let Some(long) = long_call(method, params.as_ref(), catalog, Era::Modern, None)
        {
            return answer_long_call(id.clone(), long, format, streams, catalog);
        }
        // Chapter 17: a subscription's answer stays open (listen.rs).
        if method == "subscriptions/listen" && check_envelope(Some(request), method, params.as_ref()).is_ok() {
            let lasts = caller.stream_time();
            return listen_over_http(id.clone(), params.as_ref(), request.header("Accept"), format, catalog, lasts);
        }
        return format.wrap(answer_modern(Some(request), id.clone(), method, params.as_ref(), catalog, &caller));
    }
    // Before any method runs: a revision this server does not speak is refused.
    if let Err(error) = check_protocol_version(request, message.method()) {
        return reply(400, message.id(), Err(error));
    }
    // Chapter 16: the session the request names, if it names one; one this server does
    // not know (never opened, ended, or expired) is `404`. `initialize` opens a new one.
    // Chapter 18: so is one another caller opened.
    let session = match request.header("Mcp-Session-Id") {
        Some(_) if message.method() == Some("initialize") => None,
        Some(id) => match catalog.sessions.find(id) {
            Some(session) if session.owner == caller.subject => Some(session),
            _ => return session_not_found(message.id()),
        },
        None => None,
    };
    match message {
        Message::Request { id, method, params } if method == "initialize" => {
            format.wrap(open_session(id, params.as_ref(), catalog, caller.subject))
        }
        Message::Request { id, method, params } => {
            let session = session.as_ref();
            if let Some(long) = long_call(&method, params.as_ref(), catalog, Era::Handshake, session) {
                return answer_long_call(id, long, format, streams, catalog);
            }
            // In the revision the client speaks, which its header names (see `for_version`).
            let version = request.header("MCP-Protocol-Version").unwrap_or(ASSUMED_VERSION);
            let result =
                dispatch(&method, params.as_ref(), catalog, session).map(|result| for_version(result, version));
            format.wrap(reply(200, id, result))
        }
        // Nobody waits for an answer to these: acknowledge, with no body.
        Message::Notification { method, params } => {
            eprintln!("notification: {:?}", echo(&method));
            notice(&method, params.as_ref(), catalog, session.as_ref());
            Response::empty(202)
        }
        // The client's answer to a question a call asked: handed to that call.
        Message::Response { id: Some(id), answer } => take_answer(id, answer, session.as_ref(), &catalog.sessions),
        // An error with no id names no question to hand it to: taken, and logged.
        Message::Response { id: None, answer } => {
            eprintln!("an error answering no question it names: {}", echo(&answer["error"].to_string()));
            Response::empty(202)
        }
    }
}
// ANCHOR_END: handle

// ANCHOR: headers
/// How the client will read the response to a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
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

/// Whether `Accept` allows an event stream, which a long call's answer may then be.
/// No `Accept` at all means anything goes.
pub fn allows_event_stream(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    weight(accept, "text/event-stream") > 0.0
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
    pub fn wrap(self, response: Response) -> Response {
        match self {
            Format::Json => response,
            // One event named `message` whose data is the JSON-RPC response, then a
            // blank line; the stream ends with the response.
            Format::EventStream => {
                let body = event(&response.body);
                Response::empty(response.status).with_header("Content-Type", "text/event-stream").with_body(body)
            }
        }
    }
}

/// One server-sent event: named `message`, its data one JSON-RPC message on one line,
/// then a blank line that ends it.
pub fn event(message: &[u8]) -> Vec<u8> {
    let mut bytes = b"event: message\ndata: ".to_vec();
    bytes.extend_from_slice(message);
    bytes.extend_from_slice(b"\n\n");
    bytes
}

/// `application/json`, in any case, with or without parameters such as `charset`.
fn is_json(content_type: Option<&str>) -> bool {
    let media = content_type.and_then(|value| value.split(';').next()).unwrap_or("");
    media.trim().eq_ignore_ascii_case("application/json")
}
// ANCHOR_END: headers

// ANCHOR: guard
/// Who may talk to this server. Every request passes [`Guard::admit`] before its body
/// is even parsed.
pub struct Guard {
    /// Host names (lowercase, no port) this server answers as, besides the loopback ones.
    hosts: Vec<String>,
    /// Origins (lowercase) allowed besides the loopback ones.
    origins: Vec<String>,
    /// The bearer token every request must carry, when one is set.
    token: Option<String>,
}

/// The names a server on this machine is always reachable as, on any port.
pub const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    /// The guard for a server bound to `bind`. Warns, on stderr, when that address is
    /// reachable from other machines.
    pub fn new(bind: &str, hosts: &[String], origins: &[String], token: Option<String>) -> Guard {
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

    /// Let a request through, or answer it with the reason it may not pass.
    fn admit(&self, request: &Request) -> Result<(), Response> {
        // DNS rebinding: a web page whose own host name now resolves to 127.0.0.1
        // still says that name in `Host`.
        let host = request.header("Host").unwrap_or("");
        if !self.answers_as(host) {
            return Err(refusal(
                403,
                &format!("Forbidden: Host '{}' is not a name this server answers to", echo(host)),
            ));
        }
        // A web page on another site, sending requests from the user's own browser.
        // Browsers say which site in `Origin`; other clients do not send one.
        if let Some(origin) = request.header("Origin")
            && !self.allows_origin(origin)
        {
            return Err(refusal(403, &format!("Forbidden: Origin '{}' is not allowed", echo(origin))));
        }
        // Anyone else who can reach the port: other users, other programs.
        let Some(expected) = &self.token else { return Ok(()) };
        match bearer_token(request) {
            Some(given) if same_secret(given.as_bytes(), expected.as_bytes()) => Ok(()),
            // RFC 6750, section 3: no credentials get a bare challenge, wrong ones say so.
            Some(_) => Err(refusal(401, "Unauthorized: wrong bearer token")
                .with_header("WWW-Authenticate", r#"Bearer error="invalid_token""#)),
            None => Err(refusal(401, "Unauthorized: send `Authorization: Bearer <token>`")
                .with_header("WWW-Authenticate", "Bearer")),
        }
    }

    /// Is `host` (a `Host` header: name and optional port) one of our names? Any port
    /// goes: a port forward or a proxy changes the port, a rebinding attack the name.
    fn answers_as(&self, host: &str) -> bool {
        host_name(host)
            .map(str::to_ascii_lowercase)
            .is_some_and(|name| LOOPBACK_NAMES.contains(&name.as_str()) || self.hosts.contains(&name))
    }

    /// Is `origin` (scheme, host, optional port) allowed? The loopback ones on any
    /// port, and those given with `--allowed-origin`, exactly.
    fn allows_origin(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        let loopback = origin.strip_prefix("http://").and_then(host_name).is_some_and(|n| LOOPBACK_NAMES.contains(&n));
        loopback || self.origins.contains(&origin)
    }
}

/// `localhost:8080` -> `localhost`, `[::1]:8080` -> `[::1]`, `127.0.0.1` -> `127.0.0.1`.
/// `None` when what follows the name is not a port: `localhost.evil.example` is a name
/// of its own, and `localhost/x` or `localhost:80@evil.example` are not a host at all.
pub fn host_name(authority: &str) -> Option<&str> {
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
pub fn bearer_token(request: &Request) -> Option<&str> {
    let (scheme, token) = request.header("Authorization")?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("Bearer").then(|| token.trim())
}

/// Compare two secrets in time that does not depend on where they first differ, so
/// that timing the 401s cannot reveal the token a byte at a time. (The time does
/// depend on the expected token's length, which is not the secret.)
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(i).copied().unwrap_or(0));
    }
    std::hint::black_box(difference) == 0
}

/// A refusal before the body was read: a JSON-RPC error with `"id": null`, so that a
/// client shows the reason, with the HTTP status that says what kind of refusal.
pub fn refusal(status: u16, message: &str) -> Response {
    let error = RpcError { code: -32600, message: message.to_string(), data: None };
    reply(status, Value::Null, Err(error))
}
// ANCHOR_END: guard

// ANCHOR: protocol_version
/// `MCP-Protocol-Version`: the revision a client agreed to in `initialize`, sent on
/// every later request. A revision this server does not speak is refused with `400`
/// before the method runs, so the client is not misled by answers in a dialect it
/// did not ask for. No header is fine: clients of 2025-03-26 and before never send
/// one. `initialize` itself is never checked: it is where the revision is chosen.
/// `method` is the JSON-RPC method, `None` for a GET or DELETE, which carry no message
/// but are requests all the same: the header comes "on all subsequent requests".
fn check_protocol_version(request: &Request, method: Option<&str>) -> Result<(), RpcError> {
    if method == Some("initialize") {
        return Ok(());
    }
    match request.header("MCP-Protocol-Version") {
        None => Ok(()),
        Some(version) if SUPPORTED_VERSIONS.contains(&version) || MODERN_VERSIONS.contains(&version) => Ok(()),
        Some(version) => Err(RpcError::invalid_request(&format!(
            "unsupported MCP-Protocol-Version '{}'; this server speaks {}",
            echo(version),
            all_versions().join(", ")
        ))),
    }
}
// ANCHOR_END: protocol_version
