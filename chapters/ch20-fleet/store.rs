//! The store (chapter 20): the state a stateless protocol still has, where every
//! instance of the server can reach it. 2026-07-28 lets any instance answer any request,
//! but four things are still remembered between requests: which `requestState` has
//! been used (input_required.rs), how many calls each caller made this minute
//! (rate_limit.rs), who listens for which resource (streaming.rs's
//! `Call::resource_updated` tells them), and the tasks (tasks.rs). One instance keeps
//! them in its own memory; a fleet keeps the used states, the counts and the tasks'
//! records in Redis, and hears of every change through it.
//!
//! The store failing is an answer, not a hang: every call to Redis has a deadline, an
//! approval that cannot be recorded does not run, the rate limit falls back to the
//! instance's own count, a call that cannot record its task runs as an ordinary call,
//! and the relays of changes reconnect by themselves.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::{Client, Connection, RedisError};
use serde_json::{Value, json};

use crate::mcp::lock;

// ANCHOR: store
/// Where the shared state is kept: two kinds, chosen once by `--state-store`, each with
/// the same operations (`use_once`, `take_call`, `publish`, `relay_changes`, and the
/// tasks' below). An
/// enum rather than a trait: there are exactly two, both in this file, and each
/// operation is one `match` that shows what the two do side by side; nothing above this
/// file needs a type parameter or a `Box<dyn ...>` to hold one.
pub enum Store {
    /// In this process: one instance, no server to run (the default, as before).
    InProcess(Mutex<UsedStates>),
    /// In Redis, shared by every instance started with the same `--state-store`. Boxed:
    /// it is the larger, and there is one store in a process.
    Redis(Box<Redis>),
}

/// Why a state cannot be used now.
#[derive(Debug)]
pub enum NotUsed {
    /// It has been used, or may have been: the client's retry is refused (-32602).
    Refused(&'static str),
    /// The store did not answer, so nobody knows: the approval must not run.
    StoreFailed(StoreError),
}

impl Store {
    /// Record the state `id`, which expires at `expires` (seconds since 1970), as used,
    /// once across every instance that shares this store: `Ok` the first time only.
    pub fn use_once(&self, id: u64, expires: u64, now: u64) -> Result<(), NotUsed> {
        match self {
            Store::InProcess(used) => lock(used).use_once(id, expires, now).map_err(NotUsed::Refused),
            Store::Redis(redis) => match redis.set_if_absent(id, expires, now) {
                Ok(used) => used.map_err(NotUsed::Refused),
                Err(error) => Err(NotUsed::StoreFailed(error)),
            },
        }
    }

    /// Count one tool call of `caller` in the fleet's minute: `Ok(None)` when the store
    /// does not count calls (in the process: rate_limit.rs counts them itself), else
    /// whether it may go on, and how long until its minute ends.
    pub fn take_call(&self, caller: &str, per_minute: u32) -> Result<Option<(bool, Duration)>, StoreError> {
        match self {
            Store::InProcess(_) => Ok(None),
            Store::Redis(redis) => redis.count_call(caller, per_minute).map(Some),
        }
    }

    /// Tell the other instances that `uri` has changed (this instance has told its own
    /// listeners already). A store that does not answer loses the notice, which is
    /// logged: a notice is a hint to read again, never the data itself.
    pub fn publish(&self, uri: &str) {
        if let Store::Redis(redis) = self
            && let Err(error) = redis.publish(uri)
        {
            eprintln!("store: a change of {uri} was not told to the other instances: {error}");
        }
    }

    /// Hand every change another instance publishes to `relay`, for as long as the
    /// process runs, on a thread of its own (in the process, there are no others).
    pub fn relay_changes(&'static self, relay: impl Fn(&str) + Send + 'static) {
        if let Store::Redis(redis) = self {
            std::thread::spawn(move || redis.relay_changes(relay));
        }
    }

    /// The process starts at `now`, and issues states that live `state_ttl` seconds.
    /// With an empty record in the process, every state that expires within `state_ttl`
    /// was issued before, may have been used, and is refused. Redis's record outlives any
    /// one instance: it refuses only what was issued before the record itself began
    /// (`Redis::set_if_absent`).
    pub fn start(&self, now: u64, state_ttl: u64) {
        match self {
            Store::InProcess(used) => lock(used).horizon = now + state_ttl - 1,
            Store::Redis(redis) => {
                redis.state_ttl.store(state_ttl, Ordering::Relaxed);
                // A new fleet's record begins now, and refuses every state issued in this
                // second or before: this instance issues none until the next second. A
                // record that began before goes on.
                match redis.begin_record(now) {
                    Ok(true) => std::thread::sleep(Duration::from_millis(1000 - u64::from(subsec_millis()))),
                    Ok(false) => {}
                    Err(error) => eprintln!("store: the record of used states will begin at its first use: {error}"),
                }
                redis.check_setup();
            }
        }
    }

    /// The first `requestState` id this instance issues. In the process, 1, 2, 3...;
    /// in a fleet every instance draws its own random start, so that two instances do
    /// not issue the same id and find it used by the other.
    pub fn first_state_id(&self) -> u64 {
        match self {
            Store::InProcess(_) => 0,
            Store::Redis(_) => random_u64(),
        }
    }
}
// ANCHOR_END: store

// ANCHOR: links
/// Chapter 15's links to its consent page, and who has connected (connect.rs), kept
/// where every instance reaches them: a link made on one instance opens on another.
/// `Ok(None)` in the process: connect.rs keeps them itself, as rate_limit.rs counts.
/// `whose` is a tag of the caller, never the caller's name, in a key.
impl Store {
    /// `SET PREFIX:link:ID WHO PX ms`: open, and gone by itself when it expires.
    pub fn open_link(&self, id: &str, who: &str, ttl: Duration) -> Result<Option<()>, StoreError> {
        let Store::Redis(redis) = self else { return Ok(None) };
        let (key, ms) = (redis.link_key(id), ttl.as_millis().max(1) as u64);
        redis.command(|c| redis::cmd("SET").arg(&key).arg(who).arg("PX").arg(ms).query::<()>(c)).map(Some)
    }

    /// `GET PREFIX:link:ID` (`take`: `GETDEL`, used up in one step, whichever instance
    /// asks first): whom the link connects, if it is open.
    pub fn link(&self, id: &str, take: bool) -> Result<Option<Option<String>>, StoreError> {
        let Store::Redis(redis) = self else { return Ok(None) };
        if !(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())) {
            return Ok(Some(None)); // no id of ours: no key
        }
        let key = redis.link_key(id);
        let who = redis.command(|c| redis::cmd(if take { "GETDEL" } else { "GET" }).arg(&key).query(c))?;
        Ok(Some(who))
    }

    /// `DEL PREFIX:link:ID`: withdrawn.
    pub fn withdraw_link(&self, id: &str) -> Result<Option<()>, StoreError> {
        let Store::Redis(redis) = self else { return Ok(None) };
        let key = redis.link_key(id);
        redis.command(|c| redis::cmd("DEL").arg(&key).query::<()>(c)).map(Some)
    }

    /// `SET PREFIX:connected:WHOSE 1` (`connect`), or `EXISTS` of it: has `whose` connected?
    pub fn connected(&self, whose: &str, connect: bool) -> Result<Option<bool>, StoreError> {
        let Store::Redis(redis) = self else { return Ok(None) };
        let key = format!("{}:connected:{whose}", redis.prefix);
        if connect {
            return redis.command(|c| redis::cmd("SET").arg(&key).arg(1).query::<()>(c)).map(|()| Some(true));
        }
        redis.command(|c| redis::cmd("EXISTS").arg(&key).query::<bool>(c)).map(Some)
    }
}

impl Redis {
    fn link_key(&self, id: &str) -> String {
        format!("{}:link:{id}", self.prefix)
    }
}
// ANCHOR_END: links

/// The store did not answer (`unreachable`), or answered what this server never writes.
#[derive(Debug)]
pub struct StoreError {
    why: String,
    unreachable: bool,
}

impl StoreError {
    /// Redis answered, with what is not ours (an error, a value this server never wrote).
    fn not_ours(why: String) -> StoreError {
        StoreError { why, unreachable: false }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl From<RedisError> for StoreError {
    fn from(error: RedisError) -> StoreError {
        let unreachable = error.is_io_error() || error.is_timeout() || error.is_connection_dropped();
        StoreError { why: format!("Redis: {error}"), unreachable }
    }
}

// ANCHOR: flags
/// The most used states remembered at once in the process (`UsedStates`): some 10,000
/// approvals in ten minutes, a few hundred kilobytes.
const MAX_USED_STATES: usize = 10_000;

/// `--state-store` from the environment, where other users of the machine cannot read
/// it (they can read a process's flags, with `ps`).
const STORE_VARIABLE: &str = "MCP_WORKBOOK_STATE_STORE";

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct StoreFlags {
    /// Keep the state instances share (used `requestState`s, the rate limit, resource
    /// changes) in Redis, `redis://HOST:PORT` (chapter 20): every instance behind one load
    /// balancer names the same one. Without it, in this process: one instance only. A
    /// URL with a password: prefer the variable MCP_WORKBOOK_STATE_STORE (flags show in `ps`).
    #[arg(long, value_name = "URL")]
    pub state_store: Option<String>,
    /// The start of every key and channel this server uses in the store, so that
    /// several servers can share one Redis without reading each other's state.
    #[arg(long, value_name = "PREFIX", default_value = "mcp-workbook", value_parser = parse_prefix)]
    pub state_store_prefix: String,
}

impl StoreFlags {
    /// The store the flags name; `max_used_states` bounds the record in the process.
    pub fn store(&self, max_used_states: Option<usize>) -> Result<Store, String> {
        let from_environment = || std::env::var(STORE_VARIABLE).ok().filter(|url| !url.is_empty());
        let Some(url) = self.state_store.clone().or_else(from_environment) else {
            return Ok(Store::InProcess(Mutex::new(UsedStates::new(max_used_states.unwrap_or(MAX_USED_STATES)))));
        };
        // Not the URL in the error: it may hold a password.
        let client = Client::open(url.as_str()).map_err(|error| format!("--state-store: {error}"))?;
        let (prefix, instance) = (self.state_store_prefix.clone(), format!("{:016x}", random_u64()));
        let (idle, paused_until) = (Mutex::new(Vec::new()), Mutex::new(None));
        let state_ttl = AtomicU64::new(0);
        Ok(Store::Redis(Box::new(Redis { client, idle, paused_until, state_ttl, prefix, instance })))
    }
}

/// `--state-store-prefix`: letters, digits and `-_.:`, at most 64, so that a key is
/// readable in `redis-cli` and cannot run into another server's.
fn parse_prefix(prefix: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "-_.:".contains(c);
    if prefix.is_empty() || prefix.len() > 64 || !prefix.chars().all(allowed) {
        return Err("want 1 to 64 letters, digits, '-', '_', '.' or ':'".into());
    }
    Ok(prefix.to_string())
}
// ANCHOR_END: flags

// ANCHOR: used_states
/// The states already used, in the process. A good tag proves this server issued a
/// state, not that it is new: an approved retry sent again, word for word, would run the
/// payroll again until the state expired. mrtr.mdx: "Servers for which a given
/// `requestState` must be consumed at most once (e.g., one-time redemptions) MUST
/// enforce that invariant server-side" (Server Requirements 5).
///
/// Each used state's id, kept until the state expires (from then on it is refused as
/// expired anyway): at most the states used in a state's lifetime, and never more than
/// `max`. A fleet of instances keeps this record in Redis instead (`Redis::set_if_absent`),
/// or a state used on one instance can be used again on another.
pub struct UsedStates {
    /// `(expires, id)` of every used state not yet expired, the soonest to expire first.
    used: BTreeSet<(u64, u64)>,
    /// Every state that expires at or before this is refused: it may have been used where
    /// this record cannot see, before this process started, or before the cap dropped it.
    horizon: u64,
    max: usize,
}

impl UsedStates {
    const fn new(max: usize) -> UsedStates {
        UsedStates { used: BTreeSet::new(), horizon: 0, max }
    }

    /// Use the state `id`, which expires at `expires`, once. `Err`: why not, for the client.
    fn use_once(&mut self, id: u64, expires: u64, now: u64) -> Result<(), &'static str> {
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

// ANCHOR: redis
// ANCHOR: deadlines
/// How long connecting to Redis may take. Redis next to the server answers in well under
/// a millisecond; one that has not answered in half a second is down or unreachable, and
/// the request that waits for it should get its answer (a refusal) now.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long one command may wait to be sent, and for its reply. Every command here is a
/// constant-time one on one key, so the same half second: a Redis that accepts and never
/// answers (stopped with SIGSTOP, a full disk, a broken network) costs a request this
/// much, and no more.
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);
/// After Redis has failed a command, how long it is not asked again: each request in
/// the meantime gets its answer (a refusal, the instance's own count) at once, instead
/// of waiting out the deadlines above, one request after another, while Redis is down.
const PAUSE_AFTER_FAILURE: Duration = Duration::from_secs(1);
// ANCHOR_END: deadlines
/// Connections kept open between requests, for the next ones (a connection a request
/// has to open costs a round trip more). More at once are opened, then closed.
const MAX_IDLE_CONNECTIONS: usize = 16;
/// How much a state's record outlives the state, for clocks that differ between the
/// instances: one that runs a minute late still finds the record.
const CLOCK_SKEW_SECS: u64 = 60;
/// The relay of changes: how long it waits before reconnecting, doubled after each
/// failure up to the most, so that a Redis that is down is not hammered.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MOST_BACKOFF: Duration = Duration::from_secs(2);
/// How long the relay waits for a message before it checks (`PING`) that the
/// connection is still there: a Redis that vanished without closing it is found this soon.
const RELAY_QUIET_CHECK: Duration = Duration::from_secs(15);
/// The longest resource URI relayed; a longer message is not ours.
const MAX_RELAYED_URI_BYTES: usize = 2048;

/// Redis, and what this instance keeps to talk to it.
pub struct Redis {
    client: Client,
    /// Connections open and free, for the next command, each with the key of its
    /// Redis's record (`connect`).
    idle: Mutex<Vec<(Connection, String)>>,
    /// Until when Redis is not asked (`PAUSE_AFTER_FAILURE`).
    paused_until: Mutex<Option<Instant>>,
    /// How long a state lives, once the process has started (`Store::start`).
    state_ttl: AtomicU64,
    /// `--state-store-prefix`, before every key and the channel.
    prefix: String,
    /// This instance's name on the channel, random: it does not relay its own notices,
    /// which it told its listeners itself.
    instance: String,
}

impl Redis {
    /// Record the state `id` as used unless it is already, in one step no other
    /// instance can come between, whichever instance asks first: `Ok(Ok(()))` for that
    /// one only. The record is kept until the state expires, and a little longer
    /// (`CLOCK_SKEW_SECS`); from then on the state is refused as expired anyway.
    ///
    /// In the same `MULTI`, the record's own start (`begin_record`), set if it is not
    /// there: a Redis that lost its keys, or came back from a snapshot older than its
    /// last writes, begins its record again, and every state issued before then is
    /// refused, as a restarted process refuses them (`UsedStates`): it may have been used
    /// where this record cannot see.
    fn set_if_absent(&self, id: u64, expires: u64, now: u64) -> Result<Result<(), &'static str>, StoreError> {
        let (since, first): (Option<String>, Option<String>) = self.command_in_life(|c, since_key| {
            // One `MULTI`: the record's start, set if it is not there, and read ...
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("SET").arg(since_key).arg(now).arg("NX").ignore().cmd("GET").arg(since_key);
            // ... and the state's own record, its third command.
            // ANCHOR: set_nx
            // `SET key 1 NX PX ms`: set only if absent (`NX`), so that of two retries one
            // finds the key; gone by itself after `ms` (`PX`), when the state is dead anyway.
            let key = format!("{}:used-state:{id}", self.prefix);
            let keep_ms = (expires.saturating_sub(now) + 1 + CLOCK_SKEW_SECS) * 1000;
            pipe.cmd("SET").arg(&key).arg(1).arg("NX").arg("PX").arg(keep_ms).query(c)
            // ANCHOR_END: set_nx
        })?;
        // A beginning this server could have written: a second since 1970, not after now
        // by more than the clocks may differ.
        let since = since.as_deref().and_then(|since| since.parse::<u64>().ok());
        let Some(since) = since.filter(|since| *since <= now.saturating_add(CLOCK_SKEW_SECS)) else {
            return Err(StoreError::not_ours(format!("Redis's record of used states begins at {since:?}")));
        };
        let state_ttl = self.state_ttl.load(Ordering::Relaxed);
        // Issued in the second the record began, or before: it may have been used.
        if expires <= since.saturating_add(state_ttl) {
            return Ok(Err("is older than this server's record of used states"));
        }
        // ANCHOR: reply
        // `SET ... NX` answers `OK` when it set the key, and nil when the key was there.
        match first.as_deref() {
            Some("OK") => Ok(Ok(())),
            None => Ok(Err("has been used already")),
            Some(other) => Err(StoreError::not_ours(format!("Redis answered SET with {other:?}"))),
        }
        // ANCHOR_END: reply
    }

    /// `SET PREFIX:record-since:RUN_ID NOW NX`: the record of used states begins now,
    /// unless it began before in this life of Redis. `RUN_ID` is Redis's own name for
    /// the life of its process (`INFO server`), new each time it starts: a Redis that
    /// starts again empty, or from a snapshot that misses its last writes, or a replica
    /// that takes its place, is a new life, whose record begins anew. `true`: it begins now.
    fn begin_record(&self, now: u64) -> Result<bool, StoreError> {
        let reply = self.command_in_life(|c, since_key| {
            redis::cmd("SET").arg(since_key).arg(now).arg("NX").query::<Option<String>>(c)
        })?;
        Ok(reply.is_some())
    }

    /// One call in `caller`'s fixed window of a minute, which its first call opens,
    /// counted in the same `MULTI` that sets the window's end (so that no call is counted
    /// in a window that never ends) and reads how long it has left, for `Retry-After`.
    /// A transaction rather than a Lua script: three commands a reader knows, sent in one
    /// round trip, and nothing to load into Redis. A fixed window lets a caller make up
    /// to twice its share across the turn of a minute; the share itself is never exceeded
    /// within one window, fleet-wide.
    fn count_call(&self, caller: &str, per_minute: u32) -> Result<(bool, Duration), StoreError> {
        // ANCHOR: window
        // `INCR` counts the call; `PEXPIRE ... NX` gives the window its end once, at its
        // first call, and never moves it; `PTTL` reads what is left of it.
        let key = format!("{}:calls:{caller}", self.prefix);
        let (calls, _, left_ms): (i64, i64, i64) = self.command(|c| {
            redis::pipe()
                .atomic()
                .incr(&key, 1)
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(60_000)
                .arg("NX")
                .cmd("PTTL")
                .arg(&key)
                .query(c)
        })?;
        // ANCHOR_END: window
        if calls < 1 || !(0..=60_000).contains(&left_ms) {
            return Err(StoreError::not_ours(format!("Redis's count of calls is not ours ({calls}, {left_ms} ms)")));
        }
        // ANCHOR: allowed
        // The count is this call's own number in the window.
        let allowed = calls <= i64::from(per_minute);
        // ANCHOR_END: allowed
        Ok((allowed, Duration::from_millis(left_ms as u64)))
    }

    /// `PUBLISH PREFIX:resources-updated {"instance": .., "uri": ..}`.
    fn publish(&self, uri: &str) -> Result<(), StoreError> {
        let message = json!({ "instance": self.instance, "uri": uri }).to_string();
        let channel = self.channel();
        self.command(|c| redis::cmd("PUBLISH").arg(&channel).arg(&message).query::<i64>(c)).map(|_| ())
    }

    /// What this server needs of Redis and cannot set itself, said at start. Redis 7.0
    /// or later: an older one has no `PEXPIRE ... NX`, and the rate limit counts on each
    /// instance alone. A Redis that evicts no key (`maxmemory-policy noeviction`): every
    /// key here expires, so every other policy, the `volatile-*` ones too, may evict a
    /// used state, which then runs again. A managed Redis may refuse `CONFIG`: then say
    /// that too.
    fn check_setup(&self) {
        let info = self.command(|c| redis::cmd("INFO").arg("server").query::<String>(c));
        let version = info.ok().and_then(|info| {
            info.lines().find_map(|line| line.trim_end().strip_prefix("redis_version:").map(str::to_string))
        });
        let major = version.as_deref().and_then(|version| version.split('.').next()?.parse::<u32>().ok());
        if major.is_none_or(|major| major < 7) {
            eprintln!("store: Redis {version:?} is not 7.0 or later: the rate limit will count on each instance alone");
        }
        let policy = self.command(|c| redis::cmd("CONFIG").arg("GET").arg("maxmemory-policy").query::<Vec<String>>(c));
        match policy.as_ref().map(|pair| pair.get(1).map(String::as_str)) {
            Ok(Some("noeviction")) => {}
            Ok(policy) => eprintln!(
                "store: Redis may evict keys (maxmemory-policy {policy:?}): a used requestState it evicts can \
                 be used again; set it to noeviction"
            ),
            Err(error) => eprintln!("store: Redis's maxmemory-policy is unknown ({error}): it must be noeviction"),
        }
    }

    fn channel(&self) -> String {
        format!("{}:resources-updated", self.prefix)
    }

    // ANCHOR: command
    /// Run `command` on a free connection, or a new one.
    fn command<T>(&self, command: impl Fn(&mut Connection) -> redis::RedisResult<T>) -> Result<T, StoreError> {
        self.command_in_life(|connection, _| command(connection))
    }

    /// Run `command` on a free connection, or a new one, with the key of the record's
    /// beginning in the life of the Redis that connection reaches (`begin_record`). A
    /// connection that fails is closed. One taken from the free ones may have been closed
    /// by Redis meanwhile (a restart): that failure, and no other (a timeout is Redis not
    /// answering), is tried once more, on a new connection. Redis not answering pauses
    /// it (`PAUSE_AFTER_FAILURE`).
    fn command_in_life<T>(
        &self,
        command: impl Fn(&mut Connection, &str) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        if lock(&self.paused_until).is_some_and(|until| Instant::now() < until) {
            let why = "Redis did not answer less than a second ago, and is not asked again yet".into();
            return Err(StoreError { why, unreachable: true });
        }
        let outcome = self.try_command(command);
        if outcome.as_ref().is_err_and(|error| error.unreachable) {
            *lock(&self.paused_until) = Some(Instant::now() + PAUSE_AFTER_FAILURE);
        }
        outcome
    }

    fn try_command<T>(
        &self,
        command: impl Fn(&mut Connection, &str) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let reused = lock(&self.idle).pop();
        let was_reused = reused.is_some();
        let (mut connection, mut since_key) = match reused {
            Some(link) => link,
            None => self.connect()?,
        };
        let outcome = match command(&mut connection, &since_key) {
            Err(error) if was_reused && !error.is_timeout() && error.is_connection_dropped() => {
                (connection, since_key) = self.connect()?;
                command(&mut connection, &since_key)
            }
            outcome => outcome,
        };
        let value = outcome?;
        let mut idle = lock(&self.idle);
        if idle.len() < MAX_IDLE_CONNECTIONS {
            idle.push((connection, since_key));
        }
        Ok(value)
    }
    // ANCHOR_END: command

    /// A new connection, with the deadlines above on connecting and on every command,
    /// and the key of the record's beginning in this life of Redis,
    /// `PREFIX:record-since:RUN_ID`: one round trip more, once per connection.
    fn connect(&self) -> Result<(Connection, String), StoreError> {
        let mut connection = self.client.get_connection_with_timeout(CONNECT_TIMEOUT)?;
        connection.set_read_timeout(Some(COMMAND_TIMEOUT))?;
        connection.set_write_timeout(Some(COMMAND_TIMEOUT))?;
        let info: String = redis::cmd("INFO").arg("server").query(&mut connection)?;
        // `run_id:` and 40 hex digits, on a line of its own; anything else is not Redis.
        let run_id = info.lines().find_map(|line| line.trim_end().strip_prefix("run_id:"));
        let Some(run_id) = run_id.filter(|id| id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit())) else {
            return Err(StoreError::not_ours("Redis's INFO names no run_id".into()));
        };
        Ok((connection, format!("{}:record-since:{run_id}", self.prefix)))
    }

    // ANCHOR: relay
    /// Hand each other instance's change of a resource to `relay`, for as long as the
    /// process runs (`relay_channel`).
    fn relay_changes(&self, relay: impl Fn(&str)) {
        self.relay_channel(&self.channel(), "changes", |payload| match self.change_of(payload) {
            Ok(Some(uri)) => relay(&uri),
            Ok(None) => {} // this instance's own
            Err(why) => eprintln!("store: a message on the channel that is not ours, ignored: {why}"),
        });
    }

    /// Subscribe to `channel` and hand each message to `handle`; when Redis goes away,
    /// wait (`FIRST_BACKOFF`, doubling to `MOST_BACKOFF`) and subscribe again. Messages
    /// published while this instance was not subscribed are not heard: Redis keeps no
    /// message for a subscriber that is not there.
    fn relay_channel(&self, channel: &str, what: &str, handle: impl Fn(&[u8])) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            if let Err(error) = self.subscribe(channel, what, &handle, &mut backoff) {
                eprintln!("store: not hearing the other instances' {what}: {error}; again in {backoff:?}");
            }
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(MOST_BACKOFF);
        }
    }

    /// One subscription, until it fails. Once it is made, the backoff starts over.
    fn subscribe(
        &self,
        channel: &str,
        what: &str,
        handle: &impl Fn(&[u8]),
        backoff: &mut Duration,
    ) -> Result<(), StoreError> {
        let (mut connection, _) = self.connect()?;
        let mut subscription = connection.as_pubsub();
        subscription.subscribe(channel)?;
        subscription.set_read_timeout(Some(RELAY_QUIET_CHECK))?;
        eprintln!("store: hearing the other instances' {what}");
        *backoff = FIRST_BACKOFF;
        loop {
            match subscription.get_message() {
                Ok(message) => handle(message.get_payload_bytes()),
                Err(error) if error.is_timeout() => {
                    // The answer within a command's deadline: a Redis that vanished
                    // without closing the connection is found now, not a quiet time later.
                    subscription.set_read_timeout(Some(COMMAND_TIMEOUT))?;
                    subscription.ping::<redis::Value>()?;
                    subscription.set_read_timeout(Some(RELAY_QUIET_CHECK))?;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// The URI a message on the channel says has changed: `None` when this instance sent
    /// it. Anything else on the channel (another program's message, a bad URI) is an
    /// error, never a panic: the channel is open to anyone who can reach Redis.
    fn change_of(&self, payload: &[u8]) -> Result<Option<String>, String> {
        if payload.len() > MAX_RELAYED_URI_BYTES + 100 {
            return Err(format!("{} bytes", payload.len()));
        }
        let message: Value = serde_json::from_slice(payload).map_err(|error| error.to_string())?;
        let (Some(instance), Some(uri)) =
            (message.get("instance").and_then(Value::as_str), message.get("uri").and_then(Value::as_str))
        else {
            return Err("no instance and uri".into());
        };
        if uri.is_empty() || uri.len() > MAX_RELAYED_URI_BYTES || uri.chars().any(char::is_control) {
            return Err("not a resource URI".into());
        }
        Ok((instance != self.instance).then(|| uri.to_string()))
    }
    // ANCHOR_END: relay
}
// ANCHOR_END: redis

// ANCHOR: tasks
/// The most bytes of a task's record (or an answer on its way to it) read from or written
/// to the store: a tool's result fits many times over; a value bigger than this in the
/// store is not ours.
const MAX_TASK_RECORD_BYTES: usize = 1 << 20;
/// The longest task id taken from the store: this server's are 32 hex digits.
const MAX_TASK_ID_BYTES: usize = 64;

/// A task's record in the store (chapter 19's tasks, chapter 20): whose it is, the task
/// as `tasks/get` shows it, and how long the record has left.
pub struct TaskRecord {
    pub owner: String,
    pub task: Value,
    pub keep: Duration,
}

/// What the other instances asked of a task since the instance that runs it last looked:
/// the answer to a question, under its key, and whether to stop.
#[derive(Default)]
pub struct TaskSignals {
    pub answer: Option<(String, Value)>,
    pub cancel: bool,
    /// The task's record is not in the store: Redis lost it (a restart, a failover, an
    /// eviction). The instance that runs the task writes it again.
    pub record_lost: bool,
}

/// The statuses a task can have (Task Status): a record or a notice with another is not ours.
const STATUSES: [&str; 5] = ["working", "input_required", "completed", "failed", "cancelled"];

impl Store {
    /// Write task `id`'s record, `task` as `tasks/get` shows it and its `owner`, kept
    /// for `keep`, and tell the other instances (their listens) that it changed. In the
    /// process there is nothing to write: the instance's own record is the only one.
    pub fn write_task(&self, id: &str, owner: &str, task: &Value, keep: Duration) -> Result<(), StoreError> {
        match self {
            Store::InProcess(_) => Ok(()),
            Store::Redis(redis) => redis.write_task(id, owner, task, keep),
        }
    }

    /// The record of task `id`, written by whichever instance runs it: `None` when there
    /// is none (in the process, never: a task this instance does not hold does not exist).
    pub fn read_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        match self {
            Store::InProcess(_) => Ok(None),
            Store::Redis(redis) => redis.read_task(id),
        }
    }

    /// Pass `answer`, to the question `key` of task `id`, to the instance that runs it.
    pub fn answer_task(&self, id: &str, key: &str, answer: &Value, keep: Duration) -> Result<(), StoreError> {
        match self {
            Store::InProcess(_) => Ok(()),
            Store::Redis(redis) => redis.answer_task(id, key, answer, keep),
        }
    }

    /// Ask the instance that runs task `id` to stop it.
    pub fn cancel_task(&self, id: &str, keep: Duration) -> Result<(), StoreError> {
        match self {
            Store::InProcess(_) => Ok(()),
            Store::Redis(redis) => redis.cancel_task(id, keep),
        }
    }

    /// What the other instances asked of task `id`, which this instance runs: an answer
    /// is taken once (whoever takes it, it is gone from the store). A store that does not
    /// answer asks nothing (it is asked again at the next look); what is there and is not
    /// ours is logged.
    pub fn task_signals(&self, id: &str) -> TaskSignals {
        match self {
            Store::InProcess(_) => TaskSignals::default(),
            Store::Redis(redis) => redis.task_signals(id).unwrap_or_else(|error| {
                if !error.unreachable {
                    eprintln!("store: what the other instances asked of a task is not ours: {error}");
                }
                TaskSignals::default()
            }),
        }
    }

    /// Hand every task change another instance publishes to `relay` (its id, and the
    /// task as `tasks/get` shows it), for as long as the process runs, on a thread of its own.
    pub fn relay_task_changes(&'static self, relay: impl Fn(&str, Value) + Send + 'static) {
        if let Store::Redis(redis) = self {
            std::thread::spawn(move || redis.relay_task_changes(relay));
        }
    }
}

impl Redis {
    /// `PREFIX:task:ID`, and the keys beside it.
    fn task_key(&self, id: &str, what: &str) -> String {
        format!("{}:task:{id}{what}", self.prefix)
    }

    fn task_channel(&self) -> String {
        format!("{}:tasks-changed", self.prefix)
    }

    /// `SET PREFIX:task:ID {"owner", "task"} PX MS` and `PUBLISH PREFIX:tasks-changed
    /// {"instance", "task"}`, in one `MULTI`: the record and the notice of its change go
    /// together, in one round trip.
    fn write_task(&self, id: &str, owner: &str, task: &Value, keep: Duration) -> Result<(), StoreError> {
        let record = json!({ "owner": owner, "task": task }).to_string();
        if record.len() > MAX_TASK_RECORD_BYTES {
            return Err(StoreError::not_ours(format!(
                "a record of {} bytes is more than the store keeps",
                record.len()
            )));
        }
        let message = json!({ "instance": self.instance, "task": task }).to_string();
        let (key, channel, keep_ms) = (self.task_key(id, ""), self.task_channel(), keep.as_millis().max(1) as u64);
        self.command(|c| {
            redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&key)
                .arg(&record)
                .arg("PX")
                .arg(keep_ms)
                .ignore()
                .cmd("PUBLISH")
                .arg(&channel)
                .arg(&message)
                .ignore()
                .query::<()>(c)
        })
    }

    /// `STRLEN`, `GETRANGE` (at most `MAX_TASK_RECORD_BYTES`) and `PTTL` of the record,
    /// in one `MULTI`: what is read is capped before it is parsed.
    fn read_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        // Only an id shaped like this server's names a key: no other is a task's.
        if !task_id_shaped(id) {
            return Ok(None);
        }
        let key = self.task_key(id, "");
        let (length, bytes, left_ms): (usize, Vec<u8>, i64) = self.command(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("STRLEN").arg(&key).cmd("GETRANGE").arg(&key).arg(0).arg(MAX_TASK_RECORD_BYTES);
            pipe.cmd("PTTL").arg(&key).query(c)
        })?;
        if length == 0 {
            return Ok(None);
        }
        let not_ours = |why: &str| StoreError::not_ours(format!("the record of task {id} in Redis {why}"));
        if length > MAX_TASK_RECORD_BYTES {
            return Err(not_ours(&format!("is {length} bytes, more than this server writes")));
        }
        let record: Value =
            serde_json::from_slice(&bytes).map_err(|error| not_ours(&format!("is not JSON: {error}")))?;
        let (Some(owner), Some(task)) = (record.get("owner").and_then(Value::as_str), record.get("task")) else {
            return Err(not_ours("has no owner and task"));
        };
        let status = task.get("status").and_then(Value::as_str);
        if task.get("taskId").and_then(Value::as_str) != Some(id) || !status.is_some_and(|s| STATUSES.contains(&s)) {
            return Err(not_ours("is not a task of this id"));
        }
        if left_ms <= 0 {
            return Err(not_ours(&format!("never expires (PTTL {left_ms})")));
        }
        let keep = Duration::from_millis(left_ms as u64);
        Ok(Some(TaskRecord { owner: owner.to_string(), task: task.clone(), keep }))
    }

    /// `SET PREFIX:task:ID:answer {"key", "answer"} PX MS`: the running instance takes it
    /// (`task_signals`). A second answer before it looks replaces the first.
    fn answer_task(&self, id: &str, key: &str, answer: &Value, keep: Duration) -> Result<(), StoreError> {
        let value = json!({ "key": key, "answer": answer }).to_string();
        if value.len() > MAX_TASK_RECORD_BYTES {
            return Err(StoreError::not_ours(format!(
                "an answer of {} bytes is more than the store keeps",
                value.len()
            )));
        }
        let (answer_key, keep_ms) = (self.task_key(id, ":answer"), keep.as_millis().max(1) as u64);
        self.command(|c| redis::cmd("SET").arg(&answer_key).arg(&value).arg("PX").arg(keep_ms).query::<()>(c))
    }

    /// `SET PREFIX:task:ID:cancel 1 PX MS`.
    fn cancel_task(&self, id: &str, keep: Duration) -> Result<(), StoreError> {
        let (cancel_key, keep_ms) = (self.task_key(id, ":cancel"), keep.as_millis().max(1) as u64);
        self.command(|c| redis::cmd("SET").arg(&cancel_key).arg(1).arg("PX").arg(keep_ms).query::<()>(c))
    }

    /// `GETRANGE` and `DEL` of the answer (taken once, capped), and `EXISTS` of the
    /// cancel, in one `MULTI`.
    fn task_signals(&self, id: &str) -> Result<TaskSignals, StoreError> {
        let (answer_key, cancel_key) = (self.task_key(id, ":answer"), self.task_key(id, ":cancel"));
        let record_key = self.task_key(id, "");
        let (bytes, _, cancel, recorded): (Vec<u8>, i64, bool, bool) = self.command(|c| {
            let mut pipe = redis::pipe();
            pipe.atomic().cmd("GETRANGE").arg(&answer_key).arg(0).arg(MAX_TASK_RECORD_BYTES);
            pipe.cmd("DEL").arg(&answer_key).cmd("EXISTS").arg(&cancel_key).cmd("EXISTS").arg(&record_key).query(c)
        })?;
        let mut signals = TaskSignals { answer: None, cancel, record_lost: !recorded };
        if bytes.is_empty() {
            return Ok(signals);
        }
        let not_ours = |why: &str| StoreError::not_ours(format!("the answer to task {id} in Redis {why}"));
        if bytes.len() > MAX_TASK_RECORD_BYTES {
            return Err(not_ours("is more than this server writes"));
        }
        let value: Value =
            serde_json::from_slice(&bytes).map_err(|error| not_ours(&format!("is not JSON: {error}")))?;
        match (value.get("key").and_then(Value::as_str), value.get("answer")) {
            (Some(key), Some(answer)) if key.len() <= MAX_TASK_ID_BYTES => {
                signals.answer = Some((key.to_string(), answer.clone()));
                Ok(signals)
            }
            _ => Err(not_ours("has no key and answer")),
        }
    }

    /// As `relay_changes`, on the tasks' channel: each other instance's change of a task
    /// to `relay`.
    fn relay_task_changes(&self, relay: impl Fn(&str, Value)) {
        self.relay_channel(&self.task_channel(), "tasks", |payload| match self.task_change_of(payload) {
            Ok(Some((id, task))) => relay(&id, task),
            Ok(None) => {} // this instance's own
            Err(why) => eprintln!("store: a message on the tasks' channel that is not ours, ignored: {why}"),
        });
    }

    /// The task a message on the tasks' channel says has changed, with its id: `None`
    /// when this instance sent it. Anything else is an error, never a panic.
    fn task_change_of(&self, payload: &[u8]) -> Result<Option<(String, Value)>, String> {
        if payload.len() > MAX_TASK_RECORD_BYTES + 100 {
            return Err(format!("{} bytes", payload.len()));
        }
        let message: Value = serde_json::from_slice(payload).map_err(|error| error.to_string())?;
        let (Some(instance), Some(task)) = (message.get("instance").and_then(Value::as_str), message.get("task"))
        else {
            return Err("no instance and task".into());
        };
        let id = task.get("taskId").and_then(Value::as_str).unwrap_or_default();
        if !task_id_shaped(id) {
            return Err("not a task id".into());
        }
        if !task.get("status").and_then(Value::as_str).is_some_and(|status| STATUSES.contains(&status)) {
            return Err("a task with no status of the five".into());
        }
        Ok((instance != self.instance).then(|| (id.to_string(), task.clone())))
    }
}

/// Letters and digits, at most `MAX_TASK_ID_BYTES`: the shape of this server's task ids,
/// and so of the keys and messages that name one.
fn task_id_shaped(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_TASK_ID_BYTES && id.chars().all(|c| c.is_ascii_alphanumeric())
}
// ANCHOR_END: tasks

/// The milliseconds of the clock's current second.
fn subsec_millis() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.subsec_millis())
}

/// A number nobody can guess: std seeds every `RandomState` from the operating system.
fn random_u64() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0u8)
}
