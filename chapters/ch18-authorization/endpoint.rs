//! The HTTP transport: the one endpoint, `/mcp`. `handle` is the server as a function
//! from an HTTP request to an HTTP response. It asks the guard who may call (guard.rs),
//! and the authorization (chapter 18) who is calling and whether they may, checks what
//! HTTP itself must get right (the path, the method, `Accept`, `Content-Type`), reads
//! the body as one JSON-RPC message (jsonrpc.rs), and hands it to the router
//! (router.rs), whose answer it sends in the form the client reads.

use std::num::NonZeroUsize;

use serde_json::Value;

use crate::authorization::{Authorization, Caller};
use crate::connect::{CONNECT_PATH, connect_page, elicitation_id};
use crate::framing::{allows_event_stream, is_json, response_format};
use crate::guard::Guard;
use crate::http::{Config, Request, Response};
use crate::jsonrpc::{RpcError, parse_message, readable_id, reply};
use crate::listen::listen_over_http;
use crate::mcp::check_protocol_version;
use crate::rate_limit::RateLimit;
use crate::router::{Catalog, Routed, Via, route};
use crate::sessions::{end_session, session_not_found};
use crate::streaming::answer_long_call;
use crate::subscriptions::open_stream;

// ANCHOR: handle
/// The whole server as a pure function: an HTTP request in, an HTTP response out.
pub fn handle(
    request: &Request,
    catalog: &'static Catalog,
    guard: &Guard,
    authorization: Option<&Authorization>,
    rate_limit: &RateLimit,
) -> Response {
    // The consent pages (connect.rs) are for the user's browser, which carries no bearer
    // token: the guard checks their `Host` and `Origin` only. Chapter 18: a link is its
    // caller's, and the `POST` that connects must carry that caller's access token, the
    // workbook's stand-in for the browser sign-in a real server would ask for.
    if let Some(id) = request.path.strip_prefix(CONNECT_PATH) {
        if let Err(refusal) = guard.admit_browser(request) {
            return refusal;
        }
        let caller = match authorization.filter(|_| request.method == "POST").map(|a| a.caller(request)) {
            Some(Ok(caller)) => caller.identity(),
            Some(Err(refusal)) => return refusal,
            None => None,
        };
        let answer = connect_page(request, id, caller.as_deref());
        // Chapter 17: a link used up (a `POST` that connected) is told to the session sent to it.
        if request.method == "POST" && answer.status == 200 {
            catalog.sessions.url_completed(&elicitation_id(id));
        }
        return answer;
    }
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
    // Chapter 18: who is calling: the subject and client of a valid access token, or
    // else (no authorization server) the address the request came from.
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
    // caller's alone: to another caller it does not exist.
    if request.method == "DELETE" || request.method == "GET" {
        if let Some(Err(refusal)) = authorization.map(|authorization| authorization.check_scopes(&caller, None)) {
            return refusal;
        }
        if let Some(id) = request.header("Mcp-Session-Id")
            && catalog.sessions.belongs_to_another(id, caller.identity().as_deref())
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
    match route(message, Via::Http(request), &caller, catalog, rate_limit) {
        Routed::Answer(response) => format.wrap(response),
        Routed::AsIs(response) => response,
        // A long call goes on after this handler returns (streaming.rs).
        Routed::Long(id, long) => {
            let streams = allows_event_stream(request.header("Accept"));
            answer_long_call(id, *long, format, streams, catalog.server())
        }
        // Chapter 17: a subscription's answer stays open (listen.rs).
        Routed::Listen(id, params) => {
            let lasts = caller.stream_time();
            listen_over_http(id, params.as_ref(), request.header("Accept"), format, catalog.listening(), lasts)
        }
    }
}
// ANCHOR_END: handle

// ANCHOR: http_flags
/// The HTTP transport's flags, which `main.rs` takes in with its own (`#[command(flatten)]`):
/// where to listen, the base's limits (chapter 7), and who may talk to the server. None
/// of them applies over stdio, which `--stdio` says by refusing them all.
#[derive(clap::Args)]
pub struct HttpFlags {
    /// Address to listen on. Port 0 picks a free port. An address other machines can
    /// reach (anything but 127.0.0.1 or [::1]) is your explicit choice: it prints a warning.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub bind: String,
    /// The largest request body, in bytes. A larger one is answered 413 unread.
    #[arg(long, default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Threads that answer requests [default: one per CPU core].
    #[arg(long, value_name = "N")]
    pub workers: Option<NonZeroUsize>,
    /// Client connections open at once. Each costs a thread and a file descriptor, so
    /// keep it well below `ulimit -n`. One more makes room: the connection that has
    /// waited longest for its client is closed; only when every one is being served is
    /// the newcomer answered 503.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections: usize,
    /// On SIGTERM or Ctrl-C, how long the requests in progress may take to finish,
    /// while no new connection is accepted (a drain; 3 s more for the last answers).
    #[arg(long, value_name = "SECONDS", default_value_t = Config::default().drain_timeout.as_secs())]
    pub drain_secs: u64,
    /// Also answer requests whose `Host` header names this host (repeatable), e.g. the
    /// name a reverse proxy forwards. localhost, 127.0.0.1 and [::1] always work.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Also accept requests sent with this `Origin` (repeatable), e.g.
    /// https://app.example.com. http://localhost, http://127.0.0.1 and http://[::1],
    /// on any port, always work.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Require `Authorization: Bearer TOKEN` on every request. Prefer the environment
    /// variable MCP_WORKBOOK_TOKEN: other users of the machine can read flags with `ps`.
    /// One secret every client shares; `--authorization-server` is the real thing.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
}
// ANCHOR_END: http_flags
