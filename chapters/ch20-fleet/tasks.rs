//! Tasks (chapter 19): the tasks extension, `io.modelcontextprotocol/tasks`
//! (`ext-tasks`, `specification/draft/tasks.md`). A client that declares it on a
//! 2026-07-28 `tools/call` may get a task instead of the result: a record with an id,
//! which the client polls (`tasks/get`), answers (`tasks/update`) and cancels
//! (`tasks/cancel`), while the tool works on in a thread of its own. The work outlives
//! its request: the client may close the connection, come back on another, and read the
//! result when it is ready.
//!
//! An extension is off unless both sides declare it: the server in `server/discover`,
//! the client on each request (`2026-07-28/basic/index.mdx`, and the extensions
//! overview). A client that did not declare it gets chapter 14's long call, as before.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::authorization::Caller;
use crate::http;
use crate::input_required::{MISSING_CLIENT_CAPABILITY, now_secs, parse_state_key, random_key, siphash_2_4};
use crate::jsonrpc::RpcError;
use crate::listen::Listeners;
use crate::mcp::lock;
use crate::modern::{CLIENT_CAPABILITIES_KEY, request_meta};
use crate::store::{Store, StoreError};
use crate::streaming::{LongCall, Outlet, Server};

// ANCHOR: negotiation
/// The extension's name, under `capabilities.extensions` on both sides.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// What this server says of its extensions in `server/discover`: tasks, with no
/// settings ("an empty object indicates support", Capability Negotiation).
pub fn extensions() -> Value {
    json!({ TASKS_EXTENSION: {} })
}

/// Whether the client declared the extension on this request, in
/// `_meta["io.modelcontextprotocol/clientCapabilities"].extensions`: "A server MUST NOT
/// return `CreateTaskResult` to a client that did not include the extension capability
/// on its request, regardless of prior declarations".
pub fn declares_tasks(params: Option<&Value>) -> bool {
    // ANCHOR: declared
    request_meta(params)
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|capabilities| capabilities.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
    // ANCHOR_END: declared
}

/// -32021 for a client that uses the extension without declaring it, naming what it
/// must declare (Error Handling: "Servers MUST return this error for non-declaring
/// clients issuing `tasks/get`, `tasks/update`, and `tasks/cancel` requests", and for
/// those "requesting task notifications on `subscriptions/listen`").
pub fn missing_tasks_extension(what: &str) -> RpcError {
    RpcError {
        code: MISSING_CLIENT_CAPABILITY,
        message: format!("Missing required client capability: {what} needs the {TASKS_EXTENSION} extension"),
        data: Some(json!({ "requiredCapabilities": { "extensions": extensions() } })),
    }
}
// ANCHOR_END: negotiation

// ANCHOR: tasks
/// How long a task's record lives from its creation (`ttlMs`). "The server may discard
/// the task after the TTL elapses"; this one does. A task works for at most half of it
/// (five minutes, where a call that holds its request has one): the other half is for
/// reading how it ended.
pub const TASK_TTL: Duration = Duration::from_secs(600);
/// How often a client should poll (`pollIntervalMs`): "Clients SHOULD honor this value
/// to avoid overwhelming the server."
const POLL_INTERVAL_MS: u64 = 1_000;
/// How often a task waiting for an answer looks whether one came, or it should stop.
const ANSWER_CHECK_INTERVAL: Duration = Duration::from_millis(10);
/// The most tasks the server holds at once, whoever created them: each is a record,
/// and while it works a thread. A call past it runs as an ordinary long call.
const MAX_TASKS: usize = 1024;
/// Chapter 20: how often a task's work looks in the store for what another instance was
/// asked for it (an answer, a cancel): one round trip to Redis per task per this, at most.
const STORE_CHECK_INTERVAL: Duration = Duration::from_millis(100);
/// Chapter 20: the most task ids of one `subscriptions/listen` looked up in the store, one
/// round trip each; past them, a task this instance does not hold is left out.
const MAX_LOOKED_UP_ELSEWHERE: usize = 64;

/// The tasks this server holds, by id: working, waiting for an answer, or ended and
/// kept until their time to live is up.
pub struct Tasks {
    held: Mutex<HashMap<String, Task>>,
    /// The key task ids are made with: drawn at random when the server starts.
    key: [u8; 16],
    /// How many tasks were ever created: numbers the next id.
    created: AtomicU64,
    /// The most tasks one caller may hold at once (`--max-tasks-per-caller`).
    max_per_caller: usize,
    /// How long a record lives (`TASK_TTL`, or `--task-ttl-secs` in tests).
    ttl: Duration,
}

/// One task: whose it is, what it is doing, and for how long it is kept.
struct Task {
    /// Who created it: the only caller who may read, answer or cancel it.
    owner: String,
    /// Its status, with what that status carries.
    status: Status,
    /// When it was created and last changed, in seconds since 1970 (ISO 8601 on the wire).
    created_at: u64,
    last_updated_at: u64,
    /// When its record is dropped.
    expires: Instant,
    /// The client asked to cancel it: the work stops at its next check.
    cancel_requested: bool,
    /// How many questions it has asked: numbers the next question's key, so that no key
    /// is ever used twice.
    asked: u64,
    /// The answer to the outstanding question, under its key, once `tasks/update` has
    /// brought it.
    answer: Option<(String, Value)>,
}

/// Whose a task is when the server asks for no token: anyone's who holds its id, which
/// is then a bearer token for the task ("A server MAY use task IDs as bearer tokens for
/// a server's stored state", Security Considerations). With authorization (chapter 18)
/// a task is its caller's (`Caller::identity`: the token's subject and client).
const ANYONE: &str = "anyone";

/// Who holds a task that `caller` creates, and who alone may reach it.
fn owner(caller: &Caller) -> String {
    caller.identity().unwrap_or_else(|| ANYONE.to_string())
}

/// A task's status (Task Status): `working` or `input_required` while it runs; then one
/// of three ends, which never change.
enum Status {
    Working,
    /// Waiting for the answer to one question: its key, and the request the client must
    /// answer (an `elicitation/create`, as chapter 15 asks it).
    InputRequired {
        key: String,
        request: Value,
    },
    /// The tool's result, `isError: true` included: "This includes tool calls that
    /// returned results with `isError: true`."
    Completed(Value),
    /// The JSON-RPC error the call ended with (a tool that panicked, one past its time):
    /// "This status MUST NOT be used for non-JSON-RPC errors."
    Failed(Value),
    Cancelled,
}

impl Status {
    fn ended(&self) -> bool {
        matches!(self, Status::Completed(_) | Status::Failed(_) | Status::Cancelled)
    }
}
// ANCHOR_END: tasks

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct TaskFlags {
    /// The most tasks one caller may hold at once (chapter 19), ended ones included until
    /// they expire. A call past it runs as an ordinary long call. A task at work holds
    /// one of `--max-running-calls` for up to half its time to live: keep this well below
    /// that, so that no one caller can hold them all.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub max_tasks_per_caller: usize,
    /// For tests: how long a task's record lives, in seconds (`TASK_TTL` unless given),
    /// so that a test can see one expire.
    #[arg(long, value_name = "SECS", hide = true)]
    pub task_ttl_secs: Option<u64>,
    /// For tests: the key task ids are made with (32 hex digits), so that a transcript's
    /// ids are exact. Without it, one is drawn at random.
    #[arg(long, value_name = "HEX", value_parser = parse_state_key, hide = true)]
    pub fixed_task_key: Option<[u8; 16]>,
}

impl TaskFlags {
    pub fn tasks(&self) -> Tasks {
        Tasks {
            held: Mutex::new(HashMap::new()),
            key: self.fixed_task_key.unwrap_or_else(random_key),
            created: AtomicU64::new(0),
            max_per_caller: self.max_tasks_per_caller,
            ttl: self.task_ttl_secs.map_or(TASK_TTL, Duration::from_secs),
        }
    }
}

// ANCHOR: create
impl Tasks {
    /// Start `call` as a task of `caller`'s, and answer with the task
    /// (`CreateTaskResult`), or `None` when the caller already holds as many as they may,
    /// the server as many as it can, or as many calls run as may: then the call runs as
    /// an ordinary one ("the server decides on a per-request basis whether to
    /// materialize a task").
    pub fn create(&'static self, caller: &Caller, call: LongCall, server: Server) -> Option<Value> {
        let owner = owner(caller);
        let mut held = lock(&self.held);
        held.retain(|_, task| task.expires > Instant::now());
        // ANCHOR: bound
        let owned = held.values().filter(|task| task.owner == owner).count();
        if owned >= self.max_per_caller || held.len() >= MAX_TASKS {
            return None;
        }
        // ANCHOR_END: bound
        let id = self.new_id();
        let detached = call.detach(&id, server)?;
        let now = now_secs();
        let task = Task {
            owner: owner.clone(),
            status: Status::Working,
            created_at: now,
            last_updated_at: now,
            expires: Instant::now() + self.ttl,
            cancel_requested: false,
            asked: 0,
            answer: None,
        };
        // ANCHOR: record
        // "Servers MUST set `resultType` to `"task"` when returning a `CreateTaskResult`".
        let shown = self.shown(&id, &task);
        let mut created = shown.clone();
        created["resultType"] = json!("task");
        // The record is in place before the answer goes out: "A server MUST NOT return
        // `CreateTaskResult` until the task is durably created — that is, until a
        // `tasks/get` for the returned `taskId` would resolve."
        held.insert(id.clone(), task);
        // ANCHOR_END: record
        drop(held);
        // Chapter 20: and in the store, for every instance, before the answer goes out.
        // A store that does not answer: no task, and the call runs as an ordinary one.
        if let Err(error) = server.store.write_task(&id, &owner, &shown, self.ttl) {
            eprintln!("tasks: a call runs as an ordinary one, for its task could not be stored: {error}");
            lock(&self.held).remove(&id);
            return None;
        }
        let worker_id = id.clone();
        // A drain (SIGTERM: the base) waits for the work, its end recorded, as for a request.
        let work = http::Work::begin();
        let spawned = thread::Builder::new().name("task".into()).spawn(move || {
            let (listeners, store) = (server.listeners, server.store);
            let mut outlet = TaskOutlet {
                tasks: self,
                id: worker_id.clone(),
                listeners,
                store,
                next_look: Instant::now(),
                cancel_heard: false,
            };
            let outcome = detached.run(&mut outlet, self.ttl / 2);
            // Its end is in the store before the work lets a drain go on (chapter 20).
            self.end(&worker_id, outcome, listeners, store);
            drop(work);
        });
        // No thread, no task: its record goes, and the call runs as an ordinary one.
        if spawned.is_err() {
            lock(&self.held).remove(&id);
            return None;
        }
        // A line on stderr, so that a test can see a client's call became a task
        // (tests/interop/run); never the id, which without authorization is the task's key.
        eprintln!("tools/call: answered with a task");
        Some(created)
    }

    /// A new task id: 128 bits of SipHash-2-4, under a key drawn at random when the
    /// server starts, of the task's number. Without the key nobody can compute one, nor
    /// tell the next from the last: "Servers MUST generate them with sufficient entropy
    /// that a third party cannot enumerate or guess them" (Security Considerations).
    fn new_id(&self) -> String {
        let number = self.created.fetch_add(1, Ordering::Relaxed);
        let (high, low) = (format!("task {number} high"), format!("task {number} low"));
        format!("{:016x}{:016x}", siphash_2_4(&self.key, high.as_bytes()), siphash_2_4(&self.key, low.as_bytes()))
    }

    /// The work has ended: its result, its error, or `None`, cancelled. A task that was
    /// asked to stop and stopped is `cancelled`; one that finished first keeps what it
    /// finished with ("MAY ultimately reach a terminal status other than `cancelled` if
    /// the work finished before cancellation could take effect").
    fn end(&self, id: &str, outcome: Option<Result<Value, RpcError>>, listeners: &Listeners, store: &Store) {
        // ANCHOR: ended
        let status = match outcome {
            Some(Ok(result)) => Status::Completed(result),
            Some(Err(error)) => Status::Failed(serde_json::to_value(error).expect("an error is JSON")),
            None => Status::Cancelled,
        };
        // ANCHOR_END: ended
        self.update(id, |task| task.status = status, listeners, store);
    }

    // ANCHOR: notify
    /// Change task `id`'s status, if it is still held; note when, and tell whoever
    /// listens for it (`subscriptions/listen` with `taskIds`): "Each notification carries
    /// a complete `DetailedTask` for the current status, identical to what `tasks/get`
    /// would have returned at that moment." Chapter 20: and write it to the store, which
    /// tells the other instances' listeners.
    fn update(&self, id: &str, change: impl FnOnce(&mut Task), listeners: &Listeners, store: &Store) {
        let changed = lock(&self.held).get_mut(id).map(|task| {
            change(task);
            task.last_updated_at = now_secs();
            (self.shown(id, task), task.owner.clone(), task.expires.saturating_duration_since(Instant::now()))
        });
        // Told once the lock is let go: a slow listener, or store, holds up no task.
        if let Some((task, owner, keep)) = changed {
            if let Err(error) = store.write_task(id, &owner, &task, keep) {
                eprintln!("tasks: a task's change is not in the store, where it stays as it was: {error}");
            }
            listeners.task_changed(id, task);
        }
    }

    /// Chapter 20: write task `id`'s record to the store again, as it is, when the store
    /// has lost it; the other instances' listens hear it once more, unchanged.
    fn write_again(&self, id: &str, store: &Store) {
        let record = lock(&self.held).get(id).map(|task| {
            (self.shown(id, task), task.owner.clone(), task.expires.saturating_duration_since(Instant::now()))
        });
        if let Some((task, owner, keep)) = record
            && let Err(error) = store.write_task(id, &owner, &task, keep)
        {
            eprintln!("tasks: a task's record the store lost is not in it again: {error}");
        }
    }

    /// Chapter 17's `subscriptions/listen`, with the task ids it names narrowed to the
    /// ones `caller` holds that may still change: a task is heard of only by its owner,
    /// and one it does not hold is left out of the acknowledgment as a task that does not
    /// exist would be; so is one that has ended, of which there is nothing more to tell.
    /// Chapter 20: a task another instance holds is looked up in the store, by the same rule.
    pub fn narrow_listen(&self, params: Option<&Value>, caller: &Caller, store: &Store) -> Option<Value> {
        let mut params = params.cloned()?;
        if let Some(ids) = params.pointer_mut("/notifications/taskIds").and_then(Value::as_array_mut) {
            let owner = owner(caller);
            // Each id once: one named 64 times would be looked up in the store 64 times.
            let mut named = std::collections::HashSet::new();
            ids.retain(|id| id.as_str().is_none_or(|id| named.insert(id.to_string())));
            // Which this instance holds, decided under the lock; the others, after it.
            let here: Vec<Option<bool>> = {
                let held = lock(&self.held);
                let holds = |task: &Task| task.owner == owner && !task.status.ended();
                ids.iter().map(|id| id.as_str().and_then(|id| held.get(id)).map(holds)).collect()
            };
            let mut looked_up = 0;
            let kept: Vec<bool> = (here.into_iter().zip(ids.iter()))
                .map(|(here, id)| match (here, id.as_str()) {
                    (Some(holds), _) => holds,
                    (None, None) => true, // not a string: listen.rs refuses the list
                    (None, Some(id)) => {
                        looked_up += 1;
                        looked_up <= MAX_LOOKED_UP_ELSEWHERE && held_elsewhere(id, &owner, store)
                    }
                })
                .collect();
            let mut kept = kept.into_iter();
            ids.retain(|_| kept.next().unwrap_or(false));
        }
        Some(params)
    }
    // ANCHOR_END: notify
}
// ANCHOR_END: create

// ANCHOR: methods
impl Tasks {
    /// `tasks/get`, `tasks/update` and `tasks/cancel`, from `caller`. A task id that is not
    /// held, has expired, or is another caller's is one answer, -32602: the error says
    /// nothing of whether someone else holds it.
    /// Chapter 20: a task this instance does not hold is looked for in the store.
    pub fn request(
        &self,
        method: &str,
        params: Option<&Value>,
        caller: &Caller,
        store: &Store,
    ) -> Result<Value, RpcError> {
        let owner = owner(caller);
        let id = params.and_then(|p| p.get("taskId")).and_then(Value::as_str);
        let id = id.ok_or_else(|| RpcError::invalid_params("`taskId` must be a string"))?;
        let mut held = lock(&self.held);
        held.retain(|_, task| task.expires > Instant::now());
        if !held.contains_key(id) {
            drop(held);
            return request_elsewhere(method, id, params, &owner, store);
        }
        // ANCHOR: owned
        let task = held.get_mut(id).filter(|task| task.owner == owner);
        let task = task.ok_or_else(|| RpcError::invalid_params("Failed to retrieve task: Task not found"))?;
        // ANCHOR_END: owned
        match method {
            // A task, as `tasks/get` answers it, is that method's complete result, which the
            // router marks so: "The `resultType` field MUST be set to `"complete"` on this object".
            "tasks/get" => Ok(self.shown(id, task)),
            "tasks/update" => {
                let responses = params.and_then(|p| p.get("inputResponses")).and_then(Value::as_object);
                let responses =
                    responses.ok_or_else(|| RpcError::invalid_params("`inputResponses` must be an object"))?;
                // ANCHOR: answer_taken
                // Only the answer to the question outstanding is taken: "A server SHOULD
                // ignore any `inputResponses` responses mapped to a key that is not
                // currently outstanding for the task".
                if let Status::InputRequired { key, .. } = &task.status
                    && let Some(answer) = responses.get(key)
                {
                    task.answer = Some((key.clone(), answer.clone()));
                }
                // ANCHOR_END: answer_taken
                Ok(json!({}))
            }
            "tasks/cancel" => {
                // ANCHOR: cancel_requested
                // Cooperative: the work stops at its next check, and the task is then
                // `cancelled`; one that has ended stays as it ended.
                task.cancel_requested |= !task.status.ended();
                // ANCHOR_END: cancel_requested
                Ok(json!({}))
            }
            _ => Err(RpcError::method_not_found(method)),
        }
    }

    /// Over stdio, the host closed stdin: nobody is left to poll, answer or cancel, so
    /// every task still working is asked to stop.
    pub fn cancel_all(&self) {
        lock(&self.held).values_mut().for_each(|task| task.cancel_requested = true);
    }

    /// A task as `tasks/get` and `notifications/tasks` show it (a `DetailedTask`): the
    /// fields every status has, and what its status carries.
    fn shown(&self, id: &str, task: &Task) -> Value {
        let (status, carries) = match &task.status {
            Status::Working => ("working", None),
            Status::InputRequired { key, request } => {
                ("input_required", Some(("inputRequests", json!({ key.as_str(): request }))))
            }
            Status::Completed(result) => ("completed", Some(("result", result.clone()))),
            Status::Failed(error) => ("failed", Some(("error", error.clone()))),
            Status::Cancelled => ("cancelled", None),
        };
        let ttl_ms = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let mut shown = json!({
            "taskId": id,
            "status": status,
            "createdAt": iso_8601(task.created_at),
            "lastUpdatedAt": iso_8601(task.last_updated_at),
            "ttlMs": ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        });
        if let Some((field, value)) = carries {
            shown[field] = value;
        }
        shown
    }
}
// ANCHOR_END: methods

// ANCHOR: elsewhere
/// Chapter 20: `tasks/get`, `tasks/update` and `tasks/cancel` of a task another instance
/// runs (or ran), from its record in the store: the same owner check, the same "Task not
/// found". `tasks/get` answers the record; an answer to the outstanding question, and a
/// cancel of a task not ended, are passed on through the store to the instance that runs
/// it, which looks for them (`TaskOutlet::look_in_store`). A store that does not answer
/// is -32603: the task may exist, so "not found" would be untrue.
fn request_elsewhere(
    method: &str,
    id: &str,
    params: Option<&Value>,
    owner: &str,
    store: &Store,
) -> Result<Value, RpcError> {
    let failed = |what: &str, error: StoreError| {
        eprintln!("tasks: {what}: {error}");
        RpcError::internal_error(&format!("{what}; try again"))
    };
    let record = store.read_task(id).map_err(|error| failed("the task could not be read from the store", error))?;
    let record = record.filter(|record| record.owner == owner);
    let record = record.ok_or_else(|| RpcError::invalid_params("Failed to retrieve task: Task not found"))?;
    let status = record.task.get("status").and_then(Value::as_str).unwrap_or_default();
    match method {
        "tasks/get" => Ok(record.task),
        "tasks/update" => {
            let responses = params.and_then(|p| p.get("inputResponses")).and_then(Value::as_object);
            let responses = responses.ok_or_else(|| RpcError::invalid_params("`inputResponses` must be an object"))?;
            // Only the answer to the question outstanding, as the record shows it.
            let outstanding = record.task.get("inputRequests").and_then(Value::as_object);
            let answered = outstanding.and_then(|asked| asked.keys().find_map(|key| Some((key, responses.get(key)?))));
            if status == "input_required"
                && let Some((key, answer)) = answered
            {
                let passed = store.answer_task(id, key, answer, record.keep);
                passed.map_err(|error| failed("the answer could not be passed on to the task", error))?;
            }
            Ok(json!({}))
        }
        "tasks/cancel" => {
            // One that has ended stays as it ended.
            if matches!(status, "working" | "input_required") {
                let passed = store.cancel_task(id, record.keep);
                passed.map_err(|error| failed("the cancel could not be passed on to the task", error))?;
            }
            Ok(json!({}))
        }
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// Whether task `id`, which this instance does not hold, is `owner`'s in the store and may
/// still change (`narrow_listen`). A store that does not answer: left out, and logged.
fn held_elsewhere(id: &str, owner: &str, store: &Store) -> bool {
    match store.read_task(id) {
        Ok(record) => record.is_some_and(|record| {
            let status = record.task.get("status").and_then(Value::as_str);
            record.owner == owner && matches!(status, Some("working" | "input_required"))
        }),
        Err(error) => {
            eprintln!("tasks: a listen leaves out a task the store did not tell of: {error}");
            false
        }
    }
}
// ANCHOR_END: elsewhere

// ANCHOR: outlet
/// A task's line to the world while it works. It sends nothing: "`notifications/progress`
/// and `notifications/message` ... are not supported on tasks in general in this
/// specification". It is cancelled by `tasks/cancel`, and it asks through the task's
/// record: the question shows in `tasks/get` as `inputRequests`, and the answer comes in
/// `tasks/update`.
struct TaskOutlet {
    tasks: &'static Tasks,
    id: String,
    /// Who listens for the task's changes (chapter 17's `subscriptions/listen`).
    listeners: &'static Listeners,
    /// Chapter 20: where the other instances leave an answer or a cancel for the task,
    /// when next to look there, and whether a cancel was found.
    store: &'static Store,
    next_look: Instant,
    cancel_heard: bool,
}

impl TaskOutlet {
    /// Chapter 20: take what the other instances were asked for this task from the store,
    /// at most once per `STORE_CHECK_INTERVAL`, and never under the tasks' lock. An answer
    /// is kept only if it is to the question outstanding, and no answer came here first.
    fn look_in_store(&mut self) {
        if Instant::now() < self.next_look {
            return;
        }
        self.next_look = Instant::now() + STORE_CHECK_INTERVAL;
        let signals = self.store.task_signals(&self.id);
        self.cancel_heard |= signals.cancel;
        // Redis lost the record (restarted, failed over, evicted it): the other instances
        // would answer "not found" until the task's next change. Write it again now.
        if signals.record_lost {
            self.tasks.write_again(&self.id, self.store);
        }
        if let Some((answered, answer)) = signals.answer
            && let Some(task) = lock(&self.tasks.held).get_mut(&self.id)
            && matches!(&task.status, Status::InputRequired { key, .. } if *key == answered)
            && task.answer.is_none()
        {
            task.answer = Some((answered, answer));
        }
    }
}

impl Outlet for TaskOutlet {
    fn send(&mut self, _message: &Value) {}

    fn cancelled(&mut self) -> bool {
        self.look_in_store();
        self.cancel_heard || lock(&self.tasks.held).get(&self.id).is_none_or(|task| task.cancel_requested)
    }

    fn ask(&mut self, method: &str, params: &Value, deadline: Instant) -> Option<Result<Value, String>> {
        // ANCHOR: new_key
        // A new key for each question: "Each request key in `inputRequests` MUST be unique
        // over the lifetime of a single task."
        let request = json!({ "method": method, "params": params });
        let mut key = String::new();
        let asking = |task: &mut Task| {
            task.asked += 1;
            key = format!("question-{}", task.asked);
            task.status = Status::InputRequired { key: key.clone(), request };
        };
        self.tasks.update(&self.id, asking, self.listeners, self.store);
        // ANCHOR_END: new_key
        let heard = loop {
            // Only an answer to this question: one to an earlier question, come late, is
            // dropped.
            let answer = lock(&self.tasks.held).get_mut(&self.id).and_then(|task| task.answer.take());
            if let Some((answered, answer)) = answer
                && answered == key
            {
                break Ok(answer);
            }
            if self.cancelled() {
                break Err("the task was cancelled".to_string());
            }
            // Chapter 20: nor past a drain's deadline, so that the task's end (the server
            // stopping) is written to the store before the process exits.
            let drain = http::drain_deadline().unwrap_or(deadline);
            if Instant::now() >= deadline.min(drain) {
                break Err("no answer came in time".to_string());
            }
            thread::sleep(ANSWER_CHECK_INTERVAL);
        };
        // Answered: back to work. Not answered: the task stays as it is until its end.
        if heard.is_ok() {
            self.tasks.update(&self.id, |task| task.status = Status::Working, self.listeners, self.store);
        }
        Some(heard)
    }
}
// ANCHOR_END: outlet

/// Seconds since 1970 as an ISO 8601 timestamp in UTC, `2027-01-15T08:00:00Z`: the
/// civil date from the day number (Howard Hinnant's `civil_from_days`).
fn iso_8601(secs: u64) -> String {
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let days = days as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    let (hour, minute, second) = (rest / 3_600, rest % 3_600 / 60, rest % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}
