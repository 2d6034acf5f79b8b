//! The router: every message, from either transport, takes one way through the server.
//! `route` takes a tool call's share first (rate_limit.rs), decides the era once
//! (modern.rs), checks a 2026-07-28 envelope once, and answers each method from the
//! table of its era. Where HTTP and stdio differ, `Via` says how, at that point.
//! `Catalog` is everything the server offers, which `main` builds and hands down.

use serde_json::{Value, json};

use crate::completion::completion_complete;
use crate::connect::{BANK_BALANCE, call_connect};
use crate::http::{Request, Response};
use crate::input_required::{MISSING_CLIENT_CAPABILITY, asks_client, call_asking};
use crate::jsonrpc::{Message, RpcError, echo, reply};
use crate::mcp::{ASSUMED_VERSION, ServerInfo, check_protocol_version, for_version, initialize, run_tool};
use crate::modern::{self, check_envelope, complete, discover, is_modern};
use crate::prompts::{Prompt, prompts_get, prompts_list};
use crate::rate_limit::{RateLimit, STDIO_CALLER, caller};
use crate::resources::{self, Resource, ResourceTemplate, resource_templates_list, resources_list, resources_read};
use crate::streaming::{Calls, Era, LongCall, Server, long_call, notice, progress_token, set_level};
use crate::tools::{Run, Tool, arguments_refused, find_tool, tools_list};

// ANCHOR: catalog
/// Everything this server offers, from YOUR TOOLS, YOUR RESOURCES, YOUR PROMPTS and YOUR
/// COMPLETIONS: who it is, and what the methods list, run, read, get and complete; and
/// the long calls running now. `main` builds it once.
pub struct Catalog {
    pub info: ServerInfo,
    /// What the model should know of the server as a whole: `instructions`, if any.
    pub instructions: Option<&'static str>,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
    pub prompts: Vec<Prompt>,
    /// The values that fit what a user typed into an argument (`completions`, in main.rs).
    pub completions: fn(&str, &str) -> Vec<String>,
    pub calls: Calls,
}

impl Catalog {
    /// What of the server a long call reaches while it runs (streaming.rs).
    pub fn server(&'static self) -> Server {
        Server { info: &self.info, calls: &self.calls }
    }
}
// ANCHOR_END: catalog

// ANCHOR: route
/// Where a message came from: what the transport knows besides the message.
pub enum Via<'a> {
    /// The body of an HTTP POST, whose headers go with it.
    Http(&'a Request),
    /// A line on stdin. No headers: the revision is the one `initialize` agreed on.
    Stdio { version: &'a mut String },
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
}

/// The one way through the server: a message in, what goes back out.
pub fn route(message: Message, via: Via, catalog: &'static Catalog, rate_limit: &RateLimit) -> Routed {
    // Each tool call takes one from its caller's share, before anything else is done
    // with it: a caller with none left is refused (see `RateLimit`).
    if let Message::Request { id, method, .. } = &message
        && method == "tools/call"
    {
        let caller = match &via {
            Via::Http(request) => caller(request),
            Via::Stdio { .. } => STDIO_CALLER.to_string(),
        };
        if !rate_limit.take(&caller) {
            return Routed::AsIs(rate_limit.refusal(id.clone()));
        }
    }
    // A request in the 2026-07-28 envelope is served by that revision's rules.
    if let Message::Request { id, method, params } = &message
        && is_modern(via.request(), method, params.as_ref())
    {
        return route_modern(id.clone(), method, params.as_ref(), via.request(), catalog);
    }
    route_handshake(message, via, catalog)
}

/// A 2026-07-28 request: its envelope checked, its method run, its result marked.
fn route_modern(
    id: Value,
    method: &str,
    params: Option<&Value>,
    request: Option<&Request>,
    catalog: &'static Catalog,
) -> Routed {
    if let Err(error) = check_envelope(request, method, params) {
        return Routed::Answer(reply(400, id, Err(error)));
    }
    let outcome = match method {
        "tools/call" => match tools_call(params, Era::Modern, request.and_then(|r| r.header("Host")), catalog) {
            Ok(ToolCall::Long(long)) => return Routed::Long(id, long),
            Ok(ToolCall::Done(result)) => Ok(result),
            Err(error) => Err(error),
        },
        _ => dispatch_modern(method, params, catalog),
    };
    let cache = modern::cache_hints(method).or_else(|| resources::cache_hints(method));
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

/// A message of the handshake era: over HTTP its revision is checked first; a request
/// is answered in the revision the client speaks.
fn route_handshake(message: Message, via: Via, catalog: &'static Catalog) -> Routed {
    // Before any method runs: a revision this server does not speak is refused.
    if let Via::Http(request) = &via
        && let Err(error) = check_protocol_version(request, message.method())
    {
        return Routed::AsIs(reply(400, message.id(), Err(error)));
    }
    match message {
        Message::Request { id, method, params } => {
            let result = match method.as_str() {
                "tools/call" => match tools_call(params.as_ref(), Era::Handshake, None, catalog) {
                    Ok(ToolCall::Long(long)) => return Routed::Long(id, long),
                    Ok(ToolCall::Done(result)) => Ok(result),
                    Err(error) => Err(error),
                },
                _ => dispatch(&method, params.as_ref(), catalog),
            };
            // The revision the client speaks (see `for_version`): over HTTP its header
            // names it; over stdio it is the one `initialize` agreed on.
            let version = match via {
                Via::Http(request) => request.header("MCP-Protocol-Version").unwrap_or(ASSUMED_VERSION).to_string(),
                Via::Stdio { version } => {
                    if method == "initialize"
                        && let Ok(agreed) = &result
                    {
                        *version = agreed["protocolVersion"].as_str().unwrap_or(ASSUMED_VERSION).to_string();
                    }
                    version.clone()
                }
            };
            Routed::Answer(reply(200, id, result.map(|result| for_version(result, &version))))
        }
        // Nobody waits for an answer to these: acknowledge, with no body.
        Message::Notification { method, params } => {
            eprintln!("notification: {:?}", echo(&method));
            notice(&method, params.as_ref(), &catalog.calls);
            Routed::AsIs(Response::empty(202))
        }
        Message::Response => Routed::AsIs(Response::empty(202)),
    }
}
// ANCHOR_END: route

// ANCHOR: dispatch
/// The methods of the handshake era, by name. (`tools/call` has a way of its own: its
/// answer may be a long call.)
fn dispatch(method: &str, params: Option<&Value>, catalog: &Catalog) -> Result<Value, RpcError> {
    match method {
        "initialize" => {
            initialize(params, capabilities(catalog.calls.remembers_level), &catalog.info, catalog.instructions)
        }
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params, &catalog.tools),
        "resources/list" => resources_list(params, &catalog.resources),
        "resources/templates/list" => resource_templates_list(params, &catalog.resource_templates),
        "resources/read" => resources_read(params, &catalog.resources, &catalog.resource_templates),
        "prompts/list" => prompts_list(params, &catalog.prompts),
        "prompts/get" => prompts_get(params, &catalog.prompts),
        "completion/complete" => {
            completion_complete(params, &catalog.prompts, &catalog.resource_templates, catalog.completions)
        }
        "logging/setLevel" => set_level(params, &catalog.calls),
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
/// let a tool that asks the client ask (input_required.rs), or send the user to a URL
/// (connect.rs: `host` is the `Host` an HTTP call came to, which the link names).
fn tools_call(
    params: Option<&Value>,
    era: Era,
    host: Option<&str>,
    catalog: &'static Catalog,
) -> Result<ToolCall, RpcError> {
    let (tool, arguments) = find_tool(params, &catalog.tools)?;
    if let Some(refused) = arguments_refused(tool, &arguments) {
        return Ok(ToolCall::Done(refused.into_json()));
    }
    // Chapter 15: in 2026-07-28 a tool that asks the client answers through its own path.
    if era == Era::Modern && asks_client(tool.name()) {
        return call_asking(params).map(ToolCall::Done);
    }
    if era == Era::Modern && tool.name() == BANK_BALANCE {
        return call_connect(params, host).map(ToolCall::Done);
    }
    match tool.run {
        // Nobody hears how a quick call is going; its progress token must still be one.
        Run::Quick(run) => {
            progress_token(params)?;
            Ok(ToolCall::Done(run_tool(tool.name(), || run(&arguments))?))
        }
        Run::Steps(run) => {
            Ok(ToolCall::Long(Box::new(long_call(tool.name(), run, arguments, params, era, &catalog.calls)?)))
        }
    }
}

/// The methods of the stateless revision. `initialize` and `ping` are gone from it
/// (`2026-07-28/changelog.mdx`); `server/discover` is new; the others are the
/// handshake era's.
fn dispatch_modern(method: &str, params: Option<&Value>, catalog: &Catalog) -> Result<Value, RpcError> {
    match method {
        "server/discover" => Ok(discover(capabilities(true), catalog.instructions, &catalog.info)),
        // A log level is asked for per request now (`2026-07-28/changelog.mdx`).
        "initialize" | "ping" | "logging/setLevel" => Err(RpcError::method_not_found(method)),
        // "Resource not found" has a code of its own in each era.
        _ => dispatch(method, params, catalog).map_err(resources::for_2026),
    }
}

/// What this server can do, as `initialize` and `server/discover` both say it. "I have
/// tools": the client may call `tools/list` and `tools/call`; and resources:
/// `resources/list`, `resources/templates/list`, `resources/read`; and prompts:
/// `prompts/list`, `prompts/get`; and `completion/complete`. No `listChanged`: they
/// never change while the server runs; no `subscribe`: a stateless server has nowhere
/// to send a notice that a resource changed. And log messages during a call
/// (`notifications/message`), where a client can ask for them (`logging`): in
/// 2026-07-28 a request asks in its own `_meta`; in the handshake era only where the
/// level a client sets with `logging/setLevel` can last, over stdio. A client that sees
/// `logging` sets a level (the Inspector does as it connects), and over HTTP this
/// server has nowhere to keep one (`set_level`), so there it sends none, and says so.
fn capabilities(logging: bool) -> Value {
    let mut capabilities = json!({ "tools": {}, "resources": {}, "prompts": {}, "completions": {} });
    if logging {
        capabilities["logging"] = json!({});
    }
    capabilities
}
// ANCHOR_END: dispatch
