//! Subscriptions (chapter 17): a client that asks to hear when a resource changes, and
//! the session's own stream the notice travels on (`2025-11-25/server/resources.mdx`,
//! Subscriptions; `2025-11-25/basic/transports.mdx`, Listening for Messages from the
//! Server).
//!
//! A change belongs to no request of the client's: it happens when another client's
//! call runs, or when nobody asked anything. So its notice cannot go on a request's
//! answer. Over HTTP it goes on a stream the client opened for that, with a GET in its
//! session, which stays open until the session ends, the client leaves, or
//! `MAX_STREAM_TIME` passes. Over stdio the session's stream is stdout.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::framing::{allows_event_stream, event, write_line};
use crate::http::{self, BodyWriter, Request, Response};
use crate::jsonrpc::{RpcError, notification, refusal, reply};
use crate::mcp::lock;
use crate::resources::{Resource, ResourceTemplate, find_resource, resource_uri};
use crate::sessions::{Session, SessionStream, Sessions, session_not_found};

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct StreamFlags {
    /// Streams open at once, of each kind (a GET in a session, where it hears of the
    /// resources it subscribed to; a `subscriptions/listen`); one more is 503. Each holds
    /// a thread and a connection while it is open, `MAX_STREAM_TIME` at most: keep it well
    /// below `--max-connections`, so that streams cannot take every connection.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_streams: usize,
    /// For tests: the most resources one session (or one listen) may subscribe to at once
    /// (`MAX_SUBSCRIPTIONS` unless given), so that a test can reach it with the few
    /// resources this server offers.
    #[arg(long, value_name = "N", default_value_t = MAX_SUBSCRIPTIONS, hide = true)]
    pub max_subscriptions: usize,
}

// ANCHOR: subscriptions
/// The most resources one session may subscribe to at once, unless `--max-subscriptions`
/// (for tests) says otherwise.
pub const MAX_SUBSCRIPTIONS: usize = 16;

/// The longest a session's stream stays open. Then it ends, and the client opens
/// another ("The server MAY close the SSE stream at any time"). Each GET is a request
/// in the session, so a client that listens keeps its session alive.
pub const MAX_STREAM_TIME: Duration = Duration::from_secs(5 * 60);

/// How often a stream with nothing to send looks whether its client has gone.
const LISTEN_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Messages waiting for a stream to send them; one more is dropped, and its client
/// misses it. A client that does not read cannot make the server hold more.
pub const STREAM_BACKLOG: usize = 16;

/// Why `resources/subscribe` needs a session: said in the error.
const NEEDS_A_SESSION_TO_SUBSCRIBE: &str = "a subscription lives in a session: `initialize` opens one (over HTTP, send its `Mcp-Session-Id` with this request)";

/// Why a session's stream does not open.
enum NoStream {
    /// No session has this id.
    Unknown,
    /// The session has its stream open already.
    AlreadyOpen,
    /// `max_streams` streams are open.
    Busy,
}

impl Sessions {
    /// Subscribe a session to `uri` (again is fine: a session hears of a change once).
    fn subscribe(&self, id: &str, uri: &str) -> Result<(), RpcError> {
        let mut open = lock(&self.open);
        let Some(entry) = open.get_mut(id) else { return Ok(()) }; // it ended meanwhile
        let max = self.max_subscriptions;
        if !entry.subscribed.contains(uri) && entry.subscribed.len() >= max {
            return Err(RpcError::internal_error(&format!(
                "this session is subscribed to {max} resources, the most it may be; unsubscribe from one first"
            )));
        }
        entry.subscribed.insert(uri.to_string());
        Ok(())
    }

    fn unsubscribe(&self, id: &str, uri: &str) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            entry.subscribed.remove(uri);
        }
    }

    /// Open session `id`'s stream over HTTP: its number, and where its messages arrive.
    /// One per session: "The server MUST send each of its JSON-RPC messages on only one
    /// of the connected streams" (Multiple Connections), so a second would only wait.
    fn listen(&self, id: &str) -> Result<(u64, mpsc::Receiver<Value>), NoStream> {
        let mut open = lock(&self.open);
        let streams = open.values().filter(|entry| matches!(entry.stream, Some(SessionStream::Http { .. }))).count();
        // A GET is a request in the session: `find`'s rule, an expired session is unknown.
        let entry = self.entry_in_use(&mut open, id).ok_or(NoStream::Unknown)?;
        if entry.stream.is_some() {
            return Err(NoStream::AlreadyOpen);
        }
        if streams >= self.max_streams {
            return Err(NoStream::Busy);
        }
        entry.streams += 1;
        let (messages, receiver) = mpsc::sync_channel(STREAM_BACKLOG);
        entry.stream = Some(SessionStream::Http { number: entry.streams, messages });
        Ok((entry.streams, receiver))
    }

    /// Over stdio: session `id`'s stream is stdout.
    pub fn listen_on_stdout(&self, id: &str) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            entry.stream = Some(SessionStream::Stdout);
        }
    }

    /// Stream `number` of session `id` has ended: the session may open another.
    fn stop_listening(&self, id: &str, number: u64) {
        if let Some(entry) = lock(&self.open).get_mut(id)
            && matches!(entry.stream, Some(SessionStream::Http { number: open, .. }) if open == number)
        {
            entry.stream = None;
            // In use until now: its idle time starts here.
            entry.last_used = Instant::now();
        }
    }

    /// `uri` has changed: `notifications/resources/updated` to every session subscribed
    /// to it, on its stream (a tool's `Call::resource_updated`, streaming.rs, calls it).
    /// A session with no stream open, or whose stream has a full backlog, misses it:
    /// nothing is kept for later.
    pub fn resource_updated(&self, uri: &str) {
        let message = notification("notifications/resources/updated", json!({ "uri": uri }));
        let mut to_stdout = false;
        for entry in lock(&self.open).values().filter(|entry| entry.subscribed.contains(uri)) {
            match &entry.stream {
                Some(SessionStream::Http { messages, .. }) => {
                    let _ = messages.try_send(message.clone());
                }
                Some(SessionStream::Stdout) => to_stdout = true,
                None => {}
            }
        }
        // Written once the lock is let go: a host slow to read stdout holds no session.
        if to_stdout {
            let _ = write_line(message.to_string().as_bytes());
        }
    }
}
// ANCHOR_END: subscriptions

// ANCHOR: subscribe
/// `resources/subscribe` and `resources/unsubscribe`, in the session the request names:
/// the URI must name a resource, as for `resources/read` (else -32002, "Resource not
/// found"); the answer is `{}`. Outside a session there is nowhere to keep the
/// subscription, nor a stream to send its notices on: -32600, the request is not valid
/// where it was sent.
pub fn subscription(
    method: &str,
    params: Option<&Value>,
    session: Option<&Session>,
    sessions: &Sessions,
    resources: &[Resource],
    templates: &[ResourceTemplate],
) -> Result<Value, RpcError> {
    let session = session.ok_or_else(|| RpcError::invalid_request(NEEDS_A_SESSION_TO_SUBSCRIBE))?;
    let uri = resource_uri(params)?;
    if find_resource(uri, resources, templates).is_none() {
        return Err(RpcError::resource_not_found(uri));
    }
    if method == "resources/subscribe" {
        sessions.subscribe(&session.id, uri)?;
    } else {
        sessions.unsubscribe(&session.id, uri);
    }
    Ok(json!({}))
}
// ANCHOR_END: subscribe

// ANCHOR: open_stream
/// GET: open the session's own stream, an event stream of the messages that answer no
/// request (here, `notifications/resources/updated`). It runs on the connection's
/// thread (`Response::stream`), holding no worker, until the session ends, the client
/// leaves, or `lasts` passes (`MAX_STREAM_TIME`, or less: chapter 18 ends a stream when
/// the token it was opened with expires).
pub fn open_stream(request: &Request, sessions: &'static Sessions, lasts: Duration) -> Response {
    // A stream is a session's: a GET in none is a request that needs a session id and
    // lacks one, `400`, by analogy with the spec's answer to "requests without an
    // `MCP-Session-Id` header" from servers that require one (Session Management), and as
    // the official SDKs answer (a workbook choice: this server requires a session only
    // here). Not `405`: its `Allow` would have to list GET, which this endpoint serves,
    // and contradict it.
    let Some(id) = request.header("Mcp-Session-Id") else {
        return refusal(400, "Bad Request: GET opens a session's own stream; send its `Mcp-Session-Id`");
    };
    if !allows_event_stream(request.header("Accept")) {
        let error = RpcError::invalid_request("`Accept` must allow text/event-stream: a session's stream is one");
        return reply(406, Value::Null, Err(error));
    }
    let (number, messages) = match sessions.listen(id) {
        Ok(listening) => listening,
        Err(NoStream::Unknown) => return session_not_found(Value::Null),
        Err(NoStream::AlreadyOpen) => {
            let error = RpcError::invalid_request("this session's stream is open already: a session has one");
            return reply(409, Value::Null, Err(error));
        }
        Err(NoStream::Busy) => {
            let max = sessions.max_streams;
            let error = RpcError::internal_error(&format!("as many session streams are open as may ({max})"));
            return reply(503, Value::Null, Err(error));
        }
    };
    let id = id.to_string();
    Response::stream(200, "text/event-stream", move |writer| {
        // However it ends (the session ended: DELETE, or made room), the session may
        // open another.
        relay(writer, &messages, lasts);
        sessions.stop_listening(&id, number);
    })
    .with_header("X-Accel-Buffering", "no")
}

/// How a stream's relay ended.
#[derive(PartialEq)]
pub enum Relayed {
    /// Its time passed, or the server is stopping (a drain, the base's `draining`):
    /// the stream ends as at its time, a listen with its result.
    TimeUp,
    /// The client has gone.
    ClientGone,
    /// Nothing can arrive any more: what fed it has ended.
    SourceGone,
}

impl Relayed {
    pub fn time_up(&self) -> bool {
        *self == Relayed::TimeUp
    }
}

/// Send each message that arrives as an event, at once, until the client goes, the
/// messages stop for good, or `lasts` passes: the session's stream, and a
/// `subscriptions/listen` answer (listen.rs), end alike.
pub fn relay(writer: &mut BodyWriter, messages: &mpsc::Receiver<Value>, lasts: Duration) -> Relayed {
    let until = Instant::now() + lasts;
    while let Some(left) = until.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) {
        if http::draining() {
            break; // a stream waits for what may never come: it ends now, not at the deadline
        }
        match messages.recv_timeout(left.min(LISTEN_CHECK_INTERVAL)) {
            Ok(message) => {
                if writer.send(&event(message.to_string().as_bytes())).is_err() {
                    return Relayed::ClientGone;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Relayed::SourceGone,
            Err(mpsc::RecvTimeoutError::Timeout) if writer.client_gone() => return Relayed::ClientGone,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    Relayed::TimeUp
}
// ANCHOR_END: open_stream
