//! Tools (chapters 3 to 6, and 14's that work in steps): what a tool is, `tools/list`,
//! and what `tools/call` checks before a tool runs: the tool the call names, and its
//! arguments, against the tool's `inputSchema`. YOUR TOOLS, in main.rs, says which
//! tools there are.

use serde_json::{Map, Value, json};

use crate::jsonrpc::{RpcError, echo};
use crate::mcp::{ToolResult, check_cursor};
use crate::streaming::Call;
use crate::tools_off::ToolsOff;

// ANCHOR: tool
/// A tool: its definition, as `tools/list` shows it, and the function `tools/call` runs.
pub struct Tool {
    pub definition: Value,
    pub run: Run,
}

/// How a tool runs.
pub enum Run {
    /// At once: it has nothing to say before its result.
    Quick(fn(&Map<String, Value>) -> ToolResult),
    /// In steps that take time: its `Call` reports progress and log messages on the
    /// way, and says when to stop (the client cancelled, or time ran out).
    Steps(fn(&Map<String, Value>, &mut Call) -> ToolResult),
}

impl Tool {
    /// Its name, as a `tools/call` names it.
    pub fn name(&self) -> &str {
        self.definition["name"].as_str().unwrap_or_default()
    }
}
// ANCHOR_END: tool

// ANCHOR: tools_list
/// `tools/list`: on one page, every tool the caller `may_call` (chapter 18: what its
/// token's scopes allow; every tool, when the server asks for no token), but those an
/// operator switched off (chapter 17, tools_off.rs).
pub fn tools_list(
    params: Option<&Value>,
    tools: &[Tool],
    off: &ToolsOff,
    may_call: impl Fn(&str) -> bool,
) -> Result<Value, RpcError> {
    check_cursor(params)?;
    let off = off.snapshot();
    let listed = tools.iter().filter(|tool| may_call(tool.name()) && !off.contains(tool.name()));
    Ok(json!({ "tools": listed.map(|tool| &tool.definition).collect::<Vec<_>>() }))
}
// ANCHOR_END: tools_list

// ANCHOR: find_tool
/// The tool a `tools/call` names, and its `arguments`: an object, or none at all (the
/// tool then runs with none, as if sent `{}`). A name that is no string or no tool's,
/// and `arguments` that are not an object, are invalid params. A tool switched off
/// (chapter 17) is no tool's: the caller learns nothing it would not from `tools/list`.
pub fn find_tool<'a>(
    params: Option<&Value>,
    tools: &'a [Tool],
    off: &ToolsOff,
) -> Result<(&'a Tool, Map<String, Value>), RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None => Map::new(),
        Some(Value::Object(arguments)) => arguments.clone(),
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let tool = tools
        .iter()
        .find(|tool| tool.name() == name && !off.is_off(name))
        .ok_or_else(|| RpcError::invalid_params(&format!("unknown tool \"{}\"", echo(name))))?;
    Ok((tool, arguments))
}

/// Arguments that break the tool's schema are the model's mistake, and the model can
/// fix it: a failed result saying what to fix, not a protocol error (2025-11-25).
/// `None` when they fit.
pub fn arguments_refused(tool: &Tool, arguments: &Map<String, Value>) -> Option<ToolResult> {
    let problems = check_arguments(&tool.definition["inputSchema"], arguments);
    let name = tool.name();
    (!problems.is_empty()).then(|| {
        ToolResult::error(format!(
            "Invalid arguments for {name}: {}. Correct the arguments and call {name} again.",
            problems.join("; ")
        ))
    })
}
// ANCHOR_END: find_tool

// ANCHOR: check_arguments
/// Check arguments against a tool's `inputSchema`, and say what is wrong in words a
/// model can act on. It knows the keywords this server's schemas use: `required` and
/// `additionalProperties: false`, and per property `type`, `enum`, `minimum` and
/// `maximum`. (A full JSON Schema validator knows them all; chapter 6's test uses one.)
fn check_arguments(schema: &Value, arguments: &Map<String, Value>) -> Vec<String> {
    // A request may hold thousands of wrong arguments. The answer lists the first few
    // and counts the rest, and repeats each name through `echo`: whatever the request,
    // the answer stays a few lines long.
    const LISTED: usize = 5;
    let mut problems = Vec::new();
    let mut unlisted = 0;
    let mut note = |problem: String| if problems.len() < LISTED { problems.push(problem) } else { unlisted += 1 };
    let required = schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str);
    for name in required.filter(|name| !arguments.contains_key(*name)) {
        note(format!("`{}` is missing", echo(name)));
    }
    for (name, value) in arguments {
        let property = schema["properties"].get(name);
        let name = echo(name); // the client chose it
        let Some(property) = property else {
            if schema["additionalProperties"] == false {
                note(format!("`{name}` is not an argument of this tool"));
            }
            continue;
        };
        if let Some(expected) = property["type"].as_str()
            && !has_type(value, expected)
        {
            note(format!("`{name}` must be of type {expected}, not {}", echo(&value.to_string())));
            continue;
        }
        if let Some(allowed) = property["enum"].as_array()
            && !allowed.contains(value)
        {
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            note(format!("`{name}` must be one of {}, not {}", allowed.join(", "), echo(&value.to_string())));
        }
        if let (Some(number), Some(minimum)) = (value.as_f64(), property["minimum"].as_f64())
            && number < minimum
        {
            note(format!("`{name}` must be at least {}, not {}", property["minimum"], echo(&value.to_string())));
        }
        if let (Some(number), Some(maximum)) = (value.as_f64(), property["maximum"].as_f64())
            && number > maximum
        {
            note(format!("`{name}` must be at most {}, not {}", property["maximum"], echo(&value.to_string())));
        }
    }
    if unlisted > 0 {
        problems.push(format!("and {unlisted} more"));
    }
    problems
}

/// JSON Schema's types. An integer is a number without a fractional part, so `2.0` is one.
fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}
// ANCHOR_END: check_arguments
