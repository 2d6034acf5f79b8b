//! Sessions (chapter 16): a client the server remembers, so that a call can ask it a
//! question mid-call in the handshake era (`2025-11-25/basic/transports.mdx`, Session
//! Management).
//!
//! Two things make asking need a session. The client says what it can answer only
//! once, in `initialize`, and the server must not ask what it did not declare. And the
//! answer comes back in a POST of its own: the server must know which client sent it,
//! and hand it to the call of that client still waiting on its stream.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::framing::write_line;
use crate::http::{Request, Response};
use crate::input_required::{parse_state_key, random_key, siphash_2_4};
use crate::jsonrpc::{RpcError, notification, refusal, reply};
use crate::mcp::{DEFAULT_LOG_LEVEL, Level, lock};

// ANCHOR: sessions
/// A session nobody has used for this long is ended: its client gets `404` next time,
/// and starts a new one.
pub const SESSION_IDLE_TIME: Duration = Duration::from_secs(30 * 60);

/// Where a call may ask its client a question: the sessions, and the one it runs in.
/// `Err`: it may not, and why, in words for the model.
pub type AskPermit = Result<(&'static Sessions, Session), &'static str>;

/// Why a call may not ask: said to the model in the tool's failed result.
pub const NEEDS_A_SESSION: &str = "asking the user takes a session: call `initialize` first, then send its \
    `Mcp-Session-Id` with the call (in protocol revision 2026-07-28 the server asks with `input_required`)";
pub const NEEDS_AN_EVENT_STREAM: &str =
    "the question travels on an event stream, and this request's `Accept` allows only application/json";
const NEEDS_INITIALIZED: &str = "the client has not sent `notifications/initialized`, and nothing is asked \
    of a client before its handshake is done";
pub const NEEDS_A_HANDSHAKE: &str = "asking the user takes the handshake: over stdio, `initialize` first, \
    declaring what the client can answer (in protocol revision 2026-07-28 the server asks with `input_required`)";

/// The sessions open now: at most `max`, each under an id nobody can guess.
pub struct Sessions {
    pub open: Mutex<HashMap<String, SessionEntry>>,
    max: usize,
    /// How long a session may go unused; `None`: as long as the process (stdio).
    idle: Option<Duration>,
    /// The key session ids are made with, this process's own (`--fixed-session-key`
    /// in tests): two instances do not hand out the same ids, and none can be guessed.
    key: [u8; 16],
    /// How many sessions were ever opened: each id is made from its number.
    opened: AtomicU64,
    /// What every id begins with (`--session-prefix`): the instance that opened it.
    prefix: String,
    /// How many session streams (GET) may be open at once (chapter 17).
    pub max_streams: usize,
    /// How many resources one session may subscribe to at once (chapter 17).
    pub max_subscriptions: usize,
}

/// What a request in a session knows of it.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    /// The requests its client said, in `initialize`, that it can answer: among
    /// `elicitation` (forms), `sampling` and `roots`.
    answers: Vec<&'static str>,
    /// Its client declared URL mode (`"elicitation": {"url": {}}`): it may be sent to a
    /// URL (connect.rs).
    pub takes_urls: bool,
    /// The log level its client set with `logging/setLevel`.
    pub level: Level,
    /// Its client sent `notifications/initialized`: the handshake is done, and from now
    /// on it may be asked.
    initialized: bool,
    /// Who opened it (chapter 18): the `Caller::identity` of the token `initialize` came
    /// with. Only the same caller may use it; `None` when the server asks for no token.
    owner: Option<String>,
}

/// One open session.
pub struct SessionEntry {
    session: Session,
    /// When it was last used: a request in it, or its stream (chapter 17) ending.
    pub last_used: Instant,
    /// The questions its calls asked and wait to hear back on: each question's id, and
    /// where to hand the answer.
    waiting: HashMap<String, mpsc::Sender<Value>>,
    /// How many questions it was asked: numbers the next one's id.
    asked: u64,
    /// The URIs it subscribed to (chapter 17): at most `max_subscriptions`.
    pub subscribed: BTreeSet<String>,
    /// Its own stream, when one is open (chapter 17), and how many it opened.
    pub stream: Option<SessionStream>,
    pub streams: u64,
    /// The `elicitationId`s of the links its calls were sent to (chapter 17): the
    /// user's `POST` on one of them is told on this session's stream. The last
    /// `MAX_URLS_ASKED` only.
    urls_asked: VecDeque<String>,
}

/// A session's own stream, where its messages that answer no request go (chapter 17,
/// subscriptions.rs).
pub enum SessionStream {
    /// An event stream a GET opened: its number in the session, and the channel its
    /// writer reads.
    Http { number: u64, messages: mpsc::SyncSender<Value> },
    /// stdout: over stdio the process's session writes its lines there.
    Stdout,
}

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct SessionFlags {
    /// Sessions open at once (chapter 16). Opening one more ends the session that has
    /// been idle longest; its client gets 404 and starts a new one.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_sessions: usize,
    /// For tests: how long a session may go unused before it ends, in seconds
    /// (`SESSION_IDLE_TIME` unless given), so that a test can see one end.
    #[arg(long, value_name = "SECS", hide = true)]
    pub session_idle_secs: Option<u64>,
    /// For tests: the key session ids are made with (32 hex digits), so a transcript's
    /// ids are exact. Without it, one is drawn at random.
    #[arg(long, value_name = "HEX", value_parser = parse_state_key, hide = true)]
    pub fixed_session_key: Option<[u8; 16]>,
    /// Begin every session id with PREFIX (e.g. `a-`): which instance opened the session,
    /// for a proxy in front of several instances to send the session's requests to it.
    #[arg(long, value_name = "PREFIX", default_value = "", value_parser = parse_session_prefix)]
    pub session_prefix: String,
}

/// `--session-prefix`: a session id "MUST only contain visible ASCII characters"
/// (`2025-11-25/basic/transports.mdx`, Session Management), and so must its start.
fn parse_session_prefix(prefix: &str) -> Result<String, String> {
    let visible = prefix.bytes().all(|byte| (0x21..=0x7e).contains(&byte));
    let fine = visible && prefix.len() <= 32;
    fine.then(|| prefix.to_string()).ok_or_else(|| "want at most 32 visible ASCII characters, no spaces".into())
}

impl SessionFlags {
    /// The sessions these flags ask for. Over stdio there is one client, the
    /// process's: its session lasts as long as the process, and its stream is stdout.
    pub fn sessions(&self, stdio: bool, max_streams: usize, max_subscriptions: usize) -> Sessions {
        let key = self.fixed_session_key.unwrap_or_else(random_key);
        let idle = self.session_idle_secs.map_or(SESSION_IDLE_TIME, Duration::from_secs);
        let sessions = if stdio {
            Sessions::new(1, None, key, 0, max_subscriptions)
        } else {
            Sessions::new(self.max_sessions, Some(idle), key, max_streams, max_subscriptions)
        };
        Sessions { prefix: self.session_prefix.clone(), ..sessions }
    }
}

impl Sessions {
    pub fn new(
        max: usize,
        idle: Option<Duration>,
        key: [u8; 16],
        max_streams: usize,
        max_subscriptions: usize,
    ) -> Sessions {
        let opened = AtomicU64::new(0);
        let prefix = String::new();
        Sessions { open: Mutex::new(HashMap::new()), max, idle, key, opened, prefix, max_streams, max_subscriptions }
    }

    /// Idle too long. A session whose stream is open (chapter 17) is in use for as long
    /// as the stream is: its client is listening.
    fn expired(&self, entry: &SessionEntry) -> bool {
        entry.stream.is_none() && self.idle.is_some_and(|idle| entry.last_used.elapsed() >= idle)
    }

    /// Open a session for a client that declared `capabilities` in `initialize`. When
    /// `max` are open, the one idle longest ends to make room: its client gets `404`
    /// and opens a new one, as the spec tells it to, while a busy client goes on. A
    /// session listening on its stream is busy: it ends only when every session listens.
    fn open(&self, capabilities: Option<&Value>, owner: Option<String>) -> String {
        let mut open = lock(&self.open);
        open.retain(|_, entry| !self.expired(entry));
        if open.len() >= self.max
            && let Some(idle_longest) =
                open.iter().min_by_key(|(_, entry)| (entry.stream.is_some(), entry.last_used)).map(|(id, _)| id.clone())
        {
            open.remove(&idle_longest);
        }
        let number = self.opened.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}{}", self.prefix, session_id(&self.key, number));
        let answers = answerable(capabilities);
        let takes_urls = capabilities.and_then(|c| c.pointer("/elicitation/url")).is_some_and(Value::is_object);
        let session =
            Session { id: id.clone(), answers, takes_urls, level: DEFAULT_LOG_LEVEL, initialized: false, owner };
        let entry = SessionEntry {
            session,
            last_used: Instant::now(),
            waiting: HashMap::new(),
            asked: 0,
            subscribed: BTreeSet::new(),
            stream: None,
            streams: 0,
            urls_asked: VecDeque::new(),
        };
        open.insert(id.clone(), entry);
        id
    }

    /// Whether session `id` is open and someone other than `caller` opened it (chapter
    /// 18): to anyone but its owner a session does not exist. Asking is not a use of it.
    pub fn belongs_to_another(&self, id: &str, caller: Option<&str>) -> bool {
        lock(&self.open).get(id).is_some_and(|entry| entry.session.owner.as_deref() != caller)
    }

    /// The open session with this id, now used again; `None` if there is none, or it
    /// has been idle too long (then it ends here).
    pub fn find(&self, id: &str) -> Option<Session> {
        self.entry_in_use(&mut lock(&self.open), id).map(|entry| entry.session.clone())
    }

    /// `find`'s rule for a caller that holds the lock (chapter 17's stream): the entry of
    /// the open session with this id, now used again; `None` if there is none, or it has
    /// been idle too long (then it ends here).
    pub fn entry_in_use<'a>(
        &self,
        open: &'a mut HashMap<String, SessionEntry>,
        id: &str,
    ) -> Option<&'a mut SessionEntry> {
        if open.get(id).is_some_and(|entry| self.expired(entry)) {
            open.remove(id);
            return None;
        }
        let entry = open.get_mut(id)?;
        entry.last_used = Instant::now();
        Some(entry)
    }

    /// End a session. Its calls still waiting for an answer hear that none will come,
    /// and its stream ends (chapter 17).
    pub fn end(&self, id: &str) -> bool {
        lock(&self.open).remove(id).is_some()
    }

    /// The client of this session says the handshake is done.
    pub fn initialized(&self, id: &str) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            entry.session.initialized = true;
        }
    }

    pub fn set_level(&self, id: &str, level: Level) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            entry.session.level = level;
        }
    }

    /// A new question in a session: its id, and where its answer will arrive.
    pub fn expect_answer(&self, id: &str) -> Option<(String, mpsc::Receiver<Value>)> {
        let mut open = lock(&self.open);
        let entry = open.get_mut(id)?;
        entry.asked += 1;
        let question = format!("ask-{}", entry.asked);
        let (sender, receiver) = mpsc::channel();
        entry.waiting.insert(question.clone(), sender);
        Some((question, receiver))
    }

    /// The question is no longer waiting (answered, or the call stopped).
    pub fn forget(&self, id: &str, question: &str) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            entry.waiting.remove(question);
        }
    }

    /// Hand a client's answer to the call that asked `question` in this session.
    /// `false`: no call of this session waits for it.
    pub fn answer(&self, id: &str, question: &Value, answer: Value) -> bool {
        let mut open = lock(&self.open);
        let waiting = open.get_mut(id).and_then(|entry| entry.waiting.remove(question.as_str()?));
        waiting.is_some_and(|call| call.send(answer).is_ok())
    }
}

/// The requests a client can answer, from the capabilities it declared: `elicitation`
/// when it takes forms (`{}` means forms, `2025-11-25/client/elicitation.mdx`,
/// Capabilities), `sampling`, `roots`. Only these names are kept: a client cannot make
/// its session large.
fn answerable(capabilities: Option<&Value>) -> Vec<&'static str> {
    let declared = |name: &str| capabilities.and_then(|c| c.get(name)).and_then(Value::as_object);
    let mut answers = Vec::new();
    if declared("elicitation").is_some_and(|modes| modes.is_empty() || modes.contains_key("form")) {
        answers.push("elicitation");
    }
    answers.extend(["sampling", "roots"].into_iter().filter(|name| declared(name).is_some()));
    answers
}

/// Session number `number` as 32 hex digits: two SipHash-2-4 tags of it under this
/// process's key, 128 bits nobody can guess or derive from another id. The spec asks
/// for an id "globally unique and cryptographically secure", of visible ASCII only.
pub fn session_id(key: &[u8; 16], number: u64) -> String {
    let half = |part: u8| siphash_2_4(key, format!("session.{number}.{part}").as_bytes());
    format!("{:016x}{:016x}", half(0), half(1))
}
// ANCHOR_END: sessions

// ANCHOR: url_complete
/// The most links a session's calls may wait to hear of at once: one more forgets the
/// oldest, whose `POST` then tells nobody (the client learns on its retry).
const MAX_URLS_ASKED: usize = 16;

impl Sessions {
    /// A call in session `id` sent its client to a URL, under `elicitation_id` (-32042,
    /// connect.rs): the session hears when the user is done there.
    pub fn asked_at_url(&self, id: &str, elicitation_id: &str) {
        if let Some(entry) = lock(&self.open).get_mut(id) {
            if entry.urls_asked.len() >= MAX_URLS_ASKED {
                entry.urls_asked.pop_front();
            }
            entry.urls_asked.push_back(elicitation_id.to_string());
        }
    }

    /// The user has done what `elicitation_id` asked (the consent page's `POST`): the
    /// account is connected, so every link the session that was sent there holds is done
    /// too (a call asked again before the user pressed the first link's button got a
    /// link of its own, and its client may be waiting on that one's `elicitationId`).
    /// `notifications/elicitation/complete` for each, to that session only, on its
    /// stream, once. A session with no stream open misses them, as it misses any notice:
    /// its client learns on its retry.
    pub fn url_completed(&self, elicitation_id: &str) {
        let notice = |id: &str| notification("notifications/elicitation/complete", json!({ "elicitationId": id }));
        let mut to_stdout = Vec::new();
        for entry in lock(&self.open).values_mut() {
            if !entry.urls_asked.iter().any(|asked| asked == elicitation_id) {
                continue;
            }
            for asked in entry.urls_asked.drain(..) {
                match &entry.stream {
                    Some(SessionStream::Http { messages, .. }) => {
                        let _ = messages.try_send(notice(&asked));
                    }
                    Some(SessionStream::Stdout) => to_stdout.push(notice(&asked)),
                    None => {}
                }
            }
        }
        // Written once the lock is let go: a host slow to read stdout holds no session.
        for message in to_stdout {
            let _ = write_line(message.to_string().as_bytes());
        }
    }
}
// ANCHOR_END: url_complete

// ANCHOR: open_session
/// `initialize` in a session: the handshake's `answer` (mcp.rs's `initialize`, which
/// the router runs), and a session for the client when the handshake succeeds: the
/// answer, and the new session's id.
pub fn initialize_in_session(
    answer: Result<Value, RpcError>,
    params: Option<&Value>,
    sessions: &Sessions,
    owner: Option<String>,
) -> (Result<Value, RpcError>, Option<String>) {
    let session = answer.is_ok().then(|| sessions.open(params.and_then(|p| p.get("capabilities")), owner));
    (answer, session)
}

/// `initialize` over HTTP: the session's id goes back in the `Mcp-Session-Id` header.
pub fn open_session(
    id: Value,
    answer: Result<Value, RpcError>,
    params: Option<&Value>,
    sessions: &Sessions,
    owner: Option<String>,
) -> Response {
    match initialize_in_session(answer, params, sessions, owner) {
        (result, Some(session)) => reply(200, id, result).with_header("Mcp-Session-Id", &session),
        (result, None) => reply(200, id, result),
    }
}

/// A session id this server does not know (never opened, ended, or expired): `404`,
/// which tells the client to `initialize` again ("MUST respond ... with HTTP 404 Not
/// Found"). The body says so with -32600, as the Python SDK's does, and the request's
/// id when it has one.
pub fn session_not_found(id: Value) -> Response {
    let error = RpcError::invalid_request("no session has this `Mcp-Session-Id`; call `initialize` to open one");
    reply(404, id, Err(error))
}

/// DELETE: the client is done with its session. Without a session id there is
/// nothing to end.
pub fn end_session(request: &Request, sessions: &Sessions) -> Response {
    match request.header("Mcp-Session-Id") {
        None => refusal(400, "Bad Request: DELETE ends a session; send its `Mcp-Session-Id`"),
        Some(id) if sessions.end(id) => Response::empty(204),
        Some(_) => session_not_found(Value::Null),
    }
}
// ANCHOR_END: open_session

// ANCHOR: may_be_asked
impl Session {
    /// Whether a call in this session may ask its client `method` now (a request a client
    /// answers: `elicitation/create`, `sampling/createMessage`, `roots/list`); `Err`: why
    /// not, for the model. `Call::ask` (streaming.rs) asks.
    pub fn may_be_asked(&self, method: &str) -> Result<(), String> {
        // Ask only what the client declared it can answer: both sides MUST "Only use
        // capabilities that were successfully negotiated" (`2025-11-25/basic/lifecycle.mdx`,
        // Operation). Each request's capability is named like its method; `elicitation`
        // is there only for a client that takes forms, the mode asked in ("Servers MUST
        // NOT send elicitation requests with modes that are not supported by the client").
        let capability = method.split('/').next().unwrap_or_default();
        if !self.answers.contains(&capability) {
            // (A client that takes URL mode only declared `elicitation`, but not for forms.)
            let forms = if capability == "elicitation" { " for forms" } else { "" };
            return Err(format!(
                "the client did not declare the `{capability}` capability{forms}, so it cannot be asked"
            ));
        }
        // "The server SHOULD NOT send requests other than pings and logging before
        // receiving the `initialized` notification" (`2025-11-25/basic/lifecycle.mdx`).
        if !self.initialized {
            return Err(NEEDS_INITIALIZED.into());
        }
        Ok(())
    }
}
// ANCHOR_END: may_be_asked

// ANCHOR: take_answer
/// A POSTed answer to a question: handed to the call in this session that asked it,
/// `202`. An answer no call of the sender's session waits for (another session's, a
/// late one, one never asked) is refused: "If the server cannot accept the input, it
/// MUST return an HTTP error status code" (Sending Messages to the Server).
pub fn take_answer(id: Value, answer: Value, session: Option<&Session>, sessions: &Sessions) -> Response {
    if session.is_some_and(|session| sessions.answer(&session.id, &id, answer)) {
        return Response::empty(202);
    }
    let error = RpcError::invalid_request("this answers no question asked in this session");
    reply(400, Value::Null, Err(error))
}
// ANCHOR_END: take_answer
