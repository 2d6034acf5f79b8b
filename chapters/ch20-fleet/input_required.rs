//! Input required (chapter 15): a call that asks the client, and the client that
//! retries with the answer (`2026-07-28/basic/patterns/mrtr.mdx`).
//!
//! In the handshake era a server asks mid-call on the call's open stream and waits for
//! the answer on a session. Here nothing waits: the call answers `input_required` with
//! what it needs answered and a `requestState`; the client retries the same call with
//! `inputResponses` and that state, on any connection, to any instance of the server.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use crate::guard::same_secret;
use crate::jsonrpc::RpcError;
use crate::mcp::ToolResult;
use crate::modern::{CLIENT_CAPABILITIES_KEY, request_meta};
use crate::store::{NotUsed, Store, StoreError};

// ANCHOR: input_required
/// A tool that asks the user before it acts, as YOUR TOOLS says it (`main` hands it
/// down): its name, its question, and what the answer decides. Both eras ask the same
/// question: here with `input_required`, in the handshake era mid-call (chapter 16).
pub struct AskingTool {
    pub name: &'static str,
    pub question: fn() -> Value,
    pub decide: fn(&Value) -> ToolResult,
}

/// The key of its one question in `inputRequests` and `inputResponses`.
const APPROVAL_KEY: &str = "approval";
/// The longest `requestState` read; a longer one is refused before it is looked at.
const MAX_STATE_BYTES: usize = 256;
/// How long a client may take to answer: after that the state is refused.
pub const STATE_TTL_SECS: u64 = 600;
/// Who asked, as a state records it when the server asks for no token: a bearer token
/// (chapter 7) is one secret every client shares, and a client's `clientInfo` is its own
/// claim, which no security decision may rest on. With authorization (chapter 18) a
/// state names the caller instead (`Caller::identity`: the token's subject and client),
/// and another caller's is refused.
pub const ANYONE: &str = "anyone";

/// 2026-07-28's code for "this request needs a client capability you did not declare".
pub const MISSING_CLIENT_CAPABILITY: i64 = -32021;

/// `tools/call` of the tool that asks: the first call, or a retry with the answers. Its
/// arguments were checked first, by the router's `tools_call`, as every call's are
/// ("Validate all tool inputs", `2026-07-28/server/tools.mdx`, Security
/// Considerations): no question is asked for a call that cannot run.
pub fn call_asking(
    params: Option<&Value>,
    asking: &AskingTool,
    caller: Option<&str>,
    store: &Store,
) -> Result<Value, RpcError> {
    let params = params.expect("the tool was found by the name they hold");
    takes_forms(params, asking.name)?;
    // The call a state is issued for, and the only one it comes back on.
    let call = originating_call(caller, asking.name, params.get("arguments"));
    // The state comes back from the client: bounded, verified, unexpired, unused, or refused.
    if let Some(state) = params.get("requestState") {
        let state = state.as_str().ok_or_else(|| RpcError::invalid_params("`requestState` must be a string"))?;
        let (id, expires) = verify_state(state, &call, now_secs())?;
        // Used once, whatever this retry brings: an answer acted on, or a question asked
        // again. Chapter 20: once across every instance that shares the store.
        store.use_once(id, expires, now_secs()).map_err(|not_used| match not_used {
            NotUsed::Refused(why) => state_refused(why),
            NotUsed::StoreFailed(error) => not_recorded(&error),
        })?;
        let answer = params.get("inputResponses").and_then(|responses| responses.get(APPROVAL_KEY));
        if let Some(answer) = answer {
            let result = (asking.decide)(answer);
            return Ok(result.into_json());
        }
        // A valid state but no answer to our question: ask again, with a fresh state.
    }
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": { APPROVAL_KEY: { "method": "elicitation/create", "params": (asking.question)() } },
        "requestState": sign_state(&call, now_secs() + STATE_TTL_SECS),
    }))
}

/// The question is a form: ask only a client that takes forms, one that declared
/// `elicitation` empty (forms, for backwards compatibility) or with `form`
/// (`2026-07-28/client/elicitation.mdx`, Capabilities). Any other gets -32021, whose
/// status is 400 (`2026-07-28/basic/index.mdx`, `_meta`). Chapter 19: a task that asks
/// asks the same form, and needs the same.
pub fn takes_forms(params: &Value, tool: &str) -> Result<(), RpcError> {
    let elicitation = request_meta(Some(params))
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|capabilities| capabilities.get("elicitation"))
        .and_then(Value::as_object);
    let can_elicit = elicitation.is_some_and(|modes| modes.is_empty() || modes.contains_key("form"));
    if can_elicit {
        return Ok(());
    }
    Err(RpcError {
        code: MISSING_CLIENT_CAPABILITY,
        message: format!(
            "{tool} asks the user for approval in a form: the client must declare the elicitation capability, with form mode"
        ),
        data: Some(json!({ "requiredCapabilities": { "elicitation": { "form": {} } } })),
    })
}

/// The call a state is issued for, as the state names it: `PRINCIPAL.ARGUMENTS.TOOL`,
/// who asked (`anyone`, or a digest of the caller's identity), a digest of the call's
/// arguments, and the tool. A state presented on any
/// other call is refused: mrtr.mdx asks for "an identifier for the originating request,
/// e.g. the method name and a digest of its salient parameters" (Server Requirements 5).
pub fn originating_call(caller: Option<&str>, tool: &str, arguments: Option<&Value>) -> String {
    let principal = caller.map_or(ANYONE.to_string(), |caller| state_tag(&format!("caller {caller}")));
    let arguments = canonical_json(arguments.unwrap_or(&json!({})));
    format!("{principal}.{}.{tool}", state_tag(&format!("arguments {arguments}")))
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

/// The id of the state this process issued last: each one's id is the next number
/// (chapter 20: from where the store says to start, `configure`).
static STATES_ISSUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The state: `v2.ID.EXPIRES.CALL.TAG`. ID is its own number, so that it can be used
/// once; CALL is `originating_call`'s; TAG is a keyed hash of the rest under a key only
/// this process knows. A client can read it but not forge or alter it.
pub fn sign_state(call: &str, expires: u64) -> String {
    let id = STATES_ISSUED.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
    let body = format!("v2.{id}.{expires}.{call}");
    let tag = state_tag(&body);
    format!("{body}.{tag}")
}

/// Check a state that came back: size, tag, shape, call, expiry, in that order. Its id
/// and expiry, when it passes.
pub fn verify_state(state: &str, call: &str, now: u64) -> Result<(u64, u64), RpcError> {
    if state.len() > MAX_STATE_BYTES {
        return Err(state_refused("is too long"));
    }
    let Some((body, tag)) = state.rsplit_once('.') else { return Err(state_refused(NOT_ISSUED)) };
    if !same_secret(tag.as_bytes(), state_tag(body).as_bytes()) {
        return Err(state_refused(NOT_ISSUED));
    }
    let mut parts = body.splitn(4, '.');
    let (Some("v2"), Some(Ok(id)), Some(Ok(expires)), Some(for_call)) =
        (parts.next(), parts.next().map(str::parse), parts.next().map(str::parse), parts.next())
    else {
        return Err(state_refused(NOT_ISSUED));
    };
    if for_call != call {
        return Err(state_refused("was issued for another call"));
    }
    if expires < now {
        return Err(state_refused("has expired"));
    }
    Ok((id, expires))
}

/// Why most states are refused: the tag, or the shape, is not this server's.
const NOT_ISSUED: &str = "is not one this server issued";

// ANCHOR: not_recorded
/// Chapter 20: the store failed (it did not answer, or answered what is not ours), so
/// whether this state was used is unknown, and the approval does not run: run, it could
/// run twice. -32603, "Internal error" (the server's own fault, not the client's params,
/// so not -32602). The same retry, sent again once the store is back, runs once, or is
/// refused (its use may have reached the store after all), and the client asks again.
fn not_recorded(error: &StoreError) -> RpcError {
    eprintln!("input_required: an approval not run, its state not recorded: {error}");
    RpcError::internal_error(
        "the approval could not be recorded as used (the state store failed), so it did not run; \
         send the same retry again later",
    )
}
// ANCHOR_END: not_recorded

/// A state the server will not honour: -32602, and what the client can do instead. A
/// state "that fails verification" MUST be rejected (mrtr.mdx, Server Requirements 4).
pub fn state_refused(why: &str) -> RpcError {
    RpcError::invalid_params(&format!("`requestState` {why}; call the tool again without it"))
}

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
    /// of used states, `--state-store`: one instance does not know what another has
    /// used); without it, one is drawn at random.
    #[arg(long, value_name = "HEX", value_parser = parse_state_key)]
    pub state_key: Option<[u8; 16]>,
    /// For tests: the clock `requestState` expiry reads, in seconds since 1970.
    #[arg(long, value_name = "SECS", hide = true)]
    pub fixed_clock: Option<u64>,
    /// For tests: the most used states remembered at once in the process
    /// (`MAX_USED_STATES` unless given, store.rs), so that a test can fill the record
    /// and see what it does when full.
    #[arg(long, value_name = "N", hide = true)]
    pub max_used_states: Option<usize>,
}

/// Set up what the flags say, once, before any request: the key (`--state-key`), the
/// clock (`--fixed-clock`, for tests), the start of the record of used states in
/// `store` (whose size `--max-used-states` gave), and the first state's id.
pub fn configure(flags: &StateFlags, store: &Store) {
    let StateFlags { state_key, fixed_clock, .. } = *flags;
    // A transcript (a fixed clock) numbers its states from 0 in Redis too, so that they
    // are exact; it runs one instance, which no other can meet.
    let first_id = if fixed_clock.is_some() { 0 } else { store.first_state_id() };
    STATES_ISSUED.store(first_id, Ordering::SeqCst);
    if let Some(key) = state_key {
        STATE_KEY.set(key).expect("set once, before any request");
    }
    if let Some(secs) = fixed_clock {
        FIXED_CLOCK.set(secs).expect("set once, before any request");
    }
    // A restart empties the record of used states: refuse what was issued before it.
    // (A fixed clock, for transcripts, never moves: there is no before to refuse.)
    if fixed_clock.is_none() {
        store.start(now_secs(), STATE_TTL_SECS);
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
pub fn siphash_2_4(key: &[u8; 16], message: &[u8]) -> u64 {
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
pub fn random_key() -> [u8; 16] {
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
