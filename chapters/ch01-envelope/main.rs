//! Chapter 1: the JSON-RPC envelope.
//!
//! One endpoint, `POST /mcp`, that reads one JSON-RPC message and tells apart the
//! three kinds a client can send:
//! - a request (`method` and `id`): answered with a response carrying the same id;
//! - a notification (`method`, no `id`): never answered, so HTTP `202` and no body;
//! - a response to a request of ours (`result` or `error`, no `method`): also `202`.
//!
//! No MCP method exists yet, so every request is answered "method not found".
//! Read it top to bottom: the HTTP layer, then the JSON-RPC layer, then the methods.

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Parser)]
#[command(about = "Chapter 1: the JSON-RPC envelope")]
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
    // ANCHOR: kinds
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
    // ANCHOR_END: kinds
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
// MCP layer: the methods. None yet.
// ---------------------------------------------------------------------------

// ANCHOR: dispatch
/// Answer a request. Chapter 2 adds the first methods here.
fn dispatch(method: &str, _params: Option<&Value>) -> Result<Value, RpcError> {
    Err(RpcError::method_not_found(method))
}
// ANCHOR_END: dispatch
