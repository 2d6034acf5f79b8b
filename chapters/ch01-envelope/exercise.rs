// TODO(exercise): this file is your copy of chapter 1's server, with the piece the
// chapter adds left for you to write. Each part sits between a `// TODO` line and its
// `// END TODO`: replace what is between them, and leave the rest as it is.
// Check your work: `cargo run -- check 1`. The solution: `main.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused and the compiler would
// warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_variables)]
// END TODO

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
    // TODO: answer each kind of message with its status, and a body only where someone waits for one.
    // Proven by "A notification gets 202 and no body" and "A request named like a notification is still a request".
    todo!("answer each kind of message")
    // END TODO
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
    // TODO: tell the kind by the members present, and take only ids a client can match its response with.
    // Proven by "An id that is null is invalid", "A request named like a notification is still a request"
    // and "A client's error response without an id gets 202".
    todo!("tell the kind of message")
    // END TODO
    // ANCHOR_END: kinds
}

/// An id is a string or an integer, and comes back exactly as it was sent: `"7"`
/// stays a string, `7` a number.
fn valid_id(id: &Value) -> Result<Value, RpcError> {
    // TODO: which ids to take, and in what form to hand them back.
    // Proven by "A large integer id comes back unchanged" and "An id that is a float is invalid".
    todo!("accept only the ids a client can match")
    // END TODO
}

/// A response has exactly one of `result` and `error`.
fn is_response(object: &Map<String, Value>) -> bool {
    // TODO: what makes a message without a `method` a client's response.
    // Proven by "A response with both `result` and `error` is invalid".
    todo!("recognise a response")
    // END TODO
}

// TODO: `readable_id`: the id an error about `body` goes back with: the client's own, whenever it could be read.
// Proven by "A message without `jsonrpc` is invalid" and "A response with both `result` and `error` is invalid".
fn readable_id(body: &[u8]) -> Value {
    todo!("find the id an error goes back with")
}
// END TODO
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
