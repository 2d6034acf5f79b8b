//! The client side of a transcript: start a chapter's server, send each request over
//! a real socket, and compare what comes back with what the transcript expects.
//!
//! The cargo tests and the learner's `check` command both use this, so a learner's
//! exercise is held to exactly the same standard as the chapter.
//!
//! HTTP exchanges go to one server started on port 0 ([`RunningServer`], [`replay`]);
//! each stdio exchange runs its own process, started with `--stdio`, fed its lines
//! and closed ([`run_stdio`], [`replay_stdio`]).
//!
//! This file is the replay itself: how strictly it compares ([`Strictness`]), what one
//! exchange gave ([`Outcome`], [`StdioOutcome`]) and a failure told for a reader
//! ([`explain`], [`explain_stdio`]). What it stands on is in `src/replay/`, one concern
//! a file; everything public there is re-exported here (`replay::send`):
//!
//! - `server.rs`: a chapter's server as a child process, and where it listens.
//! - `client.rs`: a small HTTP/1.1 client: send a request, act while its answer
//!   streams in, read or parse the answer (the workbook's one response reader).
//! - `events.rs`: a body read as server-sent events.
//! - `compare.rs`: an answer held to the transcript's, exactly or as
//!   [`Strictness::Learner`] allows.
//! - `show.rs`: a message as a reader sees it: pretty-printed in the transcript's key
//!   order, a line diff, and as a blessed transcript records it.
//! - `stdio.rs`: one process per exchange: run it, compare its lines.
//! - `redis.rs`: a `redis-server` of the replay's own, for chapter 20's store.

mod client;
mod compare;
mod events;
mod redis;
mod server;
mod show;
mod stdio;

pub use client::{
    OPERATOR_NEEDS_THE_PROCESS, ResponseHead, SIDE_ANSWER_DIFFERS, STILL_OPEN, open, parse_response, read_body,
    read_chunk, read_head, read_response, send, send_exchange, send_interrupted, send_raw,
};
pub use compare::{Mismatch, Note, NoteKind, compare, compare_answer, compare_with, optional_member};
pub use events::{Event, events};
pub use redis::{RedisServer, TRANSCRIPT_REDIS, free_port};
pub use server::{RunningServer, TRANSCRIPT_TOOLS_OFF, address_of_url, operate, reloads};
pub use show::{
    Line, as_recorded, diff_steps, line_diff, pretty_json, shown_like, shown_lines, shown_stdio, shown_stdio_lines,
};
pub use stdio::{
    StdioMismatch, StdioRun, compare_stdio, compare_stdio_answers, compare_stdio_with, run_stdio, run_stdio_bytes,
    run_stdio_for,
};

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::transcript::{Exchange, HttpResponse, StdioExchange, Transcript};

/// How long one exchange may take before the replay gives up on it.
const TIMEOUT: Duration = Duration::from_secs(10);

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

/// Send every exchange of `transcript` to `server`, in order, and compare exactly.
pub fn replay<'a>(transcript: &'a Transcript, server: &RunningServer) -> Vec<Outcome<'a>> {
    let exchanges = transcript.exchanges.iter();
    exchanges.map(|exchange| run_exchange(exchange, server.address, Some(server), Strictness::Exact)).collect()
}

/// Send one exchange's request to `address` and compare the answer with `strictness`.
/// `server`: the process at `address`, when the replay started it (an operator line
/// acts on it); `None` for a server at a URL.
/// An exchange that polls ([`Exchange::polls`]) sends it again, every `POLL_INTERVAL`,
/// until the answer matches or `POLL_TIMEOUT` has passed: the last answer counts.
pub fn run_exchange<'a>(
    exchange: &'a Exchange,
    address: SocketAddr,
    server: Option<&RunningServer>,
    strictness: Strictness,
) -> Outcome<'a> {
    let give_up = Instant::now() + POLL_TIMEOUT;
    loop {
        let outcome = match send_exchange(address, exchange, server) {
            Ok(actual) => {
                let (mismatches, notes) =
                    compare_answer(&exchange.request.body, &exchange.expected, &actual, strictness);
                Outcome { exchange, actual: Ok(actual), mismatches, notes }
            }
            Err(error) => {
                Outcome { exchange, actual: Err(error.to_string()), mismatches: Vec::new(), notes: Vec::new() }
            }
        };
        if outcome.passed() || !exchange.polls || Instant::now() >= give_up {
            return outcome;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// How often a polling exchange sends its request again, and for how long.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
const POLL_TIMEOUT: Duration = Duration::from_secs(5);

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
