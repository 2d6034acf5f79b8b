//! A client of the chapters that ask their client (15 on) and hold sessions (16 on),
//! over HTTP, for the tests that go where a transcript cannot.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use mcp_workbook::replay;
use mcp_workbook::transcript::HttpRequest;
use serde_json::{Value, json};

/// A request to `/mcp` with these headers and this body.
pub fn request(method: &str, headers: &[(&str, &str)], body: &str) -> HttpRequest {
    let headers = headers.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
    HttpRequest { method: method.into(), path: "/mcp".into(), headers, body: body.into() }
}

/// A handshake-era POST of `body`, in `session` when there is one.
pub fn post(session: Option<&str>, body: &Value) -> HttpRequest {
    let mut headers = vec![("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
    }
    request("POST", &headers, &body.to_string())
}

/// A `ping` in `session`: its status (404 once the session has ended).
pub fn ping_status(address: SocketAddr, session: &str) -> u16 {
    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    replay::send(address, &post(Some(session), &ping)).expect("the ping is answered").status
}

/// `initialize` from a client that declares `capabilities`, then
/// `notifications/initialized`, as a real client does: the new session's id.
pub fn open_session(address: SocketAddr, capabilities: Value) -> String {
    let params = json!({ "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": { "name": "test", "version": "1" } });
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params });
    let answer = replay::send(address, &post(None, &initialize)).expect("initialize is answered");
    let session = answer.header("Mcp-Session-Id").expect("initialize opens a session").to_string();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let answer = replay::send(address, &post(Some(&session), &initialized)).expect("initialized is answered");
    assert_eq!(answer.status, 202, "{}", answer.body);
    session
}

/// Read `stream` until what came holds `needle` (or the stream ends, or 10 s pass).
pub fn read_until(stream: &mut TcpStream, raw: &mut Vec<u8>, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buffer = [0u8; 4096];
    while !String::from_utf8_lossy(raw).contains(needle) && Instant::now() < deadline {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(read) => raw.extend_from_slice(&buffer[..read]),
        }
    }
}

/// A 2026-07-28 `subscriptions/listen` with id `id` for `uris`, read up to its
/// acknowledgment: the connection, and what came.
pub fn listen(address: SocketAddr, id: Value, uris: &[&str]) -> (TcpStream, Vec<u8>) {
    listen_for(address, id, json!({ "resourceSubscriptions": uris }))
}

/// A 2026-07-28 `subscriptions/listen` with id `id` asking for `notifications` (the
/// request's filter, as sent), read up to its acknowledgment.
pub fn listen_for(address: SocketAddr, id: Value, notifications: Value) -> (TcpStream, Vec<u8>) {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let params = json!({ "_meta": meta, "notifications": notifications });
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    let mut stream = replay::open(address, &request("POST", &headers, &body.to_string())).expect("the listen is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "}}\n\n");
    (stream, raw)
}

/// `method` of chapter 15's consent page at `path` (`/connect/ID`), as a browser on the
/// page's own origin sends it (its `Origin`, no token): the status.
pub fn consent_page(address: SocketAddr, method: &str, path: &str) -> u16 {
    let origin = format!("http://{address}");
    let mut page = request(method, &[("Origin", origin.as_str())], "");
    page.path = path.to_string();
    replay::send(address, &page).expect("the page is answered").status
}
