//! Resources, the server's side (chapter 11). YOUR RESOURCES, in main.rs, says what
//! there is; this file lists it (`resources/list`, `resources/templates/list`) and reads
//! a URI (`resources/read`): the resource with exactly that URI, or else a template
//! that matches it. A URI that names nothing is "Resource not found"
//! (`2025-11-25/server/resources.mdx`).
// TODO(exercise): this file is your copy of `resources.rs`, the piece chapter 11 adds to the
// server, with its decisions left for you to write. Each part sits between a `// TODO`
// line and its `// END TODO`: replace what is between them, and leave the rest as it is.
// The rest of the server is the chapter's own files, as `main.rs`'s map lists them: the
// exercise binary is that server with this file in place of `resources.rs`.
// Check your work: `cargo run -- check 11`. The solution: `resources.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_imports, unused_variables)]
// END TODO

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::jsonrpc::RpcError;
use crate::mcp::check_cursor;
use crate::{Catalog, Resource, ResourceTemplate};

// ANCHOR: resources_list
/// `resources/list`: every resource with a URI of its own, on one page.
pub fn resources_list(params: Option<&Value>, resources: &[Resource]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "resources": resources.iter().map(|resource| &resource.definition).collect::<Vec<_>>() }))
}

/// `resources/templates/list`: every resource template, on one page.
pub fn resource_templates_list(params: Option<&Value>, templates: &[ResourceTemplate]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "resourceTemplates": templates.iter().map(|template| &template.definition).collect::<Vec<_>>() }))
}
// ANCHOR_END: resources_list

// ANCHOR: resources_read
/// `resources/read`: what one URI holds, as one entry of `contents`.
pub fn resources_read(params: Option<&Value>, catalog: &Catalog) -> Result<Value, RpcError> {
    // TODO: read `params.uri` (a string, else invalid params). Refuse a `uri` that
    // `is_uri` says cannot be a URI, without repeating it. Then `find_resource`; nothing
    // found is `RpcError::resource_not_found`. Answer `{"contents": [entry]}`, an
    // array of one entry (`ResourceContents::entry`, below): the `uri` as asked, and
    // the definition's `mimeType`.
    todo!("read a resource")
    // END TODO
}

/// What `uri` names, with the definition it was found by: the resource with that URI,
/// else what the first template the URI matches answers. `None`: nothing by that URI.
fn find_resource<'a>(uri: &str, catalog: &'a Catalog) -> Option<(&'a Value, ResourceContents)> {
    // TODO: the resource in `catalog.resources` whose `uri` is exactly `uri`: its
    // definition and what its `read` returns. Else, the first template in
    // `catalog.resource_templates` whose `uriTemplate` matches (`match_template`): its
    // definition and what its `read` returns for those variables (`None` is "nothing
    // by that URI"). Else `None`.
    todo!("find what a URI names")
    // END TODO
}

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
        // TODO: `{"uri": ..., "mimeType": ...}` (no `mimeType` member when there is
        // none), then `text` for text, or `blob` for bytes, in base64 (`base64` below).
        todo!("one entry of contents")
        // END TODO
    }
}
// ANCHOR_END: resources_read

// ANCHOR: match_template
/// Match `uri` against a template made of literal text and `{name}` variables, such as
/// `orders://{orderId}`: the value of every variable, or `None` when the URI does not
/// have the template's form. A value is what RFC 6570 expands `{name}` to (section
/// 3.2.2): one or more unreserved characters or %-escapes, so it never holds a `/`.
fn match_template(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    // TODO: walk the template. Literal text must be in `uri` exactly; each `{name}`
    // takes the longest run of characters a value may hold (ASCII letters and digits,
    // and `-._~%`), at least one. The whole URI must be used up. Collect each name
    // with its value; `None` when the URI does not have the template's form.
    todo!("match a URI template")
    // END TODO
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
fn base64(bytes: &[u8]) -> String {
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
