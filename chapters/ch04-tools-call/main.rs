//! Chapter 4: `tools/call`.
//!
//! Chapter 3's tools, now callable:
//! - `tools/call` names a tool and passes its `arguments` (which may be left out);
//!   the server finds the tool and runs it;
//! - a tool answers with content blocks: `PingME` with the text `BISMILLAH`,
//!   `calculate_overtime` with the pay it computed;
//! - each tool is still defined once, in `tools()`: its definition and the function
//!   that runs it sit side by side.
//!
//! An unknown tool, a missing `name` or `arguments` that are not an object are
//! invalid params (`-32602`). Chapter 5 looks at errors properly.
//! Read it top to bottom: the HTTP layer, then the JSON-RPC layer, then the methods.

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

#[derive(Parser)]
#[command(about = "Chapter 4: tools/call")]
struct Args {
    /// Address to listen on. Port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: String,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    http::serve(&args.bind, Config::default(), handle)
}

// ---------------------------------------------------------------------------
// HTTP layer: one path, one method.
// ---------------------------------------------------------------------------

// ANCHOR: handle
/// The whole server as a pure function: an HTTP request in, an HTTP response out.
fn handle(request: &Request) -> Response {
    if request.path != "/mcp" {
        return Response::empty(404);
    }
    if request.method != "POST" {
        // 405 tells a client "this endpoint exists, use POST"; `Allow` says which.
        return Response::empty(405).with_header("Allow", "POST");
    }
    match parse_message(&request.body) {
        // Not a message at all: the error goes back with the body's id when one could be
        // read, else with `"id": null` (see `readable_id`).
        Err(error) => reply(400, readable_id(&request.body), Err(error)),
        Ok(Message::Request { id, method, params }) => reply(200, id, dispatch(&method, params.as_ref())),
        // Nobody waits for an answer to these: acknowledge, with no body.
        Ok(Message::Notification { method }) => {
            eprintln!("notification: {:?}", echo(&method));
            Response::empty(202)
        }
        Ok(Message::Response) => Response::empty(202),
    }
}
// ANCHOR_END: handle

// ---------------------------------------------------------------------------
// JSON-RPC layer: the envelope every message travels in.
// ---------------------------------------------------------------------------

// ANCHOR: message
/// The three kinds of message a client can POST.
#[derive(Debug)]
enum Message {
    /// Has an `id`: the client waits for a response with that same id.
    Request { id: Value, method: String, params: Option<Value> },
    /// Has no `id` member at all: fire and forget.
    Notification { method: String },
    /// A client's answer to a request the server sent. This server sends none, so
    /// nothing is waiting for it.
    Response,
}

/// A JSON-RPC error object: `{"code": -32601, "message": "..."}`.
#[derive(Debug, Serialize)]
struct RpcError {
    code: i64,
    message: String,
}

impl RpcError {
    fn parse_error(detail: &str) -> RpcError {
        RpcError { code: -32700, message: format!("Parse error: {detail}") }
    }

    fn invalid_request(detail: &str) -> RpcError {
        RpcError { code: -32600, message: format!("Invalid Request: {detail}") }
    }

    fn method_not_found(method: &str) -> RpcError {
        RpcError { code: -32601, message: format!("Method not found: {}", echo(method)) }
    }

    fn invalid_params(detail: &str) -> RpcError {
        RpcError { code: -32602, message: format!("Invalid params: {detail}") }
    }
}
/// Something the client sent, for an error message or the log: at most 80 characters.
/// An answer never repeats a long input back: a 4 MiB name is answered in a line, not
/// in 4 MiB (or many times that once its control characters are escaped).
fn echo(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
// ANCHOR_END: message

// ANCHOR: parse
/// Read a body as one JSON-RPC message, or say why it is not one.
fn parse_message(body: &[u8]) -> Result<Message, RpcError> {
    let json: Value = serde_json::from_slice(body).map_err(|e| RpcError::parse_error(&e.to_string()))?;
    // One object per message. (2025-03-26 allowed an array, a "batch"; the next
    // revision removed it again, so an array is not a message.)
    let Value::Object(object) = json else {
        return Err(RpcError::invalid_request("expected one JSON object"));
    };
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(RpcError::invalid_request(r#"`jsonrpc` must be "2.0""#));
    }
    // MCP narrows JSON-RPC's "object or array" to an object:
    // `params?: { [key: string]: unknown }`.
    let params = match object.get("params") {
        None | Some(Value::Object(_)) => object.get("params").cloned(),
        Some(_) => return Err(RpcError::invalid_request("`params` must be an object")),
    };
    // Absent is not the same as null: no `id` member makes a notification, while
    // `"id": null` is a request with an id nobody could answer to.
    let id = object.get("id").map(valid_id).transpose()?;

    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Message::Request { id, method: method.clone(), params }),
        (Some(Value::String(method)), None) => Ok(Message::Notification { method: method.clone() }),
        (Some(_), _) => Err(RpcError::invalid_request("`method` must be a string")),
        (None, Some(_)) if is_response(&object) => Ok(Message::Response),
        // An error response may leave its `id` out (the schema's `JSONRPCErrorResponse`
        // has `id?: RequestId`): its sender could not read the id of what it answers.
        (None, None) if is_response(&object) && object.contains_key("error") => Ok(Message::Response),
        (None, _) => {
            Err(RpcError::invalid_request("a message has a `method`, or a `result` with an `id`, or an `error`"))
        }
    }
}

/// An id is a string or an integer, and comes back exactly as it was sent: `"7"`
/// stays a string, `7` a number.
fn valid_id(id: &Value) -> Result<Value, RpcError> {
    match id {
        Value::String(_) => Ok(id.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(id.clone()),
        _ => Err(RpcError::invalid_request("`id` must be a string or an integer")),
    }
}

/// A response has exactly one of `result` and `error`.
fn is_response(object: &Map<String, Value>) -> bool {
    object.contains_key("result") != object.contains_key("error")
}

/// The id an error about `body` goes back with. Error responses "MUST include the same
/// ID as the request they correspond to (except in error cases where the ID could not
/// be read due a malformed request)": so the body's own id whenever it can be read,
/// that is when the body is a JSON object, not a response (a response's id names a
/// request of the server's, not one of the client's), with a valid `id`. Otherwise
/// `Value::Null`: no id could be read (chapter 1, "The choices this chapter makes").
fn readable_id(body: &[u8]) -> Value {
    let Ok(Value::Object(object)) = serde_json::from_slice(body) else {
        return Value::Null;
    };
    if object.contains_key("result") || object.contains_key("error") {
        return Value::Null;
    }
    object.get("id").and_then(|id| valid_id(id).ok()).unwrap_or(Value::Null)
}
// ANCHOR_END: parse

// ANCHOR: reply
/// The response envelope. Field order is the order on the wire:
/// `{"jsonrpc": "2.0", "id": ..., "result": ...}` or `{..., "error": ...}`.
#[derive(Serialize)]
struct RpcResponse {
    jsonrpc: &'static str,
    /// The request's id; `null` when it could not be read (chapter 1).
    id: Value,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Result(Value),
    Error(RpcError),
}

/// Wrap a method's outcome in the envelope, with the request's own id.
fn reply(status: u16, id: Value, outcome: Result<Value, RpcError>) -> Response {
    let outcome = match outcome {
        Ok(result) => Outcome::Result(result),
        Err(error) => Outcome::Error(error),
    };
    let body = serde_json::to_string(&RpcResponse { jsonrpc: "2.0", id, outcome }).expect("serializable");
    Response::json(status, body)
}
// ANCHOR_END: reply

// ---------------------------------------------------------------------------
// MCP layer: the methods.
// ---------------------------------------------------------------------------

// ANCHOR: dispatch
/// Answer a request by its method.
fn dispatch(method: &str, params: Option<&Value>) -> Result<Value, RpcError> {
    match method {
        "initialize" => initialize(params),
        "ping" => Ok(json!({})),
        "tools/list" => tools_list(params),
        "tools/call" => tools_call(params),
        _ => Err(RpcError::method_not_found(method)),
    }
}
// ANCHOR_END: dispatch

// ANCHOR: initialize
/// The protocol revisions this server speaks, newest first.
const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Who this server is, for `serverInfo`. The version is the chapter's.
const SERVER_NAME: &str = "pingme";
const SERVER_VERSION: &str = "0.4.0";

/// The handshake: agree on a revision and say what this server can do.
fn initialize(params: Option<&Value>) -> Result<Value, RpcError> {
    let requested = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`protocolVersion` must be a string"))?;
    // Negotiation: answer the client's revision when we speak it, else our newest.
    // Never an error: the client reads our answer and decides whether to go on.
    let version = if SUPPORTED_VERSIONS.contains(&requested) { requested } else { SUPPORTED_VERSIONS[0] };
    Ok(json!({
        "protocolVersion": version,
        // "I have tools": the client may call `tools/list` and `tools/call`. No
        // `listChanged`: this server's tools never change while it runs.
        "capabilities": { "tools": {} },
        "serverInfo": { "name": SERVER_NAME, "version": SERVER_VERSION },
        "instructions": INSTRUCTIONS,
    }))
}
// ANCHOR_END: initialize

// ANCHOR: tools_list
/// `tools/list`: every tool, on one page.
fn tools_list(params: Option<&Value>) -> Result<Value, RpcError> {
    // Lists may come in pages: a result with `nextCursor` asks the client to send that
    // cursor back for the next page. This server's list is one page, so it never hands
    // out a cursor, and any cursor it receives is one it did not issue.
    match params.and_then(|p| p.get("cursor")) {
        None => Ok(json!({ "tools": tools().into_iter().map(|tool| tool.definition).collect::<Vec<_>>() })),
        Some(Value::String(cursor)) => Err(RpcError::invalid_params(&format!(
            "unknown cursor \"{}\": this server issues no cursors",
            echo(cursor)
        ))),
        Some(_) => Err(RpcError::invalid_params("`cursor` must be a string")),
    }
}
// ANCHOR_END: tools_list

// ANCHOR: tools_call
/// `tools/call`: find the tool by its name and run it with the arguments.
fn tools_call(params: Option<&Value>) -> Result<Value, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`name` must be a string"))?;
    // `arguments` may be left out; the tool then runs with none, as if sent `{}`.
    let no_arguments = Map::new();
    let arguments = match params.and_then(|p| p.get("arguments")) {
        None => &no_arguments,
        Some(Value::Object(arguments)) => arguments,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let tool = tools()
        .into_iter()
        .find(|tool| tool.definition["name"] == name)
        .ok_or_else(|| RpcError::invalid_params(&format!("unknown tool \"{}\"", echo(name))))?;
    let result = (tool.run)(arguments);
    Ok(serde_json::to_value(result).expect("a tool result always serializes"))
}
// ANCHOR_END: tools_call

// ANCHOR: result
/// What a tool hands back (`CallToolResult`): content blocks, and whether the tool
/// failed. A failure is still a result, not a JSON-RPC error: the model reads it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult {
    content: Vec<Content>,
    /// Left out when false, which is what a client assumes when it is absent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// One content block, tagged by its `type`. The protocol has five kinds (text, image,
/// audio, resource_link, resource); these tools only need text.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content {
    Text { text: String },
}

impl ToolResult {
    /// A result of one text block.
    fn text(text: impl Into<String>) -> ToolResult {
        ToolResult { content: vec![Content::Text { text: text.into() }], is_error: false }
    }

    /// A failed call, with a text saying what went wrong.
    fn error(text: impl Into<String>) -> ToolResult {
        ToolResult { is_error: true, ..ToolResult::text(text) }
    }
}
// ANCHOR_END: result

// ---------------------------------------------------------------------------
// The tools: defined once, here.
// ---------------------------------------------------------------------------

// ANCHOR: instructions
/// What the model should know of this server as a whole, beyond each tool's own
/// description. `initialize` sends it as `instructions`, and a host may put it in the
/// model's system prompt. Like a description it is a hint: it asks, it cannot make sure.
const INSTRUCTIONS: &str = "The pay rules of this server are one employer's, not the law of any country. \
    When you give the user a pay amount this server computed, say that it is gross pay under these rules.";
// ANCHOR_END: instructions

// ANCHOR: tools
/// A tool: its definition, as `tools/list` shows it, and the function `tools/call` runs.
struct Tool {
    definition: Value,
    run: fn(&Map<String, Value>) -> ToolResult,
}

/// Every tool this server offers. The host hands the definitions to the model, and
/// they are all the model knows of a tool: it calls a tool when the `description`
/// matches what the user asked, and fills in the arguments from `inputSchema`,
/// property descriptions included.
fn tools() -> Vec<Tool> {
    vec![
        Tool {
            definition: json!({
                "name": "PingME",
                "title": "Ping me",
                "description": "Checks that this MCP server is reachable: it answers with the single word \
                    BISMILLAH. Call it when the user asks to ping or test this server or the connection to it. \
                    Do not call it for anything else: it takes no input and returns no information.",
                // No arguments: an object with no properties, and no others allowed.
                "inputSchema": { "type": "object", "additionalProperties": false },
                // Hints for the host, which may skip asking the user before a call that
                // changes nothing (`readOnlyHint`) and reaches nothing outside this
                // server (`openWorldHint`, true when left out).
                "annotations": { "readOnlyHint": true, "openWorldHint": false },
            }),
            run: ping_me,
        },
        Tool {
            definition: json!({
                "name": "calculate_overtime",
                "title": "Calculate overtime pay",
                "description": "Calculates the gross pay for one day's work, overtime included. On a weekday \
                    the first 8 hours are paid at the hourly rate and each further hour at 1.5 times the rate; \
                    every hour on a Saturday is paid at 1.5 times, on a Sunday at 2 times and on a public \
                    holiday at 2.5 times. Call it when the user asks what a day's work pays or how much of it \
                    is overtime. Do not call it for a whole week or month (call it once per day), for salaried \
                    staff, or for taxes and deductions: it computes gross pay only.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "hours": {
                            "type": "number",
                            "minimum": 0,
                            "maximum": 24,
                            "description": "Hours worked on that day, for example 10 or 7.5.",
                        },
                        "rate": {
                            "type": "number",
                            "minimum": 0,
                            "maximum": 1_000_000,
                            "description": "The hourly base rate, in the user's currency, for example 20. \
                                The tool does not convert currencies.",
                        },
                        "dayType": {
                            "type": "string",
                            "enum": ["weekday", "saturday", "sunday", "holiday"],
                            "description": "The kind of day the hours were worked on. Use `holiday` for a \
                                public holiday, whatever day of the week it falls on.",
                        },
                    },
                    "required": ["hours", "rate", "dayType"],
                    "additionalProperties": false,
                },
                "annotations": { "readOnlyHint": true, "openWorldHint": false },
            }),
            run: calculate_overtime,
        },
    ]
}
// ANCHOR_END: tools

// ANCHOR: ping_me
/// `PingME`: the magic word, and nothing else.
fn ping_me(_arguments: &Map<String, Value>) -> ToolResult {
    ToolResult::text("BISMILLAH")
}
// ANCHOR_END: ping_me

// ANCHOR: calculate_overtime
/// `calculate_overtime`'s arguments, read from JSON by serde.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OvertimeArguments {
    hours: f64,
    rate: f64,
    day_type: DayType,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DayType {
    Weekday,
    Saturday,
    Sunday,
    Holiday,
}

/// A day's pay, split into its regular and overtime parts.
#[derive(Debug)]
struct OvertimePay {
    regular_hours: f64,
    overtime_hours: f64,
    overtime_multiplier: f64,
    regular_pay: f64,
    overtime_pay: f64,
    total_pay: f64,
}

fn calculate_overtime(arguments: &Map<String, Value>) -> ToolResult {
    let arguments: OvertimeArguments = match serde_json::from_value(Value::Object(arguments.clone())) {
        Ok(arguments) => arguments,
        Err(error) => return ToolResult::error(format!("Invalid arguments: {}", echo(&error.to_string()))),
    };
    let pay = overtime_pay(&arguments);
    ToolResult::text(format!(
        "{} hours on a {} at {:.2} an hour: {} regular hours pay {:.2}, {} overtime hours at {} times the rate \
         pay {:.2}; {:.2} in total.",
        arguments.hours,
        arguments.day_type.name(),
        arguments.rate,
        pay.regular_hours,
        pay.regular_pay,
        pay.overtime_hours,
        pay.overtime_multiplier,
        pay.overtime_pay,
        pay.total_pay,
    ))
}

/// The pay rules the tool's description promises.
fn overtime_pay(arguments: &OvertimeArguments) -> OvertimePay {
    let OvertimeArguments { hours, rate, day_type } = *arguments;
    // On a weekday the first 8 hours are regular; on other days every hour is overtime.
    let (regular_hours, overtime_multiplier) = match day_type {
        DayType::Weekday => (hours.min(8.0), 1.5),
        DayType::Saturday => (0.0, 1.5),
        DayType::Sunday => (0.0, 2.0),
        DayType::Holiday => (0.0, 2.5),
    };
    let overtime_hours = hours - regular_hours;
    let regular_pay = cents(regular_hours * rate);
    let overtime_pay = cents(overtime_hours * rate * overtime_multiplier);
    OvertimePay {
        regular_hours,
        overtime_hours,
        overtime_multiplier,
        regular_pay,
        overtime_pay,
        total_pay: cents(regular_pay + overtime_pay),
    }
}

/// Round money to whole cents, so that 0.1 + 0.2 shows as 0.3.
fn cents(amount: f64) -> f64 {
    (amount * 100.0).round() / 100.0
}

impl DayType {
    fn name(self) -> &'static str {
        match self {
            DayType::Weekday => "weekday",
            DayType::Saturday => "Saturday",
            DayType::Sunday => "Sunday",
            DayType::Holiday => "public holiday",
        }
    }
}
// ANCHOR_END: calculate_overtime
