//! Tasks (chapter 19, the tasks extension), where a transcript cannot show them. A
//! transcript runs one server with authorization, on a fixed task key and a task time to
//! live of ten minutes. Here:
//! - a task outlives neither its time to live nor half of it at work: the work stops at
//!   half the time to live, and the task is `failed` with the error that stopped it; at
//!   the time to live the record is gone, and its id is not found (the hidden flag
//!   `--task-ttl-secs` makes it seconds);
//! - ids drawn with a random key: 32 hex digits (128 bits), every one different, in one
//!   server and across two;
//! - without authorization a task is anyone's who holds its id: the id is the bearer
//!   token the extension allows;
//! - a refused call leaves no task behind: it takes no place in the caller's bound;
//! - a drain (SIGTERM: the base) waits for a task's work, as for a request.

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::request;
use common::{chapter_binaries_from, start};

/// Every chapter with tasks: chapter 19 adds them.
fn with_tasks() -> Vec<String> {
    chapter_binaries_from(19)
}

/// A 2026-07-28 request's `_meta`: the tasks extension declared, and form elicitation
/// when `forms`.
fn meta(forms: bool) -> Value {
    let mut capabilities = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    if forms {
        capabilities["elicitation"] = json!({ "form": {} });
    }
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities })
}

/// Send `method` with `params` (and `_meta`) in the 2026-07-28 envelope, `name` in
/// `Mcp-Name`: the JSON-RPC message that answers it.
fn send(address: SocketAddr, method: &str, name: &str, mut params: Value, forms: bool) -> Value {
    params["_meta"] = meta(forms);
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("an answer");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

/// Call `tool` as a client that declares the extension (and forms): the answer's result.
fn call(address: SocketAddr, tool: &str) -> Value {
    let answer = send(address, "tools/call", tool, json!({ "name": tool }), true);
    answer.get("result").cloned().unwrap_or_else(|| panic!("no result: {answer}"))
}

/// A new task of `tool`'s: its id.
fn new_task(address: SocketAddr, tool: &str) -> String {
    let created = call(address, tool);
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_string()
}

/// `tasks/get` of `id`: the whole answer.
fn get(address: SocketAddr, id: &str) -> Value {
    send(address, "tasks/get", id, json!({ "taskId": id }), true)
}

/// Poll `id` until its status is not `working` nor `input_required`, for at most `limit`.
fn until_ended(address: SocketAddr, id: &str, limit: Duration) -> Value {
    let give_up = Instant::now() + limit;
    loop {
        let answer = get(address, id);
        let status = answer.pointer("/result/status").and_then(Value::as_str);
        if !matches!(status, Some("working" | "input_required")) || Instant::now() >= give_up {
            return answer;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

const NOT_FOUND: &str = "Invalid params: Failed to retrieve task: Task not found";

/// A task that waits for an answer that never comes works for half its time to live,
/// then is `failed` with the JSON-RPC error that stopped it (not `completed`: the tool
/// did not end by itself); at its time to live the record is gone.
#[test]
fn a_task_is_stopped_at_half_its_time_to_live_and_forgotten_at_the_whole() {
    for binary in with_tasks() {
        let server = start(&binary, &["--task-ttl-secs", "2"]);
        let started = Instant::now();
        let id = new_task(server.address, "approve_payroll");
        let waiting = until_ended(server.address, &id, Duration::from_millis(500));
        assert_eq!(waiting["result"]["status"], "input_required", "{binary}: {waiting}");
        let ended = until_ended(server.address, &id, Duration::from_secs(3));
        assert!(started.elapsed() < Duration::from_secs(2), "{binary}: the task ended only at its time to live");
        assert_eq!(ended["result"]["status"], "failed", "{binary}: {ended}");
        assert_eq!(ended["result"]["ttlMs"], 2000, "{binary}: {ended}");
        assert_eq!(
            ended["result"]["error"],
            json!({ "code": -32603, "message": "Internal error: the task took longer than 1 s, and was stopped" }),
            "{binary}: {ended}"
        );
        assert!(ended["result"].get("result").is_none(), "{binary}: a failed task carries no result: {ended}");
        thread::sleep(Duration::from_secs(2).saturating_sub(started.elapsed()) + Duration::from_millis(100));
        assert_eq!(get(server.address, &id)["error"]["message"], NOT_FOUND, "{binary}: the record outlived its ttl");
    }
}

#[test]
fn a_drain_waits_for_the_work_of_a_task() {
    for binary in with_tasks() {
        // The work of an approval waits for an answer that never comes, for 2 s (half
        // the time to live); the drain's own deadline is 25 s.
        let mut server = start(&binary, &["--task-ttl-secs", "4"]);
        let asked = Instant::now(); // the work's 2 s begin after this
        let id = new_task(server.address, "approve_payroll");
        let waiting = until_ended(server.address, &id, Duration::from_millis(500));
        assert_eq!(waiting["result"]["status"], "input_required", "{binary}: {waiting}");
        server.terminate().expect("SIGTERM is sent");
        let status = server.wait_for_exit(Duration::from_secs(6)).unwrap_or_else(|| panic!("{binary} still runs"));
        assert!(status.success(), "{binary}: {status}");
        assert!(asked.elapsed() >= Duration::from_secs(2), "{binary}: exited before the task's work ended");
    }
}

/// Ids from a key drawn at random: 128 bits as 32 hex digits, none twice, and another
/// server (another key) makes others.
#[test]
fn task_ids_are_128_random_bits_and_never_repeat() {
    for binary in with_tasks() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2 {
            let server = start(&binary, &["--max-tasks-per-caller", "20"]);
            for _ in 0..10 {
                let id = new_task(server.address, "approve_payroll");
                assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{binary}: {id}");
                assert!(seen.insert(id.clone()), "{binary}: {id} came twice");
            }
        }
    }
}

/// Without authorization nobody says who calls: whoever holds a task's id may read it,
/// answer it and cancel it. Over plain HTTP every caller is one, so the bound per caller
/// is the server's.
#[test]
fn without_authorization_the_id_is_the_key_to_the_task() {
    for binary in with_tasks() {
        let server = start(&binary, &["--max-tasks-per-caller", "2"]);
        let id = new_task(server.address, "approve_payroll");
        // A second connection, another client for all the server knows: it reads the task.
        assert_eq!(until_ended(server.address, &id, Duration::from_millis(500))["result"]["taskId"], id.as_str());
        new_task(server.address, "approve_payroll");
        let third = call(server.address, "run_payroll");
        assert_eq!(third["resultType"], "complete", "{binary}: a third task past the bound of 2: {third}");
        assert!(third["content"][0]["text"].as_str().unwrap().starts_with("Payroll for 3 employees."), "{third}");
    }
}

/// A call refused before its task is made (a client without forms, for a tool that
/// asks) leaves nothing: the caller's one place is still free.
#[test]
fn a_refused_call_leaves_no_task_behind() {
    for binary in with_tasks() {
        let server = start(&binary, &["--max-tasks-per-caller", "1"]);
        let refused =
            send(server.address, "tools/call", "approve_payroll", json!({ "name": "approve_payroll" }), false);
        assert_eq!(refused["error"]["code"], -32021, "{binary}: {refused}");
        let id = new_task(server.address, "run_payroll");
        let ended = until_ended(server.address, &id, Duration::from_secs(5));
        assert_eq!(ended["result"]["status"], "completed", "{binary}: {ended}");
    }
}

/// A cancel that comes as the work ends stops nothing: the answer to the question and the
/// cancel go in one after the other, and the tool, which acts at once on the answer, has
/// finished: the task is `completed`, with the payroll run, never `cancelled` after the
/// fact (the work saw no cancellation).
#[test]
fn a_cancel_after_the_answer_leaves_the_task_completed() {
    for binary in with_tasks() {
        let server = start(&binary, &[]);
        let id = new_task(server.address, "approve_payroll");
        until_ended(server.address, &id, Duration::from_millis(500));
        let yes = json!({ "question-1": { "action": "accept", "content": { "approve": true } } });
        send(server.address, "tasks/update", &id, json!({ "taskId": id, "inputResponses": yes }), true);
        send(server.address, "tasks/cancel", &id, json!({ "taskId": id }), true);
        let ended = until_ended(server.address, &id, Duration::from_secs(2));
        assert_eq!(ended["result"]["status"], "completed", "{binary}: {ended}");
        assert_eq!(
            ended["result"]["result"]["content"][0]["text"],
            "Payroll approved by the user and run for this week."
        );
    }
}

/// A caller past its bound gets chapter 15's question instead of a task; its retry, with
/// the answer and the state, is answered there and then, even once there is room for a
/// task again: the round trips end before any task would be made (Task Creation).
#[test]
fn a_retry_with_the_answer_is_answered_not_made_a_task() {
    for binary in with_tasks() {
        let server = start(&binary, &["--max-tasks-per-caller", "1", "--task-ttl-secs", "1"]);
        new_task(server.address, "run_payroll");
        let asked = call(server.address, "approve_payroll");
        assert_eq!(asked["resultType"], "input_required", "{binary}: past the bound, the question: {asked}");
        thread::sleep(Duration::from_millis(1100));
        let yes = json!({ "approval": { "action": "accept", "content": { "approve": true } } });
        let retry = json!({ "name": "approve_payroll", "requestState": asked["requestState"], "inputResponses": yes });
        let answer = send(server.address, "tools/call", "approve_payroll", retry, true);
        assert_eq!(answer["result"]["resultType"], "complete", "{binary}: {answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "Payroll approved by the user and run for this week.");
    }
}
