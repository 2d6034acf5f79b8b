//! 2026-07-28's `requestState` (chapter 15, carried by every chapter after it), checked
//! in each chapter that has it, where a transcript cannot show it. A transcript runs one
//! server, on a fixed clock, and shows a state used once and refused the second time.
//! Here:
//! - the record of used states is bounded, and when full refuses early rather than
//!   forget a state that could come back (mrtr.mdx, Server Requirements 5: a state to
//!   be consumed at most once is enforced so by the server). Filling the real record
//!   takes 10,001 approvals; the hidden flag `--max-used-states` makes it small;
//! - a server on a real clock refuses the states issued before the second it started,
//!   which its empty record cannot vouch for: it takes a restart, under the same
//!   `--state-key`;
//! - the tag is SipHash-2-4 of the state's body under `--state-key`, computed here by a
//!   second implementation, itself checked against the paper's test vectors. A
//!   transcript pins the tags a server makes, not which function made them; every
//!   instance behind one load balancer must make the same.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_workbook::replay;
use serde_json::{Value, json};

mod common;
use common::session_client::request;
use common::{chapter_binaries_from, start};

/// Every chapter with `requestState`: chapter 15 adds it.
fn asking() -> Vec<String> {
    chapter_binaries_from(15)
}

/// A `--state-key`, and the same 16 bytes.
const STATE_KEY: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0f";
const KEY: [u8; 16] = [0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f];
/// The chapters' `STATE_TTL_SECS`: a state expires this long after it is issued.
const STATE_TTL_SECS: u64 = 600;

const RAN: &str = "Payroll approved by the user and run for this week.";
const USED: &str = "Invalid params: `requestState` has been used already; call the tool again without it";
const OLDER: &str =
    "Invalid params: `requestState` is older than this server's record of used states; call the tool again without it";

/// A 2026-07-28 call of `approve_payroll` from a client that takes forms, with `extra`
/// params (the state, the answer): the JSON-RPC message that answers it.
fn call(address: SocketAddr, extra: Value) -> Value {
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let mut params = json!({ "name": "approve_payroll", "_meta": meta });
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "approve_payroll"),
    ];
    let answer = replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered");
    serde_json::from_str(&answer.body).unwrap_or_else(|e| panic!("{e}: {}", answer.body))
}

/// The first call: the server asks, and issues a state.
fn new_state(address: SocketAddr) -> String {
    let asked = call(address, json!({}));
    asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("no state in {asked}")).to_string()
}

/// The retry with `state` and the user's yes: the tool's text, or the error's message.
fn approve(address: SocketAddr, state: &str) -> String {
    let yes = json!({ "requestState": state, "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } } });
    let answer = call(address, yes);
    let said = answer.pointer("/result/content/0/text").or_else(|| answer.pointer("/error/message"));
    said.and_then(Value::as_str).unwrap_or_else(|| panic!("neither a result nor an error: {answer}")).to_string()
}

/// A record of two used states, on a fixed clock (every state expires in the same
/// second). A third used state is one too many: the record forgets the state that
/// expires first, and from then on refuses every state that expires no later. So the
/// forgotten state is still refused, and so is a state never used: some states die
/// early, none is used twice.
#[test]
fn the_record_of_used_states_when_full_refuses_early_rather_than_forget() {
    for binary in &asking() {
        let server =
            start(binary, &["--state-key", STATE_KEY, "--fixed-clock", "1800000000", "--max-used-states", "2"]);
        let states: Vec<String> = (0..4).map(|_| new_state(server.address)).collect();
        assert_eq!(approve(server.address, &states[0]), RAN, "{binary}");
        assert_eq!(approve(server.address, &states[0]), USED, "{binary}");
        assert_eq!(approve(server.address, &states[1]), RAN, "{binary}");
        assert_eq!(approve(server.address, &states[2]), RAN, "{binary}: the record is full, not the state");
        assert_eq!(approve(server.address, &states[0]), OLDER, "{binary}: a state the full record forgot");
        assert_eq!(approve(server.address, &states[3]), OLDER, "{binary}: a state of the forgotten's age");
    }
}

/// A state from the process before, under the same key: its tag is good (the refusal
/// is not "is not one this server issued"), and it is refused all the same, for this
/// process's record cannot say whether the one before used it. A state the new process
/// issues is taken.
#[test]
fn a_restarted_server_refuses_the_states_issued_before_it_started() {
    let now = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    for binary in &asking() {
        let before = start(binary, &["--state-key", STATE_KEY]);
        let state = new_state(before.address);
        drop(before);
        // `v2.ID.EXPIRES.CALL.TAG`: issued in the second `EXPIRES - STATE_TTL_SECS`. The
        // rule is about the second the next process starts in: let that second go by.
        let expires: u64 = state.split('.').nth(2).and_then(|secs| secs.parse().ok()).expect("v2.ID.EXPIRES...");
        let issued = Duration::from_secs(expires - STATE_TTL_SECS);
        std::thread::sleep((issued + Duration::from_millis(1100)).saturating_sub(now()));

        let after = start(binary, &["--state-key", STATE_KEY]);
        assert_eq!(approve(after.address, &state), OLDER, "{binary}");
        let fresh = new_state(after.address);
        assert_eq!(approve(after.address, &fresh), RAN, "{binary}");
    }
}

/// The state's last part is SipHash-2-4 of the rest under `--state-key`, as 16 hex digits.
#[test]
fn the_tag_of_a_state_is_siphash_2_4_of_its_body_under_the_state_key() {
    // The paper's test vectors (its appendix A: key 00 01 .. 0f; the empty message, and
    // 00 01 .. 0e): the reference below is SipHash-2-4, not a look-alike.
    let paper_key: [u8; 16] = std::array::from_fn(|i| i as u8);
    let message: Vec<u8> = (0..15).collect();
    assert_eq!(siphash_2_4(&paper_key, b""), 0x726f_db47_dd0e_0e31);
    assert_eq!(siphash_2_4(&paper_key, &message), 0xa129_ca61_49be_45e5);

    for binary in &asking() {
        let server = start(binary, &["--state-key", STATE_KEY]);
        let state = new_state(server.address);
        let (body, tag) = state.rsplit_once('.').expect("BODY.TAG");
        assert_eq!(tag, format!("{:016x}", siphash_2_4(&KEY, body.as_bytes())), "{binary}: {state}");
    }
}

/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF", 2012),
/// written from the paper: the reference the servers' tags are compared with.
fn siphash_2_4(key: &[u8; 16], message: &[u8]) -> u64 {
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().unwrap());
    let (k0, k1) = (word(&key[..8]), word(&key[8..]));
    // The state, v0 to v3, started from the key and "somepseudorandomlygeneratedbytes".
    let mut v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d, k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573];
    fn sip_round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    // The message in 8-byte words, the last one padded with zeros and topped with the
    // length mod 256.
    let mut padded = message.to_vec();
    padded.resize(message.len() / 8 * 8 + 7, 0);
    padded.push(message.len() as u8);
    for m in padded.chunks(8).map(word) {
        v[3] ^= m;
        sip_round(&mut v);
        sip_round(&mut v);
        v[0] ^= m;
    }
    v[2] ^= 0xff;
    (0..4).for_each(|_| sip_round(&mut v));
    v[0] ^ v[1] ^ v[2] ^ v[3]
}
