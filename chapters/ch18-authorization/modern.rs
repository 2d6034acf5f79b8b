//! The 2026-07-28 revision: a request that carries its revision in `_meta` is served by
//! that revision's rules. Its envelope is checked first (`_meta`, and the
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers); `server/discover` says
//! what the server is; the methods of mcp.rs answer the rest; every result says
//! `resultType`, and lists and reads carry caching hints.

use serde_json::{Map, Value, json};

use crate::authorization::Caller;
use crate::http::{Request, Response};
use crate::input_required::{MISSING_CLIENT_CAPABILITY, asks_client, call_asking};
use crate::jsonrpc::{RpcError, echo, reply};
use crate::mcp::{MODERN_VERSIONS, SUPPORTED_VERSIONS, dispatch};
use crate::streaming::Level;
use crate::{Catalog, SERVER_NAME, SERVER_VERSION, resources};

// ANCHOR: modern
/// The `_meta` keys every 2026-07-28 request carries (`2026-07-28/basic/index.mdx`).
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of a request that wants log messages, and from which level up.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// Which era a request belongs to (`2026-07-28/basic/versioning.mdx`): one whose
/// `_meta` carries the protocol version is modern, and so is one whose
/// `MCP-Protocol-Version` names a modern revision, except on `initialize`, where that
/// header is never read. Everything else, `initialize` above all, is the handshake era.
/// `request` is the HTTP request, `None` over stdio, which has no headers.
pub fn is_modern(request: Option<&Request>, method: &str, params: Option<&Value>) -> bool {
    let in_body = request_meta(params).is_some_and(|meta| meta.contains_key(PROTOCOL_VERSION_KEY));
    let in_header = method != "initialize"
        && request
            .and_then(|request| request.header("MCP-Protocol-Version"))
            .is_some_and(|version| MODERN_VERSIONS.contains(&version));
    in_body || in_header
}

/// `params._meta`, when there is one.
pub fn request_meta(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?.get("_meta")?.as_object()
}

/// A modern request: check the envelope, run the method, and mark the result.
pub fn answer_modern(
    request: Option<&Request>,
    id: Value,
    method: &str,
    params: Option<&Value>,
    catalog: &Catalog,
    caller: &Caller,
) -> Response {
    if let Err(error) = check_envelope(request, method, params) {
        return reply(400, id, Err(error));
    }
    match dispatch_modern(method, params, catalog, caller) {
        Ok(result) => reply(200, id, Ok(complete(method, result))),
        // This revision gives two errors an HTTP status of their own: "no such
        // method" is 404, and a missing client capability MUST be 400 (schema.ts,
        // `MissingRequiredClientCapabilityError`).
        Err(error) if error.code == -32601 => reply(404, id, Err(error)),
        Err(error) if error.code == MISSING_CLIENT_CAPABILITY => reply(400, id, Err(error)),
        Err(error) => reply(200, id, Err(error)),
    }
}

/// What every modern request must get right before its method runs, in this order
/// (the Python SDK's order: a client whose headers contradict its body is told so
/// before it is told its version is unsupported).
pub fn check_envelope(request: Option<&Request>, method: &str, params: Option<&Value>) -> Result<(), RpcError> {
    // 1. The two required `_meta` fields: without them the request is malformed.
    let meta = request_meta(params);
    let version = meta.and_then(|meta| meta.get(PROTOCOL_VERSION_KEY));
    let capabilities = meta.and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY));
    let (Some(version), Some(Value::Object(_))) = (version, capabilities) else {
        return Err(RpcError::invalid_params(&format!(
            "params._meta must carry {PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY} (an object)"
        )));
    };
    // 2. Headers repeat the body for proxies that route on them; they must agree.
    // stdio has no header layer: everything is in the body, so there is nothing to
    // compare (`2026-07-28/basic/transports/stdio.mdx`, Request Metadata).
    if let Some(request) = request {
        header_matches(request, "MCP-Protocol-Version", version)?;
        header_matches(request, "Mcp-Method", &Value::String(method.to_string()))?;
        if let Some(field) = NAMED_BY.iter().find(|(m, _)| *m == method).map(|(_, field)| *field)
            && let Some(name) = params.and_then(|p| p.get(field))
        {
            header_matches(request, "Mcp-Name", name)?;
        }
    }
    // 3. A revision this server speaks. Over HTTP a version that is not a string never
    // gets here (no header equals it); over stdio it is malformed params, as at 1.
    let Some(version) = version.as_str() else {
        return Err(RpcError::invalid_params(&format!("params._meta.{PROTOCOL_VERSION_KEY} must be a string")));
    };
    if !MODERN_VERSIONS.contains(&version) {
        return Err(RpcError::unsupported_version(version));
    }
    // 4. A log level, when one is asked for, must be one of the eight
    // (`2026-07-28/server/utilities/logging.mdx`, Error Handling).
    if let Some(level) = meta.and_then(|meta| meta.get(LOG_LEVEL_KEY))
        && Level::named(level).is_none()
    {
        return Err(RpcError::invalid_params(&format!("{LOG_LEVEL_KEY} must be one of {}", Level::NAMES.join(", "))));
    }
    Ok(())
}

/// Methods whose target is repeated in `Mcp-Name`, and the params field it repeats.
const NAMED_BY: &[(&str, &str)] = &[("tools/call", "name"), ("prompts/get", "name"), ("resources/read", "uri")];

/// The header `name` must be present and equal the body's `value` (a header always
/// holds a string, so a body value that is not one never matches).
fn header_matches(request: &Request, name: &str, value: &Value) -> Result<(), RpcError> {
    let Some(raw) = request.header(name) else {
        return Err(RpcError::header_mismatch(&format!("required header {name} is missing")));
    };
    // `Mcp-Name` may carry a value that is not plain ASCII as `=?base64?...?=`. (A header
    // name is the same in any case: `MCP-Name` is `Mcp-Name`.)
    let decode = name.eq_ignore_ascii_case("Mcp-Name");
    let header = if decode { decode_sentinel(raw) } else { Some(raw.to_string()) };
    if header.is_some() && header.as_deref() == value.as_str() {
        return Ok(());
    }
    let body = value.as_str().map_or_else(|| value.to_string(), str::to_string);
    Err(RpcError::header_mismatch(&format!(
        "{name} header value '{}' does not match body value '{}'",
        echo(raw),
        echo(&body)
    )))
}

/// Undo the `=?base64?...?=` wrapping a client uses for a value that is not plain
/// ASCII (`2026-07-28/basic/transports/streamable-http.mdx`, Value Encoding). A plain
/// value comes back as it is; a broken wrapping as `None`, which matches nothing.
fn decode_sentinel(value: &str) -> Option<String> {
    let Some(encoded) = value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) else {
        return Some(value.to_string());
    };
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digits = encoded.trim_end_matches('=');
    if encoded.len() % 4 != 0 || encoded.len() - digits.len() > 2 {
        return None;
    }
    let (mut bytes, mut bits, mut count) = (Vec::new(), 0u32, 0);
    for c in digits.bytes() {
        bits = (bits << 6) | ALPHABET.iter().position(|&a| a == c)? as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
        }
    }
    String::from_utf8(bytes).ok()
}

/// The methods of the stateless revision. `initialize` and `ping` are gone from it
/// (`2026-07-28/changelog.mdx`); `server/discover` is new.
fn dispatch_modern(
    method: &str,
    params: Option<&Value>,
    catalog: &Catalog,
    caller: &Caller,
) -> Result<Value, RpcError> {
    match method {
        "server/discover" => Ok(discover()),
        // Chapter 15: a tool that asks the client answers through its own path.
        "tools/call" if asks_client(params) => call_asking(params, &catalog.tools, caller.subject.as_deref()),
        // A log level is asked for per request now (`2026-07-28/changelog.mdx`), and a
        // client subscribes with `subscriptions/listen` (listen.rs), which "replaces the
        // former `resources/subscribe` RPC and the HTTP GET endpoint"
        // (`2026-07-28/basic/patterns/subscriptions.mdx`).
        "initialize" | "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(RpcError::method_not_found(method))
        }
        // "Resource not found" has a code of its own in each era.
        _ => dispatch(method, params, catalog, None).map_err(resources::for_2026),
    }
}

/// What a client may learn before its first call: the revisions and capabilities.
/// `subscribe` (chapter 17): a `subscriptions/listen` may name resources (listen.rs). No
/// `listChanged`: the lists are compiled in, and never change while the server runs.
fn discover() -> Value {
    let resources = json!({ "subscribe": true });
    let capabilities = json!({ "tools": {}, "resources": resources, "prompts": {}, "completions": {}, "logging": {} });
    json!({ "supportedVersions": all_versions(), "capabilities": capabilities })
}

/// Every revision this server speaks, in either era, newest first.
pub fn all_versions() -> Vec<&'static str> {
    MODERN_VERSIONS.iter().chain(SUPPORTED_VERSIONS).copied().collect()
}

/// How long a client may reuse a list or a `server/discover` answer. The tools and
/// resources are compiled in, so they change only when the server is rebuilt: five
/// minutes spares a client asking on every turn and still picks up a restart soon.
pub const CACHE_TTL_MS: u64 = 300_000;

/// Every modern result says it is complete, and who answered; the cacheable ones
/// say for how long, and for whom: `public`, the same for every caller, or
/// `private`, a caller's own (`2026-07-28/server/utilities/caching.mdx`).
pub fn complete(method: &str, mut result: Value) -> Value {
    let fields = result.as_object_mut().expect("every result is an object");
    // Chapter 15: an `input_required` answer keeps its own result type.
    if !fields.contains_key("resultType") {
        fields.insert("resultType".into(), json!("complete"));
    }
    let server_info = json!({ "name": SERVER_NAME, "version": SERVER_VERSION });
    fields.insert("_meta".into(), json!({ "io.modelcontextprotocol/serverInfo": server_info }));
    let cache = match method {
        "server/discover" | "tools/list" | "prompts/list" => Some((CACHE_TTL_MS, "public")),
        // The resources' methods: `resources.rs` says.
        _ => resources::cache_hints(method),
    };
    if let Some((ttl_ms, scope)) = cache {
        fields.insert("ttlMs".into(), json!(ttl_ms));
        fields.insert("cacheScope".into(), json!(scope));
    }
    result
}
// ANCHOR_END: modern
