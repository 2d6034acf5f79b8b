//! The other transport: one JSON-RPC message per line on stdin, each answer a line on
//! stdout, logs on stderr, for a host that starts the server itself. There is no HTTP
//! layer: a line goes straight to the JSON-RPC layer.

use std::io;
use std::io::{BufRead, Write};
use std::time::Instant;

use crate::Catalog;
use crate::authorization::Caller;
use crate::jsonrpc::{Message, Outcome, RpcError, RpcResponse, echo, parse_message, readable_id, reply};
use crate::listen::listen_on_stdio;
use crate::mcp::{ASSUMED_VERSION, dispatch, for_version};
use crate::modern::{answer_modern, check_envelope, is_modern};
use crate::rate_limit::RateLimit;
use crate::sessions::initialize_in_session;
use crate::streaming::{Era, MAX_CALL_TIME, long_call, notice, start_long_call_on_stdio};

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
            catalog.calls.wait_for_all(Instant::now() + MAX_CALL_TIME);
            // Chapter 17: the server ends each subscription still open, with its result,
            // once the calls whose changes it would hear have ended.
            catalog.listeners.close_on_stdout();
            return Ok(());
        }
        if let Some(answer) = handle_line(&line, catalog, rate_limit, &mut session, &mut version) {
            write_line(&answer)?;
        }
    }
}

/// Write one message to stdout as one line, at once. serde_json writes no raw newline
/// (one inside a string is `\n`), so one message stays one line; the lock keeps the
/// lines of calls running side by side apart.
pub fn write_line(message: &[u8]) -> io::Result<()> {
    let mut output = io::stdout().lock();
    output.write_all(message)?;
    output.write_all(b"\n")?;
    output.flush() // the host is waiting for this line now, not later
}

/// `handle` for one line: the same JSON-RPC and MCP layers, without HTTP around
/// them. A notification, a response or a blank line gets no line back, and neither
/// does a long call here: its thread writes its lines. `session`: the process's
/// session, once `initialize` has opened it.
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
    let current = session.as_deref().and_then(|id| catalog.sessions.find(id));
    let response = match parse_message(line) {
        // Not a message: answered as stdio answers it (see `stdio_error`).
        Err(error) => return Some(stdio_error(line, error)),
        // A tool call takes one from the share of the one caller here, the host.
        Ok(Message::Request { id, method, .. })
            if method == "tools/call" && !rate_limit.take(&Caller::stdio().rate_key()) =>
        {
            rate_limit.refusal(id)
        }
        // No headers here: a request is modern by its `_meta` alone.
        Ok(Message::Request { id, method, params }) if is_modern(None, &method, params.as_ref()) => {
            if check_envelope(None, &method, params.as_ref()).is_ok()
                && let Some(long) = long_call(&method, params.as_ref(), catalog, Era::Modern, None)
            {
                return start_long_call_on_stdio(id, long, catalog);
            }
            // Chapter 17: a subscription's lines come as its changes do (listen.rs).
            if method == "subscriptions/listen" && check_envelope(None, &method, params.as_ref()).is_ok() {
                return listen_on_stdio(id, params.as_ref(), catalog);
            }
            answer_modern(None, id, &method, params.as_ref(), catalog, &Caller::stdio())
        }
        Ok(Message::Request { id, method, params }) if method == "initialize" => {
            let (result, opened) = initialize_in_session(params.as_ref(), catalog, None);
            if let Some(opened) = opened {
                // Chapter 17: the session's own stream is stdout, open as long as the process.
                catalog.sessions.listen_on_stdout(&opened);
                *session = Some(opened);
            }
            if let Ok(agreed) = &result {
                *version = agreed["protocolVersion"].as_str().unwrap_or(ASSUMED_VERSION).to_string();
            }
            reply(200, id, result)
        }
        Ok(Message::Request { id, method, params }) => {
            let current = current.as_ref();
            if let Some(long) = long_call(&method, params.as_ref(), catalog, Era::Handshake, current) {
                return start_long_call_on_stdio(id, long, catalog);
            }
            reply(
                200,
                id,
                dispatch(&method, params.as_ref(), catalog, current).map(|result| for_version(result, version)),
            )
        }
        Ok(Message::Notification { method, params }) => {
            eprintln!("notification: {:?}", echo(&method));
            notice(&method, params.as_ref(), catalog, current.as_ref());
            return None;
        }
        // The answer to a question a call asked. One nobody waits for has no status
        // line to be refused with here: the log says so.
        // An error with no id (the client could not read the question's) names none.
        Ok(Message::Response { id, answer }) => {
            let asked = |id: &serde_json::Value| {
                current.is_some_and(|session| catalog.sessions.answer(&session.id, id, answer))
            };
            if !id.as_ref().is_some_and(asked) {
                eprintln!("an answer to no question waiting ({}): ignored", echo(&id.unwrap_or_default().to_string()));
            }
            return None;
        }
    };
    // There is no status line on stdio: the status `reply` chose goes nowhere, and the
    // JSON-RPC error in the body is the whole answer.
    Some(response.body)
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
