//! Chapter 20's store, with a real Redis, where a transcript cannot go: a transcript runs
//! one server, and these need two instances, a Redis that stops and comes back, and
//! peers that misbehave. Each test starts its own `redis-server` (Debian's, 7.0) on a
//! free loopback port, without persistence, as a process of its own that `RedisServer`
//! kills by its pid when the test ends, passed or failed; and two instances of chapter
//! 20 on port 0, with the same `--state-key` and `--state-store`.
//!
//! - an approval retry replayed on the other instance is refused (mrtr.mdx, Server
//!   Requirements 5: "MUST enforce that invariant server-side"), and one sent to both
//!   instances at once runs once;
//! - a used state stays refused when Redis restarts empty (the record begins again, and
//!   refuses every state issued before it);
//! - the rate limit counts the calls of the fleet, not of each instance;
//! - a `subscriptions/listen`, and a handshake-era session's stream, on one instance hear
//!   `run_payroll` run on the other; so does a session over stdio;
//! - the operator's switch (chapter 17's `--tools-off`) is each instance's own: a reload
//!   of one is heard by its listens only, and the other lists the tool until it is
//!   reloaded too (chapter 20's page says why);
//! - Redis stopped: an approval is refused with -32603, `PingME` still answers; Redis
//!   back, empty: a state issued before is refused (it may have been used), a new one
//!   runs once, and notices flow again. Redis stopped (SIGSTOP) and going on with its
//!   keys: the state was not spent, and the same retry runs once the pause is over;
//! - a Redis that stops answering (SIGSTOP), no Redis at all at a port where nothing
//!   listens, or a listener that accepts and never answers: each answered within the
//!   store's deadlines, never hung;
//! - a link to chapter 15's consent page made on one instance opens and connects on the
//!   other, is used up for both, and the retry on the first gets the balance;
//! - a bad `--state-store` or `--state-store-prefix` stops the server at start;
//! - what is in the store and is not ours (a count that is not a number, a message on
//!   the channel that is not JSON, names no URI or one too long) is an error the server
//!   logs, never a panic.
//!
//! Tasks (chapter 19) in the store, with authorization on, as chapter 19's transcript runs:
//! - a task created on one instance resolves on the other at once ("until a `tasks/get`
//!   for the returned `taskId` would resolve"), and is polled there to `completed`;
//! - a task waiting on one instance is answered (`tasks/update`) on the other, only the
//!   outstanding key's answer taken; cancelled on the other; a cancel of an ended task
//!   changes nothing;
//! - another caller's `tasks/get`, `tasks/update` and `tasks/cancel` are "Task not found"
//!   on either instance, and reach nothing;
//! - a `subscriptions/listen` with `taskIds` on the other instance hears the task;
//! - the instance that ran a task drained (SIGTERM) and gone, the other answers its end;
//!   one that waited for an answer through the drain ends `failed`, in the store too;
//! - Redis stopped: a call that would be a task runs as an ordinary one, and a task held
//!   elsewhere is -32603, not "not found" (it may exist);
//! - a record, an answer or a message in the store that is not ours is an error, logged,
//!   never a panic.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mcp_workbook::replay::{self, RedisServer, RunningServer, free_port};
use serde_json::{Value, json};

mod common;
use common::session_client::{consent_page, listen_for, open_session, post, read_until, request};
use common::start;

const BINARY: &str = env!("CARGO_BIN_EXE_ch20-fleet");
const STATE_KEY: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0f";
const LAST_RUN: &str = "payroll://last-run";
const UPDATED: &str = "notifications/resources/updated";
const RAN: &str = "Payroll approved by the user and run for this week.";
const USED: &str = "Invalid params: `requestState` has been used already; call the tool again without it";
const OLDER: &str =
    "Invalid params: `requestState` is older than this server's record of used states; call the tool again without it";
/// What the store's failure makes of an approval: -32603, and it did not run.
const NOT_RECORDED: &str = "Internal error: the approval could not be recorded as used";
/// The line an instance writes each time its relay of changes has subscribed.
const HEARING: &str = "store: hearing the other instances' changes";
/// The store's deadlines (store.rs: 500 ms to connect, 500 ms a command) and a margin
/// for a slow, shared machine: an answer later than this is a hang.
const ANSWERED_WITHIN: Duration = Duration::from_secs(4);

// ---------------------------------------------------------------------------
// Redis, as a process of the test's own.

/// Start a `redis-server` of the test's own (`replay::RedisServer`, killed by its pid
/// when dropped): on a free port, or on `port`, where a stopped one was.
fn redis() -> RedisServer {
    RedisServer::start().expect("redis-server runs (tests/interop/setup installs it)")
}

fn redis_on(port: u16) -> RedisServer {
    RedisServer::start_on(port).expect("redis-server runs again on its port")
}

// ---------------------------------------------------------------------------
// The instances, and what a client sends them.

/// An instance of chapter 20 with the store at `url`, and `more` flags.
fn instance(url: &str, more: &[&str]) -> RunningServer {
    let mut args = vec!["--state-store", url, "--state-key", STATE_KEY];
    args.extend_from_slice(more);
    start(BINARY, &args)
}

/// Wait until `server` has subscribed to the channel `times` times in all (its relay
/// hears the other instances from then on).
fn wait_hearing(server: &RunningServer, times: usize) {
    wait_logged(server, HEARING, times);
}

/// Wait until `server` has written `line` to stderr `times` times in all (its stderr is
/// read by a thread of its own, a moment after the server writes it).
fn wait_logged(server: &RunningServer, line: &str, times: usize) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.stderr().matches(line).count() < times {
        assert!(Instant::now() < deadline, "not logged {times} times: {line}; stderr:\n{}", server.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A 2026-07-28 `tools/call` of `tool` with `extra` params: the HTTP status, the
/// message, and how long the answer took.
fn call(address: SocketAddr, tool: &str, extra: Value) -> (u16, Value, Duration) {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let mut params = json!({ "name": tool, "_meta": meta });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    let started = Instant::now();
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered");
    let message = serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body));
    (answer.status, message, started.elapsed())
}

/// The first call of `approve_payroll`: the server asks, and issues a state.
fn new_state(address: SocketAddr) -> String {
    let (_, asked, _) = call(address, "approve_payroll", json!({}));
    asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("no state in {asked}")).to_string()
}

/// The retry with `state` and the user's yes: the tool's text, or the error's message,
/// and how long the answer took.
fn approve(address: SocketAddr, state: &str) -> (String, Duration) {
    let yes = json!({ "requestState": state, "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } } });
    let (_, answer, took) = call(address, "approve_payroll", yes);
    let said = answer.pointer("/result/content/0/text").or_else(|| answer.pointer("/error/message"));
    (
        said.and_then(Value::as_str).unwrap_or_else(|| panic!("neither a result nor an error: {answer}")).to_string(),
        took,
    )
}

/// The retry with `state`, sent again while the store is not asked (for a second after
/// it failed, store.rs's `PAUSE_AFTER_FAILURE`): what it said once it was asked.
fn approve_once_back(address: SocketAddr, state: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (said, _) = approve(address, state);
        if !said.starts_with(NOT_RECORDED) || Instant::now() > deadline {
            return said;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `PingME`'s text, or the error's message.
fn ping_me(address: SocketAddr) -> String {
    let (_, answer, took) = call(address, "PingME", json!({}));
    assert!(took < ANSWERED_WITHIN, "PingME took {took:?}");
    let said = answer.pointer("/result/content/0/text").or_else(|| answer.pointer("/error/message"));
    said.and_then(Value::as_str).unwrap_or_else(|| panic!("neither a result nor an error: {answer}")).to_string()
}

/// `run_payroll`, which changes `payroll://last-run`, in the handshake era (no session).
fn run_payroll(address: SocketAddr) {
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "run_payroll" } });
    let answer = replay::send(address, &post(None, &call)).unwrap();
    assert!(answer.body.contains("Payroll for 3 employees"), "{}", answer.body);
}

/// A 2026-07-28 `subscriptions/listen` for `payroll://last-run`, read up to its
/// acknowledgment: the connection, and what came.
fn listen(address: SocketAddr) -> (TcpStream, Vec<u8>) {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let params = json!({ "_meta": meta, "notifications": { "resourceSubscriptions": [LAST_RUN] } });
    let body = json!({ "jsonrpc": "2.0", "id": "fleet", "method": "subscriptions/listen", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
    ];
    let mut stream = replay::open(address, &request("POST", &headers, &body.to_string())).expect("the listen is sent");
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "}}\n\n");
    assert!(String::from_utf8_lossy(&raw).contains("acknowledged"), "{}", String::from_utf8_lossy(&raw));
    (stream, raw)
}

/// How many notices of a change `raw` holds.
fn notices(raw: &[u8]) -> usize {
    String::from_utf8_lossy(raw).matches(UPDATED).count()
}

/// Read `stream` for `time`, whatever comes.
fn read_for(stream: &mut TcpStream, raw: &mut Vec<u8>, time: Duration) {
    use std::io::Read;
    stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let deadline = Instant::now() + time;
    let mut buffer = [0u8; 4096];
    while Instant::now() < deadline {
        if let Ok(read) = stream.read(&mut buffer) {
            raw.extend_from_slice(&buffer[..read]);
        }
    }
}

/// The milliseconds of the clock's current second.
fn subsec_millis() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_millis()
}

// ---------------------------------------------------------------------------
// The tests.

#[test]
fn an_approval_replayed_on_the_other_instance_is_refused() {
    let redis = redis();
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    let state = new_state(a.address);
    assert_eq!(approve(a.address, &state).0, RAN);
    assert_eq!(approve(b.address, &state).0, USED, "the payroll ran twice: once on each instance");
    // And the other way round: a state issued by b, used on b, replayed on a.
    let state = new_state(b.address);
    assert_eq!(approve(b.address, &state).0, RAN);
    assert_eq!(approve(a.address, &state).0, USED);
    // States issued by two instances are never the same, so one's use spends no other's.
    let (from_a, from_b) = (new_state(a.address), new_state(b.address));
    assert_ne!(from_a, from_b);
    assert_eq!(approve(b.address, &from_a).0, RAN);
    assert_eq!(approve(a.address, &from_b).0, RAN);
}

/// A 2026-07-28 `tools/call` of `bank_balance` by a client that takes URL mode, with `extra` params.
fn bank_balance(address: SocketAddr, extra: Value) -> Value {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "url": {} } } });
    let mut params = json!({ "name": "bank_balance", "_meta": meta });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "bank_balance"),
    ];
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

#[test]
fn a_link_made_on_one_instance_connects_on_the_other() {
    let redis = redis();
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    let asked = bank_balance(a.address, json!({}));
    let url =
        asked["result"]["inputRequests"]["connect"]["params"]["url"].as_str().unwrap_or_else(|| panic!("{asked}"));
    let path = &url[url.find("/connect/").expect("a consent page")..];
    assert_eq!(consent_page(b.address, "GET", path), 200, "the link made on a is not open on b");
    assert_eq!(consent_page(b.address, "POST", path), 200);
    assert_eq!(consent_page(a.address, "POST", path), 404, "a link used on b was used again on a");
    let accepted = json!({ "requestState": asked["result"]["requestState"], "inputResponses": { "connect": { "action": "accept" } } });
    let retry = bank_balance(a.address, accepted);
    assert!(retry["result"]["content"][0]["text"].as_str().is_some_and(|text| text.contains("48,250.00")), "{retry}");
    let again = bank_balance(b.address, json!({}));
    assert!(again["result"]["content"][0]["text"].as_str().is_some_and(|text| text.contains("48,250.00")), "{again}");
}

#[test]
fn a_retry_sent_to_both_instances_at_once_runs_once() {
    // What one client in order cannot show: the record is one step no other instance can
    // come between (`SET ... NX`), not a look and then a write, which two retries that
    // arrive together both pass. Eight clients at once, half on each instance, each round.
    const CLIENTS: usize = 8;
    let redis = redis();
    let flags = ["--workers", "8", "--max-calls-per-minute", "1000"];
    let (a, b) = (instance(&redis.url(), &flags), instance(&redis.url(), &flags));
    for round in 0..10 {
        let state = new_state(a.address);
        let start = std::sync::Arc::new(std::sync::Barrier::new(CLIENTS));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|client| {
                let (address, state, start) = ([a.address, b.address][client % 2], state.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    approve(address, &state).0
                })
            })
            .collect();
        let said: Vec<String> = clients.into_iter().map(|client| client.join().unwrap()).collect();
        assert_eq!(said.iter().filter(|said| *said == RAN).count(), 1, "round {round}: {said:?}");
        assert!(said.iter().all(|said| said == RAN || said == USED), "round {round}: {said:?}");
    }
}

#[test]
fn a_used_approval_stays_used_when_redis_loses_its_keys() {
    let mut redis = redis();
    let port = redis.port;
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    let state = new_state(a.address);
    assert_eq!(approve(a.address, &state).0, RAN);
    // Redis restarted without persistence: the record that the state was used is gone.
    redis.stop();
    let _redis = redis_on(port);
    assert_eq!(approve_once_back(b.address, &state), OLDER, "the payroll ran twice: Redis forgot the first");
}

#[test]
fn a_used_approval_stays_used_when_redis_comes_back_from_an_old_snapshot() {
    // Redis's default persistence: a snapshot now and then, loaded when Redis starts
    // again after a crash. One taken before the state was used has the record's
    // beginning, and not the use.
    let dir = std::env::temp_dir().join(format!("mcp-workbook-fleet-snapshot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let in_dir = ["--dir", dir.to_str().unwrap()];
    let port = free_port();
    let mut redis = RedisServer::start_with(port, &in_dir).expect("redis-server runs");
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    let state = new_state(a.address);
    assert_eq!(redis.cli(&["SAVE"]), "OK");
    assert_eq!(approve(a.address, &state).0, RAN);
    redis.stop(); // killed: it saves nothing more
    let _redis = RedisServer::start_with(port, &in_dir).expect("redis-server runs again from its snapshot");
    let answer = approve_once_back(b.address, &state);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(answer, OLDER, "the payroll ran twice: Redis came back from a snapshot taken before its use");
}

#[test]
fn the_rate_limit_is_the_fleets_total() {
    let redis = redis();
    let flags = ["--max-calls-per-minute", "4"];
    let (a, b) = (instance(&redis.url(), &flags), instance(&redis.url(), &flags));
    // Four calls, two on each instance, are the caller's whole share.
    for address in [a.address, b.address, a.address, b.address] {
        assert_eq!(ping_me(address), "BISMILLAH");
    }
    // The fifth is refused on either instance, though each has seen only two.
    for address in [a.address, b.address] {
        let (status, answer, _) = call(address, "PingME", json!({}));
        assert_eq!(status, 429, "{answer}");
        assert_eq!(answer["error"]["code"], -31429, "{answer}");
        // Retry-After is when the fleet's minute ends, not when one call comes back.
        let wait = answer["error"]["data"]["retryAfterSeconds"].as_u64().unwrap();
        assert!((50..=60).contains(&wait), "{answer}");
    }
}

#[test]
fn a_listen_on_one_instance_hears_a_change_made_on_the_other() {
    let redis = redis();
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    wait_hearing(&a, 1);
    wait_hearing(&b, 1);
    let (mut on_a, mut raw_a) = listen(a.address);
    let (mut on_b, mut raw_b) = listen(b.address);
    run_payroll(a.address);
    read_until(&mut on_b, &mut raw_b, UPDATED);
    assert_eq!(notices(&raw_b), 1, "b did not hear a's change: {}", String::from_utf8_lossy(&raw_b));
    // a heard its own change once: from itself, not again from the store.
    read_for(&mut on_a, &mut raw_a, Duration::from_millis(500));
    assert_eq!(notices(&raw_a), 1, "{}", String::from_utf8_lossy(&raw_a));
}

/// A 2026-07-28 `subscriptions/listen` for the tool list's changes, read up to its
/// acknowledgment.
fn listen_for_tools(address: SocketAddr) -> (TcpStream, Vec<u8>) {
    let (stream, raw) = listen_for(address, json!("tools"), json!({ "toolsListChanged": true }));
    assert!(String::from_utf8_lossy(&raw).contains("\"toolsListChanged\":true"), "{}", String::from_utf8_lossy(&raw));
    (stream, raw)
}

/// Whether `run_payroll` is in the handshake-era `tools/list` of the instance at `address`.
fn lists_run_payroll(address: SocketAddr) -> bool {
    let list = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list" });
    replay::send(address, &post(None, &list)).unwrap().body.contains("\"run_payroll\"")
}

#[test]
fn each_instance_reloads_its_own_tools_off_file_and_tells_its_own_listens() {
    const CHANGED: &str = "notifications/tools/list_changed";
    let redis = redis();
    let off = ["--tools-off", replay::TRANSCRIPT_TOOLS_OFF]; // a file of each instance's own
    let (a, b) = (instance(&redis.url(), &off), instance(&redis.url(), &off));
    wait_hearing(&a, 1);
    wait_hearing(&b, 1);
    let (mut on_a, mut raw_a) = listen_for_tools(a.address);
    let (mut on_b, mut raw_b) = listen_for_tools(b.address);
    a.tools_off(&["run_payroll".to_string()]).expect("a reloads");
    read_until(&mut on_a, &mut raw_a, CHANGED);
    assert!(String::from_utf8_lossy(&raw_a).contains(CHANGED), "{}", String::from_utf8_lossy(&raw_a));
    read_for(&mut on_b, &mut raw_b, Duration::from_millis(500));
    assert!(
        !String::from_utf8_lossy(&raw_b).contains(CHANGED),
        "b heard a's reload: {}",
        String::from_utf8_lossy(&raw_b)
    );
    assert!(!lists_run_payroll(a.address) && lists_run_payroll(b.address));
    b.tools_off(&["run_payroll".to_string()]).expect("b reloads");
    read_until(&mut on_b, &mut raw_b, CHANGED);
    assert!(String::from_utf8_lossy(&raw_b).contains(CHANGED), "{}", String::from_utf8_lossy(&raw_b));
    assert!(!lists_run_payroll(b.address));
}

#[test]
fn a_session_stream_on_one_instance_hears_a_change_made_on_the_other() {
    let redis = redis();
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    wait_hearing(&b, 1);
    // A handshake-era session on b, subscribed to the resource, its GET stream open.
    let session = open_session(b.address, json!({}));
    let subscribe =
        json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": LAST_RUN } });
    let answer = replay::send(b.address, &post(Some(&session), &subscribe)).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&answer.body).unwrap()["result"], json!({}), "{}", answer.body);
    let get = request("GET", &[("Accept", "text/event-stream"), ("Mcp-Session-Id", &session)], "");
    let mut stream = replay::open(b.address, &get).unwrap();
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "\r\n\r\n");
    run_payroll(a.address);
    read_until(&mut stream, &mut raw, UPDATED);
    assert_eq!(notices(&raw), 1, "b's session did not hear a's change: {}", String::from_utf8_lossy(&raw));
}

/// A child process killed (by its pid) when dropped, also when the test fails.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn an_instance_over_stdio_hears_a_change_made_on_another() {
    use std::io::{BufRead, BufReader, Write};
    let redis = redis();
    let a = instance(&redis.url(), &[]);
    let mut stdio = Killed(
        Command::new(BINARY)
            .args(["--stdio", "--state-store", &redis.url()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stdin = stdio.0.stdin.take().unwrap();
    for line in [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": { "uri": LAST_RUN } }),
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    let (lines, heard) = std::sync::mpsc::channel();
    let stdout = stdio.0.stdout.take().unwrap();
    std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).for_each(|l| drop(lines.send(l))));
    // The stdio instance subscribes to the channel once it has started: a's changes,
    // one every half second, until one is heard.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut said = Vec::new();
    while !said.iter().any(|line: &String| line.contains(UPDATED)) {
        assert!(Instant::now() < deadline, "the stdio instance heard no change: {said:?}");
        run_payroll(a.address);
        said.extend(heard.recv_timeout(Duration::from_millis(500)).ok());
        said.extend(heard.try_iter());
    }
    let update: Value = serde_json::from_str(said.iter().find(|line| line.contains(UPDATED)).unwrap()).unwrap();
    assert_eq!(update["params"], json!({ "uri": LAST_RUN }), "{said:?}");
}

#[test]
fn each_stdio_process_counts_its_own_calls() {
    // Over stdio the caller is the process's one host: two hosts, one call a minute each,
    // on one store, are two callers, not one count.
    use std::io::Write;
    let redis = redis();
    for host in ["first", "second"] {
        let mut stdio = Command::new(BINARY)
            .args(["--stdio", "--state-store", &redis.url(), "--max-calls-per-minute", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = stdio.stdin.take().unwrap();
        for line in [
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": host, "version": "1" } } }),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "PingME", "arguments": {} } }),
        ] {
            writeln!(stdin, "{line}").unwrap();
        }
        drop(stdin); // closing stdin stops a stdio server
        let said = String::from_utf8(stdio.wait_with_output().unwrap().stdout).unwrap();
        assert!(said.contains("BISMILLAH"), "the {host} host's call was refused: {said}");
    }
}

#[test]
fn bad_store_flags_are_refused_at_start() {
    let prefix = "want 1 to 64 letters, digits, '-', '_', '.' or ':'";
    for (flags, says) in [
        (["--state-store-prefix", "a b"], prefix),
        (["--state-store-prefix", ""], prefix),
        (["--state-store", "http://127.0.0.1:1"], "--state-store: Redis URL did not parse"),
    ] {
        let mut server = Command::new(BINARY)
            .args(["--bind", "127.0.0.1:0"])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A server that took the flags would serve on: give it five seconds to stop.
        let deadline = Instant::now() + Duration::from_secs(5);
        while server.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = server.kill();
        let output = server.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(says), "{flags:?}: {stderr}");
    }
}

#[test]
fn with_redis_stopped_an_approval_is_refused_other_tools_answer_and_both_come_back_with_it() {
    let mut redis = redis();
    let port = redis.port;
    let (a, b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    wait_hearing(&b, 1);
    let state = new_state(a.address);

    redis.stop();
    let (said, took) = approve(b.address, &state);
    assert!(said.starts_with(NOT_RECORDED), "the approval ran without the store: {said}");
    assert!(took < ANSWERED_WITHIN, "the refusal took {took:?}");
    assert_eq!(ping_me(a.address), "BISMILLAH");
    assert_eq!(ping_me(b.address), "BISMILLAH");
    wait_logged(&b, "input_required: an approval not run", 1);

    // Redis back, empty (no persistence): it cannot vouch for a state issued before, which
    // may have been used; a new one runs, once.
    let _redis = redis_on(port);
    assert_eq!(approve_once_back(b.address, &state), OLDER);
    // The record began again in that second: a state issued from the next one on runs.
    std::thread::sleep(Duration::from_millis(1000 - u64::from(subsec_millis())));
    let state = new_state(a.address);
    assert_eq!(approve(b.address, &state).0, RAN);
    assert_eq!(approve(a.address, &state).0, USED);
    // b's relay has subscribed again: it hears a's changes again.
    wait_hearing(&b, 2);
    let (mut on_b, mut raw_b) = listen(b.address);
    run_payroll(a.address);
    read_until(&mut on_b, &mut raw_b, UPDATED);
    assert_eq!(notices(&raw_b), 1, "no notice after Redis came back: {}", String::from_utf8_lossy(&raw_b));
}

#[test]
fn a_redis_that_stops_answering_is_answered_not_hung() {
    let redis = redis();
    let server = instance(&redis.url(), &[]);
    let state = new_state(server.address);
    assert_eq!(ping_me(server.address), "BISMILLAH"); // a connection to Redis is open now
    // Stopped, not gone: its connections stay open, and nothing answers on them.
    redis.signal("STOP").unwrap();
    let (said, took) = approve(server.address, &state);
    assert!(said.starts_with(NOT_RECORDED), "{said}");
    assert!(took < ANSWERED_WITHIN, "the refusal took {took:?}");
    assert_eq!(ping_me(server.address), "BISMILLAH");
    redis.signal("CONT").unwrap();
    assert_eq!(approve_once_back(server.address, &state), RAN);
}

#[test]
fn a_store_where_nothing_listens_is_answered_not_hung() {
    answered_without_a_store(&format!("redis://127.0.0.1:{}", free_port()));
}

/// An instance whose store at `url` never answers: an approval refused within the
/// store's deadlines, and `PingME` answered.
fn answered_without_a_store(url: &str) {
    let server = instance(url, &[]);
    let state = new_state(server.address);
    let (said, took) = approve(server.address, &state);
    assert!(said.starts_with(NOT_RECORDED), "{said}");
    assert!(took < ANSWERED_WITHIN, "the refusal took {took:?}");
    assert_eq!(ping_me(server.address), "BISMILLAH");
}

#[test]
fn a_store_that_accepts_and_never_answers_is_answered_not_hung() {
    // A listener that takes every connection and never says a word.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", silent.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in silent.incoming() {
            held.push(connection);
        }
    });
    answered_without_a_store(&url);
}

#[test]
fn what_is_in_the_store_and_not_ours_is_an_error_never_a_panic() {
    let redis = redis();
    let (mut a, mut b) = (instance(&redis.url(), &[]), instance(&redis.url(), &[]));
    wait_hearing(&b, 1);
    // The caller's count of calls, overwritten with what is not a number: the call is
    // counted by the instance alone, and answered.
    assert_eq!(ping_me(a.address), "BISMILLAH");
    let keys = redis.cli(&["KEYS", "mcp-workbook:calls:*"]);
    assert!(!keys.is_empty(), "no count of calls in Redis");
    for key in keys.lines() {
        redis.cli(&["SET", key.trim(), "not a number"]);
    }
    assert_eq!(ping_me(a.address), "BISMILLAH");
    wait_logged(&a, "rate limit: counted by this instance alone", 1);
    // Messages on the channel that are not ours: ignored, and the next real one relayed.
    let (mut on_b, mut raw_b) = listen(b.address);
    let long = json!({ "instance": "x", "uri": format!("payroll://{}", "x".repeat(5000)) }).to_string();
    for message in ["not json", "{\"uri\": 7}", "{\"instance\": \"x\", \"uri\": \"\\u0000\"}", "[]", &long] {
        redis.cli(&["PUBLISH", "mcp-workbook:resources-updated", message]);
    }
    run_payroll(a.address);
    read_until(&mut on_b, &mut raw_b, UPDATED);
    assert_eq!(notices(&raw_b), 1, "{}", String::from_utf8_lossy(&raw_b));
    // Each of the five was read before the real one, and refused.
    wait_logged(&b, "a message on the channel that is not ours", 5);
    assert_eq!(b.stderr().matches("a message on the channel that is not ours").count(), 5, "{}", b.stderr());
    // The record of used states beginning at the largest number, then at a word: an
    // approval is refused as the store's fault (it did not run), never a panic.
    let keys = redis.cli(&["KEYS", "mcp-workbook:record-since:*"]);
    assert_eq!(keys.lines().count(), 1, "{keys}");
    for since in [u64::MAX.to_string().as_str(), "soon"] {
        redis.cli(&["SET", keys.trim(), since]);
        let state = new_state(a.address);
        let said = approve(a.address, &state).0;
        assert!(said.starts_with(NOT_RECORDED), "record-since {since}: {said}");
    }
    assert!(a.is_running() && b.is_running(), "an instance fell over");
}

// ---------------------------------------------------------------------------
// Tasks (chapter 19) in the store: a task created on one instance resolves on the other.
// The instances run with chapter 18's authorization, as chapter 19's transcript does:
// alice and bob may both run the payroll, and each task is its creator's alone.

const RESOURCE: &str = "http://127.0.0.1:8080/mcp";
const JWKS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/keys/jwks.json");
const TEST_KEY: &[u8] = include_bytes!("keys/private.pem");
const NOT_FOUND: &str = "Invalid params: Failed to retrieve task: Task not found";
/// The line an instance writes each time its relay of task changes has subscribed.
const HEARING_TASKS: &str = "store: hearing the other instances' tasks";

/// An access token of `subject`'s that may run the payroll.
fn token(subject: &str) -> String {
    use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
    let claims = json!({ "iss": "https://auth.example.com", "sub": subject, "aud": RESOURCE, "exp": 4_102_444_800u64, "scope": "mcp:read payroll:run" });
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    header.kid = Some("workbook-test-key".into());
    encode(&header, &claims, &EncodingKey::from_ec_pem(TEST_KEY).unwrap()).unwrap()
}

/// An instance of chapter 20 with the store at `url` and authorization on, and `more` flags.
fn instance_with_authorization(url: &str, more: &[&str]) -> RunningServer {
    let mut flags = vec!["--authorization-server", "https://auth.example.com", "--resource", RESOURCE];
    flags.extend_from_slice(&["--jwks-file", JWKS]);
    flags.extend_from_slice(more);
    instance(url, &flags)
}

/// Send `method` with `params` from the holder of `token`, as a 2026-07-28 client that
/// declares the tasks extension and form elicitation, `name` in `Mcp-Name`: the HTTP
/// answer's body.
fn send_as(address: SocketAddr, token: &str, method: &str, name: &str, mut params: Value) -> String {
    let capabilities = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} }, "elicitation": { "form": {} } });
    params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities });
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        ("Authorization", &bearer),
    ];
    replay::send(address, &request("POST", &headers, &body.to_string())).expect("an answer").body
}

/// As `send_as`, the answer a JSON-RPC message.
fn task_request(address: SocketAddr, token: &str, method: &str, id: &str, mut params: Value) -> Value {
    params["taskId"] = json!(id);
    let body = send_as(address, token, method, id, params);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// A new task of `tool`'s, `token`'s: its id.
fn new_task(address: SocketAddr, token: &str, tool: &str) -> String {
    let body = send_as(address, token, "tools/call", tool, json!({ "name": tool }));
    let created: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(created["result"]["resultType"], "task", "not a task: {created}");
    created["result"]["taskId"].as_str().unwrap().to_string()
}

/// `tasks/get` of `id`, until its status is not one of `passing`, for at most 10 s.
fn poll_past(address: SocketAddr, token: &str, id: &str, passing: &[&str]) -> Value {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let answer = task_request(address, token, "tasks/get", id, json!({}));
        let status = answer.pointer("/result/status").and_then(Value::as_str).unwrap_or_default();
        if !passing.contains(&status) || Instant::now() >= give_up {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Two instances with authorization, on one store.
fn two_with_authorization(redis: &RedisServer) -> (RunningServer, RunningServer) {
    (instance_with_authorization(&redis.url(), &[]), instance_with_authorization(&redis.url(), &[]))
}

#[test]
fn a_task_created_on_one_instance_is_polled_to_its_end_on_the_other() {
    let redis = redis();
    let (a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "run_payroll");
    // At once, before the work has done anything: "until a `tasks/get` for the returned
    // `taskId` would resolve", on any instance.
    let first = task_request(b.address, &alice, "tasks/get", &id, json!({}));
    assert_eq!(first["result"]["taskId"], id.as_str(), "{first}");
    let ended = poll_past(b.address, &alice, &id, &["working"]);
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    let text = ended.pointer("/result/result/content/0/text").and_then(Value::as_str).unwrap_or_default();
    assert!(text.starts_with("Payroll for 3 employees"), "{ended}");
    // Both instances answer the same task.
    assert_eq!(task_request(a.address, &alice, "tasks/get", &id, json!({}))["result"], ended["result"]);
}

#[test]
fn a_task_waiting_on_one_instance_is_answered_on_the_other() {
    let redis = redis();
    let (a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    let waiting = poll_past(b.address, &alice, &id, &["working"]);
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    assert!(waiting.pointer("/result/inputRequests/question-1").is_some(), "{waiting}");
    // Only the outstanding key's answer is taken: the no under a key never issued is not.
    let responses = json!({
        "question-9": { "action": "accept", "content": { "approve": false } },
        "question-1": { "action": "accept", "content": { "approve": true } },
    });
    let answered = task_request(b.address, &alice, "tasks/update", &id, json!({ "inputResponses": responses }));
    assert_acknowledged(&answered);
    let ended = poll_past(b.address, &alice, &id, &["working", "input_required"]);
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert_eq!(ended.pointer("/result/result/content/0/text").and_then(Value::as_str), Some(RAN), "{ended}");
}

#[test]
fn a_task_whose_record_redis_lost_is_found_again_on_the_other_instance() {
    let mut redis = redis();
    let port = redis.port;
    let (a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    let waiting = poll_past(b.address, &alice, &id, &["working"]);
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    // Redis restarted empty while the task waits: its record is gone, and a, which runs
    // the task, writes it again; b finds it once more, unchanged.
    redis.stop();
    let _redis = redis_on(port);
    let deadline = Instant::now() + ANSWERED_WITHIN;
    loop {
        let found = task_request(b.address, &alice, "tasks/get", &id, json!({}));
        if found.pointer("/result/status") == Some(&json!("input_required")) {
            break;
        }
        assert!(Instant::now() < deadline, "the task is lost on the other instance: {found}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_task_is_cancelled_on_the_other_instance() {
    let redis = redis();
    let (a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    let waiting = poll_past(b.address, &alice, &id, &["working"]);
    assert_eq!(waiting["result"]["status"], "input_required", "{waiting}");
    let cancelled = task_request(b.address, &alice, "tasks/cancel", &id, json!({}));
    assert_acknowledged(&cancelled);
    let ended = poll_past(a.address, &alice, &id, &["working", "input_required"]);
    assert_eq!(ended["result"]["status"], "cancelled", "the instance that runs it did not stop: {ended}");
    assert_eq!(task_request(b.address, &alice, "tasks/get", &id, json!({}))["result"]["status"], "cancelled");
    // A task that has ended stays as it ended: a cancel of a completed one changes nothing.
    let done = new_task(a.address, &alice, "run_payroll");
    assert_eq!(poll_past(b.address, &alice, &done, &["working"])["result"]["status"], "completed");
    assert_acknowledged(&task_request(b.address, &alice, "tasks/cancel", &done, json!({})));
    assert_eq!(task_request(a.address, &alice, "tasks/get", &done, json!({}))["result"]["status"], "completed");
}

#[test]
fn another_callers_task_is_not_found_on_the_other_instance() {
    let redis = redis();
    let (a, b) = two_with_authorization(&redis);
    let (alice, bob) = (token("alice"), token("bob"));
    let id = new_task(a.address, &alice, "approve_payroll");
    assert_eq!(poll_past(b.address, &alice, &id, &["working"])["result"]["status"], "input_required");
    // bob holds alice's id: on either instance, it is a task that does not exist.
    for method in ["tasks/get", "tasks/cancel"] {
        for address in [a.address, b.address] {
            let answer = task_request(address, &bob, method, &id, json!({}));
            assert_eq!(answer["error"]["message"], NOT_FOUND, "{method}: {answer}");
        }
    }
    let yes = json!({ "question-1": { "action": "accept", "content": { "approve": true } } });
    let answer = task_request(b.address, &bob, "tasks/update", &id, json!({ "inputResponses": yes }));
    assert_eq!(answer["error"]["message"], NOT_FOUND, "{answer}");
    // And nothing bob sent reached the task.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(task_request(b.address, &alice, "tasks/get", &id, json!({}))["result"]["status"], "input_required");
    // An id no instance issued is not found either.
    let never = "0123456789abcdef0123456789abcdef";
    assert_eq!(task_request(b.address, &alice, "tasks/get", never, json!({}))["error"]["message"], NOT_FOUND);
}

#[test]
fn a_listen_on_the_other_instance_hears_the_task() {
    let redis = redis();
    let (a, b) = two_with_authorization(&redis);
    wait_for_line(&b, HEARING_TASKS);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    assert_eq!(poll_past(b.address, &alice, &id, &["working"])["result"]["status"], "input_required");
    // A listen on b for a's task: b holds no such task, and finds it in the store.
    let capabilities = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": capabilities });
    let params = json!({ "_meta": meta, "notifications": { "taskIds": [id] } });
    let body = json!({ "jsonrpc": "2.0", "id": "tasks", "method": "subscriptions/listen", "params": params });
    let bearer = format!("Bearer {alice}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
        ("Authorization", &bearer),
    ];
    let mut stream = replay::open(b.address, &request("POST", &headers, &body.to_string())).unwrap();
    let mut raw = Vec::new();
    read_until(&mut stream, &mut raw, "}}\n\n");
    let acknowledged = String::from_utf8_lossy(&raw).to_string();
    assert!(acknowledged.contains("acknowledged") && acknowledged.contains(&id), "{acknowledged}");
    // Answered on a: b's listen hears the task work again, and complete.
    let yes = json!({ "question-1": { "action": "accept", "content": { "approve": true } } });
    task_request(a.address, &alice, "tasks/update", &id, json!({ "inputResponses": yes }));
    read_until(&mut stream, &mut raw, "\"completed\"");
    let heard = String::from_utf8_lossy(&raw);
    assert!(heard.contains("notifications/tasks") && heard.contains(RAN), "{heard}");
}

#[test]
fn the_end_of_a_task_outlives_the_instance_that_ran_it() {
    let redis = redis();
    let (mut a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "run_payroll");
    // a is drained at once: it finishes the task's work, writes its end, and exits.
    a.terminate().unwrap();
    let status = a.wait_for_exit(Duration::from_secs(10)).expect("a exits");
    assert!(status.success(), "{status}");
    let ended = task_request(b.address, &alice, "tasks/get", &id, json!({}));
    assert_eq!(ended["result"]["status"], "completed", "a's end died with it: {ended}");
}

#[test]
fn a_task_waiting_when_its_instance_is_drained_ends_in_the_store() {
    let redis = redis();
    let mut a = instance_with_authorization(&redis.url(), &["--drain-secs", "1"]);
    let b = instance_with_authorization(&redis.url(), &[]);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    assert_eq!(poll_past(b.address, &alice, &id, &["working"])["result"]["status"], "input_required");
    // Nobody answers before a's drain ends: the task fails with the server's error, and
    // says so in the store, instead of waiting there until its record expires.
    a.terminate().unwrap();
    let status = a.wait_for_exit(Duration::from_secs(10)).expect("a exits");
    assert!(status.success(), "{status}");
    let ended = task_request(b.address, &alice, "tasks/get", &id, json!({}));
    assert_eq!(ended["result"]["status"], "failed", "{ended}");
    let error = ended.pointer("/result/error/message").and_then(Value::as_str).unwrap_or_default();
    assert!(error.contains("the server is stopping"), "{ended}");
}

#[test]
fn with_redis_stopped_a_tool_runs_as_an_ordinary_call_and_a_task_elsewhere_is_an_error() {
    let mut redis = redis();
    let (a, b) = two_with_authorization(&redis);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    redis.stop();
    // No store, no task: a task b could not resolve would break the spec's MUST.
    let body = send_as(a.address, &alice, "tools/call", "run_payroll", json!({ "name": "run_payroll" }));
    assert!(body.contains("Payroll for 3 employees") && !body.contains("\"task\""), "{body}");
    assert!(a.stderr().contains("could not be stored"), "{}", a.stderr());
    // The task may exist: b cannot tell, and says so, not "not found".
    let answer = task_request(b.address, &alice, "tasks/get", &id, json!({}));
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    // a still holds it, and answers from its own record.
    assert_eq!(task_request(a.address, &alice, "tasks/get", &id, json!({}))["result"]["status"], "input_required");
}

#[test]
fn a_task_in_the_store_that_is_not_ours_is_an_error_never_a_panic() {
    let redis = redis();
    let (mut a, mut b) = two_with_authorization(&redis);
    wait_for_line(&b, HEARING_TASKS);
    let alice = token("alice");
    let id = new_task(a.address, &alice, "approve_payroll");
    assert_eq!(poll_past(b.address, &alice, &id, &["working"])["result"]["status"], "input_required");
    // Records that are not ours: -32603 on b, never a panic.
    let other = "00000000000000000000000000000001";
    let key = format!("mcp-workbook:task:{other}");
    let big = format!("\"{}\"", "x".repeat(2 << 20));
    let not_a_task = json!({ "owner": "x", "task": { "taskId": "someone else's", "status": "working" } }).to_string();
    for record in ["not json", "[]", &not_a_task, &big] {
        redis.cli(&["SET", &key, record, "PX", "60000"]);
        let answer = task_request(b.address, &alice, "tasks/get", other, json!({}));
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
    }
    redis.cli(&["DEL", &key]);
    redis.cli(&["LPUSH", &key, "a list"]);
    assert_eq!(task_request(b.address, &alice, "tasks/get", other, json!({}))["error"]["code"], -32603);
    // An answer that is not ours, left for a's task: a logs it, and the task waits on.
    redis.cli(&["SET", &format!("mcp-workbook:task:{id}:answer"), "not json", "PX", "60000"]);
    for message in ["not json", "{\"instance\": \"x\", \"task\": {\"taskId\": \"../x\", \"status\": \"working\"}}"] {
        redis.cli(&["PUBLISH", "mcp-workbook:tasks-changed", message]);
    }
    let yes = json!({ "question-1": { "action": "accept", "content": { "approve": true } } });
    task_request(b.address, &alice, "tasks/update", &id, json!({ "inputResponses": yes }));
    let ended = poll_past(b.address, &alice, &id, &["working", "input_required"]);
    assert_eq!(ended["result"]["status"], "completed", "{ended}");
    assert!(a.stderr().contains("is not ours"), "{}", a.stderr());
    assert_eq!(b.stderr().matches("a message on the tasks' channel that is not ours").count(), 2, "{}", b.stderr());
    assert!(a.is_running() && b.is_running(), "an instance fell over");
}

/// An empty result, as `tasks/update` and `tasks/cancel` answer: nothing but its marks.
fn assert_acknowledged(answer: &Value) {
    let result = answer["result"].as_object().unwrap_or_else(|| panic!("no result: {answer}"));
    assert!(result.keys().all(|key| key == "resultType" || key == "_meta"), "{answer}");
}

/// Wait until `server` has written `line` (a relay has subscribed).
fn wait_for_line(server: &RunningServer, line: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !server.stderr().contains(line) {
        assert!(Instant::now() < deadline, "no `{line}`; stderr:\n{}", server.stderr());
        std::thread::sleep(Duration::from_millis(50));
    }
}
