//! The MCP core: what every method of the server stands on. The revisions it speaks,
//! and the one a request names in its header; the `initialize` handshake; the result a
//! tool hands back, and how a tool is run; the cursor of a list.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde::Serialize;
use serde_json::{Value, json};

use crate::http::Request;
use crate::jsonrpc::{RpcError, echo};

// ANCHOR: initialize
/// The protocol revisions this server speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The stateless revisions, which have no `initialize`: each request names its own.
pub const MODERN_VERSIONS: &[&str] = &["2026-07-28"];

/// Every revision this server speaks, in either era, newest first.
pub fn all_versions() -> Vec<&'static str> {
    MODERN_VERSIONS.iter().chain(SUPPORTED_VERSIONS).copied().collect()
}

/// Who this server is, as YOUR TOOLS names it (`Implementation` in the schema): in full
/// in `initialize`'s `serverInfo` and in `server/discover`; in every other 2026-07-28
/// result, its `identity`. `name` and `version` are for programs and logs; `title`,
/// `description` and `icons` are for the people who pick and see servers in a host.
#[derive(Serialize)]
pub struct ServerInfo {
    pub name: &'static str,
    pub version: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub icons: Vec<Icon>,
}

impl ServerInfo {
    /// The copy every 2026-07-28 result but `server/discover` carries in `_meta`: name
    /// and version, which is all the spec's table says that copy is for ("Server name
    /// and version"). The title, description and icon are for showing the server, which
    /// a client does from the handshake or from `server/discover`; the icon's bytes in
    /// every answer would be waste.
    pub fn identity(&self) -> Value {
        json!({ "name": self.name, "version": self.version })
    }
}

/// An image a host may show for this server (`Icon` in the schema). A `data:` URI
/// carries its bytes: no fetch, so no origin for a client to check, and it works over
/// stdio and behind any proxy.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    pub mime_type: &'static str,
    pub sizes: Vec<&'static str>,
}

impl Icon {
    /// A PNG (the type every client that shows icons must take), from its bytes already
    /// in base64, drawn at `size` ("16x16").
    pub fn png(base64: &str, size: &'static str) -> Icon {
        Icon { src: format!("data:image/png;base64,{base64}"), mime_type: "image/png", sizes: vec![size] }
    }
}

/// The handshake: agree on a revision and say what this server can do (`capabilities`,
/// which the router says: router.rs), and what the model should know of it
/// (`instructions`, which YOUR TOOLS writes, if anything).
pub fn initialize(
    params: Option<&Value>,
    capabilities: Value,
    info: &ServerInfo,
    instructions: Option<&str>,
) -> Result<Value, RpcError> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`protocolVersion` must be a string"))?;
    // Negotiation: answer the client's revision when we speak it, else our newest.
    // Never an error: the client reads our answer and decides whether to go on.
    let version = if SUPPORTED_VERSIONS.contains(&requested) { requested } else { SUPPORTED_VERSIONS[0] };
    let mut result = json!({ "protocolVersion": version, "capabilities": capabilities, "serverInfo": info });
    if let Some(instructions) = instructions {
        result["instructions"] = json!(instructions);
    }
    Ok(result)
}
// ANCHOR_END: initialize

// ANCHOR: check_cursor
/// Lists may come in pages: a result with `nextCursor` asks the client to send that
/// cursor back for the next page. A list that calls this is one page, so it never
/// hands out a cursor, and any cursor it receives is one it did not issue. (A list
/// that can be long pages instead: `resources/list`.)
pub fn check_cursor(params: Option<&Value>) -> Result<(), RpcError> {
    match params.and_then(|p| p.get("cursor")) {
        None => Ok(()),
        Some(Value::String(cursor)) => Err(RpcError::invalid_params(&format!(
            "unknown cursor \"{}\": this list is one page, with no cursors",
            echo(cursor)
        ))),
        Some(_) => Err(RpcError::invalid_params("`cursor` must be a string")),
    }
}
// ANCHOR_END: check_cursor

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

/// Run a tool: `run` calls the tool's function. One that panics is a bug in the server,
/// not a mistake of the model's: `-32603` with this request's id, and the server goes
/// on to the next request.
pub fn run_tool(name: &str, run: impl FnOnce() -> ToolResult) -> Result<Value, RpcError> {
    let result = catch_unwind(AssertUnwindSafe(run))
        .map_err(|_| RpcError::internal_error(&format!("the tool {name} failed; the server's log says why")))?;
    Ok(result.into_json())
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

    /// The result as JSON, as it goes into the envelope.
    pub fn into_json(self) -> Value {
        serde_json::to_value(self).expect("a tool result always serializes")
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

// ANCHOR: protocol_version
/// `MCP-Protocol-Version`: the revision a client agreed to in `initialize`, sent on
/// every later request over HTTP. A revision this server does not speak is refused
/// with `400` before the method runs, so the client is not misled by answers in a
/// dialect it did not ask for. No header is fine: clients of 2025-03-26 and before
/// never send one. `initialize` itself is never checked: it is where the revision is
/// chosen.
pub fn check_protocol_version(request: &Request, method: Option<&str>) -> Result<(), RpcError> {
    if method == Some("initialize") {
        return Ok(());
    }
    match request.header("MCP-Protocol-Version") {
        None => Ok(()),
        Some(version) if SUPPORTED_VERSIONS.contains(&version) || MODERN_VERSIONS.contains(&version) => Ok(()),
        Some(version) => Err(RpcError::invalid_request(&format!(
            "unsupported MCP-Protocol-Version '{}'; this server speaks {}",
            echo(version),
            all_versions().join(", ")
        ))),
    }
}
// ANCHOR_END: protocol_version
