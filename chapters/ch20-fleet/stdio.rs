//! The other transport: one JSON-RPC message per line on stdin, each answer a line on
//! stdout, logs on stderr, for a host that starts the server itself. There is no HTTP
//! layer: a line is read as one JSON-RPC message and goes to the same router.

use std::io;
use std::io::BufRead;
use std::time::Instant;

use crate::authorization::Caller;
use crate::framing::write_line;
use crate::jsonrpc::{Outcome, RpcError, RpcResponse, parse_message, readable_id};
use crate::listen::listen_on_stdio;
use crate::mcp::ASSUMED_VERSION;
use crate::rate_limit::RateLimit;
use crate::router::{Catalog, Routed, Via, route};
use crate::streaming::{MAX_CALL_TIME, start_long_call_on_stdio};

// ANCHOR: stdio
/// Read messages from stdin, one per line, and write each answer to stdout as one
/// line. stdout carries nothing else; the log goes to stderr. A long call runs on a
/// thread of its own, so the loop goes on reading while it works: the next line may be
/// the `notifications/cancelled` that stops it, or the answer to a question it asked.
/// When the host closes stdin, the calls still running may finish (each by its
/// deadline; one waiting for an answer hears that none will come), then the process ends.
pub fn serve_stdio(catalog: &'static Catalog, rate_limit: &RateLimit) -> io::Result<()> {
    eprintln!("serving MCP on stdin/stdout");
    let mut input = io::stdin().lock();
    let mut line = Vec::new();
    // Chapter 16: over stdio the process is the session, opened by `initialize`. It
    // needs no id on the wire: every line comes from the one client.
    let mut session: Option<String> = None;
    // The revision `initialize` agreed on: every later answer is in it (see `for_version`).
    let mut version = ASSUMED_VERSION.to_string();
    loop {
        line.clear();
        // Bytes, not a String: a line that is not UTF-8 gets a parse error, it does
        // not end the loop. At the end of input, a last line without `\n` still counts.
        if input.read_until(b'\n', &mut line)? == 0 {
            eprintln!("stdin closed: exiting once the calls still running end");
            if let Some(session) = &session {
                catalog.sessions.end(session);
            }
            // Chapter 19: nobody is left to poll a task, or answer it: each is stopped.
            catalog.tasks.cancel_all();
            catalog.calls.wait_for_all(Instant::now() + MAX_CALL_TIME);
            // Chapter 17: the server ends each subscription still open, with its result,
            // once the calls whose changes it would hear have ended.
            catalog.listeners.close_on_stdout(&catalog.info);
            return Ok(());
        }
        if let Some(answer) = handle_line(&line, catalog, rate_limit, &mut session, &mut version) {
            write_line(&answer)?;
        }
    }
}

/// `handle` for one line: the same router, without HTTP around it. A notification, a
/// response or a blank line gets no line back, and neither does a long call here: its
/// thread writes its lines. `session`: the process's session, once `initialize` has
/// opened it.
fn handle_line(
    line: &[u8],
    catalog: &'static Catalog,
    rate_limit: &RateLimit,
    session: &mut Option<String>,
    version: &mut String,
) -> Option<Vec<u8>> {
    // The `\n` that ends the line (and a `\r` before it) is framing, not message.
    let line = line.trim_ascii();
    if line.is_empty() {
        return None; // a blank line holds no message, so there is nothing to answer
    }
    let message = match parse_message(line) {
        Ok(message) => message,
        // Not a message: answered as stdio answers it (see `stdio_error`).
        Err(error) => return Some(stdio_error(line, error)),
    };
    // The one caller here is the host that started the process (no token: chapter 18).
    match route(message, Via::Stdio { session, version }, &Caller::stdio(), catalog, rate_limit) {
        // There is no status line on stdio: the status the router chose goes nowhere,
        // and the JSON-RPC error in the body is the whole answer. No body, no line.
        Routed::Answer(response) | Routed::AsIs(response) => (!response.body.is_empty()).then_some(response.body),
        Routed::Long(id, long) => start_long_call_on_stdio(id, *long, catalog.server()),
        // Chapter 17: a subscription's lines come as its changes do (listen.rs).
        Routed::Listen(id, params) => listen_on_stdio(id, params.as_ref(), catalog.listening()),
    }
}

/// The error for a line that is not a message: with the line's id when one could be
/// read, as over HTTP; with no `id` member at all when none could, where HTTP says
/// `"id": null`. "The server MUST NOT write anything to its `stdout` that is not a valid
/// MCP message", and MCP's schema has no `null` id (`id?: RequestId`): chapter 9's page
/// says why the two transports differ.
fn stdio_error(line: &[u8], error: RpcError) -> Vec<u8> {
    let id = Some(readable_id(line)).filter(|id| !id.is_null());
    let response = RpcResponse { jsonrpc: "2.0", id, outcome: Outcome::Error(error) };
    serde_json::to_vec(&response).expect("serializable")
}
// ANCHOR_END: stdio
