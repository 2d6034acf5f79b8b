//! Prompts, the server's side (chapter 12). YOUR PROMPTS, in main.rs, says what there is;
//! this file lists them (`prompts/list`) and fills one in (`prompts/get`): the arguments
//! checked against what the prompt declares, then its messages
//! (`2025-11-25/server/prompts.mdx`).

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
    // Every way to get this wrong is invalid params, -32602, and the message says which
    // (`2025-11-25/server/prompts.mdx`, Error Handling): the method exists even when the
    // prompt does not, and a prompt's refusal is the host's to show, not a model's to read.
    let prompt = prompts
        .iter()
        .find(|prompt| prompt.definition["name"] == name)
        .ok_or_else(|| RpcError::invalid_params(&format!("unknown prompt \"{}\"", echo(name))))?;
    let arguments = prompt_arguments(&prompt.definition, params.and_then(|p| p.get("arguments")))?;
    let messages = (prompt.get)(&arguments).map_err(|problem| RpcError::invalid_params(&problem))?;
    Ok(json!({ "messages": messages }))
}

/// The arguments of a `prompts/get`, checked against the prompt's definition: the values
/// the prompt's function gets.
fn prompt_arguments(definition: &Value, arguments: Option<&Value>) -> Result<BTreeMap<String, String>, RpcError> {
    // An object whose members are arguments the prompt lists, each a string, with every
    // required one there. An empty string counts as not given: a host may send one for a
    // field the user left empty.
    let no_arguments = Map::new();
    let given = match arguments {
        None => &no_arguments,
        Some(Value::Object(given)) => given,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let listed: Vec<&Value> = definition["arguments"].as_array().into_iter().flatten().collect();
    let names: Vec<&str> = listed.iter().filter_map(|argument| argument["name"].as_str()).collect();
    let mut values = BTreeMap::new();
    for (name, value) in given {
        if !names.contains(&name.as_str()) {
            let takes = if names.is_empty() { "none".to_string() } else { names.join(", ") };
            return Err(RpcError::invalid_params(&format!(
                "unknown argument \"{}\"; this prompt takes {takes}",
                echo(name)
            )));
        }
        let Some(value) = value.as_str() else {
            return Err(RpcError::invalid_params(&format!("argument `{name}` must be a string")));
        };
        if !value.is_empty() {
            values.insert(name.clone(), value.to_string());
        }
    }
    for argument in listed.iter().filter(|argument| argument["required"] == true) {
        let name = argument["name"].as_str().unwrap_or_default();
        if !values.contains_key(name) {
            return Err(RpcError::invalid_params(&format!("missing required argument `{name}`")));
        }
    }
    Ok(values)
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
    // What ends a line, for a reader of text (Unicode's mandatory breaks: line feed,
    // carriage return, vertical tab, form feed, next line, line and paragraph separators).
    const LINE_BREAKS: &[char] = &['\n', '\r', '\u{b}', '\u{c}', '\u{85}', '\u{2028}', '\u{2029}'];
    // Every line starts with "> ", at every break a reader honours, not only `\n`.
    let lines: Vec<String> =
        text.trim().replace("\r\n", "\n").split(LINE_BREAKS).map(|line| format!("> {line}")).collect();
    lines.join("\n")
}
// ANCHOR_END: quote_as_theirs
