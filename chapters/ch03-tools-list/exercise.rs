// TODO(exercise): this file is your copy of chapter 3's server, with the piece the
// chapter adds left for you to write. Each part sits between a `// TODO` line and its
// `// END TODO`: replace what is between them, and leave the rest as it is.
// Check your work: `cargo run -- check 3`. The solution: `main.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_variables)]
// END TODO

//! Chapter 3: `tools/list`.
//!
//! Chapter 2's handshake, plus the server's first tools, and the method that lists them:
//! - `initialize` now announces the capability `tools: {}`;
//! - `tools/list` answers every tool's definition: its name, a description the model
//!   reads to decide when to call it, and a JSON Schema of its arguments;
//! - the tools are defined once, in `tools()`, near the end of this file.
//!
//! The list fits on one page, so the server hands out no cursor, and any cursor a
//! client sends is one it did not issue: `-32602`. Calling a tool comes in chapter 4.
//! Read it top to bottom: the HTTP layer, then the JSON-RPC layer, then the methods.

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use serde::Serialize;
use serde_json::{Map, Value, json};

#[derive(Parser)]
#[command(about = "Chapter 3: tools/list")]
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
        _ => Err(RpcError::method_not_found(method)),
    }
}
// ANCHOR_END: dispatch

// ANCHOR: initialize
/// The protocol revisions this server speaks, newest first.
const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Who this server is, for `serverInfo`. The version is the chapter's.
const SERVER_NAME: &str = "pingme";
const SERVER_VERSION: &str = "0.3.0";

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
        // TODO: tell the client what it may ask of this server, and promise nothing it cannot keep.
        // Proven by "`initialize` now announces tools".
        "capabilities": {},
        // END TODO
        "serverInfo": { "name": SERVER_NAME, "version": SERVER_VERSION },
        "instructions": INSTRUCTIONS,
    }))
}
// ANCHOR_END: initialize

// ANCHOR: tools_list
/// `tools/list`: every tool, on one page.
fn tools_list(params: Option<&Value>) -> Result<Value, RpcError> {
    // TODO: every tool on one page, and a refusal for a cursor this server never handed out.
    // Proven by "`tools/list` answers every tool on one page" and
    // "A cursor the server did not issue is invalid params".
    todo!("list the tools")
    // END TODO
}
// ANCHOR_END: tools_list

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
/// A tool: its definition, as `tools/list` shows it. (Chapter 4 adds the function
/// that runs it.)
struct Tool {
    definition: Value,
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
        },
    ]
}
// ANCHOR_END: tools
