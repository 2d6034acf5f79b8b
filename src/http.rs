//! The base every chapter stands on: a small synchronous HTTP/1.1 server.
//!
//! Each client connection gets a thread of its own, the **door** (at most
//! [`Config::max_connections`] at once; at the cap, a newcomer makes room by closing the
//! connection that has waited longest for its client). For every request on the
//! connection, the door:
//! 1. reads the head and the body, strictly (RFC 9112) and within a deadline, and
//!    refuses what is malformed, ambiguous or too large before anything else sees it;
//! 2. turns the request into a plain [`Request`] value and calls the chapter's handler,
//!    a pure function, while it holds one of [`Config::workers`] turns;
//! 3. has `tiny_http` write the [`Response`] value the handler returns (status line,
//!    `Date`, `Content-Length`, no body for `HEAD`), and sends it.
//!
//! The door is the one reader of the bytes a client sends: where two readers of the
//! same bytes disagree on where a request ends, one request becomes two (request
//! smuggling), so `tiny_http` writes answers and reads nothing. A body is read up to the
//! limit and no further, never into a buffer the size the client declares. The book's
//! page on the base shows each attack and what the door answers.
//!
//! All MCP knowledge lives in the chapters. This file depends on nothing but the
//! standard library and `tiny_http`, so the starters (chapter 10's, and with `--full` the
//! last chapter's) carry a copy of it into a crate of your own.

// ANCHOR: types
use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// An HTTP request, as the chapter's handler sees it: plain data, no socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `POST`, `GET`, ... as sent.
    pub method: String,
    /// The path without the query string: `/mcp`.
    pub path: String,
    /// Every header in the order received; look them up with [`Request::header`].
    pub headers: Vec<(String, String)>,
    /// The raw body; the handler decides whether it is JSON.
    pub body: Vec<u8>,
    /// The address the connection comes from: the one thing about the client that the
    /// client does not write itself (a proxy in front makes it the proxy's).
    pub peer: IpAddr,
}

/// An HTTP response, as the chapter's handler returns it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// A body written over time instead of `body`, see [`Response::stream`]. `None`
    /// for an ordinary answer.
    pub stream: Option<Stream>,
}
// ANCHOR_END: types

impl Request {
    /// The first header with this name. HTTP header names are case-insensitive.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }
}

impl Response {
    /// A response with no body: `202 Accepted` for a notification, for instance.
    pub fn empty(status: u16) -> Response {
        Response { status, headers: Vec::new(), body: Vec::new(), stream: None }
    }

    /// A response whose body is `body`, labelled `Content-Type: application/json`.
    pub fn json(status: u16, body: String) -> Response {
        Response::empty(status).with_header("Content-Type", "application/json").with_body(body.into_bytes())
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn with_body(mut self, body: Vec<u8>) -> Response {
        self.body = body;
        self
    }

    // ANCHOR: stream
    /// A response whose body `write` produces over time, such as a `text/event-stream`
    /// of progress events: each [`BodyWriter::send`] reaches the client at once, not
    /// when the body is complete. `write` runs after the handler has returned, without
    /// holding a worker's turn, so a long stream does not keep other requests waiting.
    #[allow(dead_code)] // a server that never streams (the starter) has no use for it
    pub fn stream(status: u16, content_type: &str, write: impl FnOnce(&mut BodyWriter) + Send + 'static) -> Response {
        let response = Response::empty(status).with_header("Content-Type", content_type);
        Response { stream: Some(Stream(Box::new(write))), ..response }
    }
    // ANCHOR_END: stream
}

/// The function that writes a streamed body (see [`Response::stream`]).
pub struct Stream(Box<dyn FnOnce(&mut BodyWriter) + Send>);

impl fmt::Debug for Stream {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Stream(..)")
    }
}

// ANCHOR: config
/// How the server runs. Chapters before 5 use the defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// How many requests the handler may work on at once. One is enough to learn
    /// with; chapter 7 makes it a flag so that one slow call does not make every other
    /// request wait.
    pub workers: usize,
    /// The largest body the door will read. A larger one is answered `413` before a
    /// byte of it is read, so a client cannot make the server hold gigabytes.
    pub max_body_bytes: usize,
    /// How many client connections may be open at once. Each costs a thread and a file
    /// descriptor, so the cap keeps a crowd from using up the process's files (1024 on
    /// many systems). At the cap a newcomer is not refused: the connection that has
    /// waited longest for its client (idle, or still sending its request, or not reading
    /// its answer) is closed to make room. Only when every connection is being served
    /// is the newcomer answered `503`.
    pub max_connections: usize,
    /// How long a kept-alive connection may wait for its next request.
    pub keep_alive_timeout: Duration,
    /// How long a whole request may take to arrive, head and body, from its first byte;
    /// also how long an answer may take to be sent, and a request to wait for a worker.
    pub request_timeout: Duration,
    /// A head, and then a body, must keep arriving: each has `request_grace` from its
    /// first byte, and one second more for every `min_bytes_per_second` bytes that
    /// arrive (Apache's `mod_reqtimeout` rule), within `request_timeout`. A client that
    /// trickles a byte every few seconds is answered `408` after the grace, not after
    /// the whole request timeout.
    pub request_grace: Duration,
    /// The minimum rate, in bytes a second: see `request_grace`.
    pub min_bytes_per_second: u64,
    /// How long a drain (SIGTERM, Ctrl-C: see [`serve`]) waits for the requests in
    /// progress. Past it, what is left is cut and the server returns.
    pub drain_timeout: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            workers: 1,
            max_body_bytes: 4 * 1024 * 1024,
            max_connections: 256,
            keep_alive_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            request_grace: Duration::from_secs(10),
            min_bytes_per_second: 500,
            // Under the 30 seconds Kubernetes waits by default before it kills a pod
            // that was told to stop; `docker stop` waits only 10 unless told more.
            drain_timeout: Duration::from_secs(25),
        }
    }
}
// ANCHOR_END: config

// ANCHOR: serve
/// Listen on `bind` and answer every request with `handler`, until SIGTERM or SIGINT
/// (Ctrl-C) starts a drain ("Stopping without dropping", below); then return once every
/// connection has closed and no [`Work`] runs, or at the drain's deadline.
///
/// Once listening it prints one line with the real URL, so that a reader (or a
/// test that asked for port 0) knows where to connect.
pub fn serve<H>(bind: &str, config: Config, handler: H) -> io::Result<()>
where
    H: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let listener = TcpListener::bind(bind)?;
    // Before the line below: whoever reads it may stop the server at once.
    drain_on_signals();
    watch_for_drain(&listener, config.drain_timeout)?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    serve_listener(listener, config, handler)
}

/// [`serve`] on a listener that is already bound (the tests bind port 0 themselves).
/// Only [`serve`] listens for signals: in a test that serves on a listener of its own,
/// Ctrl-C keeps its usual meaning, and the server runs until the test ends.
pub fn serve_listener<H>(listener: TcpListener, config: Config, handler: H) -> io::Result<()>
where
    H: Fn(&Request) -> Response + Send + Sync + 'static,
{
    let workers = Arc::new(Workers::new(config.workers));
    let (config, handler) = (Arc::new(config), Arc::new(handler));
    let connections = Arc::new(Connections::default());
    // Every thread of a connection holds a slot: a door, or a refusal being sent.
    let threads = Arc::new(AtomicUsize::new(0));
    // One connection, from its admission to its close, on a thread of its own.
    let open_door = |client: TcpStream, peer: IpAddr| {
        // Shared with the registry, which may shut it down to make room.
        let client = Arc::new(client);
        let most = config.max_connections.saturating_add(THREADS_PAST_THE_CAP);
        if !wait_for_threads(&threads, most) {
            return; // so far past the cap that even a 503 costs too much: close
        }
        let slot = Slot::take(&threads);
        // A client whose request is already here is no silent newcomer: it must not
        // be the next to make room, before its door has even read it.
        let doing = if matches!(look(&client), Ok(Some(1..))) { Doing::Waiting } else { Doing::New };
        let admitted = connections.admit(&client, doing, config.max_connections);
        let (workers, config, handler) = (workers.clone(), config.clone(), handler.clone());
        let spawned = thread::Builder::new().name("door".into()).stack_size(DOOR_STACK_BYTES).spawn(move || {
            if let Some(ticket) = &admitted {
                door(&client, peer, ticket, &config, &workers, handler.as_ref());
                ticket.doing(Doing::Closing);
            } else {
                // Every connection is being served: none could make room.
                refuse(&client, Refusal::new(503, "Service Unavailable: too many connections; try again shortly"));
            }
            // However the connection ends, the client may have sent more than was read.
            close_gently(&client);
            drop((admitted, slot)); // its entry and slot go once the connection is closed
        });
        // The system refused a thread: the connection closes (it was moved into the
        // closure, dropped unrun, its ticket with it) and the server goes on.
        if let Err(error) = spawned {
            eprintln!("http: no thread for a new connection ({error}); closed it");
        }
    };
    loop {
        let accepted = listener.accept();
        let drain = drain_deadline(); // looked at whatever `accept` gave, so nothing skips it
        match accepted {
            Ok((client, peer)) => open_door(client, peer.ip()),
            // Out of file descriptors, most likely: wait for some to close, never stop.
            Err(error) if drain.is_none() => {
                eprintln!("http: accept failed ({error}); retrying");
                thread::sleep(Duration::from_millis(100));
            }
            Err(_) => {}
        }
        if let Some(deadline) = drain {
            // The connections the system has completed already are served, not reset; then
            // no more: a new one is refused, and the balancer tries another server.
            if listener.set_nonblocking(true).is_ok() {
                for _ in 0..QUEUED_AT_MOST {
                    let Ok((client, peer)) = listener.accept() else { break };
                    let _ = client.set_nonblocking(false); // some systems pass it on
                    open_door(client, peer.ip());
                }
            }
            drop(listener);
            STOPPED_ACCEPTING.store(true, Ordering::SeqCst);
            connections.close_idle();
            // Every connection closed, gently, and all `Work` done; or the deadline.
            let busy = || threads.load(Ordering::SeqCst) > 0 || WORK_IN_PROGRESS.load(Ordering::SeqCst) > 0;
            while busy() && Instant::now() < deadline + DRAIN_GRACE {
                thread::sleep(Duration::from_millis(20));
            }
            return Ok(());
        }
    }
}
// ANCHOR_END: serve

// ANCHOR: drain
// Stopping without dropping: a drain.
//
// A service manager, a container platform or a person at the terminal stops a server
// with a signal: SIGTERM (systemd, Kubernetes, `docker stop`, `kill`) or SIGINT
// (Ctrl-C). Killed at once, the server would cut every call in progress and every open
// stream without its end. Instead, on either signal the server drains:
// 1. it turns unready: it stops accepting connections (the ones already queued are
//    served if their request has begun), so a load balancer sends new requests
//    elsewhere; a `GET /ready` already arriving is answered `503`;
// 2. it closes every connection that waits for its client's next request, and answers
//    the requests it has begun (an answer that starts now with `Connection: close`),
//    closing each connection after its answer; a streamed answer learns of the drain
//    from [`draining`] and [`drain_deadline`] and ends as its chapter says (a long call
//    runs on to its result or the deadline, a listen ends within a second, with its
//    result);
// 3. once every connection is closed and no [`Work`] runs, or at the deadline
//    ([`Config::drain_timeout`], and `DRAIN_GRACE` for the last answers), [`serve`]
//    returns: `main` returns, and the process exits 0. A second signal, once the drain
//    has begun, stops the process at once, as the signal always did.

/// Set by the signal handler. Storing to an atomic is about all that a signal handler
/// may safely do: it interrupts the process anywhere, a lock or an allocation included.
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// When the drain must end: set once, when the drain starts. `None` while serving.
static DRAIN_DEADLINE: OnceLock<Instant> = OnceLock::new();

/// Set by the accept loop once it has stopped listening: the watcher stops waking it.
static STOPPED_ACCEPTING: AtomicBool = AtomicBool::new(false);

/// The longest drain: a larger `drain_timeout` means "as long as it takes", which a
/// day is, and an `Instant` that far ahead cannot overflow.
const LONGEST_DRAIN: Duration = Duration::from_secs(24 * 60 * 60);

/// After the deadline, for the answers cut at it and the connections' gentle closes: a
/// long call notices the deadline within 10 ms (`STOP_CHECK_INTERVAL`, chapter 14), a
/// close takes up to 2 s (`close_gently`).
const DRAIN_GRACE: Duration = Duration::from_secs(3);

/// How often the drain's watcher looks for a signal, and wakes the accept loop.
const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// The most connections already queued when a drain begins that are taken and served
/// (the system's queue holds 128 on Linux; more come only from clients still arriving).
const QUEUED_AT_MOST: usize = 1024;

/// Whether the server is draining: a stream that waits for events (a listen, a
/// session's stream) ends now; work in progress goes on, until [`drain_deadline`].
pub fn draining() -> bool {
    DRAIN_DEADLINE.get().is_some()
}

/// When the drain ends, if one has started: the latest a call in progress may run.
pub fn drain_deadline() -> Option<Instant> {
    DRAIN_DEADLINE.get().copied()
}

/// Have SIGTERM and SIGINT start a drain instead of ending the process, unless the
/// process was started with the signal ignored (a job a script starts in the background
/// ignores SIGINT), which
/// stays ignored. `signal` is the C library's, which every Rust program links already;
/// declaring it here spares a crate for these lines. On Linux and macOS the handler stays
/// and `accept` is resumed after it (BSD semantics); POSIX leaves `signal` unspecified in
/// a program with threads, which is why a portable one uses `sigaction` (or a crate such
/// as `signal-hook`). Windows never sends SIGTERM: there only Ctrl-C drains.
fn drain_on_signals() {
    extern "C" fn on_signal(_signal: i32) {
        SIGNALLED.store(true, Ordering::SeqCst);
    }
    let handler: extern "C" fn(i32) = on_signal;
    for number in [SIGINT, SIGTERM] {
        // SAFETY: a valid signal number, and a handler that only stores to an atomic,
        // which is async-signal-safe; an ignored signal is put back as it was.
        unsafe {
            if signal(number, handler as usize) == SIG_IGN {
                signal(number, SIG_IGN);
            }
        }
    }
}

const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;
/// The default action of a signal: for these two, ending the process.
const SIG_DFL: usize = 0;
/// The signal is ignored.
const SIG_IGN: usize = 1;

unsafe extern "C" {
    /// C's `signal(2)`: set the handler of a signal (a function, `SIG_DFL` or `SIG_IGN`),
    /// and give the one it had.
    fn signal(signal: i32, handler: usize) -> usize;
}

/// Counted by the SIGHUP handler: how many SIGHUPs have come. A count, not a flag: the
/// reload thread sees that more came while it was reloading, and reloads again.
static HANGUPS: AtomicU64 = AtomicU64::new(0);

/// What the base writes to stderr each time a reload (SIGHUP) has run: a script (and
/// the replay's operator, `src/replay/server.rs`) waits for this line before it goes on.
pub const RELOADED: &str = "SIGHUP: reloaded";

const SIGHUP: i32 = 1;

/// Have SIGHUP run `reload` instead of ending the process (its default action), as nginx
/// and sshd reread their configuration on it (chapter 17's `--tools-off`). Opt-in: a
/// chapter that never calls it keeps SIGHUP's default. It works over stdio as over HTTP
/// (it does not need [`serve`]), unless the process was started with SIGHUP ignored
/// (`nohup`), which stays ignored, and stderr says so. The handler only counts; `reload` runs on a thread of
/// its own, which looks every [`SIGNAL_CHECK_INTERVAL`], once for any number of SIGHUPs
/// come since it last looked, and then writes [`RELOADED`] to stderr. Windows has no
/// SIGHUP (its C library refuses the number): there nothing is installed, and a reload
/// takes a restart.
#[allow(dead_code)] // a chapter without a reload has no use for it
pub fn reload_on_sighup(reload: impl Fn() + Send + 'static) -> io::Result<()> {
    if !cfg!(unix) {
        return Ok(());
    }
    extern "C" fn on_hangup(_signal: i32) {
        HANGUPS.fetch_add(1, Ordering::SeqCst);
    }
    let handler: extern "C" fn(i32) = on_hangup;
    // SAFETY: as in `drain_on_signals`: a handler that only adds to an atomic, and an
    // ignored signal put back as it was.
    let ignored = unsafe {
        let ignored = signal(SIGHUP, handler as usize) == SIG_IGN;
        if ignored {
            signal(SIGHUP, SIG_IGN);
        }
        ignored
    };
    if ignored {
        // Said, since the operator's `kill -HUP` will now do nothing at all.
        eprintln!("SIGHUP is ignored (started with nohup?): nothing will be reloaded");
        return Ok(());
    }
    thread::Builder::new().name("reload".into()).spawn(move || {
        let mut seen = 0;
        loop {
            thread::sleep(SIGNAL_CHECK_INTERVAL);
            let now = HANGUPS.load(Ordering::SeqCst);
            if now != seen {
                seen = now;
                reload();
                eprintln!("{RELOADED}");
            }
        }
    })?;
    Ok(())
}

/// Start the thread that turns a signal into a drain. The accept loop sleeps in
/// `accept`, which a signal does not end (the standard library tries again), so the
/// watcher wakes it with a connection of its own, again each time it looks, until the
/// loop has stopped listening (a wake-up may be dropped past the thread cap).
fn watch_for_drain(listener: &TcpListener, drain_timeout: Duration) -> io::Result<()> {
    let address = listener.local_addr()?;
    let (port, ip) = (address.port(), address.ip());
    // Bound to every address (0.0.0.0 or [::]): a loopback one is among them, and on
    // Linux [::] takes IPv4 too, should ::1 be switched off.
    let wake_at: Vec<SocketAddr> = match ip {
        IpAddr::V4(any) if any.is_unspecified() => vec![(Ipv4Addr::LOCALHOST, port).into()],
        IpAddr::V6(any) if any.is_unspecified() => {
            vec![(Ipv6Addr::LOCALHOST, port).into(), (Ipv4Addr::LOCALHOST, port).into()]
        }
        _ => vec![address],
    };
    thread::Builder::new().name("drain".into()).spawn(move || {
        while !SIGNALLED.load(Ordering::SeqCst) {
            thread::sleep(SIGNAL_CHECK_INTERVAL);
        }
        // First, before anything that could fail: a second signal ends the process, as
        // it always did (or stays ignored, if it was).
        for number in [SIGINT, SIGTERM] {
            // SAFETY: as in `drain_on_signals`; the default action needs no handler.
            unsafe {
                if signal(number, SIG_DFL) == SIG_IGN {
                    signal(number, SIG_IGN);
                }
            }
        }
        let drain_timeout = drain_timeout.min(LONGEST_DRAIN);
        DRAIN_DEADLINE.get_or_init(|| Instant::now() + drain_timeout);
        eprintln!("http: draining: no new connections; {} s for the requests in progress", drain_timeout.as_secs());
        while !STOPPED_ACCEPTING.load(Ordering::SeqCst) {
            let _ = wake_at.iter().find(|at| TcpStream::connect_timeout(at, Duration::from_secs(1)).is_ok());
            thread::sleep(SIGNAL_CHECK_INTERVAL);
        }
    })?;
    Ok(())
}

/// Work that a drain waits for, besides the requests in progress: work that runs apart
/// from any request (chapter 19's tasks) holds a `Work` while it runs.
#[allow(dead_code)] // a server whose work all runs in its requests has no use for it
pub struct Work(());

static WORK_IN_PROGRESS: AtomicUsize = AtomicUsize::new(0);

#[allow(dead_code)]
impl Work {
    pub fn begin() -> Work {
        WORK_IN_PROGRESS.fetch_add(1, Ordering::SeqCst);
        Work(())
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        WORK_IN_PROGRESS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a load balancer asks whether to send this server requests: `200` while it
/// serves; in a drain, connections are refused, and a probe already arriving is answered
/// `503`. The base answers it, before the chapter's handler and its checks (a balancer's
/// probe carries no token), with nothing but that.
pub const READY_PATH: &str = "/ready";

fn is_readiness_probe(request: &Request) -> bool {
    request.path == READY_PATH && matches!(request.method.as_str(), "GET" | "HEAD")
}

fn readiness() -> Response {
    let answer = if draining() {
        Response::empty(503).with_body(b"draining\n".to_vec())
    } else {
        Response::empty(200).with_body(b"ready\n".to_vec())
    };
    answer.with_header("Content-Type", "text/plain")
}
// ANCHOR_END: drain

/// How many threads past the cap may run: doors closed to make room, on their way
/// out, and newcomers told `503` (each on a thread that lives a second or two, to
/// close gently). Beyond them a new connection is closed at once.
const THREADS_PAST_THE_CAP: usize = 16;

/// The stack of a connection's thread, where the handler runs too: Rust's default for
/// a new thread, set here so that `RUST_MIN_STACK` cannot shrink it. The deepest JSON
/// the chapters read (128 levels) needs about 160 KiB in a release build and 448 KiB in
/// a debug one, and a stack overflow aborts the whole process. Only the pages a thread
/// touches take memory (18 KiB for an idle door), so a large stack costs address space,
/// not RAM (the base page, "A crowd at the door", has the measurements).
const DOOR_STACK_BYTES: usize = 2 * 1024 * 1024;

/// Wait until fewer than `most` threads of connections run, for a moment at most:
/// doors just closed to make room are on their way out, and in a burst of newcomers the
/// accept loop can run ahead of them. `false` if they did not make room in time.
fn wait_for_threads(threads: &AtomicUsize, most: usize) -> bool {
    let deadline = Instant::now() + Duration::from_millis(100);
    while threads.load(Ordering::Relaxed) >= most {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
    true
}

/// One thread of a connection, counted while it runs.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(threads: &Arc<AtomicUsize>) -> Slot {
        threads.fetch_add(1, Ordering::Relaxed);
        Slot(threads.clone())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

// ANCHOR: crowd
/// Every open connection and what its door is doing, since when. At the cap, the
/// accept loop reads it to choose the connection that makes room for a newcomer.
#[derive(Default)]
struct Connections {
    open: Mutex<HashMap<u64, Entry>>,
    next_id: AtomicU64,
}

struct Entry {
    /// The door's own socket (shared, not a second descriptor), so that this thread
    /// can shut it down: the door's blocked read or write then returns at once.
    socket: Arc<TcpStream>,
    doing: Doing,
    since: Instant,
    /// A request has begun to arrive and is not answered yet: a drain does not close the
    /// connection under it.
    in_request: bool,
}

/// What a door is doing, in the order doors are closed to make room: first one that
/// is closing anyway; then a new connection whose client has sent nothing yet (so a
/// crowd that connects and stays silent takes room only from itself); then one that
/// waits for its client. Never one that serves. Among doors doing the same, the one
/// that has waited longest goes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Doing {
    /// The connection is ending: the door drains what the client still sends.
    Closing,
    /// A new connection: its client has sent nothing yet.
    New,
    /// Waiting for the client: for its next request, the rest of one (a slow head or
    /// body), or to take its answer. Since its last answer, or since it connected.
    Waiting,
    /// The handler has the request, or its answer is streaming: the server's own work.
    Serving,
}

impl Connections {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Entry>> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Register a new connection. At the cap, make room first: shut down the first
    /// connection in [`Doing`]'s order, the one that has waited longest among its
    /// kind. `None` when every connection is being served: nothing can make room.
    fn admit(self: &Arc<Self>, socket: &Arc<TcpStream>, doing: Doing, cap: usize) -> Option<Ticket> {
        let mut open = self.lock();
        if open.len() >= cap {
            let (&id, _) = open
                .iter()
                .filter(|(_, entry)| entry.doing != Doing::Serving)
                .min_by_key(|(_, entry)| (entry.doing, entry.since))?;
            let closed = open.remove(&id).expect("just found");
            let _ = closed.socket.shutdown(Shutdown::Both);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let in_request = doing == Doing::Waiting; // the request is already here
        open.insert(id, Entry { socket: socket.clone(), doing, since: Instant::now(), in_request });
        Some(Ticket { connections: self.clone(), id })
    }

    /// At the start of a drain: close every connection that waits for its client's next
    /// request (or its first), so that the client sends it elsewhere. One with a request
    /// on its way, or being answered, is left to finish (and closes after its answer).
    fn close_idle(&self) {
        for entry in self.lock().values() {
            if matches!(entry.doing, Doing::New | Doing::Waiting) && !entry.in_request {
                let _ = entry.socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// A door's entry in the registry: the door says through it what it is doing, and
/// its entry goes when the door ends.
struct Ticket {
    connections: Arc<Connections>,
    id: u64,
}

impl Ticket {
    /// What the door does from now on. `false` when its connection has been closed
    /// to make room: the door stops, there is no client left to serve.
    fn doing(&self, doing: Doing) -> bool {
        self.update(|entry| entry.doing = doing)
    }

    /// A request has begun to arrive: the client is no longer silent, and a drain waits
    /// for its answer.
    fn request_begun(&self) {
        self.update(|entry| (entry.doing, entry.in_request) = (Doing::Waiting, true));
    }

    /// The door has answered a request: it waits for its client again, from now.
    fn answered(&self) {
        self.update(|entry| (entry.doing, entry.since) = (Doing::Waiting, Instant::now()));
    }

    /// The answer has been sent: the connection waits for its client's next request.
    /// `false` in a drain: the connection ends now. (Under the registry's lock, so that a
    /// drain that begins just after finds it waiting, and closes it: `close_idle`.)
    fn request_done(&self) -> bool {
        let mut go_on = false;
        self.update(|entry| (entry.in_request, go_on) = (false, !draining()));
        go_on
    }

    fn update(&self, change: impl FnOnce(&mut Entry)) -> bool {
        self.connections.lock().get_mut(&self.id).map(change).is_some()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}
// ANCHOR_END: crowd

/// The handler's turns: at most `Config::workers` requests are in it at once.
struct Workers {
    busy: Mutex<usize>,
    freed: Condvar,
    count: usize,
}

impl Workers {
    fn new(count: usize) -> Workers {
        Workers { busy: Mutex::new(0), freed: Condvar::new(), count: count.max(1) }
    }

    /// Run `work` on this thread once a turn is free, or give up at `deadline`.
    fn run<T>(&self, deadline: Instant, work: impl FnOnce() -> T) -> Option<T> {
        let mut busy = self.busy.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while *busy == self.count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            busy = self.freed.wait_timeout(busy, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
        }
        *busy += 1;
        drop(busy);
        let result = work();
        *self.busy.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) -= 1;
        self.freed.notify_one();
        Some(result)
    }
}

// ===========================================================================
// The door: one client connection, request after request.
// ===========================================================================

// ANCHOR: door
/// One client connection. For each request on it: read it whole (head, then body) or
/// refuse it, let the handler answer it, send the answer; then wait for the client's
/// next request on the same connection (keep-alive). On return, the connection closes.
/// The `ticket` tells the registry what the door is doing: only while the door waits
/// for its client may its connection be closed to make room for another.
fn door<H>(client: &TcpStream, peer: IpAddr, ticket: &Ticket, config: &Config, workers: &Workers, handler: &H)
where
    H: Fn(&Request) -> Response,
{
    // Send every write at once: with Nagle's algorithm on, a second write waits for the
    // peer to acknowledge the first, and the peer delays that (up to 40 ms).
    let _ = client.set_nodelay(true);
    let _ = client.set_write_timeout(Some(config.request_timeout));
    let mut from_client = BufReader::new(ClientReader::new(client, config));
    loop {
        let (mut head, body) = match next_request(&mut from_client, client, ticket, config) {
            Ok(Some(request)) => request,
            Ok(None) => return, // the client closed, or stayed idle too long
            Err(refusal) => return refuse(client, refusal),
        };
        if !ticket.doing(Doing::Serving) {
            return; // closed to make room just as the request arrived
        }
        let request = Request {
            method: head.method.clone(),
            path: head.target.split('?').next().unwrap_or_default().to_string(),
            headers: std::mem::take(&mut head.headers), // the answer needs the rest of the head
            body,
            peer,
        };
        // A bug in a handler must not take the whole server down: answer 500 and go on
        // to the next request. (Chapter 5 catches tool panics earlier, so that the
        // client gets a JSON-RPC error with its id.)
        let call = || catch_unwind(AssertUnwindSafe(|| handler(&request))).unwrap_or_else(|_| Response::empty(500));
        let response = if is_readiness_probe(&request) {
            readiness() // answered by the base, without a worker's turn
        } else {
            let Some(response) = workers.run(Instant::now() + config.request_timeout, call) else {
                return refuse(
                    client,
                    Refusal::new(503, "Service Unavailable: every worker is busy; try again shortly"),
                );
            };
            response
        };
        drop(request); // done with: a client slow to read its answer holds the answer only
        // In a drain, this answer is the connection's last (checked again once a stream
        // has ended: the drain may have begun while it ran).
        head.close |= draining();
        // An answer written at once is the client's to take: one that does not read it
        // waits like one that does not send. A streamed answer is the server's work
        // until it ends (a long call's progress, a session's stream).
        let streamed = response.stream.is_some();
        if !streamed {
            ticket.answered();
        }
        let sent = send_answer(client, &head, response, config.request_timeout);
        if streamed {
            ticket.answered();
        }
        if !ticket.request_done() || !sent || head.close {
            return;
        }
    }
}

/// Read the next request whole: by `config.request_timeout` from its first byte, and
/// its head, then its body, each at the minimum rate (see [`Arrival`]).
/// `Ok(None)`: the connection ended (or idled out) between requests, nothing to answer.
fn next_request(
    from_client: &mut BufReader<ClientReader>,
    client: &TcpStream,
    ticket: &Ticket,
    config: &Config,
) -> Result<Option<(Head, Vec<u8>)>, Refusal> {
    from_client.get_mut().arriving = None; // between requests: only the keep-alive timeout
    match from_client.fill_buf() {
        Ok([]) | Err(_) => return Ok(None),
        Ok(_) => {}
    }
    ticket.request_begun();
    let deadline = Instant::now() + config.request_timeout;
    from_client.get_mut().arriving = Some(Arrival::new(deadline));
    let head = parse_head(&read_head(from_client)?)?;
    from_client.get_mut().arriving = Some(Arrival::new(deadline)); // the body's own grace
    let body = read_body(from_client, client, &head, config.max_body_bytes)?;
    Ok(Some((head, body)))
}
// ANCHOR_END: door

/// Reads from the client socket with a deadline: while a connection waits for its next
/// request only the keep-alive timeout applies; once a request has begun, it must keep
/// arriving (see [`Arrival`]), so a head trickled a byte at a time is cut off
/// (slowloris) however patient each single read is.
struct ClientReader<'a> {
    socket: &'a TcpStream,
    config: &'a Config,
    /// The head or the body on its way; `None` between requests.
    arriving: Option<Arrival>,
    /// The read timeout the socket has now, so that it is set only when it changes.
    timeout: Option<Duration>,
}

impl<'a> ClientReader<'a> {
    fn new(socket: &'a TcpStream, config: &'a Config) -> ClientReader<'a> {
        ClientReader { socket, config, arriving: None, timeout: None }
    }
}

// ANCHOR: rate
/// A head or a body on its way. It must keep a minimum rate, as Apache's
/// `mod_reqtimeout` asks: it has `request_grace` from its first byte, and one more
/// second for every `min_bytes_per_second` bytes that arrive, but never past the
/// request's own deadline. A client that sends a byte every few seconds runs out after
/// the grace; one that sends a large body steadily earns the time it needs.
struct Arrival {
    started: Instant,
    received: u64,
    request_deadline: Instant,
}

impl Arrival {
    fn new(request_deadline: Instant) -> Arrival {
        Arrival { started: Instant::now(), received: 0, request_deadline }
    }

    fn deadline(&self, config: &Config) -> Instant {
        let earned = Duration::from_millis(self.received.saturating_mul(1000) / config.min_bytes_per_second.max(1));
        let allowed = config.request_grace.saturating_add(earned);
        self.started.checked_add(allowed).map_or(self.request_deadline, |end| end.min(self.request_deadline))
    }
}
// ANCHOR_END: rate

impl Read for ClientReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let timeout = match &self.arriving {
            None => self.config.keep_alive_timeout,
            Some(arrival) => arrival.deadline(self.config).saturating_duration_since(Instant::now()),
        };
        if timeout.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if self.timeout != Some(timeout) {
            self.socket.set_read_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        let mut socket = self.socket;
        let read = socket.read(buffer)?;
        if let Some(arrival) = &mut self.arriving {
            arrival.received += read as u64;
        }
        Ok(read)
    }
}

/// A refusal: the status, and the reason in words, for the JSON-RPC error the body
/// carries. Every refusal closes the connection: after a request the door could not
/// read, it cannot know where the next one would begin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The status to answer with; 0 when there is nobody left to answer.
    pub status: u16,
    pub message: String,
}

impl Refusal {
    fn new(status: u16, message: &str) -> Refusal {
        Refusal { status, message: message.to_string() }
    }

    /// Nobody to answer: the client went away. The connection just closes.
    fn gone() -> Refusal {
        Refusal::new(0, "the client went away")
    }

    fn bad(problem: &str) -> Refusal {
        Refusal::new(400, &format!("Bad Request: {problem}"))
    }

    /// The refusal for a failed read of the client: a deadline missed is `408`; a
    /// client that went away hears nothing (there is nobody to hear it).
    fn from_io(error: io::Error) -> Refusal {
        match error.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
                Refusal::new(408, "Request Timeout: the request did not arrive in time")
            }
            _ => Refusal::gone(),
        }
    }
}

// ANCHOR: refuse
/// Answer a refusal; the connection closes after it. The body is a JSON-RPC error like
/// every other error the server sends, with `"id": null` because the request was never read.
fn refuse(client: &TcpStream, refusal: Refusal) {
    if refusal.status != 0 {
        let message = json_string(&refusal.message);
        let body = format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":{message}}}}}"#);
        let head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            refusal.status,
            reason(refusal.status),
            body.len()
        );
        let _ = (&*client).write_all(format!("{head}{body}").as_bytes());
    }
}

/// `text` as a JSON string, quotes included (RFC 8259, section 7): `"` and `\` escaped,
/// and every control character too, which JSON does not allow raw. A refusal may repeat
/// what the client sent (a header value can hold a tab), and its body must stay JSON.
fn json_string(text: &str) -> String {
    let mut json = String::from('"');
    for character in text.chars() {
        match character {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            control if control < ' ' => json.push_str(&format!("\\u{:04x}", u32::from(control))),
            other => json.push(other),
        }
    }
    json.push('"');
    json
}

/// Close a connection whose client may still be sending (RFC 9112, section 9.6): stop
/// writing, then read and drop what arrives for a moment before closing. Closed with
/// unread data, the connection would be reset, and a client still sending its body
/// (most HTTP libraries send it all before they read) would see the reset, not the answer.
/// Every connection ends here: after a refusal, after `Connection: close`, after HTTP/1.0,
/// or when the client stops reading.
fn close_gently(client: &TcpStream) {
    let _ = client.shutdown(Shutdown::Write);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut dropped = 0;
    let mut buffer = [0; 16 * 1024];
    while dropped < 64 * 1024 * 1024 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match (&*client).read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => dropped += read,
        }
    }
}
// ANCHOR_END: refuse

fn reason(status: u16) -> &'static str {
    match status {
        413 => "Content Too Large", // RFC 9110's name; tiny_http has the older one
        _ => tiny_http::StatusCode(status).default_reason_phrase(),
    }
}

// ===========================================================================
// Reading a request: the one reading that counts (RFC 9112).
// ===========================================================================

/// The most a request head may take, request line and headers together, and the most
/// header lines in it. Past either: `431`, or `414` when the request line alone is past
/// it (see [`over_long_request_line`]).
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;

/// What a client that stopped sending in the middle of a head is told (it may still read).
const INCOMPLETE_HEAD: &str = "the head is incomplete: the client stopped sending before its empty line";

/// Read up to and including the empty line that ends a head. Empty lines before the
/// request line are skipped (RFC 9112, section 2.2). The bytes are returned as sent:
/// [`parse_head`] decides whether they are a head.
fn read_head(from_client: &mut impl BufRead) -> Result<Vec<u8>, Refusal> {
    let mut head = Vec::new();
    loop {
        let budget = (MAX_HEAD_BYTES + 1).saturating_sub(head.len()) as u64;
        let start = head.len();
        from_client.take(budget).read_until(b'\n', &mut head).map_err(Refusal::from_io)?;
        let line = &head[start..];
        if head.len() > MAX_HEAD_BYTES {
            if start == 0 {
                return Err(over_long_request_line(&head));
            }
            return Err(Refusal::new(431, "Request Header Fields Too Large: the head is over 64 KiB"));
        }
        if !line.ends_with(b"\n") {
            // The client stopped sending: before a request (nothing to answer), or in
            // the middle of one, which it may still wait to hear about.
            return Err(if head.is_empty() { Refusal::gone() } else { Refusal::bad(INCOMPLETE_HEAD) });
        }
        if line == b"\r\n" && start == 0 {
            head.clear(); // an empty line before the request line
        } else if line == b"\r\n" || !line.ends_with(b"\r\n") {
            // The end of the head, or a line that does not end in CRLF, which
            // `parse_head` refuses: no need to wait for more.
            return Ok(head);
        }
    }
}

/// The refusal for a request line that is still going at the cap. RFC 9112, section 3:
/// "A server that receives a request-target longer than any URI it wishes to parse MUST
/// respond with a 414 (URI Too Long) status code", and one that receives a method longer
/// than any it implements should answer `501`. Which part is too long is told by the
/// spaces so far: none, the method; one, the target; more, what follows the target,
/// which is no version.
fn over_long_request_line(start_of_line: &[u8]) -> Refusal {
    match start_of_line.iter().filter(|&&byte| byte == b' ').count() {
        0 => Refusal::new(501, "Not Implemented: no method of this server is over 64 KiB long"),
        1 => Refusal::new(414, "URI Too Long: the request target is over 64 KiB"),
        _ => Refusal::bad("the request line is not METHOD TARGET VERSION"),
    }
}

// ANCHOR: head
/// A request head, as the door reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The request target in origin form, `/mcp?x=1` (or `*`, for `OPTIONS *`).
    pub target: String,
    /// `HTTP/1.0`, rather than `HTTP/1.1` (or a later `HTTP/1.x`, read as `HTTP/1.1`).
    pub http_1_0: bool,
    /// The headers passed on, in the order received: everything but the ones about this
    /// connection or this message's framing, which the door handles itself.
    pub headers: Vec<(String, String)>,
    pub body: Framing,
    /// The client asked to close after this request.
    pub close: bool,
    /// The client waits for `100 Continue` before it sends the body.
    pub expects_continue: bool,
}

/// How a request says where its body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Neither `Content-Length` nor `Transfer-Encoding`: no body.
    Empty,
    /// `Content-Length: N` (more than fits in memory saturates; it is too large anyway).
    Length(u64),
    /// `Transfer-Encoding: chunked`: chunks, each with its size, then an empty one.
    Chunked,
}

/// Headers the door acts on and does not pass on: those about this connection, which
/// RFC 9110 (section 7.6.1) has a proxy remove (`Connection`, `Keep-Alive`,
/// `Proxy-Connection`, `TE`, `Transfer-Encoding`, `Upgrade`), and those about this
/// message's framing and expectations (`Content-Length`, `Trailer`, `Expect`), which end
/// here because the door reads the body and answers the expectation itself. A fixed
/// list: a client cannot add to it (see `Connection` in [`parse_head`]).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "expect",
    "content-length",
];

fn is_hop_by_hop(name: &str) -> bool {
    HOP_BY_HOP.iter().any(|hop| hop.eq_ignore_ascii_case(name))
}

/// Read a request head strictly, or refuse it. Where two readers of the same bytes could
/// disagree (a bare CR or LF, two lengths, a length and chunks), the door does not guess:
/// a request one server reads as two is how one user's request gets another's answer
/// (request smuggling).
pub fn parse_head(raw: &[u8]) -> Result<Head, Refusal> {
    let lines = crlf_lines(raw)?;
    let (request_line, field_lines) = lines.split_first().ok_or_else(|| Refusal::bad("no request line"))?;
    if field_lines.len() > MAX_HEADERS {
        return Err(Refusal::new(431, "Request Header Fields Too Large: more than 100 headers"));
    }
    let (method, target, http_1_0) = parse_request_line(request_line)?;
    let mut fields = Vec::with_capacity(field_lines.len());
    for line in field_lines {
        fields.push(parse_field(line)?);
    }
    let values =
        |name: &'static str| fields.iter().filter(move |(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, v)| v);

    let lengths: Vec<&String> = values("content-length").collect();
    let codings: Vec<&String> = values("transfer-encoding").collect();
    let body = match (lengths.as_slice(), codings.as_slice()) {
        ([], []) => Framing::Empty,
        ([length], []) => Framing::Length(parse_length(length)?),
        ([], [coding]) if http_1_0 => {
            return Err(Refusal::bad(&format!("HTTP/1.0 has no Transfer-Encoding ({coding})")));
        }
        ([], [codings]) => chunked_framing(codings)?,
        ([_], [_]) => return Err(Refusal::bad("both Content-Length and Transfer-Encoding: which one ends the body?")),
        (_, _) => return Err(Refusal::bad("Content-Length or Transfer-Encoding given more than once")),
    };

    // HTTP/1.1 requires exactly one Host; HTTP/1.0 allows none (RFC 9112, section 3.2).
    let hosts = values("host").count();
    if hosts > 1 || (hosts == 0 && !http_1_0) {
        return Err(Refusal::bad("a request needs exactly one Host header"));
    }
    // The same section: a server MUST answer 400 to "a Host header field with an invalid
    // field value" too, one that is not `uri-host [ ":" port ]` (see `is_valid_host`).
    if values("host").any(|host| !is_valid_host(host)) {
        return Err(Refusal::bad("the Host header is not a host name or address, with a port or none"));
    }
    // Every expectation counts, in every `Expect` header (each a list): the one known here
    // is `100-continue`. An HTTP/1.0 client knows no interim answer, and a server MUST
    // ignore its `100-continue` (RFC 9110, section 10.1.1).
    let expectations: Vec<&str> =
        values("expect").flat_map(|value| value.split(',')).map(str::trim).filter(|e| !e.is_empty()).collect();
    if expectations.iter().any(|expectation| !expectation.eq_ignore_ascii_case("100-continue")) {
        return Err(Refusal::new(417, "Expectation Failed: only 100-continue is understood"));
    }
    let expects_continue = !expectations.is_empty() && !http_1_0;
    // `Connection` may also name other headers, for a proxy to remove before it forwards
    // the request (RFC 9110, section 7.6.1). The door is no proxy: it reads `close` and
    // `keep-alive` and ignores the rest, so that `Connection: Origin` cannot make it
    // forget an `Origin` the handler must check.
    let options: Vec<String> =
        values("connection").flat_map(|value| value.split(',')).map(|o| o.trim().to_ascii_lowercase()).collect();
    let close = options.iter().any(|o| o == "close") || (http_1_0 && !options.iter().any(|o| o == "keep-alive"));

    // A target in absolute form names the host itself, and takes the place of Host
    // (RFC 9112, section 3.2.2): of the one sent, or of none (HTTP/1.0 may leave it out).
    let (target, authority) = split_target(&target, &method)?;
    let replaced = |name: &str| authority.is_some() && name.eq_ignore_ascii_case("host");
    let mut headers: Vec<(String, String)> =
        fields.into_iter().filter(|(name, _)| !is_hop_by_hop(name) && !replaced(name)).collect();
    if let Some(authority) = authority {
        headers.insert(0, ("Host".to_string(), authority));
    }
    Ok(Head { method, target, http_1_0, headers, body, close, expects_continue })
}

/// The framing `Transfer-Encoding` gives a request: its codings, in the order they were
/// applied, must end with `chunked`, the one that says where the body ends (RFC 9112,
/// section 6.1), and `chunked` is the only one the door decodes.
fn chunked_framing(value: &str) -> Result<Framing, Refusal> {
    // Empty elements are skipped, `, chunked` is `chunked`: RFC 9110, section 5.6.1.2, "a
    // recipient MUST accept lists that satisfy the following syntax: #element => [ element ]
    // *( OWS "," OWS [ element ] )". The whole head is at most 64 KiB, which bounds them.
    // No coding at all (`Transfer-Encoding: ,`) leaves no `chunked` last: `400` below.
    let codings: Vec<&str> = value.split(',').map(str::trim).filter(|coding| !coding.is_empty()).collect();
    let is_chunked = |coding: &&str| coding.eq_ignore_ascii_case("chunked");
    // RFC 9112, section 6.3, rule 4: "If a Transfer-Encoding header field is present in a
    // request and the chunked transfer coding is not the final encoding, the message body
    // length cannot be determined reliably; the server MUST respond with the 400 (Bad
    // Request) status code and then close the connection." (Every refusal closes.)
    let Some((_, before)) = codings.split_last().filter(|(last, _)| is_chunked(last)) else {
        return Err(Refusal::bad("chunked must be the last Transfer-Encoding: it says where the body ends"));
    };
    // A sender must not chunk a body twice (section 6.1): which chunks would end it?
    if before.iter().any(is_chunked) {
        return Err(Refusal::bad("chunked twice in Transfer-Encoding"));
    }
    // `gzip, chunked`: the body's end is known, but under the chunks it is coded in a way
    // the door cannot decode. Section 6.1: a server that receives a transfer coding it does
    // not understand should answer 501 (a SHOULD, not a MUST).
    if !before.is_empty() {
        return Err(Refusal::new(501, "Not Implemented: the only Transfer-Encoding this server decodes is chunked"));
    }
    Ok(Framing::Chunked)
}
// ANCHOR_END: head

/// The lines of a head, without their line ends. Every line ends in CRLF, and no other
/// CR or LF appears: RFC 9112 (section 2.2) lets a server read a bare LF as a line end,
/// but a proxy in front of it may not, and then the two read different headers.
fn crlf_lines(raw: &[u8]) -> Result<Vec<&[u8]>, Refusal> {
    let bare = || Refusal::bad("a bare CR or LF in the head; lines end in CRLF");
    let Some(text) = raw.strip_suffix(b"\r\n\r\n") else {
        // `read_head` stops early at a line that ends in a bare LF; any other head without
        // its empty line is one the client did not finish.
        let bare_lf = raw.ends_with(b"\n") && !raw.ends_with(b"\r\n");
        return Err(if bare_lf { bare() } else { Refusal::bad(INCOMPLETE_HEAD) });
    };
    let mut lines = Vec::new();
    let mut start = 0;
    for (at, &byte) in text.iter().enumerate() {
        match byte {
            b'\n' if at > start && text[at - 1] == b'\r' => {
                lines.push(&text[start..at - 1]);
                start = at + 1;
            }
            b'\n' => return Err(bare()),
            b'\r' if text.get(at + 1) != Some(&b'\n') => return Err(bare()),
            _ => {}
        }
    }
    lines.push(&text[start..]);
    Ok(lines)
}

/// `POST /mcp HTTP/1.1`: a method (a token), one space, a target (visible ASCII), one
/// space, the version. HTTP/1.0 and HTTP/1.1 are spoken here, and a later HTTP/1.x is
/// read as HTTP/1.1: RFC 9110, section 6.2, "A recipient that receives a message with a
/// major version number that it implements and a minor version number higher than what
/// it implements SHOULD process the message as if it were in the highest minor version
/// within that major version to which the recipient is conformant." Another major
/// version (HTTP/2's preface, `PRI * HTTP/2.0`, among them) is `505`.
fn parse_request_line(line: &[u8]) -> Result<(String, String, bool), Refusal> {
    let mut parts = line.split(|&byte| byte == b' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refusal::bad("the request line is not METHOD TARGET VERSION"));
    };
    if method.is_empty() || !method.iter().all(|&byte| is_token(byte)) {
        return Err(Refusal::bad("the method is not a token"));
    }
    if target.is_empty() || !target.iter().all(|&byte| (b'!'..=b'~').contains(&byte)) {
        return Err(Refusal::bad("the request target is not visible ASCII"));
    }
    let http_1_0 = match version {
        b"HTTP/1.0" => true,
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => false, // 1.1 and later
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor] if major.is_ascii_digit() && minor.is_ascii_digit() => {
            return Err(Refusal::new(505, "HTTP Version Not Supported: this server speaks HTTP/1.1 and HTTP/1.0"));
        }
        _ => return Err(Refusal::bad("the version is not HTTP/1.1")),
    };
    Ok((ascii(method), ascii(target), http_1_0))
}

/// `Name: value`. No space before the colon, no line folding (a line that begins with
/// a space) (RFC 9112, section 5), and values of visible ASCII, spaces and tabs
/// (`is_field_byte` says why not all that RFC 9110, section 5.5 allows).
fn parse_field(line: &[u8]) -> Result<(String, String), Refusal> {
    if line.first().is_some_and(|&byte| byte == b' ' || byte == b'\t') {
        return Err(Refusal::bad("a folded header line (one that begins with a space)"));
    }
    let colon =
        line.iter().position(|&byte| byte == b':').ok_or_else(|| Refusal::bad("a header line without a colon"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&byte| is_token(byte)) {
        return Err(Refusal::bad("a header name is not a token (a space before the colon?)"));
    }
    // Optional whitespace around the value is spaces and tabs (RFC 9110, section 5.6.3).
    let is_blank = |byte: &u8| *byte == b' ' || *byte == b'\t';
    let start = value.iter().position(|byte| !is_blank(byte)).unwrap_or(value.len());
    let end = value.iter().rposition(|byte| !is_blank(byte)).map_or(start, |last| last + 1);
    let value = &value[start..end];
    if !value.iter().all(|&byte| is_field_byte(byte)) {
        return Err(Refusal::bad("a header value holds a control character or a byte outside ASCII"));
    }
    Ok((ascii(name), ascii(value)))
}

/// `Content-Length`: digits and nothing else (no sign, no list, no spaces inside).
fn parse_length(value: &str) -> Result<u64, Refusal> {
    if value.is_empty() || !value.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(Refusal::bad("Content-Length is not a number"));
    }
    // Too many digits for a u64 is still a length: too large, and refused as such.
    Ok(value.parse().unwrap_or(u64::MAX))
}

/// The target in origin form, and the authority an absolute-form target names. `*` only
/// for `OPTIONS`; an authority-form target (for `CONNECT`, to proxies) is not served.
fn split_target(target: &str, method: &str) -> Result<(String, Option<String>), Refusal> {
    if target.starts_with('/') || (target == "*" && method == "OPTIONS") {
        return Ok((target.to_string(), None));
    }
    let lowercase = target.to_ascii_lowercase();
    let Some(rest) = ["http://", "https://"]
        .iter()
        .find_map(|scheme| lowercase.starts_with(scheme).then(|| &target[scheme.len()..]))
    else {
        return Err(Refusal::bad("the request target is not a path"));
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    // The authority becomes the `Host` the handler sees: the same rules, and not empty
    // (an `http` URI has a host).
    if authority.is_empty() || !is_valid_host(authority) {
        return Err(Refusal::bad("the request target's authority is not a host name or address, with a port or none"));
    }
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    Ok((path, Some(authority.to_string())))
}

/// A `Host` value as RFC 9112 (section 3.2) and RFC 3986 (section 3.2.2) spell it,
/// `uri-host [ ":" port ]`: a registered name (letters, digits, `-._~`, the sub-delims
/// `!$&'()*+,;=` and `%` with two hex digits; an IPv4 address is made of the same
/// characters) or an IP literal in brackets (`[::1]`), then `:` and a port of digits, or
/// nothing. Anything else (a space, a `/`, user info before an `@`, a second `:`) is
/// refused. An empty value is valid: a client sends one when its target has no host.
/// A `:` with no digits after it is refused too, though RFC 3986 allows an empty port:
/// the door's choice, so that every `Host` it passes on reads one way, as a name and a
/// port or a name alone.
fn is_valid_host(value: &str) -> bool {
    let (host_is_valid, after_host) = match value.strip_prefix('[') {
        Some(literal) => match literal.split_once(']') {
            Some((address, rest)) => (is_ip_literal(address), rest),
            None => return false,
        },
        None => {
            let end = value.find(':').unwrap_or(value.len());
            (is_reg_name(&value[..end]), &value[end..])
        }
    };
    let port_is_valid = match after_host.strip_prefix(':') {
        Some(port) => !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit()),
        None => after_host.is_empty(),
    };
    host_is_valid && port_is_valid
}

/// `reg-name` (RFC 3986): unreserved characters, sub-delims and percent-encoded bytes.
fn is_reg_name(name: &str) -> bool {
    let mut parts = name.split('%');
    let plain = |part: &str| part.bytes().all(|byte| is_unreserved(byte) || is_sub_delim(byte));
    let encoded = |part: &str| part.len() >= 2 && part.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit);
    parts.next().is_some_and(plain) && parts.all(|part| encoded(part) && plain(&part[2..]))
}

/// What may stand between `[` and `]` (RFC 3986): an IPv6 address, or `IPvFuture`,
/// `v`, a version in hex, `.`, then unreserved characters, sub-delims and `:`.
fn is_ip_literal(address: &str) -> bool {
    if address.parse::<std::net::Ipv6Addr>().is_ok() {
        return true;
    }
    let future = address.strip_prefix(['v', 'V']).and_then(|rest| rest.split_once('.'));
    future.is_some_and(|(version, rest)| {
        !version.is_empty()
            && version.bytes().all(|byte| byte.is_ascii_hexdigit())
            && !rest.is_empty()
            && rest.bytes().all(|byte| is_unreserved(byte) || is_sub_delim(byte) || byte == b':')
    })
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~".contains(&byte)
}

fn is_sub_delim(byte: u8) -> bool {
    b"!$&'()*+,;=".contains(&byte)
}

/// Bytes checked to be ASCII (a token, a target, a field value), as a `String`.
fn ascii(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("checked to be ASCII")
}

/// A token's characters (RFC 9110, section 5.6.2): methods and header names.
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// What a header value may hold here: visible ASCII, space and tab. RFC 9110 also
/// allows bytes above 127 (obs-text), but `tiny_http` takes only ASCII, and a value the
/// door cannot pass on it refuses.
fn is_field_byte(byte: u8) -> bool {
    byte == b'\t' || (b' '..=b'~').contains(&byte)
}

// ANCHOR: body
/// Read the body the head announces, at most `limit` bytes of it. A declared length
/// over the limit is refused before a byte of the body is read; a chunked body, once
/// more than the limit has arrived.
fn read_body(
    from_client: &mut impl BufRead,
    client: &TcpStream,
    head: &Head,
    limit: usize,
) -> Result<Vec<u8>, Refusal> {
    let too_large = || Refusal::new(413, &format!("Request body larger than {limit} bytes"));
    if let Framing::Length(length) = head.body
        && length > limit as u64
    {
        return Err(too_large());
    }
    // A client that asked to hear `100 Continue` before sending the body hears it now
    // that the head has passed.
    if head.expects_continue && head.body != Framing::Empty {
        let _ = (&*client).write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    match head.body {
        Framing::Empty => Ok(Vec::new()),
        Framing::Length(length) => {
            // Room for what has been promised, up to 64 KiB: the rest as it comes, so a
            // client that declares 4 MiB and sends nothing costs nothing.
            let mut body = Vec::with_capacity(length.min(64 * 1024) as usize);
            from_client.take(length).read_to_end(&mut body).map_err(Refusal::from_io)?;
            if body.len() as u64 != length {
                return Err(Refusal::gone());
            }
            Ok(body)
        }
        Framing::Chunked => read_chunks(from_client, limit).map_err(|problem| match problem {
            ChunkProblem::TooLarge => too_large(),
            ChunkProblem::Malformed(what) => Refusal::bad(&format!("malformed chunked body: {what}")),
            ChunkProblem::Io(error) => Refusal::from_io(error),
        }),
    }
}

enum ChunkProblem {
    TooLarge,
    Malformed(&'static str),
    Io(io::Error),
}

/// Decode `Transfer-Encoding: chunked` (RFC 9112, section 7.1): `SIZE[;ext]` CRLF, SIZE
/// bytes, CRLF, ..., then `0` CRLF, optional trailer fields (read and dropped), CRLF.
fn read_chunks(from_client: &mut impl BufRead, limit: usize) -> Result<Vec<u8>, ChunkProblem> {
    let mut body = Vec::new();
    loop {
        let line = read_short_line(from_client)?;
        let digits = line.iter().take_while(|byte| byte.is_ascii_hexdigit()).count();
        let (size, rest) = line.split_at(digits);
        let extension_ok = rest.is_empty() || rest.trim_ascii_start().starts_with(b";");
        if digits == 0 || digits > 16 || !extension_ok {
            return Err(ChunkProblem::Malformed("a chunk size is not hexadecimal"));
        }
        let size = u64::from_str_radix(std::str::from_utf8(size).expect("hex digits are ASCII"), 16)
            .map_err(|_| ChunkProblem::Malformed("a chunk size is not hexadecimal"))?;
        if size == 0 {
            break;
        }
        // The room left under the limit decides, never `body.len() + size`: with a size
        // near 2^64 that sum wraps around to a small number (release builds do not check)
        // and "the chunk" is read without end.
        let room = limit.saturating_sub(body.len());
        if size > room as u64 {
            return Err(ChunkProblem::TooLarge);
        }
        let before = body.len();
        from_client.take(size).read_to_end(&mut body).map_err(ChunkProblem::Io)?;
        if (body.len() - before) as u64 != size {
            return Err(ChunkProblem::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if !read_short_line(from_client)?.is_empty() {
            return Err(ChunkProblem::Malformed("a chunk is longer than its size"));
        }
    }
    // Trailer fields, up to the empty line. They are read so that the next request starts
    // in the right place, and dropped: nothing here needs them.
    let mut trailers = 0;
    while !read_short_line(from_client)?.is_empty() {
        trailers += 1;
        if trailers > MAX_HEADERS {
            return Err(ChunkProblem::Malformed("too many trailer fields"));
        }
    }
    Ok(body)
}

/// One line of a chunked body (a size, or a trailer field), without its CRLF. Such
/// lines are short; a long one, or one without CRLF, is malformed.
fn read_short_line(from_client: &mut impl BufRead) -> Result<Vec<u8>, ChunkProblem> {
    let mut line = Vec::new();
    from_client.take(4096).read_until(b'\n', &mut line).map_err(ChunkProblem::Io)?;
    if line.is_empty() {
        return Err(ChunkProblem::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    match line.strip_suffix(b"\r\n") {
        Some(text) if !text.contains(&b'\r') && !text.contains(&b'\n') => Ok(text.to_vec()),
        _ => Err(ChunkProblem::Malformed("a line does not end in CRLF")),
    }
}
// ANCHOR_END: body

// ===========================================================================
// Sending the answer.
// ===========================================================================

// ANCHOR: answer
/// Send the handler's answer, framed for this client. `tiny_http` writes it: the
/// status line, `Date` and `Server`, the handler's headers, `Content-Length` and the
/// body (none for `HEAD`, `204` or `304`). Returns whether the connection may carry
/// another request.
fn send_answer(client: &TcpStream, head: &Head, response: Response, timeout: Duration) -> bool {
    let mut response = checked(response);
    let no_body = head.method == "HEAD" || matches!(response.status, 204 | 304);
    let status = tiny_http::StatusCode(response.status);
    let headers: Vec<tiny_http::Header> = response
        .headers
        .iter()
        .filter_map(|(name, value)| tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()).ok())
        .collect();
    if let Some(stream) = response.stream.take().filter(|_| !no_body) {
        if !head.http_1_0 {
            let start = tiny_http_head(status, headers, None, head);
            return send_stream(client, &start, stream, timeout) && !head.close;
        }
        // HTTP/1.0 has no chunks: the stream is collected, and sent whole when it ends.
        let mut writer = BodyWriter { client, timeout, collected: Some(Vec::new()), gone: false };
        write_stream(stream, &mut writer);
        response.body = writer.collected.unwrap_or_default();
    }
    let body = std::mem::take(&mut response.body);
    let mut answer = tiny_http_head(status, headers, Some(body.len()), head);
    if !no_body {
        answer.extend_from_slice(&body);
    }
    drop(body); // one copy of the answer waits for a slow reader, not two
    write_by(client, &answer, timeout) && !head.close // head and body in one write
}

/// The head of an answer, as `tiny_http` writes it: the status line, `Server` and
/// `Date`, the headers, and the framing: `Content-Length` for a known `length`,
/// `Transfer-Encoding: chunked` for none. `tiny_http` leaves `Connection` to its own
/// server loop, so it is added here: `close` when the connection ends after this
/// answer, `keep-alive` when an HTTP/1.0 client asked to keep it.
fn tiny_http_head(
    status: tiny_http::StatusCode,
    headers: Vec<tiny_http::Header>,
    length: Option<usize>,
    request: &Head,
) -> Vec<u8> {
    let answer =
        tiny_http::Response::new(status, headers, io::empty(), length, None).with_chunked_threshold(usize::MAX); // a known length is always sent as one
    let mut bytes = Vec::with_capacity(256 + length.unwrap_or(0));
    // `&[]`: the request's headers (its `TE` above all) have no say in the framing.
    // `true`: the head only; the body, if any, follows it from the caller. (A HEAD
    // answer keeps the `Content-Length` a GET would have had.)
    let _ = answer.raw_print(&mut bytes, tiny_http::HTTPVersion(1, 1), &[], true, None);
    let connection: &[u8] = match (request.close, request.http_1_0) {
        (true, _) => b"Connection: close\r\n",
        (false, true) => b"Connection: keep-alive\r\n", // HTTP/1.0 closes unless asked not to
        (false, false) => b"",
    };
    let end = bytes.len() - 2; // before the empty line that ends the head
    bytes.splice(end..end, connection.iter().copied());
    bytes
}
// ANCHOR_END: answer

/// A handler's response as HTTP can carry it, or `500`: a status from 200 to 599, and
/// headers whose names are tokens and whose values are visible ASCII (a CR or LF in a
/// value would end the head early and make the rest a body of its own: response
/// splitting). The base frames the body itself, so a handler's framing headers go.
fn checked(mut response: Response) -> Response {
    let valid = (200..=599).contains(&response.status)
        && response
            .headers
            .iter()
            .all(|(name, value)| !name.is_empty() && name.bytes().all(is_token) && value.bytes().all(is_field_byte));
    if !valid {
        eprintln!("http: the handler's response cannot go on the wire (status {}); answering 500", response.status);
        return Response::empty(500);
    }
    response.headers.retain(|(name, _)| !is_hop_by_hop(name));
    response
}

/// Write `bytes` to the client, all of them by `timeout` from now. `false` when the
/// client has gone, or does not read in time.
fn write_by(client: &TcpStream, bytes: &[u8], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut rest = bytes;
    while !rest.is_empty() {
        match (&*client).write(rest) {
            Ok(written) if written > 0 && Instant::now() < deadline => rest = &rest[written..],
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            _ => return false,
        }
    }
    true
}

// ANCHOR: body_writer
/// Where a streamed body goes: one HTTP chunk per [`BodyWriter::send`], sent at once.
#[allow(dead_code)] // a server that never streams (the starter) has no use for it
pub struct BodyWriter<'a> {
    client: &'a TcpStream,
    /// How long one piece may take to reach the client.
    timeout: Duration,
    /// For an HTTP/1.0 client, which cannot take chunks: the body so far.
    collected: Option<Vec<u8>>,
    /// The client has gone, or stopped reading: nothing more is sent.
    gone: bool,
}

#[allow(dead_code)] // a server that never streams (the starter) has no use for it
impl BodyWriter<'_> {
    /// Send `bytes` to the client now. An error means the client has gone: stop
    /// writing, nobody is reading.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        if let Some(collected) = &mut self.collected {
            collected.extend_from_slice(bytes);
            return Ok(());
        }
        if bytes.is_empty() {
            return Ok(()); // an empty chunk would end the body
        }
        let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
        chunk.extend_from_slice(bytes);
        chunk.extend_from_slice(b"\r\n");
        if self.gone || !write_by(self.client, &chunk, self.timeout) {
            self.gone = true;
            return Err(io::Error::new(io::ErrorKind::ConnectionAborted, "the client has gone"));
        }
        Ok(())
    }

    /// Whether the client has closed the connection. A client that leaves a streamed
    /// answer cancels the work behind it (`2026-07-28/basic/patterns/cancellation.mdx`):
    /// a writer that waits between events can ask, and stop.
    pub fn client_gone(&mut self) -> bool {
        if !self.gone && self.collected.is_none() {
            self.gone = peer_closed(self.client);
        }
        self.gone
    }
}

/// Whether a socket's peer has closed it.
#[allow(dead_code)] // a server that never streams (the starter) has no use for it
fn peer_closed(socket: &TcpStream) -> bool {
    matches!(look(socket), Ok(Some(0)) | Err(_))
}

/// A look at a socket that reads nothing and does not wait: `Some(0)` when the peer has
/// closed it, `Some(n)` when bytes are waiting, `None` when nothing has come.
fn look(socket: &TcpStream) -> io::Result<Option<usize>> {
    socket.set_nonblocking(true)?;
    let peeked = socket.peek(&mut [0; 1]);
    let _ = socket.set_nonblocking(false);
    match peeked {
        Ok(read) => Ok(Some(read)),
        Err(error) if error.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(error) => Err(error),
    }
}

/// Send a streamed answer to an HTTP/1.1 client: `tiny_http` writes the head (with
/// `Transfer-Encoding: chunked`), then each piece goes out as a chunk as soon as it is
/// written, then the last, empty chunk. Returns whether the client is still there.
fn send_stream(client: &TcpStream, head: &[u8], stream: Stream, timeout: Duration) -> bool {
    let mut writer = BodyWriter { client, timeout, collected: None, gone: false };
    if !write_by(client, head, timeout) {
        return false;
    }
    write_stream(stream, &mut writer);
    !writer.gone && write_by(client, b"0\r\n\r\n", timeout)
}

/// Run a stream's writer. A writer that panics ends the body where it stopped (and the
/// server goes on), like a handler that panics.
fn write_stream(stream: Stream, writer: &mut BodyWriter) {
    if catch_unwind(AssertUnwindSafe(|| (stream.0)(writer))).is_err() {
        eprintln!("http: a streamed answer's writer panicked; its body ends there");
    }
}
// ANCHOR_END: body_writer
