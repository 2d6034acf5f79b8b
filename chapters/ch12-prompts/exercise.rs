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

use crate::Prompt;
use crate::jsonrpc::{RpcError, echo};
use crate::mcp::{Content, check_cursor};

// ANCHOR: prompts_list
/// `prompts/list`: every prompt, on one page.
pub fn prompts_list(params: Option<&Value>, prompts: &[Prompt]) -> Result<Value, RpcError> {
    check_cursor(params)?;
    Ok(json!({ "prompts": prompts.iter().map(|prompt| &prompt.definition).collect::<Vec<_>>() }))
}
// ANCHOR_END: prompts_list

// ANCHOR: prompts_get
/// `prompts/get`: find the prompt by its name, check the arguments, answer its messages.
/// Every way to get this wrong is invalid params, -32602 (`2025-11-25/server/prompts.mdx`,
/// Error Handling), and the message says which.
pub fn prompts_get(params: Option<&Value>, prompts: &[Prompt]) -> Result<Value, RpcError> {
    // TODO: `params.name`, a string, names the prompt (else invalid params); a name
    // no prompt has is invalid params too, the name `quoted`. Check the arguments
    // with `prompt_arguments`, run the prompt's `get`, and answer `{"messages": ...}`.
    // Its `Err` sentence is invalid params as well.
    todo!("get a prompt")
    // END TODO
}

/// The arguments of a `prompts/get`, checked against the prompt's definition: an object
/// whose members are arguments the prompt lists, each a string, with every required one
/// there. An empty string counts as not given: a host may send one for a field the user
/// left empty.
fn prompt_arguments(definition: &Value, arguments: Option<&Value>) -> Result<BTreeMap<String, String>, RpcError> {
    // TODO: `arguments` may be absent (none given) or an object; anything else is
    // invalid params. Each member must be an argument the definition lists (else
    // invalid params, naming the argument with `quoted` and the ones it takes) and
    // a string (else invalid params); keep the non-empty ones. Then every argument
    // the definition marks `"required": true` must be among those kept.
    todo!("check a prompt's arguments")
    // END TODO
}

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
// ANCHOR_END: prompts_get
