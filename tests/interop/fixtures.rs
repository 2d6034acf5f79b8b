//! The conformance suite's fixtures, in front of an unchanged starter: a small proxy
//! for `tests/interop/run` only.
//!
//! ```text
//! cargo run --bin ch10-starter -- --bind 127.0.0.1:8080 &
//! cargo run --example conformance-fixtures -- --bind 127.0.0.1:8081 --upstream http://127.0.0.1:8080/mcp
//! ```
//!
//! The suite (0.1.16) calls tools and methods by fixed names, those of the SDKs'
//! reference "everything server": the tools `test_simple_text`, `test_image_content`,
//! `test_audio_content`, `test_embedded_resource`, `test_multiple_content_types`,
//! `test_error_handling`, and the methods `logging/setLevel`, `completion/complete`,
//! `resources/list`, `prompts/list`. A reader who copies the starter wants none of them,
//! so they live here, and the starter carries no line for them.
//!
//! Every request goes to the starter first, as the client sent it (Host and Origin
//! included). Its answer goes back unchanged, except:
//! - a 200 JSON-RPC error ("method not found", "unknown tool") to one of the fixture
//!   methods or tools: the fixture answers instead;
//! - the results of `initialize` and `tools/list`: the fixture capabilities and tools
//!   are added to the starter's.
//!
//! So every HTTP check (Host, Origin, headers, body size) and every other answer is the
//! starter's own binary speaking, and the suite measures it. The fixtures speak the
//! handshake era only, as the 0.1.16 suite does: a 2026-07-28 request passes untouched.

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use mcp_workbook::replay;
use mcp_workbook::transcript::HttpRequest;
use serde_json::{Value, json};
use std::net::SocketAddr;

#[derive(Parser)]
#[command(about = "The conformance suite's fixtures in front of a running starter (tests only)")]
struct Args {
    /// Address to listen on. Port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8081")]
    bind: String,
    /// The starter's URL, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    upstream: String,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let Some(starter) = replay::address_of_url(&args.upstream) else {
        return Err(std::io::Error::other(format!("--upstream {:?} is not an http:// URL", args.upstream)));
    };
    http::serve(&args.bind, Config::default(), move |request| handle(starter, request))
}

fn handle(starter: SocketAddr, request: &Request) -> Response {
    let response = match forward(starter, request) {
        Ok(response) => response,
        Err(error) => return Response::empty(502).with_body(format!("starter unreachable: {error}").into_bytes()),
    };
    // Only a handshake-era request the starter let through its checks (a 200) is ours.
    let (Some((id, method, params)), 200) = (handshake_request(request), response.status) else { return response };
    let Ok(mut answer) = serde_json::from_slice::<Value>(&response.body) else { return response };
    if let Some(result) = answer.get_mut("result") {
        // The starter answered: add the fixtures to what it announces.
        match method.as_str() {
            "initialize" => add_capabilities(result),
            "tools/list" => add_tools(result),
            _ => return response,
        }
        return with_body(response, &answer);
    }
    // The starter said "method not found" or "unknown tool": the fixtures may know it.
    match fixture(&method, &params) {
        Some(result) => with_body(response, &json!({ "jsonrpc": "2.0", "id": id, "result": result })),
        None => response,
    }
}

/// Send the request to the starter as it came, and bring its response back.
fn forward(starter: SocketAddr, request: &Request) -> std::io::Result<Response> {
    let sent = HttpRequest {
        method: request.method.clone(),
        path: request.path.clone(),
        headers: end_to_end(&request.headers),
        body: String::from_utf8_lossy(&request.body).into_owned(),
    };
    let answer = replay::send(starter, &sent)?;
    Ok(Response { headers: end_to_end(&answer.headers), ..Response::empty(answer.status) }
        .with_body(answer.body.into_bytes()))
}

/// The headers that belong to the message, not to one connection: `send` and the base
/// write their own `Content-Length` and `Connection` for each hop.
fn end_to_end(headers: &[(String, String)]) -> Vec<(String, String)> {
    let hop_by_hop = ["content-length", "connection", "keep-alive", "transfer-encoding"];
    headers.iter().filter(|(name, _)| !hop_by_hop.contains(&name.to_ascii_lowercase().as_str())).cloned().collect()
}

/// A JSON-RPC request's id, method and params, unless it is not one or belongs to the
/// 2026-07-28 era (its `_meta` or its `MCP-Protocol-Version` header says so).
fn handshake_request(request: &Request) -> Option<(Value, String, Value)> {
    if request.header("MCP-Protocol-Version") == Some("2026-07-28") {
        return None;
    }
    let body: Value = serde_json::from_slice(&request.body).ok()?;
    let params = body.get("params").cloned().unwrap_or(Value::Null);
    if params["_meta"].get("io.modelcontextprotocol/protocolVersion").is_some() {
        return None;
    }
    Some((body.get("id")?.clone(), body.get("method")?.as_str()?.to_string(), params))
}

/// The starter's response (status, headers) with another JSON body.
fn with_body(response: Response, body: &Value) -> Response {
    Response { body: body.to_string().into_bytes(), ..response }
}

/// The capabilities the fixture methods belong to, next to the starter's own.
fn add_capabilities(initialize_result: &mut Value) {
    if let Some(capabilities) = initialize_result["capabilities"].as_object_mut() {
        for name in ["logging", "completions", "resources", "prompts"] {
            capabilities.insert(name.into(), json!({}));
        }
    }
}

fn add_tools(tools_list_result: &mut Value) {
    if let Some(tools) = tools_list_result["tools"].as_array_mut() {
        tools.extend(fixture_tools());
    }
}

/// The suite's methods and tool calls, answered as the reference server answers them.
fn fixture(method: &str, params: &Value) -> Option<Value> {
    Some(match method {
        "logging/setLevel" => json!({}),
        "completion/complete" => json!({ "completion": { "values": [] } }),
        "resources/list" => json!({ "resources": [] }),
        "prompts/list" => json!({ "prompts": [] }),
        "tools/call" => return call(params["name"].as_str()?),
        _ => return None,
    })
}

/// A 1x1 PNG and a 1 ms WAV (8 kHz, 8-bit mono), base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

fn fixture_tools() -> Vec<Value> {
    let tool = |name: &str, description: &str| json!({ "name": name, "description": description, "inputSchema": { "type": "object" } });
    vec![
        tool("test_simple_text", "Conformance fixture: returns one text block."),
        tool("test_image_content", "Conformance fixture: returns one image block (a 1x1 PNG)."),
        tool("test_audio_content", "Conformance fixture: returns one audio block (a short WAV)."),
        tool("test_embedded_resource", "Conformance fixture: returns an embedded text resource."),
        tool("test_multiple_content_types", "Conformance fixture: returns text, image and resource blocks."),
        tool("test_error_handling", "Conformance fixture: always fails, as a tool error (isError: true)."),
    ]
}

fn call(name: &str) -> Option<Value> {
    let text = json!({ "type": "text", "text": "This is a simple text response for testing." });
    let image = json!({ "type": "image", "data": PNG, "mimeType": "image/png" });
    let audio = json!({ "type": "audio", "data": WAV, "mimeType": "audio/wav" });
    let resource = json!({
        "type": "resource",
        "resource": { "uri": "test://embedded-resource", "mimeType": "text/plain", "text": "An embedded resource." },
    });
    Some(match name {
        "test_simple_text" => json!({ "content": [text] }),
        "test_image_content" => json!({ "content": [image] }),
        "test_audio_content" => json!({ "content": [audio] }),
        "test_embedded_resource" => json!({ "content": [resource] }),
        "test_multiple_content_types" => json!({ "content": [text, image, resource] }),
        "test_error_handling" => json!({
            "content": [{ "type": "text", "text": "This tool always fails, on purpose." }],
            "isError": true,
        }),
        _ => return None,
    })
}
