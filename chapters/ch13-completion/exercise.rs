//! Completion, the server's side (chapter 13): `completion/complete` answers suggestions
//! for a prompt's argument or a template's variable while the user types, from YOUR
//! COMPLETIONS in main.rs (`2025-11-25/server/utilities/completion.mdx`).

// TODO(exercise): this file is your copy of `completion.rs`, the piece chapter 13 adds to the
// server, with its decisions left for you to write. Each part sits between a `// TODO`
// line and its `// END TODO`: replace what is between them, and leave the rest as it is.
// The rest of the server is the chapter's own files, as `main.rs`'s map lists them: the
// exercise binary is that server with this file in place of `completion.rs`.
// Check your work: `cargo run -- check 13`. The solution: `completion.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_imports, unused_variables, unreachable_code)]
// END TODO

use serde_json::{Value, json};

use crate::jsonrpc::{RpcError, echo};
use crate::prompts::Prompt;
use crate::resources::ResourceTemplate;

// ANCHOR: max_completions
/// At most this many values in one answer (`2025-11-25/server/utilities/completion.mdx`,
/// Completion Results: "Maximum 100 items per response").
const MAX_COMPLETIONS: usize = 100;
// ANCHOR_END: max_completions

// ANCHOR: completion_complete
/// `completion/complete`: what the user may mean by what they typed into one argument
/// of a prompt (`ref/prompt`, by its name) or one variable of a resource template
/// (`ref/resource`, by its `uriTemplate`). Every mistake is invalid params, -32602
/// (`2025-11-25/server/utilities/completion.mdx`, Error Handling). The suggestions come
/// from `completions`, YOUR COMPLETIONS' function, which `main` hands down.
pub fn completion_complete(
    params: Option<&Value>,
    prompts: &[Prompt],
    templates: &[ResourceTemplate],
    completions: fn(&str, &str) -> Vec<String>,
) -> Result<Value, RpcError> {
    let params = params.unwrap_or(&Value::Null);
    // TODO: the argument being filled in (its `name`, and the `value` typed so far), and whether the
    // reference takes it. Proven by "An argument the prompt does not take", "An argument without a
    // value" and "Free text: nothing to suggest".
    let (name, typed) = ("", "");
    todo!("the argument to complete");
    // END TODO
    // `context.arguments`, the values already chosen for the other arguments, may
    // narrow a suggestion down; this server's completions need none of them.
    let values = completions(name, typed);
    // TODO: the suggestions, and what the client should know of the ones not sent. Proven by "A
    // prompt's argument, as the user types it" and "Nothing typed yet: every value".
    todo!("the answer")
    // END TODO
}

/// What a completion's `ref` names, and the names of its arguments: a prompt and its
/// `arguments`, or a resource template and its variables.
fn arguments_of<'a>(
    reference: &Value,
    prompts: &'a [Prompt],
    templates: &'a [ResourceTemplate],
) -> Result<(&'static str, Vec<&'a str>), RpcError> {
    // TODO: what a reference names, and the names of the arguments it takes; a reference to nothing
    // this server has is the client's mistake. Proven by "A resource is not a template" and "A `ref`
    // is read by its `type`".
    todo!("what a reference names")
    // END TODO
}
// ANCHOR_END: completion_complete

// ANCHOR: template_variables

/// The names of a template's variables, in order: `orders://{orderId}` -> `orderId`.
fn template_variables(template: &str) -> Vec<&str> {
    template.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(name, _)| name).collect()
}
// ANCHOR_END: template_variables
