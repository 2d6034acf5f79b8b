//! Resources, the server's side (chapter 11). YOUR RESOURCES, in main.rs, says what
//! there is; this file lists it (`resources/list`, `resources/templates/list`) and reads
//! a URI (`resources/read`): the resource with exactly that URI, or else a template
//! that matches it. A URI that names nothing is "Resource not found"
//! (`2025-11-25/server/resources.mdx`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::jsonrpc::{RESOURCE_NOT_FOUND, RpcError};
use crate::mcp::check_cursor;
use crate::modern::CACHE_TTL_MS;

// ANCHOR: resource
/// A resource: its entry in `resources/list`, and the function `resources/read` runs.
pub struct Resource {
    pub definition: Value,
    pub read: fn() -> ResourceContents,
}

/// A resource template: its entry in `resources/templates/list`, and the function
/// `resources/read` runs for a URI that matches it, with the values of its variables.
pub struct ResourceTemplate {
    pub definition: Value,
    pub read: fn(&BTreeMap<String, String>) -> Option<ResourceContents>,
}
// ANCHOR_END: resource

// ANCHOR: resources_list
/// `resources/list`: the resources with a URI of their own, a page at a time. A page
/// ends with `nextCursor` while more follow; the client sends it back for the next page.
pub fn resources_list(params: Option<&Value>, resources: &[Resource]) -> Result<Value, RpcError> {
    let start = match params.and_then(|p| p.get("cursor")) {
        None => 0,
        Some(cursor) => page_start(cursor, resources)?,
    };
    let end = resources.len().min(start + RESOURCES_PER_PAGE);
    let page: Vec<&Value> = resources[start..end].iter().map(|resource| &resource.definition).collect();
    let mut result = json!({ "resources": page });
    // Every page but the last: a page without it tells the client it has them all.
    if end < resources.len() {
        result["nextCursor"] = json!(cursor_at(end, resources));
    }
    Ok(result)
}

/// `resources/templates/list`: every resource template, on one page. A template stands
/// for many resources (every order), so the list does not grow with the data: it stays
/// one page, and refuses a cursor as `tools/list` does.
pub fn resource_templates_list(params: Option<&Value>, templates: &[ResourceTemplate]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "resourceTemplates": templates.iter().map(|template| &template.definition).collect::<Vec<_>>() }))
}
// ANCHOR_END: resources_list

// ANCHOR: cursor
/// How many resources a page of `resources/list` holds. One, so that this server's few
/// resources take more than one page and paging shows on the wire; a server whose list
/// grows with its data (a resource per file, per order) would send 50 or 100 a page.
const RESOURCES_PER_PAGE: usize = 1;

/// The cursor of the page that starts at `offset`: the offset, a dot, and the list's
/// fingerprint (`1.edcc9472`). The offset says where the page starts; the fingerprint
/// says which list it counts in, so that a cursor from before the list changed (a new
/// build, a new resource) is refused instead of starting a page one resource off.
fn cursor_at(offset: usize, resources: &[Resource]) -> String {
    format!("{offset}.{:08x}", fingerprint(resources))
}

/// The list's fingerprint: FNV-1a (32 bits) over its URIs, in order. It changes when a
/// resource is added, removed or moved, which is when an offset would point elsewhere.
/// It is no secret and no signature: every page is public, so a client that forges a
/// cursor gets nothing it could not page to.
fn fingerprint(resources: &[Resource]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for resource in resources {
        let uri = resource.definition["uri"].as_str().unwrap_or_default();
        // A 0 byte ends each URI, so `a` and `bc` differ from `ab` and `c`.
        for byte in uri.bytes().chain([0]) {
            hash = (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193);
        }
    }
    hash
}

/// Where the page a client's `cursor` names starts. The cursor comes from the network,
/// and only one this server wrote for this list, for a page that exists, is a cursor:
/// anything else is -32602, saying which, and the message repeats none of it.
fn page_start(cursor: &Value, resources: &[Resource]) -> Result<usize, RpcError> {
    let cursor = cursor.as_str().ok_or_else(|| RpcError::invalid_params("`cursor` must be a string"))?;
    let is_digits = |text: &str, radix| !text.is_empty() && text.chars().all(|c| c.is_digit(radix));
    let offset = cursor
        .split_once('.')
        .filter(|(offset, check)| is_digits(offset, 10) && check.len() == 8 && is_digits(check, 16))
        .and_then(|(offset, _)| offset.parse::<usize>().ok())
        .ok_or_else(|| RpcError::invalid_params("malformed cursor: not one this server writes"))?;
    let not_issued = || RpcError::invalid_params("unknown cursor: not one this server issued for this list");
    // Another list's fingerprint (the list has changed since), or `01.` for `1.`.
    if cursor != cursor_at(offset, resources) {
        return Err(not_issued());
    }
    if offset >= resources.len() {
        return Err(RpcError::invalid_params("cursor past the end of the list"));
    }
    // The first page has no cursor, and every other starts at a multiple of the page size.
    if offset == 0 || !offset.is_multiple_of(RESOURCES_PER_PAGE) {
        return Err(not_issued());
    }
    Ok(offset)
}
// ANCHOR_END: cursor

// ANCHOR: resources_read
/// `resources/read`: what one URI holds, as one entry of `contents`.
pub fn resources_read(
    params: Option<&Value>,
    resources: &[Resource],
    templates: &[ResourceTemplate],
) -> Result<Value, RpcError> {
    let uri = params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`uri` must be a string"))?;
    // "Servers MUST validate all resource URIs" (Security Considerations): a text that
    // cannot be a URI names nothing here, and is not repeated back.
    if !is_uri(uri) {
        return Err(RpcError::invalid_params(&format!(
            "`uri` must be a URI (RFC 3986) of at most {MAX_URI_LENGTH} characters"
        )));
    }
    let (definition, contents) =
        find_resource(uri, resources, templates).ok_or_else(|| RpcError::resource_not_found(uri))?;
    // The URI asked for (for a template, the URI that matched it) and the
    // definition's `mimeType`.
    Ok(json!({ "contents": [contents.entry(uri, definition["mimeType"].as_str())] }))
}

/// What `uri` names, with the definition it was found by. `None`: nothing by that URI.
fn find_resource<'a>(
    uri: &str,
    resources: &'a [Resource],
    templates: &'a [ResourceTemplate],
) -> Option<(&'a Value, ResourceContents)> {
    if let Some(resource) = resources.iter().find(|resource| resource.definition["uri"] == uri) {
        return Some((&resource.definition, (resource.read)()));
    }
    for template in templates {
        let pattern = template.definition["uriTemplate"].as_str().unwrap_or_default();
        if let Some(variables) = match_template(pattern, uri) {
            // The URI has the template's form, and may still name nothing (an order
            // that does not exist): the template's function decides.
            return Some((&template.definition, (template.read)(&variables)?));
        }
    }
    None
}

// ANCHOR_END: resources_read

// ANCHOR: not_found_2026
/// An error of this file's methods as 2026-07-28 says it, which numbers one of them
/// differently (`2026-07-28/server/resources.mdx`, Error Handling). The router
/// (`router.rs`) passes every error of a 2026-07-28 method through it.
pub fn for_2026(error: RpcError) -> RpcError {
    match error.code {
        // "Resource not found" is the code for invalid params now (MUST -32602), with
        // the same message and `data`.
        RESOURCE_NOT_FOUND => RpcError { code: -32602, ..error },
        _ => error,
    }
}
// ANCHOR_END: not_found_2026

// ANCHOR: cache_hints
/// The caching hints of this file's methods in 2026-07-28: for how long a client may
/// keep an answer, and for whom (`2026-07-28/server/utilities/caching.mdx`). `None`
/// for a method that is not this file's. The router (`router.rs`) asks here.
pub fn cache_hints(method: &str) -> Option<(u64, &'static str)> {
    match method {
        // Compiled in, the same for every caller, as `tools/list`.
        "resources/list" | "resources/templates/list" => Some((CACHE_TTL_MS, "public")),
        // A resource may hold one person's data (an order is a customer's): no shared
        // cache may hand it to another caller.
        "resources/read" => Some((READ_TTL_MS, "private")),
        _ => None,
    }
}

/// How long a client may reuse what `resources/read` answered. What a resource holds
/// (an order's status) changes while the server runs, sooner than the list of what
/// exists, so a minute.
const READ_TTL_MS: u64 = 60_000;
// ANCHOR_END: cache_hints

// ANCHOR: resource_contents
/// What `resources/read` answers for one resource.
pub enum ResourceContents {
    /// Text, such as Markdown or JSON: sent as it is, in `text`.
    Text(String),
    /// Bytes, such as an image: sent as base64, in `blob`, because JSON carries text.
    Blob(Vec<u8>),
}

impl ResourceContents {
    /// One entry of `contents`: the resource's URI, its `mimeType` when it has one,
    /// and the text as it is or the bytes as base64.
    fn entry(self, uri: &str, mime_type: Option<&str>) -> Value {
        let mut entry = json!({ "uri": uri });
        if let Some(mime_type) = mime_type {
            entry["mimeType"] = json!(mime_type);
        }
        match self {
            ResourceContents::Text(text) => entry["text"] = json!(text),
            ResourceContents::Blob(bytes) => entry["blob"] = json!(base64(&bytes)),
        }
        entry
    }
}
// ANCHOR_END: resource_contents

// ANCHOR: match_template
/// Match `uri` against a template made of literal text and `{name}` variables (RFC 6570,
/// level 1), such as `orders://{orderId}` or `orders://{orderId}.json`: the value of
/// every variable, or `None` when the URI does not have the template's form. A value is
/// what RFC 6570 expands `{name}` to (section 3.2.2): one or more unreserved characters
/// or %-escapes, so it never holds a `/`. It runs up to the literal text after it: to
/// the first place that text appears, or, for the text that ends the template, to where
/// it ends the URI. Where a value could hold that text too (`{a}-{b}` against `p-q-r`),
/// the URI has two readings, and this takes the first (`p` and `q-r`). Two variables
/// side by side (`{a}{b}`) have nothing between them to split at: the template names
/// nothing.
fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let (mut template, mut uri) = (template, uri);
    let mut variables = BTreeMap::new();
    while let Some(start) = template.find('{') {
        // The literal text before the variable must be there, exactly.
        uri = uri.strip_prefix(&template[..start])?;
        let end = start + template[start..].find('}')?;
        let name = &template[start + 1..end];
        template = &template[end + 1..];
        // The literal text after the variable, up to the next variable or the end.
        let literal = &template[..template.find('{').unwrap_or(template.len())];
        let length = if template.starts_with('{') {
            return None; // two variables side by side
        } else if literal.is_empty() {
            uri.len() // the last variable, with nothing after it
        } else if literal.len() == template.len() {
            uri.strip_suffix(literal)?.len() // the template's last text ends the URI
        } else {
            // The first place the literal appears after the value's first character.
            let first = uri.chars().next()?.len_utf8();
            first + uri[first..].find(literal)?
        };
        let value = &uri[..length];
        let is_value_char = |c: char| c.is_ascii_alphanumeric() || "-._~%".contains(c);
        if value.is_empty() || !value.chars().all(is_value_char) {
            return None;
        }
        variables.insert(name.to_string(), value.to_string());
        uri = &uri[length..];
    }
    // After the last variable, the rest must match too.
    (template == uri).then_some(variables)
}

/// The longest `uri` this server reads. Its own URIs are far shorter; the bound keeps
/// an error that repeats a URI short.
const MAX_URI_LENGTH: usize = 2048;

/// Could `text` be a URI? RFC 3986 allows letters, digits and `-._~:/?#[]@!$&'()*+,;=%`,
/// and nothing else: no spaces, quotes, braces or control characters.
fn is_uri(text: &str) -> bool {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c);
    !text.is_empty() && text.len() <= MAX_URI_LENGTH && text.chars().all(allowed)
}

/// Bytes as base64 (RFC 4648, with `=` padding): each 3 bytes become 4 characters.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let bits = chunk.iter().enumerate().fold(0u32, |bits, (i, &byte)| bits | u32::from(byte) << (16 - 8 * i));
        for i in 0..4 {
            // A chunk of n bytes fills n + 1 characters; `=` pads the rest.
            let digit = ALPHABET[(bits >> (18 - 6 * i) & 63) as usize] as char;
            text.push(if i <= chunk.len() { digit } else { '=' });
        }
    }
    text
}
// ANCHOR_END: match_template

// `match_template` on the cases *Matching a template* (chapter 11) names, as tests of
// this file's own (`cargo test --bin ch11-resources`).

/// The values `template` reads from `uri`, in the order of their names.
#[cfg(test)]
fn matched(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    match_template(template, uri).map(|variables| variables.into_iter().collect())
}

#[cfg(test)]
fn values(pairs: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(pairs.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect())
}

#[test]
fn a_value_runs_up_to_the_literal_text_after_it() {
    assert_eq!(matched("orders://{orderId}", "orders://A-1001"), values(&[("orderId", "A-1001")]));
    assert_eq!(matched("orders://{orderId}.json", "orders://A-1001.json"), values(&[("orderId", "A-1001")]));
    // The text that ends the template ends the URI: a value may hold it before that.
    assert_eq!(matched("orders://{orderId}.json", "orders://v.1.json"), values(&[("orderId", "v.1")]));
    assert_eq!(matched("orders://{orderId}/items", "orders://A-1001/items"), values(&[("orderId", "A-1001")]));
    assert_eq!(matched("reports://{year}-{month}", "reports://2026-11"), values(&[("month", "11"), ("year", "2026")]));
}

#[test]
fn a_value_is_never_empty_and_never_holds_a_slash() {
    assert_eq!(matched("orders://{orderId}", "orders://A-1001/items"), None);
    assert_eq!(matched("orders://{orderId}", "orders://"), None);
    assert_eq!(matched("orders://{orderId}.json", "orders://.json"), None);
    assert_eq!(matched("orders://{orderId}.json", "orders://A-1001"), None);
    assert_eq!(matched("orders://{orderId}.json", "orders://a/b.json"), None);
    assert_eq!(matched("orders://{orderId}", "invoices://A-1001"), None);
}

/// Two readings: the first is taken. Side by side: no reading at all.
#[test]
fn two_readings_give_the_first_and_adjacent_variables_name_nothing() {
    assert_eq!(matched("x://{a}-{b}", "x://p-q-r"), values(&[("a", "p"), ("b", "q-r")]));
    assert_eq!(matched("files://{name}.{ext}", "files://a.b.c"), values(&[("ext", "b.c"), ("name", "a")]));
    // A value may begin with the literal's own character.
    assert_eq!(matched("x://{a}-{b}", "x://-p-q"), values(&[("a", "-p"), ("b", "q")]));
    assert_eq!(matched("x://{a}{b}", "x://pq"), None);
}
