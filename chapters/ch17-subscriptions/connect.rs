//! Connecting an account (chapter 15): a step the user takes outside the client, in a
//! browser, asked for with a URL-mode elicitation (`2026-07-28/client/elicitation.mdx`,
//! URL Mode Elicitation Requests).
//!
//! `bank_balance` reads the payroll bank account's balance, which needs the user to
//! have connected that account to this server: the spec's "external (third-party)
//! authorization". Nothing of it may pass through the client, so the call answers
//! `input_required` with a link to the server's own consent page, `/connect/ID`. The
//! user opens it in a browser and connects; the client retries the call, with the
//! answer and the `requestState`, and learns the outcome from that retry: 2026-07-28
//! has no completion notice.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::http::{Request, Response};
use crate::input_required::{
    MISSING_CLIENT_CAPABILITY, PRINCIPAL, STATE_TTL_SECS, USED_STATES, now_secs, originating_call, sign_state,
    state_refused, state_tag, verify_state,
};
use crate::jsonrpc::RpcError;
use crate::mcp::{ToolResult, lock};
use crate::modern::{CLIENT_CAPABILITIES_KEY, request_meta};

// ANCHOR: connect
/// The tool that needs the connected account.
pub const BANK_BALANCE: &str = "bank_balance";
/// The key of its one request in `inputRequests` and `inputResponses`.
const CONNECT_KEY: &str = "connect";
/// Where the consent pages are: `/connect/ID`, on the endpoint's own origin.
pub const CONNECT_PATH: &str = "/connect/";
/// How long a link may wait to be opened: a few minutes, then it answers 404.
const LINK_TTL_SECS: u64 = 300;
/// `--link-ttl-secs`, for tests: `LINK_TTL_SECS` unless given.
static LINK_TTL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
/// The most links open at once: one more call that needs one is told to wait.
const MAX_OPEN_LINKS: usize = 100;
/// What the user is told, with the link.
const CONNECT_MESSAGE: &str =
    "Connect the payroll bank account to this server, so that it can read the account's balance.";
/// What a call over stdio is told: there is no page to send the user to.
const OVER_STDIO: &str = "bank_balance needs the payroll bank account connected, on a web page this server serves \
    over HTTP; over stdio it has none. Run the server over HTTP to connect the account.";
/// What the stand-in bank answers: a fixed figure.
const BALANCE: &str = "The payroll account holds 48,250.00 (the stand-in bank's fixed figure).";

/// The links open now and who has connected: the one thing this feature keeps. (A
/// fleet of instances keeps it in a store they share, chapter 20.)
pub static BANK: Mutex<Bank> = Mutex::new(Bank { links: BTreeMap::new(), connected: BTreeSet::new() });

/// Open links, by id: when each expires, and whom it connects. And who is connected:
/// here `anyone`, the only caller a server without identities knows (`PRINCIPAL`).
pub struct Bank {
    links: BTreeMap<String, (u64, String)>,
    connected: BTreeSet<String>,
}

impl Bank {
    /// Open the link `id` for `who`, unless `MAX_OPEN_LINKS` are open and unexpired.
    fn open(&mut self, id: String, who: &str, now: u64) -> bool {
        self.links.retain(|_, (expires, _)| *expires > now);
        if self.links.len() >= MAX_OPEN_LINKS {
            return false;
        }
        self.links.insert(id, (now + link_ttl(), who.to_string()));
        true
    }

    /// The link `id`, if it is open and unexpired: whom it connects.
    fn find(&self, id: &str, now: u64) -> Option<&str> {
        self.links.get(id).filter(|(expires, _)| *expires > now).map(|(_, who)| who.as_str())
    }
}

/// `tools/call` of `bank_balance` in 2026-07-28: the balance, when the caller has
/// connected the account; else a link to connect it, or, on a retry, the outcome.
/// `host` is the `Host` the call came to (the guard has checked it is one of ours);
/// over stdio there is none.
pub fn call_connect(params: Option<&Value>, host: Option<&str>) -> Result<Value, RpcError> {
    let params = params.expect("the tool was found by the name they hold");
    let who = PRINCIPAL;
    let call = originating_call(BANK_BALANCE, params.get("arguments"));
    if let Some(state) = params.get("requestState") {
        // A retry: the state is checked and used up as `approve_payroll`'s is. It names
        // the link it was issued with, which an answer withdraws. A retry
        // that finds the account not connected yet asks again with a new link, and
        // leaves the first open (the user may be on its page): both expire by themselves.
        let state = state.as_str().ok_or_else(|| RpcError::invalid_params("`requestState` must be a string"))?;
        let (number, expires) = verify_state(state, &call, now_secs())?;
        lock(&USED_STATES).use_once(number, expires, now_secs()).map_err(state_refused)?;
        let mut bank = lock(&BANK);
        let action = params.pointer(&format!("/inputResponses/{CONNECT_KEY}/action")).and_then(Value::as_str);
        // Connected is connected, whatever this answer says: the user may have pressed the
        // button on an earlier link of the same call, then answered this one.
        match action {
            _ if bank.connected.contains(who) => {
                bank.links.remove(&link_id(state));
                return Ok(ToolResult::text(BALANCE).into_json());
            }
            Some("decline" | "cancel") => {
                bank.links.remove(&link_id(state));
                let refused = "The user did not connect the payroll bank account, so its balance was not read. \
                    Do not call bank_balance again unless the user asks to connect it.";
                return Ok(ToolResult::error(refused).into_json());
            }
            // Accepted, but not connected yet (the page not opened, or not confirmed),
            // or no answer: ask again.
            _ => {}
        }
    } else if lock(&BANK).connected.contains(who) {
        return Ok(ToolResult::text(BALANCE).into_json());
    }
    // Over stdio the server has no web address to send the user to.
    let Some(host) = host else {
        return Ok(ToolResult::error(OVER_STDIO).into_json());
    };
    // Ask only a client that takes URL mode (`2026-07-28/client/elicitation.mdx`,
    // Capabilities): the same -32021 as `approve_payroll` gives a client without forms.
    let elicitation = request_meta(Some(params))
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY))
        .and_then(|capabilities| capabilities.get("elicitation"))
        .and_then(Value::as_object);
    if !elicitation.is_some_and(|modes| modes.contains_key("url")) {
        return Err(RpcError {
            code: MISSING_CLIENT_CAPABILITY,
            message: format!(
                "{BANK_BALANCE} asks the user to connect an account at a URL: the client must declare the elicitation capability, with url mode"
            ),
            data: Some(json!({ "requiredCapabilities": { "elicitation": { "url": {} } } })),
        });
    }
    let Some((state, id)) = new_link(&call, who) else {
        return Ok(ToolResult::error(too_many_links()).into_json());
    };
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": { CONNECT_KEY: {
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": CONNECT_MESSAGE,
                "url": format!("http://{host}{CONNECT_PATH}{id}"),
            },
        }},
        "requestState": state,
    }))
}

// ANCHOR: connect_in_session
/// 2025-11-25's code for "this request cannot go on until the user has done what a
/// URL-mode elicitation asks" (`URLElicitationRequiredError`, schema.ts).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// `tools/call` of `bank_balance` in the handshake era (chapter 16): the balance, when
/// the caller has connected the account; else the error -32042, which hands the client
/// a link to the same consent page as 2026-07-28's, under an `elicitationId`. The user
/// opens it; the client calls again, a new call that finds the account connected, or
/// not yet (then -32042 again, with a new link). `takes_urls`: whether the client
/// declared URL mode in `initialize`; `None` outside a session, where it declared nothing.
pub fn call_connect_in_session(
    params: Option<&Value>,
    host: Option<&str>,
    takes_urls: Option<bool>,
) -> Result<Value, RpcError> {
    let params = params.expect("the tool was found by the name they hold");
    let who = PRINCIPAL;
    if lock(&BANK).connected.contains(who) {
        return Ok(ToolResult::text(BALANCE).into_json());
    }
    let Some(host) = host else {
        return Ok(ToolResult::error(OVER_STDIO).into_json());
    };
    // "Servers MUST NOT send elicitation requests with modes that are not supported by
    // the client": a client that did not declare URL mode learns why in a failed result,
    // as a form-only client asked for a form does (sessions.rs); -32021 is 2026-07-28's.
    let lacks = match takes_urls {
        Some(true) => None,
        Some(false) => Some(format!(
            "{BANK_BALANCE} asks the user to connect the payroll bank account at a URL, and the client did not \
             declare the `elicitation` capability with url mode in `initialize`, so it cannot send them there. Do \
             not call {BANK_BALANCE} again in this session."
        )),
        None => Some(format!(
            "{BANK_BALANCE} asks the user to connect the payroll bank account at a URL, which takes a session whose \
             client declared the `elicitation` capability with url mode: call `initialize` first, then send its \
             `Mcp-Session-Id` with the call."
        )),
    };
    if let Some(lacks) = lacks {
        return Ok(ToolResult::error(lacks).into_json());
    }
    let call = originating_call(BANK_BALANCE, params.get("arguments"));
    let Some((_, id)) = new_link(&call, who) else {
        return Ok(ToolResult::error(too_many_links()).into_json());
    };
    Err(RpcError {
        code: URL_ELICITATION_REQUIRED,
        message: format!("{BANK_BALANCE} needs the payroll bank account connected first, at the URL given"),
        data: Some(json!({ "elicitations": [{
            "mode": "url",
            "elicitationId": elicitation_id(&id),
            "url": format!("http://{host}{CONNECT_PATH}{id}"),
            "message": CONNECT_MESSAGE,
        }]})),
    })
}

/// The `elicitationId` of link `id`: the client's name for what it asked, which the
/// completion notice repeats. Derived from the id, not the id itself: a client may show
/// or log it, and it opens nothing.
pub fn elicitation_id(id: &str) -> String {
    format!("{}{}", state_tag(&format!("elicitation {id} a")), state_tag(&format!("elicitation {id} b")))
}
// ANCHOR_END: connect_in_session

/// A new link for `who`, issued with a new state for `call`: the state and the link's
/// id; `None` when `MAX_OPEN_LINKS` are open.
fn new_link(call: &str, who: &str) -> Option<(String, String)> {
    let state = sign_state(call, now_secs() + STATE_TTL_SECS);
    let id = link_id(&state);
    lock(&BANK).open(id.clone(), who, now_secs()).then_some((state, id))
}

/// What a call is told when `MAX_OPEN_LINKS` are open.
fn too_many_links() -> String {
    format!("Too many bank connections are waiting to be made; try again in {} minutes.", link_ttl().div_ceil(60))
}

/// How long a link stays open: `LINK_TTL_SECS`, or `--link-ttl-secs`.
fn link_ttl() -> u64 {
    LINK_TTL.get().copied().unwrap_or(LINK_TTL_SECS)
}

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct ConnectFlags {
    /// For tests: how long a link to the consent page stays open, in seconds
    /// (`LINK_TTL_SECS` unless given), so that a test can see one expire.
    #[arg(long, value_name = "SECS", hide = true, value_parser = clap::value_parser!(u64).range(1..))]
    pub link_ttl_secs: Option<u64>,
}

/// Set up what the flags say, once, before any request.
pub fn configure(flags: &ConnectFlags) {
    if let Some(secs) = flags.link_ttl_secs {
        LINK_TTL.set(secs).expect("set once, before any request");
    }
}

/// The link issued with `state`: 128 bits no one can guess or derive without the state
/// key, and nothing about the user. Made from the whole state, not its number alone: a
/// restart with the same `--state-key` counts numbers from 1 again, and a link made from
/// the number would be the address of a link issued before it; the state's expiry,
/// from a clock that has moved on, makes the new one another.
fn link_id(state: &str) -> String {
    format!("{}{}", state_tag(&format!("link {state} a")), state_tag(&format!("link {state} b")))
}
// ANCHOR_END: connect

// ANCHOR: connect_page
/// `/connect/ID`, in a browser: `GET` shows what would be connected, `POST` connects it
/// and uses the link up. An unknown, used, withdrawn or expired link: the same 404.
pub fn connect_page(request: &Request, id: &str) -> Response {
    if !["GET", "HEAD", "POST"].contains(&request.method.as_str()) {
        return Response::empty(405).with_header("Allow", "GET, HEAD, POST");
    }
    let now = now_secs();
    let mut bank = lock(&BANK);
    let Some(who) = bank.find(id, now).map(str::to_string) else {
        return page(404, "No such link", "<p>This link is unknown, used or expired. Ask your assistant again.</p>");
    };
    if request.method == "POST" {
        bank.links.remove(id);
        bank.connected.insert(who);
        return page(
            200,
            "Connected",
            "<p>The payroll bank account is connected. Go back to your MCP client to carry on.</p>",
        );
    }
    let form = format!(
        "<p>Connect the <b>payroll bank account</b> (the stand-in bank) to this MCP server, so that it can \
         read the account's balance for you? Nothing else is shared.</p>\
         <form method=\"post\" action=\"{CONNECT_PATH}{id}\"><button>Connect</button></form>"
    );
    page(200, "Connect your bank account", &form)
}

/// A small HTML page that no other site may frame (a click on it is consent) and
/// whose address, a capability, no link on it leaks as a `Referer`.
fn page(status: u16, title: &str, body: &str) -> Response {
    let html = format!("<!doctype html><meta charset=\"utf-8\"><title>{title}</title><h1>{title}</h1>{body}\n");
    Response::empty(status)
        .with_header("Content-Type", "text/html; charset=utf-8")
        .with_header("Cache-Control", "no-store")
        .with_header("Referrer-Policy", "no-referrer")
        .with_header("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
        .with_body(html.into_bytes())
}
// ANCHOR_END: connect_page
