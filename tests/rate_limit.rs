//! The rate limit on tool calls (`RateLimit`, chapter 10, carried by every chapter after
//! it), checked in each chapter that has it, where a transcript cannot show it. A
//! transcript is one caller, `127.0.0.1`, in one moment: chapter 10's shows the call
//! past the share refused (429, `Retry-After`), and nothing more. Here:
//! - a caller may spend its whole share at once, is then refused with 429 and
//!   `Retry-After`, and after that many seconds has a call again, but not its whole
//!   share: calls come back at the share's pace (which takes waiting);
//! - callers are counted apart, and a flood of new callers makes the server forget
//!   callers with calls to spare, never the caller it is holding back (which takes more
//!   than `MAX_CALLERS`, 1,024, callers, each from an address of its own).
//!
//! A caller is the address its connection comes from. On Linux every address in
//! 127.0.0.0/8 is the machine itself, but std's `TcpStream::connect` lets the kernel
//! pick the source address (127.0.0.1, always), and std has no way to pick it. The
//! workbook takes no dependency for a test, so the flood makes its connections with the
//! three C library calls std itself uses (`socket`, `bind`, `connect`), declared here:
//! that test runs on Linux (x86-64 and Arm64) only. No test-only flag is involved: the
//! binaries are the ones the chapters ship, counting callers as they do for anyone.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript::HttpResponse;
use serde_json::{Value, json};

mod common;
use common::chapter_binaries_from;

/// Every chapter with the rate limit: chapter 10 adds it.
fn rate_limited() -> Vec<String> {
    chapter_binaries_from(10)
}

/// The chapters' `MAX_CALLERS`: how many callers the rate limit remembers at once.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
const MAX_CALLERS: usize = 1024;

/// The chapter's server, `binary`, with a share of `per_minute` calls a minute.
fn start(binary: &str, per_minute: usize) -> RunningServer {
    common::start(binary, &["--max-calls-per-minute", &per_minute.to_string()])
}

/// A `tools/call` of `PingME` (every chapter from 10 has it) on `stream`: the answer.
fn call_on(mut stream: TcpStream, address: SocketAddr) -> HttpResponse {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "PingME" } });
    let body = body.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all((head + &body).as_bytes()).expect("the call is sent");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("the call is answered");
    replay::parse_response(&raw).expect("an HTTP answer")
}

/// A tool call from `127.0.0.1`, the address std connects from.
fn call(address: SocketAddr) -> HttpResponse {
    call_on(TcpStream::connect(address).expect("the server is listening"), address)
}

/// Call until refused, at most `limit` times: how many calls were allowed, and the refusal.
fn calls_until_refused(address: SocketAddr, limit: usize) -> (usize, HttpResponse) {
    for allowed in 0..limit {
        let answer = call(address);
        if answer.status == 429 {
            return (allowed, answer);
        }
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
    panic!("{limit} calls in a row, none refused");
}

/// The refusal of a call past the share, as the chapters write it.
fn assert_refused(answer: &HttpResponse, retry_after: u64, binary: &str) {
    assert_eq!(answer.status, 429, "{binary}: {}", answer.body);
    assert_eq!(answer.header("Retry-After"), Some(retry_after.to_string().as_str()), "{binary}");
    let error: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(error["id"], 1, "{binary}: {error}");
    assert_eq!(error["error"]["code"], -31429, "{binary}: {error}");
    assert_eq!(error["error"]["data"]["retryAfterSeconds"], retry_after, "{binary}: {error}");
}

/// A share may be spent at once; past it, 429 and `Retry-After`; after `Retry-After`
/// seconds a call has come back, and not the whole share. 120 a minute is a call back
/// every half second: `Retry-After: 1` (60 / 120, rounded up). The bounds are wide, so
/// that a slow machine (which only gives the share more time to come back) passes.
#[test]
fn a_spent_share_comes_back_at_its_pace() {
    const PER_MINUTE: usize = 120;
    for binary in &rate_limited() {
        let server = start(binary, PER_MINUTE);
        let (allowed, refused) = calls_until_refused(server.address, 10 * PER_MINUTE);
        assert!(allowed >= PER_MINUTE, "{binary}: refused after {allowed} calls: a whole share may be spent at once");
        assert_refused(&refused, 1, binary);

        std::thread::sleep(Duration::from_secs(1));
        let (back, _) = calls_until_refused(server.address, PER_MINUTE);
        assert!(back >= 1, "{binary}: `Retry-After` seconds later, no call had come back");
        assert!(back < PER_MINUTE / 2, "{binary}: {back} calls came back in about a second: not at the share's pace");
    }
}

/// Two calls a minute: a caller that spent both is held back for 30 s, the margin of
/// this test. `held_back` spends its share, `spare` makes one call of two; then
/// `MAX_CALLERS` + 10 new callers make a call each. The rate limit, full, forgets the
/// caller closest to a whole share each time a new one comes: `spare` first (its one
/// call has been coming back longest), never `held_back`, which stays refused. And
/// `spare`, forgotten, is as good as new: two calls in a row, where it had one left.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
#[test]
fn callers_are_counted_apart_and_a_flood_forgets_only_callers_with_calls_to_spare() {
    use std::net::Ipv4Addr;
    use std::time::Instant;

    let from = |source: Ipv4Addr, address: SocketAddr| {
        let SocketAddr::V4(to) = address else { panic!("the server listens on 127.0.0.1") };
        let stream = source_address::connect_from(source, to).unwrap_or_else(|e| panic!("from {source}: {e}"));
        call_on(stream, address)
    };
    let (held_back, spare) = (Ipv4Addr::new(127, 1, 0, 1), Ipv4Addr::new(127, 1, 0, 2));
    // New callers: 127.2.x.y, never .0 nor .255.
    let newcomers: Vec<Ipv4Addr> =
        (0..MAX_CALLERS + 10).map(|n| Ipv4Addr::new(127, 2, (n / 250) as u8, (n % 250 + 1) as u8)).collect();

    for binary in &rate_limited() {
        let server = start(binary, 2);
        let address = server.address;
        assert_eq!([from(held_back, address).status, from(held_back, address).status], [200, 200], "{binary}");
        assert_refused(&from(held_back, address), 30, binary);
        let refused_at = Instant::now();
        assert_eq!(from(spare, address).status, 200, "{binary}: another caller has a share of its own");

        // The flood, on four connections at a time.
        let refused: Vec<String> = std::thread::scope(|scope| {
            let workers: Vec<_> = newcomers
                .chunks(newcomers.len().div_ceil(4))
                .map(|chunk| {
                    scope.spawn(move || {
                        let answers = chunk.iter().map(|&source| (source, from(source, address).status));
                        let refused = answers.filter(|&(_, status)| status != 200);
                        refused.map(|(source, status)| format!("{source}: {status}")).collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect()
        });
        assert!(refused.is_empty(), "{binary}: a new caller has a whole share, yet: {refused:?}");

        let since = refused_at.elapsed();
        assert_eq!(
            from(held_back, address).status,
            429,
            "{binary}: the flood made the server forget the caller it held back (if {since:?} is over 30 s, the \
             machine was too slow for this test: by then a call has come back)"
        );
        assert_eq!(
            [from(spare, address).status, from(spare, address).status],
            [200, 200],
            "{binary}: the caller with a call to spare was not forgotten: the rate limit remembers more callers than it may"
        );
    }
}

/// A client socket bound to a source address of the test's choosing, which std cannot
/// make: `socket`, `bind` and `connect` from the C library std is built on, with the
/// constants and `struct sockaddr_in` of Linux.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod source_address {
    use std::ffi::c_int;
    use std::io;
    use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    const AF_INET: c_int = 2;
    const SOCK_STREAM: c_int = 1;
    const SOCK_CLOEXEC: c_int = 0o2_000_000;

    /// `struct sockaddr_in`: the family in the machine's order, port and address in the
    /// network's (big-endian).
    #[repr(C)]
    struct SockaddrIn {
        family: u16,
        port: [u8; 2],
        address: [u8; 4],
        zero: [u8; 8],
    }

    impl From<SocketAddrV4> for SockaddrIn {
        fn from(address: SocketAddrV4) -> SockaddrIn {
            SockaddrIn {
                family: AF_INET as u16,
                port: address.port().to_be_bytes(),
                address: address.ip().octets(),
                zero: [0; 8],
            }
        }
    }

    unsafe extern "C" {
        fn socket(domain: c_int, kind: c_int, protocol: c_int) -> c_int;
        fn bind(socket: c_int, address: *const SockaddrIn, length: u32) -> c_int;
        fn connect(socket: c_int, address: *const SockaddrIn, length: u32) -> c_int;
    }

    /// A TCP connection to `to` from `source` (any port).
    pub fn connect_from(source: Ipv4Addr, to: SocketAddrV4) -> io::Result<TcpStream> {
        let checked = |result: c_int| if result < 0 { Err(io::Error::last_os_error()) } else { Ok(result) };
        let length = size_of::<SockaddrIn>() as u32;
        // SAFETY: a plain call; the descriptor it returns is new, and owned by `OwnedFd`
        // from then on, which closes it, once, when dropped.
        let socket = unsafe { OwnedFd::from_raw_fd(checked(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0))?) };
        let (from, to) = (SockaddrIn::from(SocketAddrV4::new(source, 0)), SockaddrIn::from(to));
        // SAFETY: both addresses live through the calls, and `length` is their size.
        checked(unsafe { bind(socket.as_raw_fd(), &from, length) })?;
        checked(unsafe { connect(socket.as_raw_fd(), &to, length) })?;
        Ok(TcpStream::from(socket))
    }
}
