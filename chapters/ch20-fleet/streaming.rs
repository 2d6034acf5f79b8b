//! Long calls (chapter 14): a tool that works in steps gets a `Call`, its line to the
//! client while it works: progress, log messages, and whether to stop. Over HTTP those
//! notifications travel as server-sent events before the result; over stdio, as lines.
//! A call stops when its client cancels it or its deadline passes, and at most
//! `--max-running-calls` run at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::framing::{Format, event, write_line};
use crate::http::{self, BodyWriter, Response};
use crate::jsonrpc::{RpcError, echo, notification, reply};
use crate::listen::Listeners;
use crate::mcp::{DEFAULT_LOG_LEVEL, Level, ServerInfo, ToolResult, lock, run_tool};
use crate::modern::{LOG_LEVEL_KEY, complete, request_meta};
use crate::sessions::{AskPermit, NEEDS_A_HANDSHAKE, NEEDS_A_SESSION, NEEDS_AN_EVENT_STREAM, Session, Sessions};
use crate::store::Store;

// ANCHOR: call
/// The longest a long call may run. Past it, `wait` says stop, `progress` and `log`
/// send nothing, and the client gets an error instead of a result: a tool that checks
/// cannot hold a thread and a connection forever. A step that blocks between checks
/// (a query, a read from a socket) needs a timeout of its own.
pub const MAX_CALL_TIME: Duration = Duration::from_secs(60);

/// How often a call that waits looks whether it should stop.
const STOP_CHECK_INTERVAL: Duration = Duration::from_millis(10);

/// What of the server a long call reaches while it runs, handed down from the catalog
/// (`Catalog::server`): who the server is (its log messages and its result say so), the
/// calls running now, among which it takes a place, the sessions, in one of which it
/// may ask its client (chapter 16), and everyone who hears of a resource it changes:
/// the sessions subscribed, and the `subscriptions/listen` streams (chapter 17).
#[derive(Clone, Copy)]
pub struct Server {
    pub info: &'static ServerInfo,
    pub calls: &'static Calls,
    pub sessions: &'static Sessions,
    pub listeners: &'static Listeners,
    /// Chapter 20: where the other instances hear of a change.
    pub store: &'static Store,
}

/// A long call's line to its client while the tool works: progress and log messages,
/// sent only when the client asked for them, and whether to stop. (A quick tool never
/// sees one.)
pub struct Call<'a> {
    /// Where the notifications go: an event stream, or stdout.
    outlet: &'a mut dyn Outlet,
    /// `params._meta.progressToken`: progress goes out only when the client gave one.
    progress_token: Option<Value>,
    /// The least severe log messages the client wants; `None`: no log messages at all.
    log_level: Option<Level>,
    /// The progress sent last: each one must be larger.
    last_progress: Option<u64>,
    /// When the call must end, whatever the tool does.
    deadline: Instant,
    /// What of the server it reaches: its messages are logged in the server's name, and
    /// who subscribed hears of what it changes (chapter 17).
    server: Server,
    /// Where the tool may ask its client a question, or why it may not (chapter 16,
    /// [`Call::ask`]).
    asking: AskPermit,
    /// Chapter 19: the tool has seen that its client cancelled it, and stopped: a task
    /// that ends so is `cancelled`; one that finished first keeps its result.
    saw_cancel: bool,
}

impl<'a> Call<'a> {
    fn new(outlet: &'a mut dyn Outlet, long: &LongCall, server: Server) -> Call<'a> {
        let deadline = Instant::now() + MAX_CALL_TIME;
        let (progress_token, log_level) = (long.progress_token.clone(), long.log_level);
        let asking = Err(NEEDS_A_SESSION);
        Call { outlet, progress_token, log_level, last_progress: None, deadline, server, asking, saw_cancel: false }
    }

    /// Report that `done` of `total` steps are done, and how it goes in words
    /// (`2025-11-25/basic/utilities/progress.mdx`). Only to a client that gave a progress
    /// token, and only forward: "The `progress` value MUST increase with each
    /// notification", so a value no larger than the last one is not sent.
    pub fn progress(&mut self, done: u64, total: u64, message: &str) {
        let Some(token) = self.progress_token.clone() else { return };
        if self.last_progress.is_some_and(|last| done <= last) || self.stopped() {
            return;
        }
        self.last_progress = Some(done);
        let params = json!({ "progressToken": token, "progress": done, "total": total, "message": message });
        self.outlet.send(&notification("notifications/progress", params));
    }

    /// Log a message for the client (`2025-11-25/server/utilities/logging.mdx`): only
    /// when it is at or above the level the client wants. `data` is any JSON; it must
    /// hold no secret and nothing that identifies a person (Security).
    pub fn log(&mut self, level: Level, data: Value) {
        if self.log_level.is_none_or(|wanted| level < wanted) || self.stopped() {
            return;
        }
        let params = json!({ "level": level, "logger": self.server.info.name, "data": data });
        self.outlet.send(&notification("notifications/message", params));
    }

    /// Take `duration` (the time a step of work takes), or less when the call is to
    /// stop. `false`: stop now, the client will not read what comes next.
    pub fn wait(&mut self, duration: Duration) -> bool {
        let until = Instant::now() + duration;
        loop {
            if self.stopped() {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            thread::sleep(left.min(STOP_CHECK_INTERVAL));
        }
    }

    /// Whether the tool should stop: the client cancelled the call, or time ran out.
    fn stopped(&mut self) -> bool {
        self.saw_cancel |= self.outlet.cancelled();
        self.timed_out() || self.saw_cancel
    }

    /// Whether the call's time is up: its own, or the server's, when a drain (SIGTERM,
    /// the base's `drain_deadline`) ends sooner.
    fn timed_out(&self) -> bool {
        let drain = http::drain_deadline().unwrap_or(self.deadline);
        Instant::now() >= self.deadline.min(drain)
    }

    /// The error a call whose time is up ends with.
    fn time_up(&self) -> RpcError {
        match http::drain_deadline() {
            Some(drain) if drain < self.deadline => {
                RpcError::internal_error("the server is stopping, and the call did not end in time")
            }
            _ => {
                let seconds = MAX_CALL_TIME.as_secs();
                RpcError::internal_error(&format!("the call took longer than {seconds} s, and was stopped"))
            }
        }
    }
}

/// Where a call's notifications go, and how it learns that it is cancelled.
pub trait Outlet {
    /// Send one notification to the client now.
    fn send(&mut self, message: &Value);
    /// Whether the client has cancelled the call.
    fn cancelled(&mut self) -> bool;
    /// Chapter 19: ask the client `method` by a way of the outlet's own, and wait until
    /// `deadline` for the answer (a task asks through its record, tasks.rs). `None`: the
    /// outlet has no way of its own, and the call asks in its session ([`Call::ask`]).
    fn ask(&mut self, _method: &str, _params: &Value, _deadline: Instant) -> Option<Result<Value, String>> {
        None
    }
}
// ANCHOR_END: call

// ANCHOR: ask
impl Call<'_> {
    /// Ask the client a question mid-call and wait for its answer (chapter 16): `method`
    /// is a request a client answers (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`), sent on the call's event stream, if the session may be asked it
    /// (`Session::may_be_asked`); the answer comes back in a POST in the same session
    /// (`take_answer`, sessions.rs). `Ok`: its `result`. `Err`: why there is none, for
    /// the model.
    pub fn ask(&mut self, method: &str, params: Value) -> Result<Value, String> {
        // Chapter 19: a task asks through its own record, whatever its session. No
        // answer means it was cancelled or ran out of time: the call sees which.
        if let Some(heard) = self.outlet.ask(method, &params, self.deadline) {
            if heard.is_err() {
                self.stopped();
            }
            return heard;
        }
        let (sessions, session) = self.asking.clone()?;
        session.may_be_asked(method)?;
        let (question, answer) = sessions.expect_answer(&session.id).ok_or("the session has ended")?;
        self.outlet.send(&json!({ "jsonrpc": "2.0", "id": question, "method": method, "params": params }));
        let heard = loop {
            match answer.recv_timeout(STOP_CHECK_INTERVAL) {
                Ok(answer) => break Ok(answer),
                Err(mpsc::RecvTimeoutError::Disconnected) => break Err("the session ended before the client answered"),
                Err(mpsc::RecvTimeoutError::Timeout) if self.timed_out() => break Err("no answer came in time"),
                Err(mpsc::RecvTimeoutError::Timeout) if self.stopped() => break Err("the call was cancelled"),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        };
        sessions.forget(&session.id, &question);
        if let Err(why) = heard {
            // The server is the sender of this request, and gives up on it: it says so, so
            // that the client can close its form ("the sender SHOULD issue a cancellation
            // notification for that request", `2025-11-25/basic/lifecycle.mdx`, Timeouts).
            // On the call's stream, even a cancelled one's: a notification, not a response.
            let params = json!({ "requestId": question, "reason": why });
            self.outlet.send(&notification("notifications/cancelled", params));
        }
        let answer = heard?;
        // A client that could not ask (its user closed the window, say) answers with a
        // JSON-RPC error instead of a result.
        answer.get("result").cloned().ok_or_else(|| {
            let why = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("no reason given");
            format!("the client could not ask: {}", echo(why))
        })
    }
}
// ANCHOR_END: ask

// ANCHOR: resource_updated
impl Call<'_> {
    /// Tell whoever subscribed to `uri` that what it holds has changed (chapter 17). Any
    /// tool that changes a resource calls it, once the change is made. Both eras hear: a
    /// session subscribed to it (subscriptions.rs), and a `subscriptions/listen` that
    /// named it (listen.rs). Chapter 20: and every other instance, through the store,
    /// which tells its own the same (`Catalog::relay_changes`, router.rs).
    pub fn resource_updated(&mut self, uri: &str) {
        self.server.sessions.resource_updated(uri);
        self.server.listeners.resource_updated(uri);
        self.server.store.publish(uri);
    }
}
// ANCHOR_END: resource_updated

// ANCHOR: long_call
/// Which era a request belongs to: they cancel and log differently.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Era {
    Handshake,
    Modern,
}

/// A `tools/call` of a tool that works in steps, ready to run: everything that could
/// be wrong with it without running it has been checked.
pub struct LongCall {
    /// The tool: its name, and its function.
    name: &'static str,
    run: fn(&Map<String, Value>, &mut Call) -> ToolResult,
    arguments: Map<String, Value>,
    progress_token: Option<Value>,
    log_level: Option<Level>,
    era: Era,
    /// The session the call runs in (chapter 16): where it may ask its client.
    session: Option<Session>,
}

/// The long call a `tools/call` of a tool that works in steps starts, once the router
/// has found the tool and checked its arguments: `Err` for what is still wrong with it,
/// which is answered at once, before anything is streamed.
pub fn long_call(
    name: &'static str,
    run: fn(&Map<String, Value>, &mut Call) -> ToolResult,
    arguments: Map<String, Value>,
    params: Option<&Value>,
    era: Era,
    session: Option<&Session>,
) -> Result<LongCall, RpcError> {
    let progress_token = progress_token(params)?;
    let log_level = match era {
        // Per request, and none unless asked for: "The server MUST NOT emit
        // `notifications/message` for a request that does not include this field"
        // (`2026-07-28/server/utilities/logging.mdx`). `check_envelope` read it already.
        Era::Modern => request_meta(params).and_then(|meta| meta.get(LOG_LEVEL_KEY)).and_then(Level::named),
        // The level the client set in its session (chapter 16), else the default.
        Era::Handshake => Some(session.map_or(DEFAULT_LOG_LEVEL, |session| session.level)),
    };
    Ok(LongCall { name, run, arguments, progress_token, log_level, era, session: session.cloned() })
}

/// `params._meta.progressToken`, when the client wants progress: "a string or integer
/// value" (`2025-11-25/basic/utilities/progress.mdx`); anything else is invalid params.
pub fn progress_token(params: Option<&Value>) -> Result<Option<Value>, RpcError> {
    match request_meta(params).and_then(|meta| meta.get("progressToken")) {
        None => Ok(None),
        Some(token) if token.is_string() || token.is_i64() || token.is_u64() => Ok(Some(token.clone())),
        Some(_) => Err(RpcError::invalid_params("`_meta.progressToken` must be a string or an integer")),
    }
}

/// Answer a long call over HTTP. It runs after the handler has returned, on the
/// connection's own thread (`Response::stream`), so it holds no worker's turn while it
/// works. When it has something to report (a progress token, or log messages) and
/// `Accept` allows it (`streams`), the answer is an event stream: each notification an
/// event as it happens, the result last (`2025-11-25/basic/transports.mdx`, Sending
/// Messages to the Server). Otherwise it is the one JSON answer, sent when the call
/// ends, unless the client reads only event streams (`format`).
pub fn answer_long_call(id: Value, long: LongCall, format: Format, streams: bool, server: Server) -> Response {
    // A `notifications/cancelled` names its call by the id alone, and an id is unique
    // only "by the requestor within the same session" (`2025-11-25/basic/index.mdx`).
    // Over HTTP outside a session nothing says which client sent a notice, so none may
    // stop a call there; a notice in a session stops that session's call (chapter 16;
    // only the handshake era has sessions). In 2026-07-28, over HTTP, the client
    // closing the stream cancels the call (`2026-07-28/basic/transports/streamable-http.mdx`,
    // Cancellation).
    let by_notice = long.session.is_some();
    let closing_cancels = long.era == Era::Modern;
    let session_id = long.session.as_ref().map(|session| session.id.clone());
    let Some(running) = server.calls.start(&id, by_notice, session_id) else {
        return reply(503, id, Err(RpcError::busy(server.calls.max))).with_header("Retry-After", "1");
    };
    let events = answers_with_events(&long, format, streams);
    let content_type = if events { "text/event-stream" } else { "application/json" };
    // Chapter 16: a question travels on the event stream, to a client in a session.
    let asking = match &long.session {
        Some(session) if events => Ok((server.sessions, session.clone())),
        Some(_) => Err(NEEDS_AN_EVENT_STREAM),
        None => Err(NEEDS_A_SESSION),
    };
    let answer_to = id.clone();
    Response::stream(200, content_type, move |writer| {
        let mut outlet = ResponseBody { writer, events, running: &running, closing_cancels };
        match finish_long_call(id, &long, &mut outlet, server, asking) {
            Some(answer) => outlet.finish(&answer),
            // Chapter 16: a notice in a session stopped a call whose answer was to be one
            // JSON object. A `200` with `application/json` is on its way already, and the
            // transport promises "one JSON object" in it (`2025-11-25/basic/transports.mdx`,
            // Sending Messages to the Server): an error, not an empty body. An event stream
            // may end without a response, and a client that closed reads nothing.
            None if !events && !closing_cancels => {
                let cancelled = RpcError::internal_error("the call was cancelled, as the client asked");
                outlet.finish(&reply(200, answer_to, Err(cancelled)).body);
            }
            None => eprintln!("a call was cancelled: no result sent"),
        }
    })
    // Proxies such as nginx hold a body back until it is complete, unless told not
    // to (`2026-07-28/basic/transports/streamable-http.mdx`, Receiving Messages).
    .with_header("X-Accel-Buffering", "no")
}

/// Whether a long call is answered as an event stream: when `Accept` allows one and
/// the call has something to report before its result (a progress token, or a log
/// level); and always for a client that reads nothing else (`Format::EventStream`).
fn answers_with_events(long: &LongCall, format: Format, streams: bool) -> bool {
    let reports = long.progress_token.is_some() || long.log_level.is_some();
    (streams && reports) || format == Format::EventStream
}

/// A long call's outlet over HTTP: the body of its answer.
struct ResponseBody<'a, 'b> {
    writer: &'a mut BodyWriter<'b>,
    /// Whether the body is an event stream; a JSON answer carries no notifications.
    events: bool,
    running: &'a Running,
    /// 2026-07-28: a client that closes the stream cancels the call. In the handshake
    /// era it does not (see `ResponseBody::cancelled`).
    closing_cancels: bool,
}

impl Outlet for ResponseBody<'_, '_> {
    fn send(&mut self, message: &Value) {
        if self.events {
            // A client that has gone reads nothing: what it missed is lost.
            let _ = self.writer.send(&event(message.to_string().as_bytes()));
        }
    }

    /// "Disconnection SHOULD NOT be interpreted as the client cancelling its request"
    /// in the handshake era (`2025-11-25/basic/transports.mdx`, Sending Messages to the
    /// Server): such a call runs on to its end (its deadline at most), for a tool may
    /// have effects its client counts on. In 2026-07-28 "The server MUST treat a
    /// client disconnect as cancellation" (`2026-07-28/basic/patterns/cancellation.mdx`).
    fn cancelled(&mut self) -> bool {
        if self.closing_cancels && self.writer.client_gone() {
            self.running.cancel();
        }
        self.running.is_cancelled()
    }
}

impl ResponseBody<'_, '_> {
    /// Send the call's response: the last event, or the whole JSON body.
    fn finish(&mut self, response: &[u8]) {
        let body = if self.events { event(response) } else { response.to_vec() };
        let _ = self.writer.send(&body);
    }
}

/// Run a long call to its end, and give the JSON-RPC response to send: `None` when it
/// was cancelled, which gets no response at all ("Not send a response for the
/// cancelled request", `2025-11-25/basic/utilities/cancellation.mdx`).
fn finish_long_call(
    id: Value,
    long: &LongCall,
    outlet: &mut dyn Outlet,
    server: Server,
    asking: AskPermit,
) -> Option<Vec<u8>> {
    let mut call = Call::new(outlet, long, server);
    call.asking = asking;
    let result = run_tool(long.name, || (long.run)(&long.arguments, &mut call));
    if call.outlet.cancelled() {
        return None;
    }
    let outcome = if call.timed_out() { Err(call.time_up()) } else { result };
    let outcome = match long.era {
        Era::Modern => outcome.map(|result| complete(result, server.info, None)),
        Era::Handshake => outcome,
    };
    Some(reply(200, id, outcome).body)
}

/// Start a long call on stdio, on a thread of its own that writes its lines as they
/// come: `None`, no line now. On stdio a call is cancelled by a
/// `notifications/cancelled`, in either era: "there is no per-request stream to close"
/// (`2026-07-28/basic/transports/stdio.mdx`, Cancellation).
pub fn start_long_call_on_stdio(id: Value, long: LongCall, server: Server) -> Option<Vec<u8>> {
    let session_id = long.session.as_ref().map(|session| session.id.clone());
    let Some(running) = server.calls.start(&id, true, session_id) else {
        return Some(reply(503, id, Err(RpcError::busy(server.calls.max))).body);
    };
    // Chapter 16: a question is one more line on stdout, in the process's session.
    let asking = match &long.session {
        Some(session) => Ok((server.sessions, session.clone())),
        None => Err(NEEDS_A_HANDSHAKE),
    };
    let answer_to = id.clone();
    let spawned = thread::Builder::new().name("call".into()).spawn(move || {
        let mut outlet = StdoutLines { running: &running };
        if let Some(answer) = finish_long_call(id, &long, &mut outlet, server, asking) {
            let _ = write_line(&answer);
        }
    });
    match spawned {
        Ok(_) => None,
        Err(_) => Some(reply(503, answer_to, Err(RpcError::busy(server.calls.max))).body),
    }
}

/// A long call's outlet on stdio: lines on stdout, among the other answers.
struct StdoutLines<'a> {
    running: &'a Running,
}

impl Outlet for StdoutLines<'_> {
    fn send(&mut self, message: &Value) {
        let _ = write_line(message.to_string().as_bytes());
    }

    fn cancelled(&mut self) -> bool {
        self.running.is_cancelled()
    }
}
// ANCHOR_END: long_call

// ANCHOR: detached
/// Chapter 19: a long call that goes on after its request has been answered (a task,
/// tasks.rs), with its place among the running calls: the `--max-running-calls` bound
/// holds for tasks too, for each holds a thread while it works.
pub struct Detached {
    long: LongCall,
    /// Its place, given back when it ends. No notice stops it (`by_notice` is false):
    /// "The `notifications/cancelled` notification MUST NOT be used for task
    /// cancellation" (the tasks extension, Task Cancellation).
    _running: Running,
    server: Server,
}

impl LongCall {
    /// Take a place among the running calls for this call, to run it later, apart from
    /// any request: `None` when as many calls run as may.
    pub fn detach(self, id: &str, server: Server) -> Option<Detached> {
        let running = server.calls.start(&json!(id), false, None)?;
        Some(Detached { long: self, _running: running, server })
    }
}

impl Detached {
    /// Run the call to its end, on `outlet`, for at most `time`: its result, the error
    /// it ended with, or `None` when it stopped because it was cancelled. A cancel that
    /// came after the work was done stops nothing, and the result stands.
    pub fn run(self, outlet: &mut dyn Outlet, time: Duration) -> Option<Result<Value, RpcError>> {
        let mut call = Call::new(outlet, &self.long, self.server);
        call.deadline = Instant::now() + time;
        let result = run_tool(self.long.name, || (self.long.run)(&self.long.arguments, &mut call));
        if call.saw_cancel {
            return None;
        }
        if call.timed_out() {
            // Stopped by a drain, the server's error; else the task's own time was up.
            if http::drain_deadline().is_some_and(|drain| drain < call.deadline) {
                return Some(Err(call.time_up()));
            }
            let seconds = time.as_secs();
            return Some(Err(RpcError::internal_error(&format!(
                "the task took longer than {seconds} s, and was stopped"
            ))));
        }
        Some(result)
    }
}
// ANCHOR_END: detached

// ANCHOR: calls
/// The long calls running now: at most `max`, each with the flag that cancels it.
pub struct Calls {
    running: Mutex<Vec<Entry>>,
    max: usize,
}

/// One running call: the request's id, and whether a `notifications/cancelled` may
/// stop it: a call over stdio, whose one client is the sender of every notice, and a
/// call in a session; not a call over HTTP outside one, where nothing says whose a
/// notice is (`answer_long_call`).
struct Entry {
    id: Value,
    cancelled: Arc<AtomicBool>,
    by_notice: bool,
    /// The session it runs in (chapter 16): only a notice in that session stops it.
    session: Option<String>,
}

/// A long call's place among the running ones, given back when it is dropped.
struct Running {
    calls: &'static Calls,
    cancelled: Arc<AtomicBool>,
}

impl Calls {
    pub fn new(max: usize) -> Calls {
        Calls { running: Mutex::new(Vec::new()), max }
    }

    /// A place for the call with this id, or `None` when `max` calls are running.
    fn start(&'static self, id: &Value, by_notice: bool, session: Option<String>) -> Option<Running> {
        let mut running = lock(&self.running);
        if running.len() >= self.max {
            return None;
        }
        let cancelled = Arc::new(AtomicBool::new(false));
        running.push(Entry { id: id.clone(), cancelled: cancelled.clone(), by_notice, session });
        Some(Running { calls: self, cancelled })
    }

    /// Cancel the running call with this id in this session that a notice may stop,
    /// if exactly one has it: ids are unique within a session, and a client that used
    /// one twice cannot say which it means.
    fn cancel(&self, id: &Value, session: Option<&str>) -> bool {
        let running = lock(&self.running);
        let mut matching =
            running.iter().filter(|entry| entry.by_notice && entry.id == *id && entry.session.as_deref() == session);
        match (matching.next(), matching.next()) {
            (Some(entry), None) => {
                entry.cancelled.store(true, Ordering::SeqCst);
                true
            }
            _ => false,
        }
    }

    /// Wait until no call runs, or `deadline`.
    pub fn wait_for_all(&self, deadline: Instant) {
        while !lock(&self.running).is_empty() && Instant::now() < deadline {
            thread::sleep(STOP_CHECK_INTERVAL);
        }
    }
}

impl Running {
    fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.calls.running).retain(|entry| !Arc::ptr_eq(&entry.cancelled, &self.cancelled));
    }
}

/// A notification the server acts on: `notifications/cancelled` stops the running
/// call it names (`2025-11-25/basic/utilities/cancellation.mdx`). One that names no
/// running call (it may have just ended), or is malformed, is ignored: "Invalid
/// cancellation notifications SHOULD be ignored" (Error Handling).
pub fn notice(method: &str, params: Option<&Value>, server: Server, session: Option<&Session>) {
    // Chapter 16: the handshake is done, and the session's calls may ask its client.
    if method == "notifications/initialized"
        && let Some(session) = session
    {
        server.sessions.initialized(&session.id);
    }
    if method != "notifications/cancelled" {
        return;
    }
    let id = params.and_then(|p| p.get("requestId")).filter(|id| id.is_string() || id.is_i64() || id.is_u64());
    let Some(id) = id else { return };
    let reason = params.and_then(|p| p.get("reason")).and_then(Value::as_str).unwrap_or("no reason given");
    let what = if server.calls.cancel(id, session.map(|session| session.id.as_str())) {
        "stopping it"
    } else if server.listeners.cancel(id) {
        // Chapter 17: over stdio a subscription (listen.rs) ends this way.
        "ending that subscription"
    } else {
        "no call it may stop; ignored"
    };
    eprintln!("cancellation of request {} ({}): {what}", echo(&id.to_string()), echo(reason));
}

/// `logging/setLevel`: the least severe log messages the client wants. It lasts for the
/// client's session (chapter 16). Outside one it would last nowhere (over HTTP each POST
/// outside a session stands alone, chapter 2), and a `{}` would promise what the server
/// does not do: "The server should send all logs at this level and higher"
/// (`SetLevelRequestParams`). So it is refused there, as a subscription is (chapter
/// 17): -32600, the request is not valid where it was sent, with where a level can be
/// set. A level that is not one of the eight is invalid params
/// (`2025-11-25/server/utilities/logging.mdx`, Error Handling); any other is `{}`.
pub fn set_level(params: Option<&Value>, sessions: &Sessions, session: Option<&Session>) -> Result<Value, RpcError> {
    let session = session.ok_or_else(|| RpcError::invalid_request(NEEDS_A_SESSION_FOR_A_LEVEL))?;
    let level = params
        .and_then(|p| p.get("level"))
        .and_then(Level::named)
        .ok_or_else(|| RpcError::invalid_params(&format!("`level` must be one of {}", Level::NAMES.join(", "))))?;
    sessions.set_level(&session.id, level);
    Ok(json!({}))
}

/// Why `logging/setLevel` needs a session, and where else a level can be set: said in
/// the error.
const NEEDS_A_SESSION_FOR_A_LEVEL: &str = "a log level lasts for a session: `initialize` opens one (over HTTP, send its \
    `Mcp-Session-Id` with this request). A 2026-07-28 request carries its own, in `_meta` \
    (`io.modelcontextprotocol/logLevel`)";
// ANCHOR_END: calls
