//! The learner's check: replay a chapter's transcript against their server and say, in
//! plain words, what matched and what to fix.
//!
//! `cargo run -- check N` uses this (see `src/main.rs`), and so do the author checks in
//! `tests/exercises.rs`, so the tests prove the very verdict a learner reads. It
//! compares with [`Strictness::Learner`]: the one rule on free text lives there.
//!
//! What a learner reads, for each exchange of the transcript:
//!
//! ```text
//! ✓  1. A request is answered with its own id
//! ✗  2. A string id comes back as a string
//!       You sent (transcript.md line 30):
//!         POST /mcp HTTP/1.1
//!         ...
//!           the chapter answers               │ your server answered
//!           HTTP/1.1 200 OK                   │ HTTP/1.1 200 OK
//!         ≠   "id": "7",                      │   "id": 7,
//!       Hint: an id comes back with its JSON type ...
//! ```
//!
//! and a summary at the end. Rows marked `≠` are the ones that differ.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::chapters::{self, Chapter};
use crate::replay::{
    self, Line, Mismatch, Note, NoteKind, Outcome, RunningServer, StdioMismatch, StdioOutcome, Strictness,
};
use crate::transcript::{self, HttpResponse, Interruption, Transcript};

/// Whose server is being checked: which binary the check starts (none for a URL), and
/// the words of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The learner's `exercise.rs`, started by the check.
    Exercise,
    /// The chapter's own `main.rs`, started by the check (`--solution`).
    Solution,
    /// A server the learner started themselves (`--url`).
    Url(String),
}

/// One exchange, checked.
pub struct Checked<'a> {
    pub outcome: Exchanged<'a>,
    /// What the server wrote to stderr while giving a wrong answer, when the check
    /// started the server (and so can read it); empty otherwise.
    pub log: String,
    /// The panic in `log`, if there is one.
    pub panic: Option<Panic>,
}

/// What one exchange gave, over HTTP or over stdio.
pub enum Exchanged<'a> {
    Http(Outcome<'a>),
    Stdio(StdioOutcome<'a>),
}

impl Checked<'_> {
    pub fn passed(&self) -> bool {
        match &self.outcome {
            Exchanged::Http(outcome) => outcome.passed(),
            Exchanged::Stdio(outcome) => outcome.passed(),
        }
    }

    pub fn title(&self) -> &str {
        match &self.outcome {
            Exchanged::Http(outcome) => &outcome.exchange.title,
            Exchanged::Stdio(outcome) => &outcome.exchange.title,
        }
    }

    fn hint(&self) -> Option<&str> {
        match &self.outcome {
            Exchanged::Http(outcome) => outcome.exchange.hint.as_deref(),
            Exchanged::Stdio(outcome) => outcome.exchange.hint.as_deref(),
        }
    }

    fn notes(&self) -> &[Note] {
        match &self.outcome {
            Exchanged::Http(outcome) => &outcome.notes,
            Exchanged::Stdio(outcome) => &outcome.notes,
        }
    }

    /// No answer at all: no HTTP response, or no process to talk to.
    fn unanswered(&self) -> bool {
        match &self.outcome {
            Exchanged::Http(outcome) => outcome.actual.is_err(),
            Exchanged::Stdio(outcome) => outcome.actual.is_err(),
        }
    }
}

/// A panic, as Rust's default panic hook prints it:
/// `thread '<unnamed>' panicked at chapters/ch01-envelope/exercise.rs:54:5:` and, on the
/// next line, the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panic {
    /// `chapters/ch01-envelope/exercise.rs:54:5`
    pub location: String,
    /// `not yet implemented: answer each kind of message`
    pub message: String,
}

impl Panic {
    /// `todo!()` panics with "not yet implemented".
    pub fn is_todo(&self) -> bool {
        self.message.starts_with("not yet implemented")
    }
}

/// How long to wait, after a wrong answer, for the server's panic message to arrive
/// on its stderr pipe (it is written before the response, but read on another thread).
const PANIC_GRACE: Duration = Duration::from_millis(150);

/// Check every exchange of `transcript` against `program` (the learner's exercise or
/// the chapter), as `cargo run -- check` does: the HTTP exchanges against one server
/// started on port 0, then each stdio exchange in a process of its own.
pub fn run_binary<'a>(transcript: &'a Transcript, program: &Path) -> Result<Vec<Checked<'a>>, String> {
    let mut results = Vec::new();
    if !transcript.exchanges.is_empty() {
        let server = RunningServer::start(program, &transcript.server_args).map_err(|e| e.to_string())?;
        results.extend(run(transcript, server.address, Some(&server)));
    }
    results.extend(run_stdio(transcript, program));
    Ok(results)
}

/// Replay every HTTP exchange of `transcript` against `address`, in order. When `server`
/// is the process the check started, a wrong answer is paired with what it logged.
pub fn run<'a>(transcript: &'a Transcript, address: SocketAddr, server: Option<&RunningServer>) -> Vec<Checked<'a>> {
    transcript
        .exchanges
        .iter()
        .map(|exchange| {
            let before = server.map_or(0, |s| s.stderr().len());
            let outcome = replay::run_exchange(exchange, address, server, Strictness::Learner);
            let log = match server {
                Some(server) if !outcome.passed() => log_since(server, before),
                _ => String::new(),
            };
            Checked { outcome: Exchanged::Http(outcome), panic: find_panic(&log), log }
        })
        .collect()
}

/// Run every stdio exchange of `transcript`, each in a fresh `program` process; a wrong
/// answer is paired with the panic that process printed.
pub fn run_stdio<'a>(transcript: &'a Transcript, program: &Path) -> Vec<Checked<'a>> {
    let args = transcript.stdio_args();
    transcript
        .stdio
        .iter()
        .map(|exchange| {
            let outcome = replay::run_stdio_exchange(exchange, program, &args, Strictness::Learner);
            let log = match &outcome.actual {
                Ok(run) if !outcome.passed() => run.stderr.clone(),
                _ => String::new(),
            };
            Checked { outcome: Exchanged::Stdio(outcome), panic: find_panic(&log), log }
        })
        .collect()
}

/// What the server logged since `before`, once a panic report in it is complete, or
/// after [`PANIC_GRACE`] when none comes.
fn log_since(server: &RunningServer, before: usize) -> String {
    let deadline = Instant::now() + PANIC_GRACE;
    loop {
        let log = server.stderr().get(before..).unwrap_or("").to_string();
        if find_panic(&log).is_some() || Instant::now() >= deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first complete panic report in `log`.
pub fn find_panic(log: &str) -> Option<Panic> {
    let mut lines = log.lines();
    while let Some(line) = lines.next() {
        if let Some((_, place)) = line.split_once(" panicked at ") {
            let message = lines.next()?;
            let location = place.trim().trim_end_matches(':').to_string();
            return Some(Panic { location, message: message.trim().to_string() });
        }
    }
    None
}

/// True when every exchange passed.
pub fn all_passed(results: &[Checked]) -> bool {
    results.iter().all(Checked::passed)
}

/// The report's first lines: what is checked against what.
pub fn heading(chapter: &Chapter, target: &Target, transcript: &Transcript) -> String {
    let server = match target {
        Target::Exercise => format!("your exercise, {}, started by the check", relative(&chapter.exercise_path())),
        Target::Solution => format!("the chapter's own server, {}", relative(&chapter.solution_path())),
        Target::Url(url) => format!("the server you started, at {url}"),
    };
    let count = transcript.exchanges.len() + transcript.stdio.len();
    format!(
        "Checking chapter {}: {}\n  server:    {server}\n  expected:  the {count} exchanges of {} (the book shows them too)\n",
        chapter.number,
        chapter.title,
        relative(&chapter.transcript_path()),
    )
}

/// One block per exchange: a line for a match, the details for a difference.
pub fn render(results: &[Checked], target: &Target) -> String {
    let mut text = String::new();
    let mut todos_seen: Vec<&str> = Vec::new();
    let mut silence_seen = false;
    for (index, checked) in results.iter().enumerate() {
        let (number, title) = (index + 1, checked.title());
        if checked.passed() {
            text.push_str(&format!("✓ {number:>2}. {title}{}\n", allowed_differences(checked.notes())));
            continue;
        }
        // The same todo!() again: one line is enough, the first report said it all.
        if let Some(panic) = checked.panic.as_ref().filter(|p| p.is_todo()) {
            if todos_seen.contains(&panic.location.as_str()) {
                text.push_str(&format!(
                    "✗ {number:>2}. {title}\n      the same todo!() again, at {}\n",
                    panic.location
                ));
                continue;
            }
            todos_seen.push(&panic.location);
        }
        // No answer again: the server is gone, and saying so once is enough.
        if checked.unanswered() {
            if silence_seen {
                text.push_str(&format!("✗ {number:>2}. {title}\n      no answer either\n"));
                continue;
            }
            silence_seen = true;
        }
        text.push_str(&format!("✗ {number:>2}. {title}\n"));
        text.push_str(&explain_failure(checked, target));
    }
    text
}

/// The details of one exchange that did not match: why, when there is a plain reason;
/// what was sent; both answers side by side; notes; the hint.
fn explain_failure(checked: &Checked, target: &Target) -> String {
    let mut text = String::new();
    let say = |text: &mut String, line: &str| {
        text.push_str(format!("      {line}").trim_end());
        text.push('\n');
    };
    if let Some(why) = why_it_failed(checked, target) {
        for line in why.lines() {
            text.push_str(&wrap_words(line, 6));
        }
    }
    let allowed: Vec<&str> =
        checked.notes().iter().filter(|note| !note.counts()).map(|note| note.pointer.as_str()).collect();
    match &checked.outcome {
        Exchanged::Http(outcome) => {
            let exchange = outcome.exchange;
            say(&mut text, &format!("You sent (transcript.md line {}):", exchange.line));
            for line in request_lines(exchange) {
                say(&mut text, &format!("  {line}"));
            }
            for during in &exchange.during {
                let after = match during.after_events {
                    0 => "Once the answer's head had come, the client".to_string(),
                    1 => "Once the answer's first event had come, the client".to_string(),
                    n => format!("Once the answer's first {n} events had come, the client"),
                };
                match &during.action {
                    Interruption::Close => say(&mut text, &format!("{after} closed its side and read on.")),
                    Interruption::ToolsOff(names) => {
                        let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                        let who = after.replacen("the client", "the operator", 1);
                        say(&mut text, &format!("{who} switched off the tools {names} and sent SIGHUP."));
                    }
                    Interruption::Send { request, expected } => {
                        let body = request.body.lines().next().unwrap_or("");
                        say(&mut text, &format!("{after} sent, on a connection of its own:"));
                        say(&mut text, &format!("  {} {} {body}", request.method, request.path));
                        say(&mut text, &format!("which must be answered {}; then it read on.", expected.status));
                    }
                }
            }
            text.push('\n');
            match &outcome.actual {
                Ok(actual) => text.push_str(&side_by_side(&exchange.expected, actual, &outcome.mismatches, &allowed)),
                Err(error)
                    if error.starts_with(replay::SIDE_ANSWER_DIFFERS) || error.starts_with(replay::STILL_OPEN) =>
                {
                    say(&mut text, &format!("But {error}."));
                }
                Err(error) => {
                    say(&mut text, &format!("No answer came back: {error}."));
                    say(&mut text, "The chapter answers:");
                    for line in transcript::format_response(&exchange.expected).lines() {
                        say(&mut text, &format!("  {line}"));
                    }
                }
            }
        }
        Exchanged::Stdio(outcome) => {
            let exchange = outcome.exchange;
            let how = if exchange.raw.is_some() { ", byte for byte: \\n ends a line" } else { "" };
            let closed = if exchange.then.is_empty() { ", then closed it" } else { "" };
            say(&mut text, &format!("You wrote to its stdin{how}{closed} (transcript.md line {}):", exchange.line));
            for line in &exchange.input {
                say(&mut text, &format!("  {line}"));
            }
            for (turn, then) in exchange.then.iter().enumerate() {
                let lines = if then.after_lines == 1 { "line" } else { "lines" };
                let last = if turn + 1 == exchange.then.len() { ", then closed it" } else { "" };
                if let Some(names) = &then.tools_off {
                    let names = if names.is_empty() { "none".to_string() } else { names.join(", ") };
                    let (after, last) =
                        (then.after_lines, if last.is_empty() { "" } else { "; then you closed stdin" });
                    say(
                        &mut text,
                        &format!(
                            "Once it had written {after} {lines}, the operator switched off the tools {names} and sent SIGHUP{last}."
                        ),
                    );
                    continue;
                }
                say(&mut text, &format!("and, once it had written {} {lines}, this{last}:", then.after_lines));
                for line in &then.input {
                    say(&mut text, &format!("  {line}"));
                }
            }
            text.push('\n');
            match &outcome.actual {
                Ok(run) => text.push_str(&stdio_side_by_side(&exchange.expected, run, &outcome.mismatches, &allowed)),
                Err(error) => say(&mut text, &format!("The check could not start your server: {error}.")),
            }
        }
    }
    text.push('\n');
    if checked.panic.is_none() && ended_badly(checked) && !checked.log.trim().is_empty() {
        say(&mut text, "Its log (stderr), last lines:");
        let lines: Vec<&str> = checked.log.lines().collect();
        for line in &lines[lines.len().saturating_sub(8)..] {
            say(&mut text, &format!("  {line}"));
        }
        text.push('\n');
    }
    for note in checked.notes() {
        text.push_str(&wrap_words(&format!("Note: {}", explain_note(note)), 6));
    }
    let hint = checked.hint().unwrap_or("read this exchange's explanation in the chapter's transcript, in the book.");
    text.push_str(&wrap_words(&format!("Hint: {hint}"), 6));
    text.push('\n');
    text
}

/// What a passing exchange's line adds when the answer differs in a way that does not
/// count: `  (worded your way: fine)`, or which optional members it carries.
fn allowed_differences(notes: &[Note]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if notes.iter().any(|note| matches!(note.kind, NoteKind::Reworded { .. })) {
        parts.push("worded your way".to_string());
    }
    let optional: Vec<&str> = notes
        .iter()
        .filter(|note| matches!(note.kind, NoteKind::Optional { .. }))
        .map(|note| note.path.as_str())
        .collect();
    if !optional.is_empty() {
        let members = if optional.len() == 1 { "an optional member" } else { "optional members" };
        parts.push(format!("{}, {members} this chapter does not send", optional.join(", ")));
    }
    if parts.is_empty() { String::new() } else { format!("  ({}: fine)", parts.join("; ")) }
}

/// One note, in words: what differs, and whether that fails the exchange.
fn explain_note(note: &Note) -> String {
    let path = &note.path;
    match &note.kind {
        NoteKind::Reworded { .. } => {
            format!("your {path} is worded differently; that alone does not count against you.")
        }
        NoteKind::Unnamed { missing } => {
            let missing: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
            format!(
                "your {path} is yours to word, but words that say what to fix (a failed call's text, a prompt's \
                 invalid-params error) name each argument to fix, as the chapter's do, and yours do not name {}. \
                 That fails this exchange.",
                missing.join(", ")
            )
        }
        NoteKind::Overquoted { quote } => format!(
            "your {path} quotes more of what the client sent than the chapter's, which cuts it after \"{quote}\" \
             (80 characters, with `echo`): an answer never repeats a long input back. That fails this exchange."
        ),
        NoteKind::Repeated { quote } => format!(
            "your {path} repeats more than 80 characters of what the client sent (\"{quote}...\"), and the \
             chapter's does not: an answer never repeats a long input back (quote at most 80 characters of it, \
             with `echo`, or none). That fails this exchange."
        ),
        NoteKind::Optional { reason } => format!(
            "{path} is an optional member this chapter does not send ({reason}). It is valid MCP, and it does not \
             fail this exchange."
        ),
        NoteKind::Unexpected => format!(
            "{path} is a member this chapter does not send, and not one of the optional members the check lets \
             through: it fails this exchange."
        ),
    }
}

/// `text` broken between words to fit the terminal, every line indented by `indent`.
fn wrap_words(text: &str, indent: usize) -> String {
    let width = terminal_width() - indent;
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().unwrap();
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines.iter().map(|line| format!("{}{line}\n", " ".repeat(indent))).collect()
}

/// `COLUMNS` when the shell exports it, else 100.
fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse::<usize>().ok()).unwrap_or(100).max(60)
}

/// No answer came, or the stdio process did not end well: its log may say why.
fn ended_badly(checked: &Checked) -> bool {
    match &checked.outcome {
        Exchanged::Http(outcome) => outcome.actual.is_err(),
        Exchanged::Stdio(outcome) => {
            outcome.mismatches.iter().any(|m| matches!(m, StdioMismatch::DidNotExit | StdioMismatch::Failed { .. }))
                || outcome.actual.is_err()
        }
    }
}

/// The first thing to say about a failure, when there is something better to say than
/// the table: a panic, a 500, no answer.
fn why_it_failed(checked: &Checked, target: &Target) -> Option<String> {
    let http_status = match &checked.outcome {
        Exchanged::Http(Outcome { actual: Ok(actual), .. }) => Some(actual.status),
        _ => None,
    };
    let http_500 = if http_status == Some(500) { " (HTTP 500)" } else { "" };
    if let Some(panic) = &checked.panic {
        return Some(if panic.is_todo() {
            format!(
                "Your server hit a todo!(){http_500}: this is the part to write.\nIt stopped at {}: {}",
                panic.location, panic.message
            )
        } else {
            let after =
                if http_500.is_empty() { "" } else { "\nThe base turned the panic into an empty 500 and went on." };
            format!("Your server panicked{http_500} at {}: {}{after}", panic.location, panic.message)
        });
    }
    match (&checked.outcome, target) {
        (Exchanged::Http(Outcome { actual: Ok(actual), .. }), Target::Url(_))
            if actual.status == 500 && actual.body.is_empty() =>
        {
            Some(
                "Your server answered HTTP 500 with no body: the base does that when the handler panics, most \
                 often at a todo!() not written yet. Your server's terminal shows the panic's message and line: \
                 that is the part to write."
                    .to_string(),
            )
        }
        (Exchanged::Http(Outcome { actual: Err(error), .. }), _) if error.starts_with(replay::STILL_OPEN) => Some(
            "Your server kept the answer open after the client's last action: it should have ended it (the \
             client left, or what the stream belongs to ended)."
                .into(),
        ),
        (Exchanged::Http(Outcome { actual: Err(_), .. }), Target::Url(url)) => {
            Some(format!("Is your server still running at {url}?"))
        }
        (Exchanged::Http(Outcome { actual: Err(error), .. }), _) if error.starts_with(replay::SIDE_ANSWER_DIFFERS) => {
            Some("The request sent while the answer streamed in was not answered as the chapter answers it.".into())
        }
        (Exchanged::Http(Outcome { actual: Err(_), .. }), _) => {
            Some("The server stopped answering: did it exit?".to_string())
        }
        _ => None,
    }
}

/// The request as the transcript writes it: request line, headers, blank, body.
fn request_lines(exchange: &transcript::Exchange) -> Vec<String> {
    if let Some(raw) = &exchange.raw {
        return raw.lines.clone();
    }
    let request = &exchange.request;
    let mut lines = vec![format!("{} {} HTTP/1.1", request.method, request.path)];
    lines.extend(request.headers.iter().map(|(name, value)| format!("{name}: {value}")));
    if !request.body.is_empty() {
        lines.push(String::new());
        lines.extend(request.body.lines().map(str::to_string));
    }
    lines
}

/// One row of the table: the chapter's side, the learner's side, whether they differ,
/// and whether that difference counts.
struct Row {
    expected: String,
    actual: String,
    differs: bool,
    counts: bool,
}

impl Row {
    fn new(expected: impl Into<String>, actual: impl Into<String>, differs: bool) -> Row {
        Row { expected: expected.into(), actual: actual.into(), differs, counts: differs }
    }

    /// A row that differs in a way the check lets through (free words, an optional member).
    fn allowed(expected: impl Into<String>, actual: impl Into<String>) -> Row {
        Row { counts: false, ..Row::new(expected, actual, true) }
    }

    /// The margin: `≠` for a difference that counts, `~` for one that does not.
    fn mark(&self) -> &'static str {
        match (self.differs, self.counts) {
            (false, _) => " ",
            (true, true) => "≠",
            (true, false) => "~",
        }
    }
}

/// The expected and the actual response in two columns: status, the headers the
/// transcript lists, and the bodies (JSON, the learner's in the transcript's key
/// order, so lines pair up). Rows that differ carry `≠` in the margin, or `~` when the
/// difference does not count (it is under a member one of the `allowed` pointers names).
fn side_by_side(expected: &HttpResponse, actual: &HttpResponse, mismatches: &[Mismatch], allowed: &[&str]) -> String {
    let status_line = |status: u16| format!("HTTP/1.1 {status} {}", transcript::reason(status)).trim_end().to_string();
    let mut rows = vec![
        Row::new("the chapter answers", "your server answered", false),
        Row::new(status_line(expected.status), status_line(actual.status), expected.status != actual.status),
    ];
    for (name, value) in &expected.headers {
        let found = actual.header(name);
        let shown = found.map_or_else(|| format!("(no {name} header)"), |v| format!("{name}: {v}"));
        rows.push(Row::new(format!("{name}: {value}"), shown, found != Some(value.as_str())));
    }
    rows.push(Row::new("", "", false));
    let body_differs = mismatches.iter().any(|m| matches!(m, Mismatch::Body { .. }));
    let no_body = |body: &str| body.trim().is_empty();
    let (left, right) =
        (replay::shown_lines(&expected.body, None, ""), replay::shown_lines(&actual.body, Some(&expected.body), ""));
    let (left, right) = (or_none(left, no_body(&expected.body)), or_none(right, no_body(&actual.body)));
    rows.extend(body_rows(left, right, body_differs, allowed));
    let mut text = table(&rows);
    text.push_str(&legend(&rows));
    text
}

/// `(no body)` in place of nothing, so that an empty side still shows.
fn or_none(lines: Vec<Line>, empty: bool) -> Vec<Line> {
    if empty { vec![Line { text: "(no body)".to_string(), pointer: String::new() }] } else { lines }
}

/// A line under the table that says what `~` means, when a row carries it.
fn legend(rows: &[Row]) -> String {
    if rows.iter().any(|row| row.differs && !row.counts) {
        wrap_words("Rows marked ~ differ in a way that does not count; the notes below say why.", 6)
    } else {
        String::new()
    }
}

/// The lines the chapter writes and the lines the learner's server wrote, side by
/// side (each JSON message pretty-printed, the learner's in the chapter's key order),
/// then how each process ended.
fn stdio_side_by_side(
    expected: &[String],
    run: &replay::StdioRun,
    mismatches: &[StdioMismatch],
    allowed: &[&str],
) -> String {
    let show = |lines: Vec<Line>, empty: bool| {
        if empty { vec![Line { text: "(not one line)".to_string(), pointer: String::new() }] } else { lines }
    };
    let written = run.lines();
    let left = show(replay::shown_stdio_lines(expected, None), expected.is_empty());
    let right = show(replay::shown_stdio_lines(&written, Some(expected)), written.is_empty());
    let mut rows = vec![Row::new("the chapter writes", "your server wrote", false)];
    let lines_differ = mismatches.iter().any(|m| matches!(m, StdioMismatch::Lines { .. }));
    rows.extend(body_rows(left, right, lines_differ, allowed));
    let ended = match run.exit {
        None => "still running after its stdin closed: killed".to_string(),
        Some(status) if status.success() => "then exited by itself".to_string(),
        Some(status) => format!("then exited with {status}"),
    };
    let ended_badly = mismatches.iter().any(|m| matches!(m, StdioMismatch::DidNotExit | StdioMismatch::Failed { .. }));
    rows.push(Row::new("then exits by itself", ended, ended_badly));
    let mut text = table(&rows);
    text.push_str(&legend(&rows));
    if mismatches.contains(&StdioMismatch::Unterminated) {
        text.push_str(&wrap_words(
            "Your server's last line has no newline at its end: a host reading lines waits for it forever.",
            6,
        ));
    }
    text
}

/// The two bodies as rows, walked by a line diff (a line's trailing comma aside, so
/// that a member added at the end of an object does not mark the one before it). A run
/// of removed lines faces the run of added lines after it. A differing row is marked
/// as allowed when the body passed (`differs` is false: every difference was let
/// through) or when its member is under one of the `allowed` pointers.
fn body_rows(expected: Vec<Line>, actual: Vec<Line>, differs: bool, allowed: &[&str]) -> Vec<Row> {
    let is_allowed = |line: &Line| {
        !differs
            || allowed
                .iter()
                .any(|p| line.pointer == *p || line.pointer.strip_prefix(*p).is_some_and(|rest| rest.starts_with('/')))
    };
    let key = |line: &Line| line.text.trim_end_matches(',').to_string();
    let (left, right): (Vec<String>, Vec<String>) =
        (expected.iter().map(key).collect(), actual.iter().map(key).collect());
    let mut rows = Vec::new();
    let (mut removed, mut added): (Vec<&Line>, Vec<&Line>) = (Vec::new(), Vec::new());
    let flush = |rows: &mut Vec<Row>, removed: &mut Vec<&Line>, added: &mut Vec<&Line>| {
        for i in 0..removed.len().max(added.len()) {
            let (wanted, given) = (removed.get(i), added.get(i));
            let text = |line: Option<&&Line>| line.map_or_else(String::new, |line| line.text.clone());
            let allowed = given.or(wanted).is_some_and(|line| is_allowed(line));
            rows.push(if allowed {
                Row::allowed(text(wanted), text(given))
            } else {
                Row::new(text(wanted), text(given), true)
            });
        }
        removed.clear();
        added.clear();
    };
    for step in replay::diff_steps(&left, &right) {
        match step {
            (Some(i), None) => removed.push(&expected[i]),
            (None, Some(j)) => added.push(&actual[j]),
            (Some(i), Some(j)) => {
                flush(&mut rows, &mut removed, &mut added);
                rows.push(Row::new(expected[i].text.clone(), actual[j].text.clone(), false));
            }
            (None, None) => {}
        }
    }
    flush(&mut rows, &mut removed, &mut added);
    fold_matching(rows)
}

/// Matching rows kept around each difference; a longer run of matching rows between
/// two differences (or before the first, after the last) folds into one line.
const CONTEXT: usize = 3;

/// Fold long runs of matching rows, so that a difference in a long body is easy to find.
fn fold_matching(rows: Vec<Row>) -> Vec<Row> {
    let near_difference = |index: usize| {
        let from = index.saturating_sub(CONTEXT);
        rows[from..rows.len().min(index + CONTEXT + 1)].iter().any(|row| row.differs)
    };
    let keep: Vec<bool> = (0..rows.len()).map(near_difference).collect();
    let mut folded = Vec::new();
    let mut skipped = 0;
    for (row, keep) in rows.into_iter().zip(keep) {
        if keep {
            if skipped > 0 {
                folded.push(Row::new(format!("⋮ {skipped} matching lines"), "⋮", false));
                skipped = 0;
            }
            folded.push(row);
        } else {
            skipped += 1;
        }
    }
    if skipped > 0 {
        folded.push(Row::new(format!("⋮ {skipped} matching lines"), "⋮", false));
    }
    folded
}

/// Lay rows out in two columns that fit the terminal;
/// a line too long for its column continues on the next row.
fn table(rows: &[Row]) -> String {
    const MARGIN: usize = 8; // "      ≠ "
    const SEPARATOR: &str = " │ ";
    let room = terminal_width() - MARGIN - SEPARATOR.chars().count();
    let widest_left = rows.iter().map(|r| r.expected.chars().count()).max().unwrap_or(0);
    // Two columns of the same width when the left one must wrap, so that a line both
    // sides share wraps the same way on both.
    let half = room / 2;
    let left_width = widest_left.min(half).max(1);
    let right_width = if widest_left >= half { half } else { room - left_width };
    let mut text = String::new();
    for row in rows {
        let left = wrap(&row.expected, left_width);
        let right = wrap(&row.actual, right_width);
        for i in 0..left.len().max(right.len()) {
            let mark = if i == 0 { row.mark() } else { " " };
            let l = left.get(i).map_or("", String::as_str);
            let r = right.get(i).map_or("", String::as_str);
            let line = format!("      {mark} {l:<left_width$}{SEPARATOR}{r}");
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text
}

/// Cut `line` into pieces of at most `width` characters (at least one piece).
fn wrap(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(width).map(|chunk| chunk.iter().collect()).collect()
}

/// The exchanges a `--url` check leaves out: it can start no process and signal none.
#[derive(Debug, Default)]
pub struct Unchecked {
    /// The stdio exchanges: each needs a process of its own.
    pub stdio: usize,
    /// The HTTP exchanges from the operator's first on (chapter 17): the operator writes
    /// a file and signals the server's PID, and what comes after depends on it.
    pub after_operator: usize,
}

impl Unchecked {
    /// Leave out of `transcript` what a check of a server at a URL cannot run, and count
    /// it. The server is reached over HTTP only: stdio exchanges need a process, and an
    /// operator's exchange (chapter 17) a file and a PID. The exchanges after the
    /// operator's first depend on what it switched off (a call it refused would run), so
    /// they are left out with it.
    pub fn leave_out(transcript: &mut Transcript) -> Unchecked {
        let mut unchecked = Unchecked { stdio: transcript.stdio.len(), after_operator: 0 };
        transcript.stdio.clear();
        if let Some(first) = transcript.exchanges.iter().position(transcript::Exchange::needs_operator) {
            unchecked.after_operator = transcript.exchanges.len() - first;
            transcript.exchanges.truncate(first);
        }
        unchecked
    }
}

/// The last lines: how many matched, what to do next, and what `unchecked` left out.
pub fn summary(chapter: &Chapter, target: &Target, results: &[Checked], unchecked: &Unchecked) -> String {
    let total = results.len();
    let failed: Vec<usize> =
        results.iter().enumerate().filter(|(_, c)| !c.passed()).map(|(index, _)| index + 1).collect();
    let todos = results.iter().filter(|c| c.panic.as_ref().is_some_and(Panic::is_todo)).count();
    let has = |checked: &Checked, kind: fn(&NoteKind) -> bool| checked.notes().iter().any(|n| kind(&n.kind));
    let reworded = results.iter().filter(|c| has(c, |k| matches!(k, NoteKind::Reworded { .. }))).count();
    let optional = results.iter().filter(|c| has(c, |k| matches!(k, NoteKind::Optional { .. }))).count();
    let check = match target {
        Target::Exercise => format!("cargo run -- check {}", chapter.number),
        Target::Solution => format!("cargo run -- check {} --solution", chapter.number),
        Target::Url(url) => format!("cargo run -- check {} --url {url}", chapter.number),
    };
    let mut text = format!("{}\n", "─".repeat(60));
    if unchecked.stdio > 0 {
        text.push_str(&wrap_words(
            &format!(
                "{} stdio exchanges were not checked: each needs a process the check starts itself. \
                 Run the check without --url to include them.",
                unchecked.stdio
            ),
            0,
        ));
    }
    if unchecked.after_operator > 0 {
        text.push_str(&wrap_words(
            &format!(
                "The last {} HTTP exchanges were not checked: from the first on, an operator switches tools \
                 off in the server's --tools-off file and signals its process, which only a server the check \
                 starts itself lets it do. Run the check without --url to include them.",
                unchecked.after_operator
            ),
            0,
        ));
    }
    if reworded > 0 {
        text.push_str(&wrap_words(
            &format!(
                "{reworded} of your answers word something differently from the chapter's: an error \
                 message, a failed call's text or a tool's description. That is fine: those words are the \
                 server's to choose, so the check compares everything around them (the error code, \
                 isError, the schema) and not the words."
            ),
            0,
        ));
    }
    if optional > 0 {
        text.push_str(&wrap_words(
            &format!(
                "{optional} of your answers carry an optional member this chapter does not send, such as \
                 \"isError\": false or serverInfo's title. That is valid MCP, and it does not count against you; \
                 the chapter leaves such members out because a client needs none of them."
            ),
            0,
        ));
    }
    if failed.is_empty() {
        text.push_str(&format!("All {total} exchanges answered as chapter {} expects.\n", chapter.number));
        if *target == Target::Exercise {
            // From chapter 11 the exercise is one file of the chapter, its piece.
            text.push_str(&format!(
                "Well done. Compare your code with the chapter's: {}\n",
                relative(&chapter.exercise_counterpart())
            ));
            let intro_left =
                fs::read_to_string(chapter.exercise_path()).is_ok_and(|code| code.contains("// TODO(exercise)"));
            if intro_left {
                text.push_str(
                    "Then delete the `TODO(exercise)` block at the top of your file: the compiler may have more to say.\n",
                );
            }
        }
        if let Some(next) = chapters::CHAPTERS.iter().find(|c| c.number == chapter.number + 1) {
            text.push_str(&format!(
                "Next: chapter {}, {} (`cargo run -- check {}`).\n",
                next.number, next.title, next.number
            ));
        }
    } else {
        let passed = total - failed.len();
        text.push_str(&format!(
            "{passed} of {total} exchanges answered as chapter {} expects; {} to fix: {}.\n",
            chapter.number,
            failed.len(),
            ranges(&failed)
        ));
        if todos > 0 {
            text.push_str(&format!("{todos} of them stopped at a todo!(): write those parts first.\n"));
        }
        text.push_str(&format!("Start with the first ✗ (exchange {}), then run `{check}` again.\n", failed[0]));
    }
    text
}

/// `[1, 2, 3, 5]` -> `1-3, 5`.
fn ranges(numbers: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut index = 0;
    while index < numbers.len() {
        let start = numbers[index];
        while index + 1 < numbers.len() && numbers[index + 1] == numbers[index] + 1 {
            index += 1;
        }
        let end = numbers[index];
        parts.push(if end > start { format!("{start}-{end}") } else { start.to_string() });
        index += 1;
    }
    parts.join(", ")
}

/// A path inside the workbook, written from its top folder: `chapters/ch01-envelope/exercise.rs`.
fn relative(path: &std::path::Path) -> String {
    path.strip_prefix(chapters::workbook_root()).unwrap_or(path).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Exchange, HttpRequest};

    fn exchange(title: &str, expected: &str) -> Exchange {
        Exchange {
            title: title.into(),
            line: 5,
            hint: Some("an id comes back with its JSON type.".into()),
            request: HttpRequest {
                method: "POST".into(),
                path: "/mcp".into(),
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: r#"{"jsonrpc": "2.0", "id": "7", "method": "ping"}"#.into(),
            },
            raw: None,
            expected: HttpResponse {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: expected.into(),
            },
            during: Vec::new(),
            polls: false,
        }
    }

    fn checked<'a>(exchange: &'a Exchange, actual: HttpResponse, panic: Option<Panic>) -> Checked<'a> {
        let (mismatches, notes) = replay::compare_with(&exchange.expected, &actual, Strictness::Learner);
        let outcome = Exchanged::Http(Outcome { exchange, actual: Ok(actual), mismatches, notes });
        Checked { outcome, log: String::new(), panic }
    }

    fn json(status: u16, body: &str) -> HttpResponse {
        HttpResponse { status, headers: vec![("Content-Type".into(), "application/json".into())], body: body.into() }
    }

    #[test]
    fn a_wrong_id_type_shows_side_by_side_with_the_hint() {
        let ex = exchange("A string id comes back as a string", r#"{"jsonrpc":"2.0","id":"7","result":{}}"#);
        let results = [checked(&ex, json(200, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#), None)];
        let text = render(&results, &Target::Exercise);
        assert!(text.starts_with("✗  1. A string id comes back as a string\n"), "{text}");
        assert!(text.contains("You sent (transcript.md line 5):"), "{text}");
        let marked: Vec<&str> = text.lines().filter(|l| l.contains('≠')).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains(r#""id": "7","#) && marked[0].ends_with(r#""id": 7,"#), "{text}");
        assert!(text.contains("Hint: an id comes back with its JSON type."), "{text}");
        let status_row = text.lines().find(|l| l.contains("HTTP/1.1 200 OK")).unwrap();
        assert!(!status_row.contains('≠'), "{text}");
    }

    #[test]
    fn a_todo_is_named_once_then_summarised() {
        let ex = exchange("One", r#"{"jsonrpc":"2.0","id":"7","result":{}}"#);
        let todo = Panic { location: "exercise.rs:54:5".into(), message: "not yet implemented: answer it".into() };
        let empty_500 = || HttpResponse { status: 500, headers: vec![], body: String::new() };
        let results = [checked(&ex, empty_500(), Some(todo.clone())), checked(&ex, empty_500(), Some(todo))];
        let text = render(&results, &Target::Exercise);
        assert!(text.contains("Your server hit a todo!() (HTTP 500): this is the part to write."), "{text}");
        assert!(text.contains("It stopped at exercise.rs:54:5: not yet implemented: answer it"), "{text}");
        assert!(text.contains("✗  2. One\n      the same todo!() again, at exercise.rs:54:5\n"), "{text}");
        let chapter = &chapters::CHAPTERS[0];
        let summary = summary(chapter, &Target::Exercise, &results, &Unchecked::default());
        assert!(summary.contains("0 of 2 exchanges"), "{summary}");
        assert!(summary.contains("2 of them stopped at a todo!()"), "{summary}");
    }

    #[test]
    fn an_empty_500_from_a_url_is_explained_without_stderr() {
        let ex = exchange("One", r#"{"jsonrpc":"2.0","id":"7","result":{}}"#);
        let results = [checked(&ex, HttpResponse { status: 500, headers: vec![], body: String::new() }, None)];
        let text = render(&results, &Target::Url("http://127.0.0.1:8080/mcp".into()));
        assert!(text.contains("Your server answered HTTP 500 with no body"), "{text}");
        assert!(text.contains("(no Content-Type header)"), "{text}");
    }

    /// Chapter 17's operator switches `run_payroll` off and a later exchange calls it:
    /// at a URL, where no operator can act, that call would run the payroll.
    #[test]
    fn a_check_at_a_url_leaves_out_stdio_and_everything_from_the_operators_first_exchange() {
        let chapter = chapters::CHAPTERS.iter().find(|chapter| chapter.number == 17).unwrap();
        let mut transcript = transcript::parse(&fs::read_to_string(chapter.transcript_path()).unwrap()).unwrap();
        let (http, stdio) = (transcript.exchanges.len(), transcript.stdio.len());
        let unchecked = Unchecked::leave_out(&mut transcript);
        assert!(transcript.stdio.is_empty());
        assert_eq!(unchecked.stdio, stdio);
        assert!(unchecked.after_operator > 0);
        assert_eq!(transcript.exchanges.len() + unchecked.after_operator, http);
        assert!(!transcript.exchanges.iter().any(Exchange::needs_operator));
        let url = Target::Url("http://127.0.0.1:8080/mcp".into());
        let summary = summary(chapter, &url, &[], &unchecked);
        let said = format!("The last {} HTTP exchanges were not checked", unchecked.after_operator);
        assert!(summary.replace('\n', " ").contains(&said), "{summary}");
    }

    #[test]
    fn a_reworded_error_message_passes_with_a_note() {
        let ex = exchange("One", r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: x"}}"#);
        let results =
            [checked(&ex, json(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#), None)];
        assert!(all_passed(&results));
        let text = render(&results, &Target::Exercise);
        assert_eq!(text, "✓  1. One  (worded your way: fine)\n");
        let summary = summary(&chapters::CHAPTERS[0], &Target::Exercise, &results, &Unchecked::default());
        assert!(summary.contains("1 of your answers word something differently"), "{summary}");
    }

    #[test]
    fn an_optional_member_passes_and_the_line_says_which() {
        let ex = exchange("One", r#"{"jsonrpc":"2.0","id":"7","result":{"content":[]}}"#);
        let given = r#"{"jsonrpc":"2.0","id":"7","result":{"content":[],"isError":false}}"#;
        let results = [checked(&ex, json(200, given), None)];
        assert!(all_passed(&results));
        let text = render(&results, &Target::Exercise);
        assert_eq!(text, "✓  1. One  (result.isError, an optional member this chapter does not send: fine)\n");
        let summary = summary(&chapters::CHAPTERS[0], &Target::Exercise, &results, &Unchecked::default());
        assert!(summary.contains("1 of your answers carry an optional member"), "{summary}");
    }

    #[test]
    fn a_failure_marks_an_optional_member_apart_and_explains_it() {
        let ex = exchange("One", r#"{"jsonrpc":"2.0","id":"7","result":{"content":[],"structuredContent":{}}}"#);
        let given = r#"{"result":{"isError":false,"content":[],"structuredContent":{}},"id":7,"jsonrpc":"2.0"}"#;
        let results = [checked(&ex, json(200, given), None)];
        let text = render(&results, &Target::Exercise);
        let rows = || text.lines().filter(|l| l.contains('│'));
        let row = |needle: &str| rows().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("{text}"));
        assert!(row(r#""id": "7","#).trim_start().starts_with('≠'), "{text}");
        assert!(row(r#""isError": false"#).trim_start().starts_with('~'), "{text}");
        // The closing line of `structuredContent` gains no comma and no mark.
        assert!(row(r#""structuredContent": {}"#).trim_start().starts_with('"'), "{text}");
        assert!(text.contains("Rows marked ~ differ in a way that does not count"), "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(
                "Note: result.isError is an optional member this chapter does not send (false is what a client \
                 assumes when it is left out). It is valid MCP, and it does not fail this exchange."
            ),
            "{text}"
        );
        // Both sides in the transcript's order: jsonrpc, id, result; content before isError.
        let order: Vec<&str> = text.lines().filter_map(|l| l.split('│').nth(1)).map(str::trim).collect();
        let at = |key: &str| order.iter().position(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key}: {text}"));
        assert!(at("\"jsonrpc\"") < at("\"id\"") && at("\"id\"") < at("\"result\""), "{text}");
        assert!(at("\"content\"") < at("\"isError\""), "{text}");
    }

    #[test]
    fn finds_the_panic_in_a_log() {
        let log = "notification: x\nthread '<unnamed>' panicked at chapters/ch01-envelope/exercise.rs:54:5:\n\
                   not yet implemented: answer it\nnote: run with `RUST_BACKTRACE=1`\n";
        let panic = find_panic(log).unwrap();
        assert_eq!(panic.location, "chapters/ch01-envelope/exercise.rs:54:5");
        assert!(panic.is_todo());
        assert_eq!(find_panic("thread 'x' panicked at a.rs:1:1:\n"), None, "the message has not arrived yet");
    }

    #[test]
    fn failures_are_listed_as_ranges() {
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn long_runs_of_matching_lines_fold() {
        let same = |n: usize| (0..n).map(|i| Row::new(format!("line {i}"), format!("line {i}"), false));
        let mut rows: Vec<Row> = same(10).collect();
        rows.push(Row::new("\"id\": \"7\"", "\"id\": 7", true));
        rows.extend(same(2));
        let folded = fold_matching(rows);
        let lefts: Vec<&str> = folded.iter().map(|row| row.expected.as_str()).collect();
        assert_eq!(lefts, ["⋮ 7 matching lines", "line 7", "line 8", "line 9", "\"id\": \"7\"", "line 0", "line 1"]);
    }

    #[test]
    fn long_lines_wrap_inside_their_column() {
        let rows = [Row::new("a".repeat(10), "b".repeat(200), true)];
        let text = table(&rows);
        assert!(text.lines().count() > 1, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    }
}
