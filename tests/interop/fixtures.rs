//! The conformance suite's fixtures, in front of an unchanged chapter: a small proxy
//! for `tests/interop/run` only.
//!
//! ```text
//! cargo run --bin ch14-streaming -- --bind 127.0.0.1:8080 &
//! cargo run --example conformance-fixtures -- --bind 127.0.0.1:8081 --upstream http://127.0.0.1:8080/mcp
//! ```
//!
//! The suite calls tools, resources and prompts by fixed names, those of the SDKs'
//! reference "everything server": the tools `test_simple_text`, `test_image_content`,
//! ..., the resources `test://static-text`, `test://static-binary` and the template
//! `test://template/{id}/data`, the prompts `test_simple_prompt`,
//! `test_prompt_with_arguments`, ..., and the methods `logging/setLevel`,
//! `completion/complete`, `resources/list`, `prompts/list`. A reader wants none of those
//! names, so they live here, and no chapter carries a line for them.
//!
//! Every request goes to the chapter, as the client sent it (Host and Origin included),
//! but for the client's answers to the proxy's own questions (below), and with one change: a request that names a suite resource, prompt or tool for which the
//! chapters have a stand-in of their own names the stand-in instead (`STAND_INS`:
//! `test://static-text` is read as `docs://pay-rules`, `test://watched-resource` is
//! subscribed to as chapter 17's `payroll://last-run`, `test_prompt_with_arguments` is
//! got as `reply_to_customer`, its `arg1` as `orderId`, `test_tool_with_progress` and
//! `test_tool_with_logging` are called as chapter 14's `run_payroll`, the 2026-07-28
//! tools that ask the client by elicitation as chapter 15's `approve_payroll`, and the
//! tasks extension's `greet` (quick: never a task), `slow_compute` and `confirm_delete`
//! as chapter 19's `PingME`, `run_payroll` and `approve_payroll`, whose `approve` is the
//! `confirm` of the suite's answers in `tasks/update`). The
//! chapter's answer to it goes back unchanged, so the suite's checks of a text resource,
//! a binary one, subscriptions, prompts with arguments, embedded resources and images,
//! completion, progress, logging and `input_required` measure the chapter's own code. A chapter that
//! has no stand-in yet answers "method not found" or "unknown tool", and fails those.
//!
//! Every answer goes back unchanged, except:
//! - the question of a stand-in whose suite tool names it otherwise (`user_name` for the
//!   chapter's `approval`): the key is renamed, the question is the chapter's;
//! - a JSON-RPC error "method not found" to a method the suite only needs answered
//!   (`logging/setLevel`, `completion/complete`, an empty `resources/list` or
//!   `prompts/list`): the fixture answers, as the reference server does;
//! - a JSON-RPC error to a call of a fixture tool, a get of the fixture prompt, or a
//!   read of the fixture template (its contents must repeat any id, which no record a
//!   chapter holds does): the fixture answers; in 2026-07-28 the tools that ask what no
//!   chapter asks (the client's model, its roots, several questions, several rounds)
//!   are fixtures, and one refuses a client without `sampling` (-32021, HTTP 400); in
//!   the handshake era three fixture tools ask on the call's event stream (the client's
//!   model, a form with defaults, enum fields), and the proxy takes the client's POSTed
//!   answer to them itself;
//! - the results of `initialize`, `server/discover` and `tools/list`: the fixture
//!   capabilities and tools are added to the chapter's;
//! - a call of `test_trigger_tool_change`, the suite's hook to change the tool list,
//!   when the proxy is given the chapter's `--tools-off` file and PID (chapter 17 on):
//!   the fixture plays the chapter's operator, switching `bank_balance` off or back on
//!   in the file and sending the chapter SIGHUP, and the notice that follows is the
//!   chapter's own.
//!
//! The tasks extension's other tools get no fixture: `failing_job` (a task that ends in
//! a tool error, and that needs the extension), `protocol_error_job` (one that ends in a
//! JSON-RPC error), `multi_input` (two questions at once) and `test_tool_with_task` (a
//! round of `input_required`, then a task). No chapter tool does any of that, and a
//! fixture would have to make the task itself: the suite would measure the proxy's tasks,
//! not the chapter's. The chapter answers "unknown tool", and those checks fail.
//!
//! So every HTTP check (Host, Origin, headers, body size) and every other answer is the
//! chapter's own binary speaking, and the suite measures it. An answer that is an event
//! stream goes back as it comes, event by event, never collected first. Both eras: a fixture's
//! answer to a 2026-07-28 request is marked as that revision marks results.

use clap::Parser;
use mcp_workbook::http::{self, Config, Request, Response};
use mcp_workbook::replay;
use mcp_workbook::transcript::HttpRequest;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, OnceLock, mpsc};
use std::time::Duration;

#[derive(Parser)]
#[command(about = "The conformance suite's fixtures in front of a running chapter (tests only)")]
struct Args {
    /// Address to listen on. Port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8081")]
    bind: String,
    /// The chapter's URL, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long)]
    upstream: String,
    /// The chapter's `--tools-off` file (chapter 17 on): with `--chapter-pid` and
    /// `--chapter-stderr`, the fixture tool `test_trigger_tool_change` plays the operator on it.
    #[arg(long, requires_all = ["chapter_pid", "chapter_stderr"])]
    tools_off: Option<PathBuf>,
    /// The chapter's process, which the operator sends SIGHUP.
    #[arg(long, requires = "tools_off")]
    chapter_pid: Option<u32>,
    /// The file the chapter's stderr goes to, where it says each reload is done.
    #[arg(long, requires = "tools_off")]
    chapter_stderr: Option<PathBuf>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let Some(chapter) = replay::address_of_url(&args.upstream) else {
        return Err(std::io::Error::other(format!("--upstream {:?} is not an http:// URL", args.upstream)));
    };
    if let (Some(file), Some(pid), Some(stderr)) = (args.tools_off, args.chapter_pid, args.chapter_stderr) {
        let _ = OPERATOR.set(Operator { file, pid, stderr, lock: Mutex::new(()) });
    }
    http::serve(&args.bind, Config::default(), move |request| handle(chapter, request))
}

/// A suite prompt and the chapters' own prompt that stands in for it: the suite's
/// argument names mapped to the chapter's (an argument not named is left out).
struct PromptStandIn {
    suite: &'static str,
    chapter: &'static str,
    arguments: &'static [(&'static str, &'static str)],
}

/// The suite's resources and prompts that the chapters (11, 12 and 17) have their own
/// of. Each suite check holds the stand-in to what the suite asks of its fixture: text
/// with a `mimeType`, a `blob`, a resource that changes and can be subscribed to (and
/// unsubscribed from) in a session, both arguments' values in the messages, an
/// embedded `resource`, an `image`.
const RESOURCE_STAND_INS: &[(&str, &str)] = &[
    ("test://static-text", "docs://pay-rules"),
    ("test://static-binary", "images://logo.png"),
    ("test://watched-resource", "payroll://last-run"),
];
const PROMPT_STAND_INS: &[PromptStandIn] = &[
    PromptStandIn { suite: "test_simple_prompt", chapter: "explain_pay_rules", arguments: &[] },
    PromptStandIn {
        suite: "test_prompt_with_arguments",
        chapter: "reply_to_customer",
        arguments: &[("arg1", "orderId"), ("arg2", "question")],
    },
    // The suite names any resource it likes (`test://example-resource`); the stand-in
    // embeds its own, the pay rules.
    PromptStandIn { suite: "test_prompt_with_embedded_resource", chapter: "explain_pay_rules", arguments: &[] },
    PromptStandIn { suite: "test_prompt_with_image", chapter: "write_alt_text", arguments: &[] },
];

/// A suite tool and the chapters' own tool that stands in for it: the suite's keys of
/// `inputResponses` mapped to the chapter's (and the chapter's keys of `inputRequests`
/// back to the suite's in the answer).
struct ToolStandIn {
    suite: &'static str,
    chapter: &'static str,
    keys: &'static [(&'static str, &'static str)],
}

/// The suite's tools the chapters have their own of.
/// - Chapter 14's `run_payroll` takes no arguments, logs at least three messages from
///   `info` up (none without a log level asked for), and reports progress three times,
///   increasing, as the suite asks of its fixtures.
/// - Chapter 15's `approve_payroll` asks its question as a 2026-07-28 result
///   (`input_required`, never a request on the stream), signs its `requestState`, and
///   refuses a state it did not issue: what the suite's elicitation, request-state and
///   tampered-state tools are there to show. The suite reads the elicitation tool's
///   question by its key, `user_name`; the chapter's key is `approval`. The answer is
///   passed on as the suite gives it (`{"name": "Alice"}`): the chapter reads no `yes`
///   in it, and says the payroll was not run, a complete result, all the suite checks.
const TOOL_STAND_INS: &[ToolStandIn] = &[
    ToolStandIn { suite: "test_tool_with_logging", chapter: "run_payroll", keys: &[] },
    ToolStandIn { suite: "test_tool_with_progress", chapter: "run_payroll", keys: &[] },
    ToolStandIn { suite: "test_logging_tool", chapter: "run_payroll", keys: &[] },
    ToolStandIn {
        suite: "test_input_required_result_elicitation",
        chapter: "approve_payroll",
        keys: &[("user_name", "approval")],
    },
    ToolStandIn { suite: "test_input_required_result_request_state", chapter: "approve_payroll", keys: &[] },
    ToolStandIn { suite: "test_input_required_result_tampered_state", chapter: "approve_payroll", keys: &[] },
    ToolStandIn { suite: "test_streaming_elicitation", chapter: "approve_payroll", keys: &[] },
    // The handshake era's asking (a request on the call's stream, answered by a POST).
    ToolStandIn { suite: "test_elicitation", chapter: "approve_payroll", keys: &[] },
    // The tasks extension's scenarios (chapter 19): a quick tool, which never becomes a
    // task; the long one, which does for a client that declares the extension; and the
    // one that asks, which as a task waits in `input_required` for `tasks/update`.
    ToolStandIn { suite: "greet", chapter: "PingME", keys: &[] },
    ToolStandIn { suite: "slow_compute", chapter: "run_payroll", keys: &[] },
    ToolStandIn { suite: "confirm_delete", chapter: "approve_payroll", keys: &[] },
];

/// The fields of the suite's answers in `tasks/update` under the chapter's names: the
/// suite confirms a `confirm_delete` with `{"confirm": true}`, chapter 15's form asks
/// for `approve`. The keys of `inputResponses` need no renaming: the suite answers
/// under the keys the chapter's task showed it in `inputRequests`.
const TASK_ANSWER_FIELDS: &[(&str, &str)] = &[("confirm", "approve")];

fn tool_stand_in(params: &Value) -> Option<&'static ToolStandIn> {
    TOOL_STAND_INS.iter().find(|tool| params["name"] == tool.suite)
}

/// The fixture template, which no chapter stands in for: its contents must repeat the
/// id of any URI, and the chapters' orders exist or do not.
const TEMPLATE_PREFIX: &str = "test://template/";

fn handle(chapter: SocketAddr, request: &Request) -> Response {
    if let Some(answered) = answer_to_a_question(request) {
        return answered;
    }
    let message = message_of(request);
    let sent = match &message {
        Some(message) => stand_in(request, message),
        None => as_sent(request),
    };
    let response = match forward(chapter, &sent) {
        Ok(response) => response,
        Err(error) => return Response::empty(502).with_body(format!("chapter unreachable: {error}").into_bytes()),
    };
    let Some(message) = message else { return response };
    let Ok(mut answer) = serde_json::from_slice::<Value>(&response.body) else { return response };
    if let Some(result) = answer.get_mut("result") {
        // The chapter answered: add the fixtures to what it announces.
        match message.method.as_str() {
            "initialize" | "server/discover" => add_capabilities(result, message.modern),
            "tools/list" => add_tools(result),
            // A stand-in's question goes back under the suite's key.
            "tools/call" => {
                let Some(tool) = tool_stand_in(&message.params).filter(|tool| !tool.keys.is_empty()) else {
                    return response;
                };
                let Some(requests) = result["inputRequests"].as_object_mut() else { return response };
                rename_keys(requests, tool.keys.iter().map(|(suite, chapter)| (*chapter, *suite)));
            }
            _ => return response,
        }
        return with_body(response, 200, &answer);
    }
    // The chapter said no to the method or its params (200; 404 for a 2026-07-28 method
    // it does not have): the fixtures may know better. A refusal of the request itself
    // (400 for its headers or `_meta`, 403, ...) stands.
    let code = answer["error"]["code"].as_i64().unwrap_or(0);
    if !(response.status == 200 || (response.status == 404 && code == -32601)) {
        return response;
    }
    if message.method == "tools/call"
        && code == -32602
        && !message.modern
        && let Some(question) = legacy_question(message.params["name"].as_str().unwrap_or(""))
    {
        return ask_on_the_stream(message.id, question);
    }
    match fixture(&message, code) {
        Some(Ok(mut result)) => {
            if message.modern {
                mark_modern(&message.method, &mut result);
            }
            with_body(response, 200, &json!({ "jsonrpc": "2.0", "id": message.id, "result": result }))
        }
        Some(Err((status, error))) => {
            with_body(response, status, &json!({ "jsonrpc": "2.0", "id": message.id, "error": error }))
        }
        None => response,
    }
}

/// A JSON-RPC request, as the proxy needs to know it.
struct Message {
    id: Value,
    method: String,
    params: Value,
    /// A 2026-07-28 request: its `_meta` or its `MCP-Protocol-Version` header says so.
    modern: bool,
}

fn message_of(request: &Request) -> Option<Message> {
    let body: Value = serde_json::from_slice(&request.body).ok()?;
    let params = body.get("params").cloned().unwrap_or(Value::Null);
    let modern = request.header("MCP-Protocol-Version") == Some("2026-07-28")
        || params["_meta"].get("io.modelcontextprotocol/protocolVersion").is_some();
    Some(Message { id: body.get("id")?.clone(), method: body.get("method")?.as_str()?.to_string(), params, modern })
}

/// The request as it came, for the chapter.
fn as_sent(request: &Request) -> HttpRequest {
    HttpRequest {
        method: request.method.clone(),
        path: request.path.clone(),
        headers: end_to_end(&request.headers),
        body: String::from_utf8_lossy(&request.body).into_owned(),
    }
}

/// The request for the chapter: as it came, or naming the chapter's stand-in for the
/// suite's resource or prompt, in the body and in `Mcp-Name` alike.
fn stand_in(request: &Request, message: &Message) -> HttpRequest {
    let mut sent = as_sent(request);
    let mut params = message.params.clone();
    let renamed = match message.method.as_str() {
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            let Some((_, uri)) = RESOURCE_STAND_INS.iter().find(|(suite, _)| params["uri"] == *suite) else {
                return sent;
            };
            params["uri"] = json!(uri);
            *uri
        }
        "prompts/get" => {
            let Some(prompt) = PROMPT_STAND_INS.iter().find(|p| params["name"] == p.suite) else { return sent };
            params["name"] = json!(prompt.chapter);
            params["arguments"] = Value::Object(renamed_arguments(prompt, &params["arguments"]));
            prompt.chapter
        }
        "tools/call" => {
            let Some(tool) = tool_stand_in(&params) else { return sent };
            params["name"] = json!(tool.chapter);
            // The stand-ins take no arguments, and refuse any (`additionalProperties`).
            if params.get("arguments").is_some() {
                params["arguments"] = json!({});
            }
            // The suite's answers under the chapter's keys; anything else (a null, a
            // number, a key nobody asked) as the suite sent it.
            if let Some(responses) = params["inputResponses"].as_object_mut() {
                rename_keys(responses, tool.keys.iter().map(|(suite, chapter)| (*suite, *chapter)));
            }
            tool.chapter
        }
        "tasks/update" => {
            let Some(responses) = params["inputResponses"].as_object_mut() else { return sent };
            for content in responses.values_mut().filter_map(|answer| answer.get_mut("content")?.as_object_mut()) {
                rename_keys(content, TASK_ANSWER_FIELDS.iter().copied());
            }
            // `Mcp-Name` is the task's id, unchanged.
            ""
        }
        "completion/complete" => {
            let Some(prompt) = PROMPT_STAND_INS.iter().find(|p| params["ref"]["name"] == p.suite) else {
                return sent;
            };
            params["ref"]["name"] = json!(prompt.chapter);
            if let Some((_, name)) = prompt.arguments.iter().find(|(suite, _)| params["argument"]["name"] == *suite) {
                params["argument"]["name"] = json!(name);
            }
            if params["context"]["arguments"].is_object() {
                params["context"]["arguments"] =
                    Value::Object(renamed_arguments(prompt, &params["context"]["arguments"]));
            }
            // No `Mcp-Name` on this method.
            ""
        }
        _ => return sent,
    };
    let mut body: Value = serde_json::from_str(&sent.body).expect("it parsed before");
    body["params"] = params;
    sent.body = body.to_string();
    for (name, value) in &mut sent.headers {
        if name.eq_ignore_ascii_case("Mcp-Name") && !renamed.is_empty() {
            *value = renamed.to_string();
        }
    }
    sent
}

/// Each key `from` of `object` renamed `to`, in place.
fn rename_keys<'a>(object: &mut Map<String, Value>, renames: impl Iterator<Item = (&'a str, &'a str)>) {
    for (from, to) in renames {
        if let Some(value) = object.remove(from) {
            object.insert(to.to_string(), value);
        }
    }
}

/// The suite's arguments under the stand-in's names; the others left out.
fn renamed_arguments(prompt: &PromptStandIn, arguments: &Value) -> Map<String, Value> {
    prompt
        .arguments
        .iter()
        .filter_map(|(suite, chapter)| Some((chapter.to_string(), arguments.get(*suite)?.clone())))
        .collect()
}

/// Send the request to the chapter, and bring its response back: an event stream as it
/// comes, each chunk passed on when it arrives (a server may wait, mid-stream, for its
/// client), anything else whole. The workbook's reader reads it (`replay::read_head`,
/// `read_chunk`, `read_body`).
fn forward(chapter: SocketAddr, sent: &HttpRequest) -> std::io::Result<Response> {
    let mut upstream = BufReader::new(replay::open(chapter, sent)?);
    let head = replay::read_head(&mut upstream)?;
    let event_stream = head.header("Content-Type").is_some_and(|v| v.starts_with("text/event-stream"));
    if head.is_chunked() && event_stream {
        let mut response = Response::stream(head.status, "text/event-stream", move |writer| {
            // A stream may be quiet for long (a session's own stream, chapter 17; a call
            // waiting for its user): wait for each chunk as long as it takes, looking
            // every second whether the client has gone.
            let _ = upstream.get_ref().set_read_timeout(Some(Duration::from_secs(1)));
            loop {
                match upstream.fill_buf() {
                    Ok([]) => return,
                    Ok(_) => {}
                    Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        if writer.client_gone() {
                            return; // the client has gone: so does the connection upstream
                        }
                        continue;
                    }
                    Err(_) => return,
                }
                // The end of the stream, or a stream that breaks off, ends the answer.
                let Ok(Some(chunk)) = replay::read_chunk(&mut upstream) else { return };
                if writer.send(&chunk).is_err() {
                    return; // the client has gone: so does the connection upstream
                }
            }
        });
        let others = head.headers.iter().filter(|(name, _)| !name.eq_ignore_ascii_case("Content-Type"));
        response.headers.extend(end_to_end(&others.cloned().collect::<Vec<_>>()));
        return Ok(response);
    }
    let body = replay::read_body(&mut upstream, &head)?;
    Ok(Response { headers: end_to_end(&head.headers), ..Response::empty(head.status) }.with_body(body))
}

/// The headers that belong to the message, not to one connection: `send` and the base
/// write their own `Content-Length` and `Connection` for each hop.
fn end_to_end(headers: &[(String, String)]) -> Vec<(String, String)> {
    let hop_by_hop = ["content-length", "connection", "keep-alive", "transfer-encoding"];
    headers.iter().filter(|(name, _)| !hop_by_hop.contains(&name.to_ascii_lowercase().as_str())).cloned().collect()
}

/// The chapter's response (its headers) with another status and JSON body.
fn with_body(response: Response, status: u16, body: &Value) -> Response {
    Response { status, body: body.to_string().into_bytes(), ..response }
}

/// The capabilities the fixture methods belong to, next to the chapter's own
/// (`logging/setLevel` is gone from 2026-07-28).
fn add_capabilities(result: &mut Value, modern: bool) {
    if let Some(capabilities) = result["capabilities"].as_object_mut() {
        for name in
            ["logging", "completions", "resources", "prompts"].into_iter().filter(|name| !modern || *name != "logging")
        {
            capabilities.entry(name).or_insert(json!({}));
        }
    }
}

fn add_tools(tools_list_result: &mut Value) {
    if let Some(tools) = tools_list_result["tools"].as_array_mut() {
        tools.extend(fixture_tools());
    }
}

/// A fixture's answer: a result, or an HTTP status and a JSON-RPC error.
type FixtureAnswer = Result<Value, (u16, Value)>;

/// What the fixtures answer instead of the chapter's error `code`, if anything: for a
/// method the chapter does not have (-32601), a tool or prompt it does not know
/// (-32602), a resource it does not have (-32601, -32002, or -32602 in 2026-07-28).
fn fixture(message: &Message, code: i64) -> Option<FixtureAnswer> {
    let method_not_found = code == -32601;
    if message.method == "tools/call" && code == -32602 {
        return call(&message.params);
    }
    if message.method == "prompts/get" && [-32601, -32602].contains(&code) {
        return prompt_asking(&message.params).map(Ok);
    }
    Some(Ok(match message.method.as_str() {
        // Gone from 2026-07-28, whose "method not found" (404) the suite checks for.
        "logging/setLevel" if method_not_found && !message.modern => json!({}),
        "completion/complete" if method_not_found => json!({ "completion": { "values": [] } }),
        "resources/list" if method_not_found => json!({ "resources": [] }),
        "prompts/list" if method_not_found => json!({ "prompts": [] }),
        "resources/read" if [-32601, -32002, -32602].contains(&code) => template_read(message.params["uri"].as_str()?)?,
        _ => return None,
    }))
}

/// A fixture's result as 2026-07-28 marks results: complete unless it asks the client
/// (`input_required`), and the lists cacheable.
fn mark_modern(method: &str, result: &mut Value) {
    if let Some(result) = result.as_object_mut() {
        result.entry("resultType").or_insert(json!("complete"));
    }
    if method.ends_with("/list") || method == "resources/read" {
        result["ttlMs"] = json!(0);
        result["cacheScope"] = json!("public");
    }
}

/// A 1x1 PNG and a 1 ms WAV (8 kHz, 8-bit mono), base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const WAV: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

fn fixture_tools() -> Vec<Value> {
    let tool = |name: &str, description: &str| json!({ "name": name, "description": description, "inputSchema": { "type": "object" } });
    let mut tools = vec![
        tool("test_simple_text", "Conformance fixture: returns one text block."),
        tool("test_image_content", "Conformance fixture: returns one image block (a 1x1 PNG)."),
        tool("test_audio_content", "Conformance fixture: returns one audio block (a short WAV)."),
        tool("test_embedded_resource", "Conformance fixture: returns an embedded text resource."),
        tool("test_multiple_content_types", "Conformance fixture: returns text, image and resource blocks."),
        tool("test_error_handling", "Conformance fixture: always fails, as a tool error (isError: true)."),
        tool("test_input_required_result_sampling", "Conformance fixture: asks the client's model a question first."),
        tool("test_input_required_result_list_roots", "Conformance fixture: asks the client for its roots first."),
        tool("test_input_required_result_multiple_inputs", "Conformance fixture: asks three things at once."),
        tool("test_input_required_result_multi_round", "Conformance fixture: asks twice, one round after the other."),
        tool("test_input_required_result_capabilities", "Conformance fixture: asks only what the client can answer."),
        tool("test_missing_capability", "Conformance fixture: refuses a client without the sampling capability."),
    ];
    if OPERATOR.get().is_some() {
        tools.push(tool(
            "test_trigger_tool_change",
            "Conformance fixture: switches bank_balance off or on, as an operator.",
        ));
    }
    tools
}

/// The chapter's operator (chapter 17 on): its `--tools-off` file and its process.
struct Operator {
    file: PathBuf,
    pid: u32,
    stderr: PathBuf,
    /// One switch at a time: two calls at once must not both read the file as it was.
    lock: Mutex<()>,
}

static OPERATOR: OnceLock<Operator> = OnceLock::new();

/// The tool the suite's hook switches: one no scenario calls through a stand-in.
const SWITCHED_TOOL: &str = "bank_balance";

/// `test_trigger_tool_change`: what the chapter's operator does (book: chapter 17, "A
/// tool list that changes"), the replay's own operator step (`replay::operate`): switch a
/// tool off in the file, or back on, send SIGHUP, and wait until the chapter's stderr says
/// the reload is done. The chapter itself then says the list changed, on every stream
/// that asked. The wait matters: the chapter looks for SIGHUPs now and then and reloads
/// once for all that came, so a second switch sent before the first is read would undo
/// it unseen.
fn trigger_tool_change() -> Option<Value> {
    let operator = OPERATOR.get()?;
    let _one_at_a_time = operator.lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let was_off = std::fs::read_to_string(&operator.file).is_ok_and(|text| text.contains(SWITCHED_TOOL));
    let (names, now) = if was_off { (vec![], "on") } else { (vec![SWITCHED_TOOL.to_string()], "off") };
    let reloads = || replay::reloads(&std::fs::read_to_string(&operator.stderr).unwrap_or_default());
    let (said, failed) = match replay::operate(&operator.file, operator.pid, &names, reloads) {
        Ok(()) => (format!("{SWITCHED_TOOL} is {now}"), false),
        Err(error) => (format!("the operator could not switch it: {error}"), true),
    };
    Some(json!({ "content": [{ "type": "text", "text": said }], "isError": failed }))
}

/// A fixture tool's answer to `tools/call`, if the name is one.
fn call(params: &Value) -> Option<FixtureAnswer> {
    let name = params["name"].as_str()?;
    if let Some(answer) = call_asking(name, params) {
        return Some(answer);
    }
    Some(Ok(simple_call(name)?))
}

fn simple_call(name: &str) -> Option<Value> {
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
        "test_trigger_tool_change" => return trigger_tool_change(),
        "test_error_handling" => json!({
            "content": [{ "type": "text", "text": "This tool always fails, on purpose." }],
            "isError": true,
        }),
        _ => return None,
    })
}

/// `test://template/{id}/data`, as the reference server reads it.
fn template_read(uri: &str) -> Option<Value> {
    let id = uri.strip_prefix(TEMPLATE_PREFIX)?.strip_suffix("/data")?;
    let text = json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string();
    Some(json!({ "contents": [{ "uri": uri, "mimeType": "application/json", "text": text }] }))
}

// --- The 2026-07-28 fixtures that ask the client (`input_required`) -------------------
//
// What the reference server's tools do (the `input-required-result-*` scenarios), for
// the questions no chapter asks: its model (`sampling/createMessage`), its roots
// (`roots/list`), several at once, over several rounds, and only what the client said it
// can answer. Their states are plain text, as the reference's are: the integrity of a
// state is what the tampered-state scenario measures, and chapter 15 answers that one.

/// `tools/call` of a fixture tool that asks the client; `None` for any other name.
fn call_asking(name: &str, params: &Value) -> Option<FixtureAnswer> {
    let state = params["requestState"].as_str();
    Some(Ok(match name {
        "test_input_required_result_sampling" => match answer(params, "capital_question") {
            Some(answer) => text(&format!("Sampling result: {}", answer["content"]["text"].as_str().unwrap_or(""))),
            None => asking(json!({ "capital_question": sample("What is the capital of France?", 100) }), None),
        },
        "test_input_required_result_list_roots" => match answer(params, "client_roots") {
            Some(answer) => text(&format!("Found {} root(s)", answer["roots"].as_array().map_or(0, Vec::len))),
            None => asking(json!({ "client_roots": roots() }), None),
        },
        "test_input_required_result_multiple_inputs" => {
            let keys = ["user_name", "greeting", "client_roots"];
            if state == Some("multiple-inputs") && keys.iter().all(|key| answer(params, key).is_some()) {
                text("Name, greeting and roots received.")
            } else {
                let requests = json!({
                    "user_name": elicit("What is your name?", "name"),
                    "greeting": sample("Generate a greeting", 50),
                    "client_roots": roots(),
                });
                asking(requests, Some("multiple-inputs"))
            }
        }
        "test_input_required_result_multi_round" => multi_round(params),
        "test_input_required_result_capabilities" => ask_what_the_client_can_answer(params),
        "test_missing_capability" => {
            if client_capabilities(params)["sampling"].is_object() {
                text("Success")
            } else {
                let error = json!({
                    "code": -32021,
                    "message": "test_missing_capability needs the sampling capability",
                    "data": { "requiredCapabilities": { "sampling": {} } },
                });
                // A missing client capability is 400 over HTTP (schema.ts, a MUST).
                return Some(Err((400, error)));
            }
        }
        _ => return None,
    }))
}

/// Two questions, one per round; the state says which round and carries the first answer.
fn multi_round(params: &Value) -> Value {
    let state = params["requestState"].as_str().unwrap_or("");
    if let Some(name) = state.strip_prefix("round-2:")
        && let Some(answer) = answer(params, "step2")
    {
        let color = answer["content"]["color"].as_str().unwrap_or("");
        return text(&format!("Multi-round complete for {name} who likes {color}"));
    }
    if state == "round-1"
        && let Some(name) = answer(params, "step1").and_then(|answer| answer["content"]["name"].as_str())
    {
        let next = json!({ "step2": elicit("Step 2: What is your favorite color?", "color") });
        return asking(next, Some(&format!("round-2:{name}")));
    }
    asking(json!({ "step1": elicit("Step 1: What is your name?", "name") }), Some("round-1"))
}

/// Ask by every means the client declared, and by no other; done once it answered.
fn ask_what_the_client_can_answer(params: &Value) -> Value {
    if let Some(responses) = params["inputResponses"].as_object().filter(|responses| !responses.is_empty()) {
        let keys: Vec<&str> = responses.keys().map(String::as_str).collect();
        return text(&format!("capabilities-ok: received {}", keys.join(", ")));
    }
    let capabilities = client_capabilities(params);
    let mut requests = Map::new();
    if capabilities["sampling"].is_object() {
        requests.insert("sample_input".into(), sample("Sample request", 50));
    }
    if capabilities["elicitation"].is_object() {
        requests.insert("elicit_input".into(), elicit("Sample question", "value"));
    }
    if capabilities["roots"].is_object() {
        requests.insert("client_roots".into(), roots());
    }
    if requests.is_empty() {
        return text("The client can answer nothing: nothing was asked.");
    }
    asking(Value::Object(requests), None)
}

/// `prompts/get` of the fixture prompt that asks the client first.
fn prompt_asking(params: &Value) -> Option<Value> {
    if params["name"] != "test_input_required_result_prompt" {
        return None;
    }
    Some(match answer(params, "user_context") {
        Some(answer) => {
            let context = answer["content"]["context"].as_str().unwrap_or("");
            let message = json!({ "type": "text", "text": format!("Prompt with context: {context}") });
            json!({ "messages": [{ "role": "user", "content": message }] })
        }
        None => asking(json!({ "user_context": elicit("What context should the prompt use?", "context") }), None),
    })
}

/// The client's answer under `key`, if it gave one.
fn answer<'a>(params: &'a Value, key: &str) -> Option<&'a Value> {
    params["inputResponses"].get(key).filter(|answer| answer.is_object())
}

fn client_capabilities(params: &Value) -> &Value {
    &params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
}

fn asking(requests: Value, state: Option<&str>) -> Value {
    let mut result = json!({ "resultType": "input_required", "inputRequests": requests });
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

fn elicit(message: &str, property: &str) -> Value {
    let schema = json!({ "type": "object", "properties": { property: { "type": "string" } }, "required": [property] });
    json!({ "method": "elicitation/create", "params": { "message": message, "requestedSchema": schema } })
}

fn sample(question: &str, max_tokens: u32) -> Value {
    let message = json!({ "role": "user", "content": { "type": "text", "text": question } });
    json!({ "method": "sampling/createMessage", "params": { "messages": [message], "maxTokens": max_tokens } })
}

fn roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

fn text(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }] })
}

// --- The handshake-era fixtures that ask the client -----------------------------------
//
// In the handshake era a server asks on the call's own event stream: a JSON-RPC request
// from the server, which the client answers with a POST of its own
// (`2025-11-25/basic/transports.mdx`, "Sending Messages to the Server"). Three suite
// tools ask what no chapter asks (the client's model; a form whose fields have
// defaults; enum fields in all five forms), so the proxy asks itself: it answers the
// call with a stream, sends its request, and waits for the POST that answers it, which
// it takes before the chapter would see it. These three measure the proxy, as the
// other fixture tools do; the suite's `test_elicitation` is left to a chapter's own.

/// A question a fixture tool asks, and how its result reads the client's answer.
struct Question {
    method: &'static str,
    params: Value,
    result_text: fn(&Value) -> String,
}

fn legacy_question(name: &str) -> Option<Question> {
    let elicitation_result =
        |answer: &Value| format!("Elicitation completed: action={}, content={}", answer["action"], answer["content"]);
    let form = |message: &str, properties: Value| json!({ "message": message, "requestedSchema": { "type": "object", "properties": properties } });
    Some(match name {
        "test_sampling" => Question {
            method: "sampling/createMessage",
            params: sample("Test prompt for sampling", 100)["params"].clone(),
            result_text: |answer| format!("LLM response: {}", answer["content"]["text"].as_str().unwrap_or("")),
        },
        "test_elicitation_sep1034_defaults" => Question {
            method: "elicitation/create",
            params: form(
                "Your details (each field has a default)",
                json!({
                    "name": { "type": "string", "default": "John Doe" },
                    "age": { "type": "integer", "default": 30 },
                    "score": { "type": "number", "default": 95.5 },
                    "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
                    "verified": { "type": "boolean", "default": true },
                }),
            ),
            result_text: elicitation_result,
        },
        "test_elicitation_sep1330_enums" => Question {
            method: "elicitation/create",
            params: form(
                "Pick some options (the five forms of an enum)",
                json!({
                    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                    ] },
                    "legacyEnum": {
                        "type": "string",
                        "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"],
                    },
                    "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
                    "titledMulti": { "type": "array", "items": { "anyOf": [
                        { "const": "value1", "title": "First Choice" },
                        { "const": "value2", "title": "Second Choice" },
                    ] } },
                }),
            ),
            result_text: elicitation_result,
        },
        _ => return None,
    })
}

/// The proxy's questions waiting for the client's answer, by the id the proxy gave them.
static WAITING: LazyLock<Mutex<HashMap<String, mpsc::Sender<Value>>>> = LazyLock::new(Default::default);
static QUESTIONS_ASKED: AtomicU64 = AtomicU64::new(0);
/// How long a question waits for its answer before the call ends as a tool error.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// The call's answer: an event stream with the question, then (once the client's POST
/// has answered it) the result.
fn ask_on_the_stream(call_id: Value, question: Question) -> Response {
    let question_id = format!("fixture-question-{}", QUESTIONS_ASKED.fetch_add(1, Ordering::Relaxed) + 1);
    let (answers, answer) = mpsc::channel();
    WAITING.lock().unwrap().insert(question_id.clone(), answers);
    let request = json!({ "jsonrpc": "2.0", "id": question_id, "method": question.method, "params": question.params });
    Response::stream(200, "text/event-stream", move |writer| {
        let event = |message: &Value| format!("event: message\ndata: {message}\n\n").into_bytes();
        let asked = writer.send(&event(&request)).is_ok();
        let answer = if asked { answer.recv_timeout(ANSWER_TIMEOUT).ok() } else { None };
        WAITING.lock().unwrap().remove(&question_id);
        let result = match answer.as_ref().and_then(|answer| answer.get("result")) {
            Some(answer) => text(&(question.result_text)(answer)),
            None => json!({ "content": [{ "type": "text", "text": "The client did not answer." }], "isError": true }),
        };
        let _ = writer.send(&event(&json!({ "jsonrpc": "2.0", "id": call_id, "result": result })));
    })
}

/// A POST of the client's answer to one of the proxy's questions: handed to the waiting
/// call and acknowledged (`202`), as the transport says. Anything else is `None`.
fn answer_to_a_question(request: &Request) -> Option<Response> {
    let body: Value = serde_json::from_slice(&request.body).ok()?;
    if body.get("method").is_some() || !(body.get("result").is_some() || body.get("error").is_some()) {
        return None;
    }
    let waiting = WAITING.lock().unwrap().remove(body["id"].as_str()?)?;
    let _ = waiting.send(body);
    Some(Response::empty(202))
}
