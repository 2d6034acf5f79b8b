//! The 2026-07-28 revision: a request that carries its revision in `_meta` is served by
//! that revision's rules. Which era a request belongs to; its envelope, checked before
//! its method runs (`_meta`, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name`
//! headers); `server/discover`, which says what the server is; and the marks every
//! result carries: `resultType`, who answered, and caching hints.

use serde_json::{Map, Value, json};

use crate::http::Request;
use crate::jsonrpc::{RpcError, echo};
use crate::mcp::{Level, MODERN_VERSIONS, SUPPORTED_VERSIONS, ServerInfo, all_versions};

// ANCHOR: modern
/// The `_meta` keys every 2026-07-28 request carries (`2026-07-28/basic/index.mdx`).
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key of every 2026-07-28 result that says who answered.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
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
        // `supported` is what a retry may name, so it never names the revision refused.
        // A handshake revision is spoken only after `initialize`: a client that sent
        // one in the stateless envelope is offered the stateless revisions, the only
        // ones that envelope can carry; any other revision, the whole list.
        let supported = if SUPPORTED_VERSIONS.contains(&version) { MODERN_VERSIONS.to_vec() } else { all_versions() };
        return Err(RpcError::unsupported_version(version, &supported));
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

/// What a client may learn before its first call: the revisions, what this server can
/// do (`capabilities`, which the router says: router.rs), the `instructions` the
/// handshake era has from `initialize`, if any, and who this server is, in full: the
/// one answer of this era that carries the title, description and icon.
pub fn discover(capabilities: Value, instructions: Option<&str>, info: &ServerInfo) -> Value {
    let mut result = json!({
        "supportedVersions": all_versions(),
        "capabilities": capabilities,
        "_meta": { SERVER_INFO_KEY: info },
    });
    if let Some(instructions) = instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// How long a client may reuse a list or a `server/discover` answer. The tools and
/// resources are compiled in, so they change only when the server is rebuilt: five
/// minutes spares a client asking on every turn and still picks up a restart soon.
pub const CACHE_TTL_MS: u64 = 300_000;

/// The caching hints of this file's method and of the core's lists: for how long a
/// client may keep an answer, and for whom: `public`, the same for every caller, or
/// `private`, a caller's own (`2026-07-28/server/utilities/caching.mdx`). `None` for a
/// method whose hints are not this file's to give.
pub fn cache_hints(method: &str) -> Option<(u64, &'static str)> {
    match method {
        "server/discover" | "tools/list" | "prompts/list" => Some((CACHE_TTL_MS, "public")),
        _ => None,
    }
}

/// Every modern result says whether it is complete, and who answered; a cacheable one
/// says for how long, and for whom (`cache`: the hints of its method).
pub fn complete(mut result: Value, info: &ServerInfo, cache: Option<(u64, &str)>) -> Value {
    let fields = result.as_object_mut().expect("every result is an object");
    // Chapter 15: an `input_required` answer keeps its own result type.
    if !fields.contains_key("resultType") {
        fields.insert("resultType".into(), json!("complete"));
    }
    // Who answered: `server/discover` has said it in full already; any other result
    // says name and version (ServerInfo::identity says why).
    let meta = fields.entry("_meta").or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().expect("`_meta` is an object");
    meta.entry(SERVER_INFO_KEY).or_insert_with(|| info.identity());
    if let Some((ttl_ms, scope)) = cache {
        fields.insert("ttlMs".into(), json!(ttl_ms));
        fields.insert("cacheScope".into(), json!(scope));
    }
    result
}
// ANCHOR_END: modern
