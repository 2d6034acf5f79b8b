//! How often a caller may call a tool. The tools page of the spec says a server "MUST"
//! "Rate limit tool invocations" (`2025-11-25/server/tools.mdx`, Security
//! Considerations): each caller has a share of calls a minute, and a caller past it is
//! refused, over HTTP with `429` and `Retry-After`. Chapter 20: with a store, the
//! share is the fleet's, counted in Redis (store.rs).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;

use crate::http::Response;
use crate::jsonrpc::{RpcError, reply};
use crate::store::Store;

// ANCHOR: rate_limit
/// `--max-calls-per-minute`, unless given.
pub const DEFAULT_MAX_CALLS_PER_MINUTE: u32 = 120;

/// "Servers MUST: ... Rate limit tool invocations" (`2025-11-25/server/tools.mdx`,
/// Security Considerations). Each caller has a share of `per_minute` calls: it may spend
/// them at once, and they come back at an even pace, a whole share a minute. Nothing
/// runs in the background: a caller's share is brought up to date when it next calls.
/// Chapter 20: a fleet's store counts every instance's calls instead (`Store::take_call`).
pub struct RateLimit {
    per_minute: u32,
    store: &'static Store,
    /// Each caller's calls left, and when that was counted; at most `MAX_CALLERS`.
    shares: Mutex<HashMap<String, (f64, Instant)>>,
}

/// The most callers the rate limit remembers at once, so that its memory is bounded
/// however many addresses call.
const MAX_CALLERS: usize = 1024;

impl RateLimit {
    pub fn new(per_minute: u32, store: &'static Store) -> RateLimit {
        RateLimit { per_minute, store, shares: Mutex::new(HashMap::new()) }
    }

    /// Take one call from `caller`'s share: `Err` when it has no whole call left, with
    /// the seconds until it surely has one again. A fleet's store counts the call when it
    /// is `fleet_wide` (over HTTP: over stdio the caller is the one host of this process,
    /// and every stdio process would share one count); a store that does not answer
    /// leaves it to this instance's own count, so that the limit still holds, per
    /// instance, and other tools go on.
    pub fn take(&self, caller: &str, fleet_wide: bool) -> Result<(), u64> {
        let counted = if fleet_wide { self.store.take_call(caller, self.per_minute) } else { Ok(None) };
        match counted {
            Ok(Some((true, _))) => Ok(()),
            // Rounded up: a client that waits a whole second less than the window has left
            // would be refused again.
            Ok(Some((false, window_left))) => Err(window_left.as_millis().div_ceil(1000).max(1) as u64),
            Ok(None) => self.take_here(caller),
            Err(error) => {
                eprintln!("rate limit: counted by this instance alone: {error}");
                self.take_here(caller)
            }
        }
    }

    /// Take one call from `caller`'s share as this instance counts it.
    fn take_here(&self, caller: &str) -> Result<(), u64> {
        let now = Instant::now();
        let whole = f64::from(self.per_minute);
        // What a share holds at `now`: what was left, and what came back since.
        let left = |&(calls, counted): &(f64, Instant)| {
            (calls + now.saturating_duration_since(counted).as_secs_f64() * whole / 60.0).min(whole)
        };
        let mut shares = self.shares.lock().unwrap_or_else(PoisonError::into_inner);
        if shares.len() >= MAX_CALLERS && !shares.contains_key(caller) {
            // Room for a new caller: one whose share is whole again is as good as new,
            // so forget those; if none is, forget the one closest to whole, which gains
            // the fewest calls by being forgotten.
            shares.retain(|_, share| left(share) < whole);
            if shares.len() >= MAX_CALLERS
                && let Some(fullest) =
                    shares.iter().max_by(|a, b| left(a.1).total_cmp(&left(b.1))).map(|(k, _)| k.clone())
            {
                shares.remove(&fullest);
            }
        }
        let share = shares.entry(caller.to_string()).or_insert((whole, now));
        let calls = left(share);
        let allowed = calls >= 1.0;
        *share = (if allowed { calls - 1.0 } else { calls }, now);
        // One call comes back in this many seconds, so by then the caller surely has one.
        if allowed { Ok(()) } else { Err(60u64.div_ceil(u64::from(self.per_minute))) }
    }

    /// The answer to a call past the share. Over HTTP, `429 Too Many Requests` with
    /// `Retry-After` (RFC 6585, section 4), which a client library and every proxy
    /// understand; in the body, as over stdio, a JSON-RPC error with the call's id that
    /// says the same in words. Not a tool result with `isError`: the tool did not run,
    /// and no other arguments would make it run. `Retry-After` is `seconds`, what
    /// `take` said: by then the caller surely has a call again.
    pub fn refusal(&self, id: Value, seconds: u64) -> Response {
        reply(429, id, Err(RpcError::too_many_calls(self.per_minute, seconds)))
            .with_header("Retry-After", &seconds.to_string())
    }
}
// ANCHOR_END: rate_limit
