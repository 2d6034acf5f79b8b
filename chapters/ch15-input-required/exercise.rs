//! Input required (chapter 15): a call that asks the client, and the client that
//! retries with the answer (`2026-07-28/basic/patterns/mrtr.mdx`).
//!
//! In the handshake era a server asks mid-call on the call's open stream and waits for
//! the answer on a session. Here nothing waits: the call answers `input_required` with
//! what it needs answered and a `requestState`; the client retries the same call with
//! `inputResponses` and that state, on any connection, to any instance of the server.
// TODO(exercise): this file is your copy of `input_required.rs`, the piece chapter 15 adds to the
// server, with its decisions left for you to write. Each part sits between a `// TODO`
// line and its `// END TODO`: replace what is between them, and leave the rest as it is.
// The rest of the server is the chapter's own files, as `main.rs`'s map lists them: the
// exercise binary is that server with this file in place of `input_required.rs`.
// Check your work: `cargo run -- check 15`. The solution: `input_required.rs`, next to this file.
//
// Until the TODOs are written, some items below are unused or unreachable and the compiler
// would warn about each one. This line keeps the build quiet; delete this block when done.
#![allow(dead_code, unused_imports, unused_variables, unreachable_code, clippy::diverging_sub_expression)]
// END TODO

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use crate::guard::same_secret;
use crate::jsonrpc::RpcError;
use crate::mcp::{ToolResult, lock};
use crate::modern::{CLIENT_CAPABILITIES_KEY, request_meta};

// ANCHOR: input_required
/// The tool that asks: it runs the payroll only when the user says yes.
pub const APPROVE_PAYROLL: &str = "approve_payroll";
/// The key of its one question in `inputRequests` and `inputResponses`.
const APPROVAL_KEY: &str = "approval";
/// The longest `requestState` read; a longer one is refused before it is looked at.
const MAX_STATE_BYTES: usize = 256;
/// How long a client may take to answer: after that the state is refused.
pub const STATE_TTL_SECS: u64 = 600;
/// Who asked, as a state records it. Nobody is authenticated here: a bearer token
/// (chapter 7) is one secret every client shares, and a client's `clientInfo` is its own
/// claim, which no security decision may rest on. So every state says `anyone`. With
/// authorization (chapter 18) a state names the caller, the token's subject and client,
/// and another caller's is refused.
pub const PRINCIPAL: &str = "anyone";
/// The most used states remembered at once (`UsedStates`): some 10,000 approvals in ten
/// minutes, a few hundred kilobytes.
const MAX_USED_STATES: usize = 10_000;

/// 2026-07-28's code for "this request needs a client capability you did not declare".
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;

/// Does a 2026-07-28 `tools/call` of the tool `name` go through the asking path?
pub fn asks_client(name: &str) -> bool {
    name == APPROVE_PAYROLL
}

/// `tools/call` of a tool that asks: the first call, or a retry with the answers. Its
/// arguments were checked first, by the router's `tools_call`, as every call's are
/// ("Validate all tool inputs", `2026-07-28/server/tools.mdx`, Security
/// Considerations): no question is asked for a call that cannot run.
pub fn call_asking(params: Option<&Value>) -> Result<Value, RpcError> {
    let params = params.expect("the tool was found by the name they hold");
    // TODO: decision 1: ask only a client that declared it can answer this question, in this mode,
    // and tell any other what it lacks. Proven by "A client that cannot answer is not asked", "A client
    // that takes URL mode only is not asked" and "A client that declares form mode alone is asked too".
    todo!("may this client be asked?");
    // END TODO
    // The call a state is issued for, and the only one it comes back on.
    let call = originating_call(APPROVE_PAYROLL, params.get("arguments"));
    // The state comes back from the client: bounded, verified, unexpired, unused, or refused.
    if let Some(state) = params.get("requestState") {
        // TODO: decisions 2 and 3: believe nothing this retry carries before its state passes; a state that
        // passed is spent, then the answer decides, or the question is asked again. Proven by "A tampered state
        // is refused", "The same approved retry, sent again, is refused", "The user accepts the form, and answers no".
        todo!("take the retry")
        // END TODO
    }
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": { APPROVAL_KEY: {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Run this week's payroll now?",
                "requestedSchema": {
                    "type": "object",
                    "properties": { "approve": { "type": "boolean", "title": "Run the payroll" } },
                    "required": ["approve"],
                },
            },
        }},
        "requestState": sign_state(&call, now_secs() + STATE_TTL_SECS),
    }))
}

/// The call a state is issued for, as the state names it: `PRINCIPAL.ARGUMENTS.TOOL`,
/// who asked, a digest of the call's arguments, and the tool. A state presented on any
/// other call is refused: mrtr.mdx asks for "an identifier for the originating request,
/// e.g. the method name and a digest of its salient parameters" (Server Requirements 5).
pub fn originating_call(tool: &str, arguments: Option<&Value>) -> String {
    let arguments = canonical_json(arguments.unwrap_or(&json!({})));
    format!("{PRINCIPAL}.{}.{tool}", state_tag(&format!("arguments {arguments}")))
}

/// JSON with every object's keys in order: the same arguments make the same digest,
/// whatever order a client sends their keys in.
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(fields) => {
            let mut fields: Vec<_> = fields.iter().collect();
            fields.sort_by_key(|(key, _)| *key);
            let fields: Vec<String> =
                fields.iter().map(|(key, value)| format!("{}:{}", json!(key), canonical_json(value))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// How many states this process has issued: each one's id is the next number.
static STATES_ISSUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The state: `v2.ID.EXPIRES.CALL.TAG`. ID is its own number, so that it can be used
/// once; CALL is `originating_call`'s; TAG is a keyed hash of the rest under a key only
/// this process knows. A client can read it but not forge or alter it.
pub fn sign_state(call: &str, expires: u64) -> String {
    let id = STATES_ISSUED.fetch_add(1, Ordering::SeqCst) + 1;
    let body = format!("v2.{id}.{expires}.{call}");
    let tag = state_tag(&body);
    format!("{body}.{tag}")
}

/// Check a state that came back: size, tag, shape, call, expiry, in that order. Its id
/// and expiry, when it passes.
pub fn verify_state(state: &str, call: &str, now: u64) -> Result<(u64, u64), RpcError> {
    // TODO: decision 2: refuse a state this server did not issue, or issued for another call, or that
    // has expired, reading no more of it than needed; give its id and expiry. Proven by "A tampered
    // state is refused", "A state brought back on another call is refused", "An expired state is refused".
    todo!("verify the state that came back")
    // END TODO
}

/// Why most states are refused: the tag, or the shape, is not this server's.
const NOT_ISSUED: &str = "is not one this server issued";

/// A state the server will not honour: -32602, and what the client can do instead. A
/// state "that fails verification" MUST be rejected (mrtr.mdx, Server Requirements 4).
pub fn state_refused(why: &str) -> RpcError {
    RpcError::invalid_params(&format!("`requestState` {why}; call the tool again without it"))
}

// ANCHOR: used_states
/// The states already used. A good tag proves this server issued a state, not that it
/// is new: an approved retry sent again, word for word, would run the payroll again
/// until the state expired. mrtr.mdx: "Servers for which a given `requestState` must be
/// consumed at most once (e.g., one-time redemptions) MUST enforce that invariant
/// server-side" (Server Requirements 5).
pub static USED_STATES: Mutex<UsedStates> = Mutex::new(UsedStates::new(MAX_USED_STATES));

/// Each used state's id, kept until the state expires (from then on it is refused as
/// expired anyway): at most the states used in `STATE_TTL_SECS`, and never more than
/// `max`. This is the one thing the server keeps; a fleet of instances keeps it in a
/// store they share, or a state used on one instance can be used again on another.
pub struct UsedStates {
    /// `(expires, id)` of every used state not yet expired, the soonest to expire first.
    used: std::collections::BTreeSet<(u64, u64)>,
    /// Every state that expires at or before this is refused: it may have been used where
    /// this record cannot see, before this process started, or before the cap dropped it.
    horizon: u64,
    max: usize,
}

impl UsedStates {
    const fn new(max: usize) -> UsedStates {
        UsedStates { used: std::collections::BTreeSet::new(), horizon: 0, max }
    }

    /// The process starts at `now`, with an empty record. A state issued before then
    /// under the same `--state-key` may have been used by the process before: refused.
    pub fn start(&mut self, now: u64) {
        self.horizon = now + STATE_TTL_SECS - 1;
    }

    /// Use the state `id`, which expires at `expires`, once. `Err`: why not, for the client.
    pub fn use_once(&mut self, id: u64, expires: u64, now: u64) -> Result<(), &'static str> {
        self.used = self.used.split_off(&(now, 0)); // the expired are refused anyway
        if expires <= self.horizon {
            return Err("is older than this server's record of used states");
        }
        if !self.used.insert((expires, id)) {
            return Err("has been used already");
        }
        // Full: forget the state that expires first, and refuse from now on every state
        // that expires no later. Some states die early; none is used twice.
        if self.used.len() > self.max
            && let Some((expires, _)) = self.used.pop_first()
        {
            self.horizon = expires;
        }
        Ok(())
    }
}
// ANCHOR_END: used_states

/// The secret the tags are made with: `--state-key`, or one drawn at random when the
/// server starts (then a restart refuses every state issued before it, and the client
/// starts the call over). Servers behind one load balancer share one key.
static STATE_KEY: std::sync::OnceLock<[u8; 16]> = std::sync::OnceLock::new();
/// `--fixed-clock`: the seconds `now_secs` answers, so a transcript's states are exact.
static FIXED_CLOCK: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct StateFlags {
    /// The secret that signs `requestState` (chapter 15): 32 hex digits, 128 bits.
    /// Every instance behind one load balancer needs the same one (and a shared record
    /// of used states: one instance does not know what another has used); without it,
    /// one is drawn at random.
    #[arg(long, value_name = "HEX", value_parser = parse_state_key)]
    pub state_key: Option<[u8; 16]>,
    /// For tests: the clock `requestState` expiry reads, in seconds since 1970.
    #[arg(long, value_name = "SECS", hide = true)]
    pub fixed_clock: Option<u64>,
    /// For tests: the most used states remembered at once (`MAX_USED_STATES` unless
    /// given), so that a test can fill the record and see what it does when full.
    #[arg(long, value_name = "N", hide = true)]
    pub max_used_states: Option<usize>,
}

/// Set up what the flags say, once, before any request: the key (`--state-key`), the
/// clock and the size of the record of used states (`--fixed-clock` and
/// `--max-used-states`, for tests), and the start of that record.
pub fn configure(flags: &StateFlags) {
    let StateFlags { state_key, fixed_clock, max_used_states } = *flags;
    if let Some(max) = max_used_states {
        lock(&USED_STATES).max = max;
    }
    if let Some(key) = state_key {
        STATE_KEY.set(key).expect("set once, before any request");
    }
    if let Some(secs) = fixed_clock {
        FIXED_CLOCK.set(secs).expect("set once, before any request");
    }
    // A restart empties the record of used states: refuse what was issued before it.
    // (A fixed clock, for transcripts, never moves: there is no before to refuse.)
    if fixed_clock.is_none() {
        lock(&USED_STATES).start(now_secs());
    }
}

/// The tag: SipHash-2-4 of the body under the secret key, a 64-bit MAC. Without the
/// key a client cannot compute it, and any change to the body changes it.
pub fn state_tag(body: &str) -> String {
    let key = STATE_KEY.get_or_init(random_key);
    format!("{:016x}", siphash_2_4(key, body.as_bytes()))
}

/// SipHash-2-4 (Aumasson and Bernstein, 2012), a keyed hash made to be a MAC for short
/// messages. Written out rather than taken from std: std's `DefaultHasher` is SipHash
/// today, but its algorithm is unspecified and may change with a Rust release, and a
/// tag must mean the same to every build of the server behind one load balancer.
fn siphash_2_4(key: &[u8; 16], message: &[u8]) -> u64 {
    fn round(v: &mut [u64; 4]) {
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
    let word = |bytes: &[u8]| u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
    let (k0, k1) = (word(&key[..8]), word(&key[8..]));
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut absorb = |m: u64| {
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    };
    let blocks = message.chunks_exact(8);
    let tail = blocks.remainder();
    blocks.for_each(|block| absorb(word(block)));
    // The last word: the leftover bytes, and the length's low byte on top.
    let mut last = [0u8; 8];
    last[..tail.len()].copy_from_slice(tail);
    last[7] = message.len() as u8;
    absorb(u64::from_le_bytes(last));
    v[2] ^= 0xff;
    (0..4).for_each(|_| round(&mut v));
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

/// `--state-key`: 32 hex digits, the 16 bytes of a SipHash key.
pub fn parse_state_key(hex: &str) -> Result<[u8; 16], String> {
    let digits = |i: usize| hex.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok());
    let mut key = [0u8; 16];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = digits(2 * i).filter(|_| hex.len() == 32).ok_or("want 32 hex digits (128 bits)")?;
    }
    Ok(key)
}

/// A key nobody can guess: std seeds every `RandomState` from the operating system.
fn random_key() -> [u8; 16] {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new();
    let (high, low) = (random.hash_one(1u8), random.hash_one(2u8));
    let mut key = [0u8; 16];
    key[..8].copy_from_slice(&high.to_le_bytes());
    key[8..].copy_from_slice(&low.to_le_bytes());
    key
}

/// Seconds since 1970, for expiry.
pub fn now_secs() -> u64 {
    FIXED_CLOCK.get().copied().unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
    })
}
// ANCHOR_END: input_required
