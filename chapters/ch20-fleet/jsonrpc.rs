//! The JSON-RPC layer: the envelope every message travels in, at the bottom of the
//! stack. A body is one message, a request (it has an `id`), a notification (no `id`)
//! or a response; a failure is an `RpcError` with its code; `reply` wraps an outcome in
//! the envelope, with the request's own id. It names no other file of the server: only
//! the HTTP base's `Response`, which carries an answer with its status.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::http::Response;

// ANCHOR: message
/// The three kinds of message a client can POST.
#[derive(Debug)]
pub enum Message {
    /// Has an `id`: the client waits for a response with that same id.
    Request { id: Value, method: String, params: Option<Value> },
    /// Has no `id` member at all: fire and forget.
    Notification { method: String, params: Option<Value> },
    /// A client's answer to a request the server sent (chapter 16: a question a call
    /// asked): the question's `id`, and the whole message, `result` or `error`. An
    /// error may come with no `id`, when the client could not read the question's.
    Response { id: Option<Value>, answer: Value },
}

impl Message {
    /// The id to answer with: the request's own, else `null`.
    pub fn id(&self) -> Value {
        match self {
            Message::Request { id, .. } => id.clone(),
            _ => Value::Null,
        }
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request { method, .. } | Message::Notification { method, .. } => Some(method),
            Message::Response { .. } => None,
        }
    }
}

/// A JSON-RPC error object: `{"code": -32601, "message": "..."}`.
#[derive(Debug, Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// Details a client can act on, such as the versions it may retry with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    fn parse_error(detail: &str) -> RpcError {
        RpcError { code: -32700, message: format!("Parse error: {detail}"), data: None }
    }

    pub fn invalid_request(detail: &str) -> RpcError {
        RpcError { code: -32600, message: format!("Invalid Request: {detail}"), data: None }
    }

    pub fn method_not_found(method: &str) -> RpcError {
        RpcError { code: -32601, message: format!("Method not found: {}", echo(method)), data: None }
    }

    pub fn invalid_params(detail: &str) -> RpcError {
        RpcError { code: -32602, message: format!("Invalid params: {detail}"), data: None }
    }

    pub fn header_mismatch(detail: &str) -> RpcError {
        RpcError { code: -32020, message: format!("Header mismatch: {detail}"), data: None }
    }

    /// A revision this server does not speak, with the ones a retry may name instead
    /// (`modern.rs` says which).
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> RpcError {
        let data = json!({ "supported": supported, "requested": echo(requested) });
        RpcError { code: -32022, message: "Unsupported protocol version".into(), data: Some(data) }
    }

    pub fn internal_error(detail: &str) -> RpcError {
        RpcError { code: -32603, message: format!("Internal error: {detail}"), data: None }
    }

    /// Every place for a long call is taken: the client may try again shortly.
    pub fn busy(max: usize) -> RpcError {
        let message = format!("Internal error: as many long calls run as may ({max}); try again shortly");
        RpcError { code: -32603, message, data: None }
    }

    /// No resource has this URI (`2025-11-25/server/resources.mdx`, Error Handling).
    /// The URI goes back in `data`, whole, for the client to match the error with; it
    /// is a checked URI of at most `MAX_URI_LENGTH` characters (see `resources_read`).
    pub fn resource_not_found(uri: &str) -> RpcError {
        let data = json!({ "uri": uri });
        RpcError { code: RESOURCE_NOT_FOUND, message: "Resource not found".into(), data: Some(data) }
    }

    /// A caller past `--max-calls-per-minute` (see `RateLimit`), with the seconds to
    /// wait in `data` too, for a client over stdio, where there is no `Retry-After`.
    pub fn too_many_calls(per_minute: u32, seconds: u64) -> RpcError {
        let message = format!(
            "Too many tool calls: at most {per_minute} a minute from one caller. Wait {seconds} s before calling a tool again."
        );
        RpcError { code: TOO_MANY_CALLS, message, data: Some(json!({ "retryAfterSeconds": seconds })) }
    }
}

/// This server's own error code for a refused tool call. JSON-RPC reserves -32768 to
/// -32000, and "New error codes for purposes not defined by this specification SHOULD
/// be allocated outside the JSON-RPC reserved range" (`2026-07-28/basic/index.mdx`,
/// Error Codes); the 429 is HTTP's Too Many Requests.
const TOO_MANY_CALLS: i64 = -31429;

/// The handshake era's code for "resource not found"; 2026-07-28 uses -32602 instead.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// Something the client sent, for an error message or the log: at most 80 characters.
/// An answer never repeats a long input back: a 4 MiB name is answered in a line, not
/// in 4 MiB (or many times that once its control characters are escaped).
pub fn echo(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
// ANCHOR_END: message

// ANCHOR: parse
/// Read a body as one JSON-RPC message, or say why it is not one.
pub fn parse_message(body: &[u8]) -> Result<Message, RpcError> {
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
        (Some(Value::String(method)), None) => Ok(Message::Notification { method: method.clone(), params }),
        (Some(_), _) => Err(RpcError::invalid_request("`method` must be a string")),
        (None, Some(id)) if is_response(&object) => {
            Ok(Message::Response { id: Some(id), answer: Value::Object(object) })
        }
        // An error response may leave its `id` out (the schema's `JSONRPCErrorResponse`
        // has `id?: RequestId`): its sender could not read the id of what it answers.
        (None, None) if is_response(&object) && object.contains_key("error") => {
            Ok(Message::Response { id: None, answer: Value::Object(object) })
        }
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
pub fn readable_id(body: &[u8]) -> Value {
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
pub struct RpcResponse {
    pub jsonrpc: &'static str,
    /// The request's id; over HTTP `null` when it could not be read (chapter 1). `None`
    /// leaves the member out: stdio's form of the same (see `stdio_error`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Result(Value),
    Error(RpcError),
}

/// Wrap a method's outcome in the envelope, with the request's own id.
pub fn reply(status: u16, id: Value, outcome: Result<Value, RpcError>) -> Response {
    let outcome = match outcome {
        Ok(result) => Outcome::Result(result),
        Err(error) => Outcome::Error(error),
    };
    let body = serde_json::to_string(&RpcResponse { jsonrpc: "2.0", id: Some(id), outcome }).expect("serializable");
    Response::json(status, body)
}

/// A notification: a method and its params, and no `id`.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// A refusal before the body was read: a JSON-RPC error with `"id": null`, so that a
/// client shows the reason, with the HTTP status that says what kind of refusal.
pub fn refusal(status: u16, message: &str) -> Response {
    let error = RpcError { code: -32600, message: message.to_string(), data: None };
    reply(status, Value::Null, Err(error))
}
// ANCHOR_END: reply
