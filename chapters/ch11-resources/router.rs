//! The router: every message, from either transport, takes one way through the server.
//! `route` takes a tool call's share first (rate_limit.rs), decides the era once
//! (modern.rs), checks a 2026-07-28 envelope once, and answers each method from the
//! table of its era. Where HTTP and stdio differ, `Via` says how, at that point.
//! `Catalog` is everything the server offers, which `main` builds and hands down.

use serde_json::{Value, json};

use crate::http::{Request, Response};
use crate::jsonrpc::{Message, RpcError, echo, reply};
use crate::mcp::{ASSUMED_VERSION, ServerInfo, check_protocol_version, for_version, initialize, run_tool};
use crate::modern::{self, check_envelope, complete, discover, is_modern};
use crate::rate_limit::{RateLimit, STDIO_CALLER, caller};
use crate::resources::{self, Resource, ResourceTemplate, resource_templates_list, resources_list, resources_read};
use crate::tools::{Tool, arguments_refused, find_tool, tools_list};

// ANCHOR: catalog
/// Everything this server offers, from YOUR TOOLS and YOUR RESOURCES: who it is, and
/// what the methods list, run and read. `main` builds it once.
pub struct Catalog {
    pub info: ServerInfo,
    /// What the model should know of the server as a whole: `instructions`, if any.
    pub instructions: Option<&'static str>,
    pub tools: Vec<Tool>,
    pub resources: Vec<Resource>,
    pub resource_templates: Vec<ResourceTemplate>,
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
}

/// The one way through the server: a message in, what goes back out.
pub fn route(message: Message, via: Via, catalog: &Catalog, rate_limit: &RateLimit) -> Routed {
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
    catalog: &Catalog,
) -> Routed {
    if let Err(error) = check_envelope(request, method, params) {
        return Routed::Answer(reply(400, id, Err(error)));
    }
    let cache = modern::cache_hints(method).or_else(|| resources::cache_hints(method));
    Routed::Answer(match dispatch_modern(method, params, catalog) {
        Ok(result) => reply(200, id, Ok(complete(result, &catalog.info, cache))),
        // This revision gives "no such method" its own HTTP status.
        Err(error) if error.code == -32601 => reply(404, id, Err(error)),
        Err(error) => reply(200, id, Err(error)),
    })
}

/// A message of the handshake era: over HTTP its revision is checked first; a request
/// is answered in the revision the client speaks.
fn route_handshake(message: Message, via: Via, catalog: &Catalog) -> Routed {
    // Before any method runs: a revision this server does not speak is refused.
    if let Via::Http(request) = &via
        && let Err(error) = check_protocol_version(request, message.method())
    {
        return Routed::AsIs(reply(400, message.id(), Err(error)));
    }
    match message {
        Message::Request { id, method, params } => {
            let result = dispatch(&method, params.as_ref(), catalog);
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
        Message::Notification { method } => {
            eprintln!("notification: {:?}", echo(&method));
            Routed::AsIs(Response::empty(202))
        }
        Message::Response => Routed::AsIs(Response::empty(202)),
    }
}
// ANCHOR_END: route

// ANCHOR: dispatch
/// The methods of the handshake era, by name.
fn dispatch(method: &str, params: Option<&Value>, catalog: &Catalog) -> Result<Value, RpcError> {
    match method {
        "initialize" => initialize(params, capabilities(), &catalog.info, catalog.instructions),
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params, &catalog.tools),
        "tools/call" => tools_call(params, &catalog.tools),
        "resources/list" => resources_list(params, &catalog.resources),
        "resources/templates/list" => resource_templates_list(params, &catalog.resource_templates),
        "resources/read" => resources_read(params, &catalog.resources, &catalog.resource_templates),
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// `tools/call`: find the tool by its name and check its arguments (tools.rs), then run it.
fn tools_call(params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    let (tool, arguments) = find_tool(params, tools)?;
    match arguments_refused(tool, &arguments) {
        Some(refused) => Ok(refused.into_json()),
        None => run_tool(tool.name(), || (tool.run)(&arguments)),
    }
}

/// The methods of the stateless revision. `initialize` and `ping` are gone from it
/// (`2026-07-28/changelog.mdx`); `server/discover` is new; the others are the
/// handshake era's.
fn dispatch_modern(method: &str, params: Option<&Value>, catalog: &Catalog) -> Result<Value, RpcError> {
    match method {
        "server/discover" => Ok(discover(capabilities(), catalog.instructions, &catalog.info)),
        "initialize" | "ping" => Err(RpcError::method_not_found(method)),
        // "Resource not found" has a code of its own in each era.
        _ => dispatch(method, params, catalog).map_err(resources::for_2026),
    }
}

/// What this server can do, as `initialize` and `server/discover` both say it. "I have
/// tools": the client may call `tools/list` and `tools/call`; and resources:
/// `resources/list`, `resources/templates/list`, `resources/read`. No `listChanged`:
/// they never change while the server runs; no `subscribe`: a stateless server has
/// nowhere to send a notice that a resource changed.
fn capabilities() -> Value {
    json!({ "tools": {}, "resources": {} })
}
// ANCHOR_END: dispatch
