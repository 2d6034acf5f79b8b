//! Prompts, the server's side (chapter 12). YOUR PROMPTS, in main.rs, says what there is;
//! this file lists them (`prompts/list`) and fills one in (`prompts/get`): the arguments
//! checked against what the prompt declares, then its messages
//! (`2025-11-25/server/prompts.mdx`).

// TODO(exercise): this file is your copy of `prompts.rs`, the piece chapter 12 adds to the
// server, with its decisions left for you to write. Each part sits between a `// TODO`
// line and its `// END TODO`: replace what is between them, and leave the rest as it is.
// The rest of the server is the chapter's own files, as `main.rs`'s map lists them: the
// exercise binary is that server with this file in place of `prompts.rs`.
// Check your work: `cargo run -- check 12`. The solution: `prompts.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_imports, unused_variables)]
// END TODO

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{RpcError, echo};
use crate::mcp::{Content, check_cursor};

// ANCHOR: prompt
/// A prompt: its entry in `prompts/list`, and the function `prompts/get` runs.
pub struct Prompt {
    pub definition: Value,
    pub get: fn(&BTreeMap<String, String>) -> PromptResult,
}

/// What a prompt's function returns: its messages, or why it refuses the arguments.
pub type PromptResult = Result<Vec<PromptMessage>, String>;
// ANCHOR_END: prompt

// ANCHOR: prompts_list
/// `prompts/list`: every prompt, on one page.
pub fn prompts_list(params: Option<&Value>, prompts: &[Prompt]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "prompts": prompts.iter().map(|prompt| &prompt.definition).collect::<Vec<_>>() }))
}
// ANCHOR_END: prompts_list

// ANCHOR: prompts_get
/// `prompts/get`: find the prompt by its name, check the arguments, answer its messages.
pub fn prompts_get(params: Option<&Value>, prompts: &[Prompt]) -> Result<Value, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
    // TODO: the prompt's messages, and every way this request can still be wrong, said as
    // this method says it. Proven by "A prompt it does not have" and "A value the prompt refuses".
    todo!("get a prompt")
    // END TODO
}

/// The arguments of a `prompts/get`, checked against the prompt's definition: the values
/// the prompt's function gets.
fn prompt_arguments(definition: &Value, arguments: Option<&Value>) -> Result<BTreeMap<String, String>, RpcError> {
    // TODO: the arguments this prompt takes, as its definition lists them, and what a host sends for a
    // field left empty. Proven by "An argument the prompt does not take", "An empty optional argument is
    // no argument" and "A required argument missing".
    todo!("check a prompt's arguments")
    // END TODO
}
// ANCHOR_END: prompts_get

// ANCHOR: prompt_message
/// One message of a prompt: who says it, `user` or `assistant`, and one content block.
#[derive(Debug, Serialize)]
pub struct PromptMessage {
    role: &'static str,
    content: Content,
}

impl PromptMessage {
    /// A message in the user's name: what the user would have typed, or attached.
    pub fn user(content: Content) -> PromptMessage {
        PromptMessage { role: "user", content }
    }
}
// ANCHOR_END: prompt_message

// ANCHOR: quote_as_theirs
/// Someone else's text, quoted for a prompt's instructions, so that no part of it can
/// pass for a line of the prompt's own (`2025-11-25/server/prompts.mdx`, Security).
/// `reply_to_customer`, on the porch, quotes the customer's question with it.
pub fn quote_as_theirs(text: &str) -> String {
    // TODO: `text` marked line by line as a quotation (`reply_to_customer` tells the model how), so
    // that no part of it reads as a line of the prompt's own. Proven by "A customer's words are
    // quoted, as theirs" and "A line break of another kind starts a quoted line too".
    todo!("quote someone else's words")
    // END TODO
}
// ANCHOR_END: quote_as_theirs
