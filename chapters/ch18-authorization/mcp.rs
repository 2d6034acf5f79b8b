//! The MCP layer, handshake era: the methods. `dispatch` sends each request to its
//! method: `initialize`, `ping`, `tools/list`, `tools/call` (the arguments checked
//! against the tool's `inputSchema` first), and the methods of the files that follow.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::completion::completion_complete;
use crate::jsonrpc::{RpcError, echo};
use crate::prompts::{prompts_get, prompts_list};
use crate::resources::{resource_templates_list, resources_list, resources_read};
use crate::sessions::Session;
use crate::streaming::{Call, Nowhere, progress_token, set_level};
use crate::subscriptions::subscription;
use crate::{Catalog, Run, SERVER_NAME, SERVER_VERSION, Tool};

// ANCHOR: dispatch
/// Answer a request by its method, in `session` when the client sent one (chapter 16).
pub fn dispatch(
    method: &str,
    params: Option<&Value>,
    catalog: &Catalog,
    session: Option<&Session>,
) -> Result<Value, RpcError> {
    match method {
        "initialize" => initialize(params),
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params, &catalog.tools),
        "tools/call" => tools_call(params, &catalog.tools),
        "resources/list" => resources_list(params, &catalog.resources),
        "resources/templates/list" => resource_templates_list(params, &catalog.resource_templates),
        "resources/read" => resources_read(params, catalog),
        "resources/subscribe" | "resources/unsubscribe" => subscription(method, params, catalog, session),
        "prompts/list" => prompts_list(params, &catalog.prompts),
        "prompts/get" => prompts_get(params, &catalog.prompts),
        "completion/complete" => completion_complete(params, catalog),
        "logging/setLevel" => set_level(params, catalog, session),
        _ => Err(RpcError::method_not_found(method)),
    }
}
// ANCHOR_END: dispatch

// ANCHOR: initialize
/// The protocol revisions this server speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revisions, which have no `initialize`: each request names its own.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// The handshake: agree on a revision and say what this server can do.
pub fn initialize(params: Option<&Value>) -> Result<Value, RpcError> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`protocolVersion` must be a string"))?;
    // Negotiation: answer the client's revision when we speak it, else our newest.
    // Never an error: the client reads our answer and decides whether to go on.
    let version = if SUPPORTED_VERSIONS.contains(&requested) { requested } else { SUPPORTED_VERSIONS[0] };
    Ok(json!({
        "protocolVersion": version,
        // "I have tools": the client may call `tools/list` and `tools/call`; and
        // resources: `resources/list`, `resources/templates/list`, `resources/read`; and
        // prompts: `prompts/list`, `prompts/get`; and `completion/complete`; and log
        // messages during a call (`notifications/message`, `logging/setLevel`). Chapter
        // 17: `subscribe`, a client in a session may ask to hear when a resource changes
        // (`resources/subscribe`), on its session's stream (in 2026-07-28, with
        // `subscriptions/listen`, `server/discover` says). No `listChanged`: the lists
        // never change while the server runs (what a resource holds may).
        "capabilities": {
            "tools": {},
            "resources": { "subscribe": true },
            "prompts": {},
            "completions": {},
            "logging": {},
        },
        "serverInfo": { "name": SERVER_NAME, "version": SERVER_VERSION },
    }))
}
// ANCHOR_END: initialize

// ANCHOR: tools_list
/// `tools/list`: every tool, on one page.
fn tools_list(params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "tools": tools.iter().map(|tool| &tool.definition).collect::<Vec<_>>() }))
}

/// Lists may come in pages: a result with `nextCursor` asks the client to send that
/// cursor back for the next page. Each list of this server is one page, so it never
/// hands out a cursor, and any cursor it receives is one it did not issue.
pub fn check_cursor(params: Option<&Value>) -> Result<(), RpcError> {
    match params.and_then(|p| p.get("cursor")) {
        None => Ok(()),
        Some(Value::String(cursor)) => Err(RpcError::invalid_params(&format!(
            "unknown cursor \"{}\": this server issues no cursors",
            echo(cursor)
        ))),
        Some(_) => Err(RpcError::invalid_params("`cursor` must be a string")),
    }
}
// ANCHOR_END: tools_list

// ANCHOR: tools_call
/// `tools/call`: find the tool by its name and run it with the arguments.
fn tools_call(params: Option<&Value>, tools: &[Tool]) -> Result<Value, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
    let arguments = tool_arguments(params)?;
    let tool = tools
        .iter()
        .find(|tool| tool.definition["name"] == name)
        .ok_or_else(|| RpcError::invalid_params(&format!("unknown tool \"{}\"", echo(name))))?;
    let result = match arguments_refused(tool, &arguments) {
        Some(refused) => refused,
        None => {
            // Here nobody hears how a call is going (a long call the client can follow
            // never gets here: see `long_call`), so it reports nowhere.
            progress_token(params)?;
            let mut nowhere = Nowhere;
            run_tool(tool, &arguments, &mut Call::new(&mut nowhere, None, None))?
        }
    };
    Ok(serde_json::to_value(result).expect("a tool result always serializes"))
}

/// A `tools/call`'s `arguments`: an object, or none at all (the tool then runs with none,
/// as if sent `{}`); anything else is invalid params. Chapter 15's asking tool reads them
/// here too, for every call's arguments are checked the same way.
pub fn tool_arguments(params: Option<&Value>) -> Result<Map<String, Value>, RpcError> {
    match params.and_then(|p| p.get("arguments")) {
        None => Ok(Map::new()),
        Some(Value::Object(arguments)) => Ok(arguments.clone()),
        Some(_) => Err(RpcError::invalid_params("`arguments` must be an object")),
    }
}

/// Arguments that break the tool's schema are the model's mistake, and the model can
/// fix it: a failed result saying what to fix, not a protocol error (2025-11-25).
/// `None` when they fit.
pub fn arguments_refused(tool: &Tool, arguments: &Map<String, Value>) -> Option<ToolResult> {
    let problems = check_arguments(&tool.definition["inputSchema"], arguments);
    let name = tool.definition["name"].as_str().unwrap_or_default();
    (!problems.is_empty()).then(|| {
        ToolResult::error(format!(
            "Invalid arguments for {name}: {}. Correct the arguments and call {name} again.",
            problems.join("; ")
        ))
    })
}

/// Run a tool. One that panics is a bug in the server, not a mistake of the model's:
/// `-32603` with this request's id, and the server goes on to the next request.
pub fn run_tool(tool: &Tool, arguments: &Map<String, Value>, call: &mut Call) -> Result<ToolResult, RpcError> {
    let name = tool.definition["name"].as_str().unwrap_or_default();
    catch_unwind(AssertUnwindSafe(|| match tool.run {
        Run::Quick(run) => run(arguments),
        Run::Steps(run) => run(arguments, call),
    }))
    .map_err(|_| RpcError::internal_error(&format!("the tool {name} failed; the server's log says why")))
}
// ANCHOR_END: tools_call

// ANCHOR: check_arguments
/// Check arguments against a tool's `inputSchema`, and say what is wrong in words a
/// model can act on. It knows the keywords this server's schemas use: `required` and
/// `additionalProperties: false`, and per property `type`, `enum`, `minimum` and
/// `maximum`. (A full JSON Schema validator knows them all; chapter 6's test uses one.)
pub fn check_arguments(schema: &Value, arguments: &Map<String, Value>) -> Vec<String> {
    // A request may hold thousands of wrong arguments. The answer lists the first few
    // and counts the rest, and repeats each name through `echo`: whatever the request,
    // the answer stays a few lines long.
    const LISTED: usize = 5;
    let mut problems = Vec::new();
    let mut unlisted = 0;
    let mut note = |problem: String| if problems.len() < LISTED { problems.push(problem) } else { unlisted += 1 };
    let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str);
    for name in required.filter(|name| !arguments.contains_key(*name)) {
        note(format!("`{}` is missing", echo(name)));
    }
    for (name, value) in arguments {
        let property = schema["properties"].get(name);
        let name = echo(name); // the client chose it
        let Some(property) = property else {
            if schema["additionalProperties"] == false {
                note(format!("`{name}` is not an argument of this tool"));
            }
            continue;
        };
        if let Some(expected) = property["type"].as_str()
            && !has_type(value, expected)
        {
            note(format!("`{name}` must be of type {expected}, not {}", echo(&value.to_string())));
            continue;
        }
        if let Some(allowed) = property["enum"].as_array()
            && !allowed.contains(value)
        {
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            note(format!("`{name}` must be one of {}, not {}", allowed.join(", "), echo(&value.to_string())));
        }
        if let (Some(number), Some(minimum)) = (value.as_f64(), property["minimum"].as_f64())
            && number < minimum
        {
            note(format!("`{name}` must be at least {}, not {}", property["minimum"], echo(&value.to_string())));
        }
        if let (Some(number), Some(maximum)) = (value.as_f64(), property["maximum"].as_f64())
            && number > maximum
        {
            note(format!("`{name}` must be at most {}, not {}", property["maximum"], echo(&value.to_string())));
        }
    }
    if unlisted > 0 {
        problems.push(format!("and {unlisted} more"));
    }
    problems
}

/// JSON Schema's types. An integer is a number without a fractional part, so `2.0` is one.
fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}
// ANCHOR_END: check_arguments

// ANCHOR: result
/// What a tool hands back (`CallToolResult`): content blocks, the same result as JSON
/// for programs, and whether the tool failed. A failure is still a result, not a
/// JSON-RPC error: the model reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    content: Vec<Content>,
    /// A JSON object that conforms to the tool's `outputSchema`. Left out by tools
    /// without one, and by failed calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<Value>,
    /// Left out when false, which is what a client assumes when it is absent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// One content block, tagged by its `type`, in a tool's result or a prompt's message.
/// The protocol has five kinds (text, image, audio, resource_link, resource); this
/// server uses four. `resource_link` names a resource the client may read with
/// `resources/read` (`2025-11-25/server/tools.mdx`, Resource Links); `image` carries
/// base64 `data`; `resource` embeds a resource whole, as `resources/read` would answer
/// it (`2025-11-25/server/prompts.mdx`, Embedded Resources).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Content {
    Text { text: String },
    ResourceLink { uri: String, name: String, mime_type: String },
    Image { data: String, mime_type: String },
    Resource { resource: Value },
}

impl ToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> ToolResult {
        ToolResult { content: vec![Content::Text { text: text.into() }], structured_content: None, is_error: false }
    }

    /// A result for programs and models alike: `value` as JSON in `structuredContent`,
    /// and the same JSON, serialized, in a text block, for clients that only read
    /// `content` (`2025-11-25/server/tools.mdx`, "Structured Content").
    pub fn structured(value: &impl Serialize) -> ToolResult {
        let text = serde_json::to_string(value).expect("a tool's output always serializes");
        let json = serde_json::to_value(value).expect("a tool's output always serializes");
        ToolResult { content: vec![Content::Text { text }], structured_content: Some(json), is_error: false }
    }

    /// A failed call, with a text saying what went wrong.
    pub fn error(text: impl Into<String>) -> ToolResult {
        ToolResult { is_error: true, ..ToolResult::text(text) }
    }

    /// The same result, with a link to a resource after its other blocks.
    pub fn with_link(mut self, uri: &str, name: &str, mime_type: &str) -> ToolResult {
        let link = Content::ResourceLink { uri: uri.into(), name: name.into(), mime_type: mime_type.into() };
        self.content.push(link);
        self
    }
}
// ANCHOR_END: result

// ANCHOR: for_version
/// The revision a client that names none is taken to speak: over HTTP, a request
/// without `MCP-Protocol-Version` (then "the server SHOULD assume protocol version
/// 2025-03-26", `2025-11-25/basic/transports.mdx`); over stdio, a line before
/// `initialize`.
pub const ASSUMED_VERSION: &str = "2025-03-26";

/// A result as a client of `version` can read it. A tool writes its result once, for
/// the newest revision; `resource_link` blocks are new in 2025-06-18, so a client of an
/// older one gets the result without them (the text before a link holds what the model
/// needs). Revisions are dates, so they compare as strings.
pub fn for_version(mut result: Value, version: &str) -> Value {
    if version < "2025-06-18"
        && let Some(Value::Array(content)) = result.get_mut("content")
    {
        content.retain(|block| block["type"] != "resource_link");
    }
    result
}
// ANCHOR_END: for_version
