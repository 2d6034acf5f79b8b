//! `subscriptions/listen` (chapter 17, 2026-07-28): the same notices as the session's
//! stream, for a client without a session (`2026-07-28/basic/patterns/subscriptions.mdx`).
//!
//! A 2026-07-28 client has no session and no GET: it asks to hear of changes with one
//! long request, `subscriptions/listen`, whose answer stays open. The answer says first
//! what the server will send (the acknowledgment), then carries each notice as it
//! happens, every message tagged with the request's id; it ends when the client leaves
//! (closes the stream over HTTP, `notifications/cancelled` over stdio), or when the
//! server ends it, with a result that says it ended on purpose. Who hears of a change,
//! and how a stream relays it, is the session's stream's rule (subscriptions.rs).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::framing::{Format, allows_event_stream, event, write_line};
use crate::http::Response;
use crate::jsonrpc::{RpcError, notification, reply};
use crate::mcp::{ServerInfo, lock};
use crate::modern::complete;
use crate::resources::{Resource, ResourceTemplate, find_resource};
use crate::subscriptions::{STREAM_BACKLOG, relay};

/// The method of the notice a changed tool list sends (the same in both revisions).
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

// ANCHOR: listeners
/// The `_meta` key every message of a subscription carries: the id of the
/// `subscriptions/listen` request that opened it.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// What a subscription reaches of the server, handed down from the catalog: the
/// subscriptions open, the resources it may name, and who the server is (the result
/// that ends a subscription says so).
#[derive(Clone, Copy)]
pub struct Listening {
    pub listeners: &'static Listeners,
    pub resources: &'static [Resource],
    pub templates: &'static [ResourceTemplate],
    pub info: &'static ServerInfo,
}

/// The subscriptions open now: at most `max` over HTTP (`--max-streams`).
pub struct Listeners {
    open: Mutex<Vec<Listener>>,
    max: usize,
    /// How many were ever opened: numbers the next one, so that two clients' requests
    /// with the same id stay apart.
    opened: AtomicU64,
    /// The most URIs one subscription may name (`--max-subscriptions`).
    max_uris: usize,
}

/// One open subscription.
struct Listener {
    number: u64,
    /// Its request's id: the `subscriptionId` of every message it gets.
    id: Value,
    /// What it hears of.
    heard: Heard,
    outlet: ListenOutlet,
}

/// What a subscription hears of: the tool list's changes, if it asked (chapter 17,
/// tools_off.rs), the resources it asked for that this server has, and (chapter 19)
/// the tasks it asked for that its caller holds.
struct Heard {
    tools: bool,
    uris: BTreeSet<String>,
    tasks: BTreeSet<String>,
}

impl Heard {
    fn is_empty(&self) -> bool {
        !self.tools && self.uris.is_empty() && self.tasks.is_empty()
    }
}

/// Where a subscription's messages go.
enum ListenOutlet {
    /// The answer to its POST, an event stream: the channel its writer reads.
    Http(mpsc::SyncSender<Value>),
    /// stdout, among every other line of the process.
    Stdout,
}

impl Listeners {
    pub fn new(max: usize, max_uris: usize) -> Listeners {
        Listeners { open: Mutex::new(Vec::new()), max, opened: AtomicU64::new(0), max_uris }
    }

    /// `uri` has changed: `notifications/resources/updated`, tagged with its id, to every
    /// subscription that asked for it (a tool's `Call::resource_updated`, streaming.rs,
    /// calls it). As on the session's stream: nobody waits for a
    /// slow client, and a full backlog misses the notice.
    pub fn resource_updated(&self, uri: &str) {
        self.tell(|heard| heard.uris.contains(uri), "notifications/resources/updated", json!({ "uri": uri }));
    }

    /// Chapter 19: task `id` has changed, and is now `task` (what `tasks/get` would
    /// answer): `notifications/tasks`, tagged, to every subscription that named it.
    pub fn task_changed(&self, id: &str, task: Value) {
        self.tell(|heard| heard.tasks.contains(id), "notifications/tasks", task);
    }

    /// The tool list has changed (tools_off.rs): `notifications/tools/list_changed`,
    /// tagged, to every subscription that asked for `toolsListChanged`.
    pub fn tools_list_changed(&self) {
        self.tell(|heard| heard.tools, TOOLS_LIST_CHANGED, json!({}));
    }

    /// Send `method` with `params`, tagged, to every subscription that hears of it.
    fn tell(&self, hears: impl Fn(&Heard) -> bool, method: &str, params: Value) {
        let mut to_stdout = Vec::new();
        for listener in lock(&self.open).iter().filter(|listener| hears(&listener.heard)) {
            let message = tagged(method, params.clone(), &listener.id);
            match &listener.outlet {
                ListenOutlet::Http(messages) => {
                    let _ = messages.try_send(message);
                }
                ListenOutlet::Stdout => to_stdout.push(message),
            }
        }
        // Written once the lock is let go: a host slow to read stdout holds no one up.
        for message in to_stdout {
            let _ = write_line(message.to_string().as_bytes());
        }
    }

    /// Over stdio, `notifications/cancelled` for `id`: the subscription ends, with no
    /// answer ("Not send a response for the cancelled request",
    /// `2026-07-28/basic/patterns/cancellation.mdx`). `false`: none has that id.
    pub fn cancel(&self, id: &Value) -> bool {
        let mut open = lock(&self.open);
        let before = open.len();
        open.retain(|listener| !(matches!(listener.outlet, ListenOutlet::Stdout) && listener.id == *id));
        open.len() < before
    }

    /// Over stdio, the host closed stdin: each subscription still open ends on the
    /// server's side, with its result.
    pub fn close_on_stdout(&self, info: &ServerInfo) {
        let mut open = lock(&self.open);
        for listener in open.iter().filter(|listener| matches!(listener.outlet, ListenOutlet::Stdout)) {
            let _ = write_line(&closed(&listener.id, info));
        }
        open.retain(|listener| !matches!(listener.outlet, ListenOutlet::Stdout));
    }

    /// Subscription `number` has ended.
    fn remove(&self, number: u64) {
        lock(&self.open).retain(|listener| listener.number != number);
    }
}
// ANCHOR_END: listeners

// ANCHOR: filter
/// What the server honours of a `subscriptions/listen` request's `notifications`
/// filter: `toolsListChanged`, when it asks for it (an operator may switch a tool off
/// or on, tools_off.rs), and the resources it names that this server has. The prompts
/// and resources are compiled in, so a request for `promptsListChanged` or
/// `resourcesListChanged` is left out of the acknowledgment: "Notification types the
/// server does not support are omitted". A URI that names no resource is left out too:
/// nothing will ever change there. A filter that is not what the schema says (not an
/// object, a flag that is not a boolean, URIs that are not a list of strings, more of
/// them than `max_uris`) is invalid params. Chapter 19: and the tasks it names, which the
/// router has already narrowed to its caller's own (tasks.rs).
fn honoured(params: Option<&Value>, listening: Listening) -> Result<Heard, RpcError> {
    let Some(filter) = params.and_then(|p| p.get("notifications")).and_then(Value::as_object) else {
        return Err(RpcError::invalid_params("`notifications` must be an object: the notifications to listen for"));
    };
    for flag in ["toolsListChanged", "promptsListChanged", "resourcesListChanged"] {
        if filter.get(flag).is_some_and(|value| !value.is_boolean()) {
            return Err(RpcError::invalid_params(&format!("`notifications.{flag}` must be a boolean")));
        }
    }
    let uris = match filter.get("resourceSubscriptions") {
        None => Vec::new(),
        Some(Value::Array(uris)) if uris.iter().all(Value::is_string) => {
            uris.iter().filter_map(Value::as_str).collect()
        }
        Some(_) => {
            return Err(RpcError::invalid_params("`notifications.resourceSubscriptions` must be a list of URIs"));
        }
    };
    let max = listening.listeners.max_uris;
    if uris.len() > max {
        return Err(RpcError::invalid_params(&format!("a subscription may name at most {max} resources")));
    }
    let exists = |uri: &&str| find_resource(uri, listening.resources, listening.templates).is_some();
    let uris = uris.into_iter().filter(exists).map(str::to_string).collect();
    let tasks = match filter.get("taskIds") {
        None => BTreeSet::new(),
        Some(Value::Array(ids)) if ids.len() <= max && ids.iter().all(Value::is_string) => {
            ids.iter().filter_map(Value::as_str).map(str::to_string).collect()
        }
        Some(_) => {
            let detail = format!("`notifications.taskIds` must be a list of at most {max} task ids");
            return Err(RpcError::invalid_params(&detail));
        }
    };
    let tools = filter.get("toolsListChanged") == Some(&Value::Bool(true));
    Ok(Heard { tools, uris, tasks })
}

/// The acknowledgment: the first message of every subscription, with what it will hear.
fn acknowledgment(id: &Value, heard: &Heard) -> Value {
    let mut notifications = Map::new();
    if heard.tools {
        notifications.insert("toolsListChanged".into(), json!(true));
    }
    if !heard.uris.is_empty() {
        notifications.insert("resourceSubscriptions".into(), json!(heard.uris));
    }
    if !heard.tasks.is_empty() {
        notifications.insert("taskIds".into(), json!(heard.tasks));
    }
    tagged("notifications/subscriptions/acknowledged", json!({ "notifications": notifications }), id)
}

/// A notification of subscription `id`: its params' `_meta` names it.
fn tagged(method: &str, mut params: Value, id: &Value) -> Value {
    params["_meta"] = json!({ SUBSCRIPTION_ID_KEY: id });
    notification(method, params)
}

/// The answer that ends subscription `id` on the server's side ("Graceful Closure"): a
/// complete result, tagged like every message of the stream.
fn closed(id: &Value, info: &ServerInfo) -> Vec<u8> {
    let mut result = complete(json!({}), info, None);
    result["_meta"][SUBSCRIPTION_ID_KEY] = id.clone();
    reply(200, id.clone(), Ok(result)).body
}
// ANCHOR_END: filter

// ANCHOR: listen_http
/// `subscriptions/listen` over HTTP, its envelope checked: the answer is an event stream
/// that stays open, the acknowledgment first. A subscription that honours nothing ends at
/// once, with its result: it could never hear anything, and would hold a thread and a
/// connection for nothing. Otherwise it ends when the client closes the stream (which
/// cancels it, and gets nothing more) or when `lasts` passes (with its result):
/// `MAX_STREAM_TIME`, or less when the caller's token expires sooner (chapter 18).
pub fn listen_over_http(
    id: Value,
    params: Option<&Value>,
    accept: Option<&str>,
    format: Format,
    listening: Listening,
    lasts: Duration,
) -> Response {
    if !allows_event_stream(accept) {
        let error = RpcError::invalid_request("`Accept` must allow text/event-stream: a subscription's answer is one");
        return reply(406, id, Err(error));
    }
    let heard = match honoured(params, listening) {
        Ok(heard) => heard,
        Err(error) => return format.wrap(reply(200, id, Err(error))),
    };
    let listeners = listening.listeners;
    let (sender, messages) = mpsc::sync_channel(STREAM_BACKLOG);
    let honours_nothing = heard.is_empty();
    let (number, acknowledgment) = {
        let mut open = lock(&listeners.open);
        let streams = open.iter().filter(|listener| matches!(listener.outlet, ListenOutlet::Http(_))).count();
        if !honours_nothing && streams >= listeners.max {
            let max = listeners.max;
            let error = RpcError::internal_error(&format!("as many subscription streams are open as may ({max})"));
            return format.wrap(reply(503, id, Err(error)));
        }
        let number = listeners.opened.fetch_add(1, Ordering::SeqCst);
        let acknowledgment = acknowledgment(&id, &heard);
        if !honours_nothing {
            open.push(Listener { number, id: id.clone(), heard, outlet: ListenOutlet::Http(sender) });
        }
        (number, acknowledgment)
    };
    Response::stream(200, "text/event-stream", move |writer| {
        // First, before any notice the channel may hold already ("MUST NOT send any
        // notification on the subscription before it").
        let acknowledged = writer.send(&event(acknowledgment.to_string().as_bytes())).is_ok();
        // Its sender is in the list while the subscription is open: `Disconnected` never
        // comes, and the stream ends by time, by the client, or by a drain.
        if acknowledged && (honours_nothing || relay(writer, &messages, lasts).time_up()) {
            let _ = writer.send(&event(&closed(&id, listening.info)));
        }
        listeners.remove(number);
    })
    .with_header("X-Accel-Buffering", "no")
}
// ANCHOR_END: listen_http

// ANCHOR: listen_stdio
/// `subscriptions/listen` over stdio, its envelope checked: the acknowledgment is a line
/// now, and each notice a line when it happens, among the other lines of the process;
/// the client tells them apart by `subscriptionId`. So two open subscriptions may not
/// share an id (-32600). `None`: no more to write now.
pub fn listen_on_stdio(id: Value, params: Option<&Value>, listening: Listening) -> Option<Vec<u8>> {
    let heard = match honoured(params, listening) {
        Ok(heard) => heard,
        Err(error) => return Some(reply(200, id, Err(error)).body),
    };
    let listeners = listening.listeners;
    let mut open = lock(&listeners.open);
    if open.iter().any(|listener| listener.id == id) {
        let error = RpcError::invalid_request("a subscription with this id is open already: its messages would mix");
        return Some(reply(200, id, Err(error)).body);
    }
    // Written while the list is locked: a notice for it, written once a change has
    // read the list, comes after its acknowledgment.
    let _ = write_line(acknowledgment(&id, &heard).to_string().as_bytes());
    if heard.is_empty() {
        return Some(closed(&id, listening.info));
    }
    let number = listeners.opened.fetch_add(1, Ordering::SeqCst);
    open.push(Listener { number, id, heard, outlet: ListenOutlet::Stdout });
    None
}
// ANCHOR_END: listen_stdio
