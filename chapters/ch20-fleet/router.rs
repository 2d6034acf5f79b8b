//! The router: every message, from either transport, takes one way through the server.
//! `route` takes a tool call's share first (rate_limit.rs), decides the era once
//! (modern.rs), checks a 2026-07-28 envelope once, and answers each method from the
//! table of its era. Where HTTP and stdio differ, `Via` says how, at that point.
//! `Catalog` is everything the server offers, which `main` builds and hands down.

use serde_json::{Value, json};

use crate::authorization::{Caller, Scopes};
use crate::completion::completion_complete;
use crate::connect::{BANK_BALANCE, call_connect, call_connect_in_session};
use crate::http::{Request, Response, reload_on_sighup};
use crate::input_required::{AskingTool, MISSING_CLIENT_CAPABILITY, call_asking, takes_forms};
use crate::jsonrpc::{Message, RpcError, echo, reply};
use crate::listen::{Listeners, Listening};
use crate::mcp::{ASSUMED_VERSION, ServerInfo, check_protocol_version, for_version, initialize, run_tool};
use crate::modern::{self, check_envelope, complete, discover, is_modern};
use crate::prompts::{Prompt, prompts_get, prompts_list};
use crate::rate_limit::RateLimit;
use crate::resources::{self, Resource, ResourceTemplate, resource_templates_list, resources_list, resources_read};
use crate::sessions::{Session, Sessions, initialize_in_session, open_session, session_not_found, take_answer};
use crate::store::Store;
use crate::streaming::{Calls, Era, LongCall, Server, long_call, notice, progress_token, set_level};
use crate::subscriptions::subscription;
use crate::tasks::{Tasks, declares_tasks, extensions, missing_tasks_extension};
use crate::tools::{Run, Tool, arguments_refused, find_tool, tools_list};
use crate::tools_off::{ToolsOff, tools_list_changed};

// ANCHOR: catalog
/// Everything this server offers, from YOUR TOOLS, YOUR RESOURCES, YOUR PROMPTS and YOUR
/// COMPLETIONS: who it is, and what the methods list, run, read, get and complete; and
/// what it keeps while it runs: the long calls running now, the sessions open, with
/// their subscriptions and streams, the `subscriptions/listen` streams, and the tasks
/// (chapter 19); and where the state every instance shares is kept (chapter 20, the
/// store). `main` builds it once.
pub struct Catalog {
    pub info: ServerInfo,
    /// What the model should know of the server as a whole: `instructions`, if any.
    pub instructions: Option<&'static str>,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// The scopes each tool and each resource needs (chapter 18: `scopes_for`, in main.rs):
    /// the lists show a caller only what its token may call and read.
    pub scopes: Scopes,
    /// The values that fit what a user typed into an argument (`completions`, in main.rs).
    pub completions: fn(&str, &str) -> Vec<String>,
    /// The tool that asks the user before it acts (YOUR TOOLS; input_required.rs).
    pub asking: AskingTool,
    pub calls: Calls,
    pub sessions: Sessions,
    pub listeners: Listeners,
    /// The tools an operator switched off (chapter 17, tools_off.rs).
    pub tools_off: ToolsOff,
    pub tasks: Tasks,
    pub store: Store,
}

impl Catalog {
    /// What of the server a long call reaches while it runs (streaming.rs).
    pub fn server(&'static self) -> Server {
        let (sessions, listeners, store) = (&self.sessions, &self.listeners, &self.store);
        Server { info: &self.info, calls: &self.calls, sessions, listeners, store }
    }

    /// Chapter 20: tell this instance's sessions and listens of every change another
    /// instance makes, as it tells them of its own (`Call::resource_updated`).
    pub fn relay_changes(&'static self) {
        self.store.relay_changes(|uri| {
            self.sessions.resource_updated(uri);
            self.listeners.resource_updated(uri);
        });
        // And of every change of a task another instance runs (tasks.rs).
        self.store.relay_task_changes(|id, task| self.listeners.task_changed(id, task));
    }

    /// Chapter 17: read `--tools-off`'s file now, and again on each SIGHUP (`main` calls
    /// it once the catalog is built). Without the flag SIGHUP keeps its default: a
    /// terminal that hangs up ends the server it started, as before chapter 17.
    pub fn watch_tools_off(&'static self) -> std::io::Result<()> {
        if !self.tools_off.has_file() {
            return Ok(());
        }
        // The handler first: a SIGHUP that comes while the file is first read reloads it
        // again, instead of ending the process.
        reload_on_sighup(|| self.reload_tools_off())?;
        self.reload_tools_off();
        Ok(())
    }

    /// Read `--tools-off`'s file again, and when the tools switched off are not the ones
    /// they were, tell every client listening.
    fn reload_tools_off(&self) {
        let names: Vec<String> = self.tools.iter().map(|tool| tool.name().to_string()).collect();
        if self.tools_off.reload(&names) {
            tools_list_changed(&self.sessions, &self.listeners);
        }
    }

    /// What of the server a `subscriptions/listen` reaches while it is open (listen.rs).
    pub fn listening(&'static self) -> Listening {
        let (resources, templates) = (&self.resources, &self.resource_templates);
        Listening { listeners: &self.listeners, resources, templates, info: &self.info }
    }
}
// ANCHOR_END: catalog

// ANCHOR: route
/// Where a message came from: what the transport knows besides the message.
pub enum Via<'a> {
    /// The body of an HTTP POST, whose headers go with it.
    Http(&'a Request),
    /// A line on stdin. No headers: the session is the process's, once `initialize` has
    /// opened it (chapter 16), and the revision the one `initialize` agreed on.
    Stdio { session: &'a mut Option<String>, version: &'a mut String },
}

impl Via<'_> {
    /// The HTTP request, whose headers a 2026-07-28 envelope is checked against.
    fn request(&self) -> Option<&Request> {
        match self {
            Via::Http(request) => Some(request),
            Via::Stdio { .. } => None,
        }
    }
}

/// What the transport sends back.
pub enum Routed {
    /// A method's answer, in the form the client reads (JSON, or one event).
    Answer(Response),
    /// A response sent as it is: a refusal before any method ran, or `202` for a
    /// message that needs no answer. Over stdio the body goes out as a line, if it has one.
    AsIs(Response),
    /// A call that works in steps: the transport runs it on, and sends what it reports
    /// and its result as they come (streaming.rs). Boxed: it is large, and rare.
    Long(Value, Box<LongCall>),
    /// A `subscriptions/listen`, its envelope checked (chapter 17): the transport keeps
    /// its answer open, and sends each notice on it as it comes (listen.rs).
    Listen(Value, Option<Value>),
}

/// The one way through the server: a message in, from `caller` (chapter 18: who sent it),
/// what goes back out.
pub fn route(message: Message, via: Via, caller: &Caller, catalog: &'static Catalog, rate_limit: &RateLimit) -> Routed {
    // Each tool call takes one from its caller's share, before anything else is done
    // with it: a caller with none left is refused (see `RateLimit`). Over stdio the
    // caller is this process's one host: counted here, not in the fleet's store.
    if let Message::Request { id, method, .. } = &message
        && method == "tools/call"
        && let Err(seconds) = rate_limit.take(&caller.rate_key(), matches!(via, Via::Http(_)))
    {
        return Routed::AsIs(rate_limit.refusal(id.clone(), seconds));
    }
    // A request in the 2026-07-28 envelope is served by that revision's rules.
    if let Message::Request { id, method, params } = &message
        && is_modern(via.request(), method, params.as_ref())
    {
        return route_modern(id.clone(), method, params.as_ref(), via.request(), caller, catalog);
    }
    route_handshake(message, via, caller, catalog)
}

/// A 2026-07-28 request: its envelope checked, its method run, its result marked.
fn route_modern(
    id: Value,
    method: &str,
    params: Option<&Value>,
    request: Option<&Request>,
    caller: &Caller,
    catalog: &'static Catalog,
) -> Routed {
    if let Err(error) = check_envelope(request, method, params) {
        return Routed::Answer(reply(400, id, Err(error)));
    }
    // Chapter 17: a subscription's answer stays open. Chapter 19: one that asks to hear
    // of tasks needs the tasks extension.
    if method == "subscriptions/listen" {
        if params.and_then(|p| p.pointer("/notifications/taskIds")).is_some() && !declares_tasks(params) {
            let error = missing_tasks_extension("listening for task notifications");
            return Routed::Answer(reply(400, id, Err(error)));
        }
        return Routed::Listen(id, catalog.tasks.narrow_listen(params, caller, &catalog.store));
    }
    let outcome = match method {
        "tools/call" => {
            match tools_call(params, Era::Modern, request.and_then(|r| r.header("Host")), None, caller, catalog) {
                Ok(ToolCall::Long(long)) => return Routed::Long(id, long),
                Ok(ToolCall::Done(result)) => Ok(result),
                Err(error) => Err(error),
            }
        }
        // Chapter 19: a task's methods, for a client that declared the extension on this
        // request too, and only on that caller's own tasks (tasks.rs).
        "tasks/get" | "tasks/update" | "tasks/cancel" if !declares_tasks(params) => {
            Err(missing_tasks_extension(method))
        }
        "tasks/get" | "tasks/update" | "tasks/cancel" => catalog.tasks.request(method, params, caller, &catalog.store),
        _ => dispatch_modern(method, params, catalog, caller),
    };
    let cache = cache_hints(method, caller);
    Routed::Answer(match outcome {
        Ok(result) => reply(200, id, Ok(complete(result, &catalog.info, cache))),
        // This revision gives two errors an HTTP status of their own: "no such method"
        // is 404, and a missing client capability MUST be 400 (schema.ts,
        // `MissingRequiredClientCapabilityError`).
        Err(error) if error.code == -32601 => reply(404, id, Err(error)),
        Err(error) if error.code == MISSING_CLIENT_CAPABILITY => reply(400, id, Err(error)),
        Err(error) => reply(200, id, Err(error)),
    })
}

/// A message of the handshake era: over HTTP its revision is checked first; it comes in
/// a session, or none; a request is answered in the revision the client speaks.
fn route_handshake(message: Message, via: Via, caller: &Caller, catalog: &'static Catalog) -> Routed {
    // Before any method runs: a revision this server does not speak is refused.
    if let Via::Http(request) = &via
        && let Err(error) = check_protocol_version(request, message.method())
    {
        return Routed::AsIs(reply(400, message.id(), Err(error)));
    }
    // Chapter 16: the session the message comes in. Over HTTP, the one its
    // `Mcp-Session-Id` names, if it names one; one this server does not know (never
    // opened, ended, or expired) is `404`, and so is one another caller opened (chapter
    // 18); `initialize` opens a new one. Over stdio, the process's.
    let session = match &via {
        Via::Http(request) => match request.header("Mcp-Session-Id") {
            Some(_) if message.method() == Some("initialize") => None,
            Some(id) if catalog.sessions.belongs_to_another(id, caller.identity().as_deref()) => {
                return Routed::AsIs(session_not_found(message.id()));
            }
            Some(id) => match catalog.sessions.find(id) {
                Some(session) => Some(session),
                None => return Routed::AsIs(session_not_found(message.id())),
            },
            None => None,
        },
        Via::Stdio { session, .. } => session.as_deref().and_then(|id| catalog.sessions.find(id)),
    };
    match message {
        // `initialize` opens a session, the caller's (chapter 18): over HTTP its id goes
        // back in a header, over stdio it is the process's from now on.
        Message::Request { id, method, params } if method == "initialize" => {
            let answer = initialize(params.as_ref(), capabilities(), &catalog.info, catalog.instructions);
            let (sessions, owner) = (&catalog.sessions, caller.identity());
            match via {
                Via::Http(_) => Routed::Answer(open_session(id, answer, params.as_ref(), sessions, owner)),
                Via::Stdio { session, version } => {
                    let (result, opened) = initialize_in_session(answer, params.as_ref(), sessions, owner);
                    if let Some(opened) = opened {
                        // Chapter 17: the session's own stream is stdout, open as long as
                        // the process.
                        catalog.sessions.listen_on_stdout(&opened);
                        *session = Some(opened);
                    }
                    if let Ok(agreed) = &result {
                        *version = agreed["protocolVersion"].as_str().unwrap_or(ASSUMED_VERSION).to_string();
                    }
                    Routed::Answer(reply(200, id, result))
                }
            }
        }
        Message::Request { id, method, params } => {
            let session = session.as_ref();
            let host = via.request().and_then(|request| request.header("Host"));
            let result = match method.as_str() {
                "tools/call" => match tools_call(params.as_ref(), Era::Handshake, host, session, caller, catalog) {
                    Ok(ToolCall::Long(long)) => return Routed::Long(id, long),
                    Ok(ToolCall::Done(result)) => Ok(result),
                    Err(error) => Err(error),
                },
                _ => dispatch(&method, params.as_ref(), catalog, session, caller),
            };
            // The revision the client speaks (see `for_version`): over HTTP its header
            // names it; over stdio it is the one `initialize` agreed on.
            let version = match via {
                Via::Http(request) => request.header("MCP-Protocol-Version").unwrap_or(ASSUMED_VERSION),
                Via::Stdio { version, .. } => version,
            };
            Routed::Answer(reply(200, id, result.map(|result| for_version(result, version))))
        }
        // Nobody waits for an answer to these: acknowledge, with no body.
        Message::Notification { method, params } => {
            eprintln!("notification: {:?}", echo(&method));
            notice(&method, params.as_ref(), catalog.server(), session.as_ref());
            Routed::AsIs(Response::empty(202))
        }
        // Chapter 16: the client's answer to a question a call asked, handed to that
        // call. Over HTTP one no call waits for is refused (`take_answer`); over stdio
        // there is no status line to refuse it with: the log says so.
        Message::Response { id, answer } => match (via, id) {
            (Via::Http(_), Some(id)) => Routed::AsIs(take_answer(id, answer, session.as_ref(), &catalog.sessions)),
            // An error with no id names no question to hand it to: taken, and logged.
            (Via::Http(_), None) => {
                eprintln!("an error answering no question it names: {}", echo(&answer["error"].to_string()));
                Routed::AsIs(Response::empty(202))
            }
            (Via::Stdio { .. }, id) => {
                let asked = |id: &Value| session.as_ref().is_some_and(|s| catalog.sessions.answer(&s.id, id, answer));
                if !id.as_ref().is_some_and(asked) {
                    let id = echo(&id.unwrap_or_default().to_string());
                    eprintln!("an answer to no question waiting ({id}): ignored");
                }
                Routed::AsIs(Response::empty(202))
            }
        },
    }
}
// ANCHOR_END: route

// ANCHOR: dispatch
/// The methods of the handshake era, by name, in `session` when the client sent one
/// (chapter 16), from `caller` (chapter 18). (`initialize` opens a session, and
/// `tools/call` may become a long call: each has a way of its own.)
fn dispatch(
    method: &str,
    params: Option<&Value>,
    catalog: &Catalog,
    session: Option<&Session>,
    caller: &Caller,
) -> Result<Value, RpcError> {
    // ANCHOR: may_use
    // Chapter 18: the lists show only the tools the caller's token may call and the
    // resources it may read, so a host never offers what would be refused. A hint, not
    // the lock: `check_scopes` (authorization.rs) still refuses a call of any other.
    let may_use = |name: &str| caller.grants((catalog.scopes.needed_by)(name));
    // ANCHOR_END: may_use
    match method {
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params, &catalog.tools, &catalog.tools_off, may_use),
        "resources/list" => resources_list(params, &catalog.resources, may_use),
        "resources/templates/list" => resource_templates_list(params, &catalog.resource_templates),
        "resources/read" => resources_read(params, &catalog.resources, &catalog.resource_templates),
        "resources/subscribe" | "resources/unsubscribe" => {
            let (resources, templates) = (&catalog.resources, &catalog.resource_templates);
            subscription(method, params, session, &catalog.sessions, resources, templates)
        }
        "prompts/list" => prompts_list(params, &catalog.prompts),
        "prompts/get" => prompts_get(params, &catalog.prompts),
        "completion/complete" => {
            completion_complete(params, &catalog.prompts, &catalog.resource_templates, catalog.completions)
        }
        "logging/setLevel" => set_level(params, &catalog.sessions, session),
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// What a `tools/call` comes to: its result now, or a long call, which the transport
/// runs on after the router has returned (streaming.rs).
enum ToolCall {
    Done(Value),
    Long(Box<LongCall>),
}

/// `tools/call`: find the tool by its name and check its arguments, once; then run a
/// quick tool now, start a tool that works in steps as a long call, and in 2026-07-28
/// let a tool that asks the client ask (input_required.rs), or, in either era, send the
/// user to a URL (connect.rs: `host` is the `Host` an HTTP call came to, which the link
/// names; in the handshake era, chapter 16, only a session's client that declared URL mode).
fn tools_call(
    params: Option<&Value>,
    era: Era,
    host: Option<&str>,
    session: Option<&Session>,
    caller: &Caller,
    catalog: &'static Catalog,
) -> Result<ToolCall, RpcError> {
    let (tool, arguments) = find_tool(params, &catalog.tools, &catalog.tools_off)?;
    if let Some(refused) = arguments_refused(tool, &arguments) {
        return Ok(ToolCall::Done(refused.into_json()));
    }
    // ANCHOR: task_or_call
    // Chapter 19: in 2026-07-28 a tool that works in steps becomes a task, for a client
    // that declared the tasks extension on this request, if there is room for one more
    // (tasks.rs); else it runs as below. A tool that asks needs a client that can answer.
    // A retry that brings the answers to chapter 15's question is not made a task: its
    // round trips end before any task is ("SHOULD resolve all MRTR exchanges
    // _synchronously_ before responding with a `CreateTaskResult`", Task Creation).
    let retry = params.is_some_and(|params| params.get("requestState").is_some());
    if era == Era::Modern
        && declares_tasks(params)
        && !retry
        && let Run::Steps(run) = tool.run
    {
        if tool.name() == catalog.asking.name {
            takes_forms(params.expect("the tool was found by the name they hold"), tool.name())?;
        }
        let long = long_call(tool.name(), run, arguments.clone(), params, era, None)?;
        if let Some(created) = catalog.tasks.create(caller, long, catalog.server()) {
            return Ok(ToolCall::Done(created));
        }
    }
    // ANCHOR_END: task_or_call
    // Chapter 15: in 2026-07-28 a tool that asks the client answers through its own path.
    if era == Era::Modern && tool.name() == catalog.asking.name {
        let (asking, store) = (&catalog.asking, &catalog.store);
        return call_asking(params, asking, caller.identity().as_deref(), store).map(ToolCall::Done);
    }
    if era == Era::Modern && tool.name() == BANK_BALANCE {
        return call_connect(params, host, caller.identity().as_deref(), &catalog.store).map(ToolCall::Done);
    }
    if tool.name() == BANK_BALANCE {
        let asked = call_connect_in_session(
            params,
            host,
            session.map(|s| s.takes_urls),
            caller.identity().as_deref(),
            &catalog.store,
        );
        // Chapter 17: the session that was sent to a URL hears on its stream when the user is done.
        if let (Err(error), Some(session)) = (&asked, session)
            && let Some(elicitation) = error.data.as_ref().and_then(|d| d.pointer("/elicitations/0/elicitationId"))
        {
            catalog.sessions.asked_at_url(&session.id, elicitation.as_str().unwrap_or_default());
        }
        return asked.map(ToolCall::Done);
    }
    match tool.run {
        // Nobody hears how a quick call is going; its progress token must still be one.
        Run::Quick(run) => {
            progress_token(params)?;
            Ok(ToolCall::Done(run_tool(tool.name(), || run(&arguments))?))
        }
        Run::Steps(run) => Ok(ToolCall::Long(Box::new(long_call(tool.name(), run, arguments, params, era, session)?))),
    }
}

/// The methods of the stateless revision. `initialize` and `ping` are gone from it
/// (`2026-07-28/changelog.mdx`); `server/discover` is new; the others are the
/// handshake era's.
fn dispatch_modern(
    method: &str,
    params: Option<&Value>,
    catalog: &Catalog,
    caller: &Caller,
) -> Result<Value, RpcError> {
    match method {
        // ANCHOR: discover
        // Chapter 19: and the extensions it supports, a field 2026-07-28 added (SEP-2133);
        // `initialize`'s capabilities, of 2025-11-25, have none.
        "server/discover" => {
            let mut capabilities = capabilities();
            capabilities["extensions"] = extensions();
            Ok(discover(capabilities, catalog.instructions, &catalog.info))
        }
        // ANCHOR_END: discover
        // A log level is asked for per request now (`2026-07-28/changelog.mdx`), and a
        // client subscribes with `subscriptions/listen` (listen.rs), which "replaces the
        // former `resources/subscribe` RPC and the HTTP GET endpoint"
        // (`2026-07-28/basic/patterns/subscriptions.mdx`).
        "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(RpcError::method_not_found(method))
        }
        // "Resource not found" has a code of its own in each era.
        _ => dispatch(method, params, catalog, None, caller).map_err(resources::for_2026),
    }
}

// ANCHOR: per_caller
/// The lists `dispatch` answers per caller, with authorization (chapter 18).
const PER_CALLER_LISTS: [&str; 2] = ["tools/list", "resources/list"];

/// The caching hints of a 2026-07-28 answer (modern.rs's and resources.rs's), decided
/// here for the lists that depend on who calls. With authorization, `tools/list` and
/// `resources/list` are the caller's own, even for a token that sees everything: a shared
/// cache must not hand one token's list to another. Without it (no token; stdio) every
/// caller gets the same list, and it stays `public`.
fn cache_hints(method: &str, caller: &Caller) -> Option<(u64, &'static str)> {
    let (ttl_ms, scope) = modern::cache_hints(method).or_else(|| resources::cache_hints(method))?;
    let per_caller = caller.has_token() && PER_CALLER_LISTS.contains(&method);
    Some((ttl_ms, if per_caller { "private" } else { scope }))
}
// ANCHOR_END: per_caller

/// What this server can do, as `initialize` and `server/discover` both say it. "I have
/// tools": the client may call `tools/list` and `tools/call`; and resources:
/// `resources/list`, `resources/templates/list`, `resources/read`; and prompts:
/// `prompts/list`, `prompts/get`; and `completion/complete`; and log messages during a
/// call (`notifications/message`, and in the handshake era `logging/setLevel`). Chapter
/// 17: `subscribe`, a client may ask to hear when a resource changes: in a session with
/// `resources/subscribe`, on its session's stream; in 2026-07-28 with
/// `subscriptions/listen`. And `listChanged` for tools: an operator may switch a tool
/// off or on while the server runs (`--tools-off`, tools_off.rs), and every client
/// listening hears it. Said always: it promises a notice whenever the list changes, and
/// a run without the flag, whose list never changes, owes none. The
/// prompts and resources are compiled in: no `listChanged` there (what a resource holds
/// may change, and what a caller is listed differs with its token's scopes).
fn capabilities() -> Value {
    let resources = json!({ "subscribe": true });
    let tools = json!({ "listChanged": true });
    json!({ "tools": tools, "resources": resources, "prompts": {}, "completions": {}, "logging": {} })
}
// ANCHOR_END: dispatch
