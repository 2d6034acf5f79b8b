//! Completion, the server's side (chapter 13): `completion/complete` answers suggestions
//! for a prompt's argument or a template's variable while the user types, from YOUR
//! COMPLETIONS in main.rs (`2025-11-25/server/utilities/completion.mdx`).

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
    // The argument must say which one and what is typed; the reference must take it. A
    // taken argument with nothing to suggest is an empty list, not an error.
    let (Some(name), Some(typed)) = (params["argument"]["name"].as_str(), params["argument"]["value"].as_str()) else {
        return Err(RpcError::invalid_params("`argument` must have a `name` and a `value`, both strings"));
    };
    let (kind, takes) = arguments_of(&params["ref"], prompts, templates)?;
    if !takes.contains(&name) {
        let takes = if takes.is_empty() { "none".to_string() } else { takes.join(", ") };
        return Err(RpcError::invalid_params(&format!(
            "unknown argument \"{}\"; this {kind} takes {takes}",
            echo(name)
        )));
    }
    // `context.arguments`, the values already chosen for the other arguments, may
    // narrow a suggestion down; this server's completions need none of them.
    let values = completions(name, typed);
    // All of them counted, at most the cap sent, and whether more exist (Completion
    // Results): a host can show "2 of 12".
    let total = values.len();
    let values: Vec<String> = values.into_iter().take(MAX_COMPLETIONS).collect();
    Ok(json!({ "completion": { "values": values, "total": total, "hasMore": total > MAX_COMPLETIONS } }))
}

/// What a completion's `ref` names, and the names of its arguments: a prompt and its
/// `arguments`, or a resource template and its variables.
fn arguments_of<'a>(
    reference: &Value,
    prompts: &'a [Prompt],
    templates: &'a [ResourceTemplate],
) -> Result<(&'static str, Vec<&'a str>), RpcError> {
    // The `type` says which member names the thing; a template is named by its exact
    // `uriTemplate` (a resource's URI has no variables to complete).
    match (reference["type"].as_str(), reference["name"].as_str(), reference["uri"].as_str()) {
        (Some("ref/prompt"), Some(name), _) => {
            let prompt = prompts
                .iter()
                .find(|prompt| prompt.definition["name"] == name)
                .ok_or_else(|| RpcError::invalid_params(&format!("unknown prompt \"{}\"", echo(name))))?;
            let arguments = prompt.definition["arguments"].as_array().into_iter().flatten();
            Ok(("prompt", arguments.filter_map(|argument| argument["name"].as_str()).collect()))
        }
        (Some("ref/resource"), _, Some(uri)) => {
            let template = templates
                .iter()
                .find(|template| template.definition["uriTemplate"] == uri)
                .ok_or_else(|| RpcError::invalid_params(&format!("no resource template \"{}\"", echo(uri))))?;
            Ok(("template", template_variables(template.definition["uriTemplate"].as_str().unwrap_or_default())))
        }
        _ => Err(RpcError::invalid_params("`ref` must be a ref/prompt with a `name`, or a ref/resource with a `uri`")),
    }
}
// ANCHOR_END: completion_complete

// ANCHOR: template_variables

/// The names of a template's variables, in order: `orders://{orderId}` -> `orderId`.
fn template_variables(template: &str) -> Vec<&str> {
    template.split('{').skip(1).filter_map(|rest| rest.split_once('}')).map(|(name, _)| name).collect()
}
// ANCHOR_END: template_variables
