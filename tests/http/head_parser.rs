//! The door's head parser, held to an independent reader over thousands of generated
//! heads: bare CRs and LFs mixed into CRLF lines, duplicated and conflicting lengths,
//! transfer codings, folded lines, odd bytes in values, other versions.
//!
//! For every head, the door either refuses it with one of its statuses, or accepts it;
//! and every head it accepts is one that `tiny_http` (an independent reader, which reads
//! LF and CRLF differently) reads exactly the same way: the same method, target,
//! headers and body. So a head the door accepts has only one reading: there is nothing
//! for a second reader in front of it (a proxy) to read differently.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use mcp_workbook::http::{Framing, Head, parse_head};

/// A small deterministic generator (xorshift64*): the same heads on every run.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % sides
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.roll(choices.len())]
    }
}

const METHODS: &[&str] = &["POST", "POST", "GET", "HEAD", "DELETE", "OPTIONS", "X-CUSTOM", "post", "P(ST", ""];
const TARGETS: &[&str] = &["/mcp", "/mcp", "/mcp?session=1", "/", "/%7e", "*", "http://localhost:8080/mcp", "mcp"];
const VERSIONS: &[&str] =
    &["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "http/1.1"];
/// Fields a careful client sends, some of them twice or together with others that
/// contradict them.
const FIELDS: &[&str] = &[
    "Content-Length: 5",
    "Content-Length: 0",
    "Content-Length: 17",
    "content-length: 5",
    "Content-Length:5",
    "Transfer-Encoding: chunked",
    "transfer-encoding: Chunked",
    "Transfer-Encoding: , chunked",
    "Connection: close",
    "Connection: keep-alive",
    "Connection: Upgrade",
    "Connection: Content-Type, Host",
    "Upgrade: h2c",
    "TE: chunked",
    "Expect: 100-continue",
    "Content-Type: application/json",
    "Accept: application/json, text/event-stream",
    "X-Tab:\tvalue\t",
    "X-Empty:",
    "Host: evil.example",
];
/// Fields no careful client sends.
const BAD_FIELDS: &[&str] = &[
    "Content-Length: +5",
    "Content-Length: 5, 5",
    "Transfer-Encoding: gzip",
    "Transfer-Encoding: chunked, gzip",
    "Transfer-Encoding: gzip, chunked",
    "Expect: nothing",
    " folded",
    "X-Space : value",
    "No-Colon",
    "X-Nul: a\0b",
    "X-High: caf\u{e9}",
    "X-Form-Feed: \u{c}value",
];
/// Line ends: mostly CRLF, sometimes what a sloppy or hostile client sends.
const ENDS: &[&str] = &["\r\n", "\r\n", "\r\n", "\r\n", "\r\n", "\r\n", "\n", "\r", "\r\r\n", "\n\r"];

/// A head: half of them with CRLF throughout (so that many are accepted), the others
/// with a line end drawn for each line.
fn generate(dice: &mut Dice) -> Vec<u8> {
    let careful = dice.roll(2) == 0;
    let end = |dice: &mut Dice| if careful { "\r\n" } else { dice.pick(ENDS) };
    let mut head = format!("{} {} {}", dice.pick(METHODS), dice.pick(TARGETS), dice.pick(VERSIONS));
    head.push_str(end(dice));
    if dice.roll(8) != 0 {
        head.push_str("Host: localhost");
        head.push_str(end(dice));
    }
    for _ in 0..dice.roll(5) {
        let field = if careful || dice.roll(3) != 0 { dice.pick(FIELDS) } else { dice.pick(BAD_FIELDS) };
        head.push_str(field);
        head.push_str(end(dice));
    }
    head.push_str(end(dice));
    head.into_bytes()
}

/// A body that fits the head's framing: five bytes, chunked or not.
fn body_for(head: &Head) -> Vec<u8> {
    match head.body {
        Framing::Empty => Vec::new(),
        Framing::Length(length) => b"{}{}{}{}{}{}{}{}{}{}".iter().copied().cycle().take(length as usize).collect(),
        Framing::Chunked => b"5\r\n{\"a\":\r\n0\r\n\r\n".to_vec(),
    }
}

/// The decoded body the door hands on for `body_for(head)`.
fn decoded(head: &Head) -> Vec<u8> {
    match head.body {
        Framing::Chunked => b"{\"a\":".to_vec(),
        _ => body_for(head),
    }
}

/// What `tiny_http` reads from the same bytes: method, target, headers (those the door
/// passes on), body.
type Reading = (String, String, Vec<(String, String)>, Vec<u8>);

fn tiny_http_reading(server: &tiny_http::Server, raw: &[u8], body: &[u8]) -> Reading {
    let address = server.server_addr().to_ip().unwrap();
    let mut client = TcpStream::connect(address).unwrap();
    client.write_all(raw).unwrap();
    client.write_all(body).unwrap();
    // Nothing more comes: a reader that expects more of the body reads the end instead.
    client.shutdown(std::net::Shutdown::Write).unwrap();
    let mut request = server
        .recv_timeout(Duration::from_secs(5))
        .unwrap()
        .unwrap_or_else(|| panic!("tiny_http read no request from {:?}", String::from_utf8_lossy(raw)));
    let mut read = Vec::new();
    let _ = request.as_reader().read_to_end(&mut read);
    let headers = request
        .headers()
        .iter()
        .map(|h| (h.field.as_str().as_str().to_string(), h.value.as_str().to_string()))
        .collect();
    let reading = (request.method().as_str().to_string(), request.url().to_string(), headers, read);
    let _ = request.respond(tiny_http::Response::empty(204));
    reading
}

/// Headers that describe the connection or the framing, not the request: the door does
/// not pass them on, so they are not compared. A fixed list: the headers a client names
/// in `Connection` are passed on (the door is no proxy), so they are compared too.
fn end_to_end(headers: &[(String, String)]) -> Vec<(String, String)> {
    let hop = ["connection", "keep-alive", "te", "transfer-encoding", "upgrade", "expect", "content-length"];
    headers.iter().filter(|(name, _)| !hop.contains(&name.to_ascii_lowercase().as_str())).cloned().collect()
}

#[test]
fn every_head_the_door_accepts_reads_one_way_only() {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let mut dice = Dice(0x5EED_CAFE_F00D_0001);
    let (mut accepted, mut refused, mut compared) = (0, 0, 0);
    for _ in 0..5000 {
        let raw = generate(&mut dice);
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let head = match parse_head(&raw) {
            Err(refusal) => {
                assert!([400, 417, 431, 501, 505].contains(&refusal.status), "{shown:?}: {refusal:?}");
                refused += 1;
                continue;
            }
            Ok(head) => head,
        };
        accepted += 1;
        // The head's own lines all end in CRLF, and nothing else is a line end.
        let text = raw.strip_suffix(b"\r\n\r\n").expect("an accepted head ends in CRLF CRLF");
        let bare = text.windows(2).enumerate().any(|(i, pair)| {
            (pair[1] == b'\n' && pair[0] != b'\r')
                || (pair[0] == b'\r' && pair[1] != b'\n')
                || (i == 0 && pair[0] == b'\n')
        });
        assert!(!bare && !text.ends_with(b"\r"), "{shown:?} has a bare CR or LF, yet was accepted");

        // Upgrade: `tiny_http` hands such a request the rest of the stream as its body;
        // the door ignores Upgrade. Absolute targets: the door makes them a path.
        // HTTP/1.2: the door reads it as HTTP/1.1 (RFC 9110, section 6.2); `tiny_http`
        // reads no request line with a version it does not know.
        let compared_version = !shown.contains(" HTTP/1.2");
        if head.target != "*"
            && !shown.to_ascii_lowercase().contains("upgrade")
            && !shown.contains("http://")
            && compared_version
        {
            compared += 1;
            let (method, target, headers, body) = tiny_http_reading(&server, &raw, &body_for(&head));
            assert_eq!((method.as_str(), target.as_str()), (head.method.as_str(), head.target.as_str()), "{shown:?}");
            assert_eq!(end_to_end(&headers), head.headers, "{shown:?}");
            assert_eq!(body, decoded(&head), "{shown:?}");
        }
    }
    // The generator must reach both sides, or the test proves little.
    assert!(
        accepted > 500 && refused > 500 && compared > 300,
        "accepted {accepted} ({compared} compared), refused {refused}"
    );
}

/// A few heads, decided by hand: what the parser must answer for each.
#[test]
fn the_parser_decides_these_heads_so() {
    let accepted = |raw: &str| parse_head(raw.as_bytes()).unwrap_or_else(|r| panic!("{raw:?}: {r:?}"));
    let status = |raw: &str| parse_head(raw.as_bytes()).expect_err(raw).status;

    let head =
        accepted("POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\nConnection: close\r\nX-A:  b \r\n\r\n");
    assert_eq!((head.method.as_str(), head.target.as_str()), ("POST", "/mcp?x=1"));
    assert_eq!(head.body, Framing::Length(7));
    assert!(head.close && !head.http_1_0 && !head.expects_continue);
    assert_eq!(head.headers, vec![("Host".to_string(), "a".to_string()), ("X-A".to_string(), "b".to_string())]);

    let head = accepted("GET http://example.test:8080 HTTP/1.1\r\nHost: other\r\n\r\n");
    assert_eq!(head.target, "/");
    assert_eq!(head.headers, vec![("Host".to_string(), "example.test:8080".to_string())]);

    let head = accepted("POST /mcp HTTP/1.0\r\nTransfer-Encoding-Not: x\r\n\r\n");
    assert!(head.http_1_0 && head.close, "HTTP/1.0 closes unless asked to keep alive");
    assert!(!accepted("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").close);
    assert_eq!(accepted("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n").body, Framing::Chunked);
    assert_eq!(
        accepted("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n").body,
        Framing::Length(u64::MAX)
    );

    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\rX: y\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nX: \x0cy\r\n\r\n"), 400);
    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n"), 400);
    // Chunked must be the final transfer coding (RFC 9112, section 6.3, rule 4): 400.
    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"), 400);
    // Chunked last, with a coding under it the door cannot decode (section 6.1): 501.
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
    // Empty elements are skipped (RFC 9110, section 5.6.1.2, a MUST); none left is 400.
    assert_eq!(accepted("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , chunked\r\n\r\n").body, Framing::Chunked);
    assert_eq!(accepted("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n").body, Framing::Chunked);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , \r\n\r\n"), 400);
    assert_eq!(status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , gzip, , chunked\r\n\r\n"), 501);
    // A later HTTP/1.x is read as HTTP/1.1 (RFC 9110, section 6.2); another major is 505.
    let head = accepted("GET / HTTP/1.2\r\nHost: a\r\n\r\n");
    assert!(!head.http_1_0 && !head.close);
    assert_eq!(status("GET / HTTP/1.2\r\n\r\n"), 400, "no Host, as in HTTP/1.1");
    assert_eq!(status("GET / HTTP/3.0\r\nHost: a\r\n\r\n"), 505);
    assert_eq!(status("GET / HTTP/0.9\r\nHost: a\r\n\r\n"), 505);
    assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"), 417);
    assert_eq!(status("GET https://user@host/ HTTP/1.1\r\nHost: host\r\n\r\n"), 400);
}

fn accepted(raw: &str) -> Head {
    parse_head(raw.as_bytes()).unwrap_or_else(|refusal| panic!("{raw:?}: {refusal:?}"))
}

fn refusal(raw: &str) -> mcp_workbook::http::Refusal {
    parse_head(raw.as_bytes()).expect_err(raw)
}

fn pair(name: &str, value: &str) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// `Connection` may name any header; the door is no proxy, and removes none for it.
#[test]
fn connection_cannot_remove_an_end_to_end_header() {
    let head =
        accepted("POST /mcp HTTP/1.1\r\nHost: a\r\nOrigin: http://evil.example\r\nConnection: Origin, close\r\n\r\n");
    assert_eq!(head.headers, vec![pair("Host", "a"), pair("Origin", "http://evil.example")]);
    assert!(head.close);
}

/// Every expectation counts; from HTTP/1.0, `100-continue` is ignored (RFC 9110, 10.1.1).
#[test]
fn every_expectation_counts_and_http_1_0_has_none() {
    assert_eq!(refusal("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nExpect: foo\r\n\r\n").status, 417);
    assert_eq!(refusal("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, foo\r\n\r\n").status, 417);
    assert!(
        accepted("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n").expects_continue
    );
    assert!(!accepted("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n").expects_continue);
}

/// An absolute-form target's authority is the Host, whether or not one was sent.
#[test]
fn an_absolute_target_is_the_host_even_without_one() {
    let head = accepted("POST http://127.0.0.1:9/mcp HTTP/1.0\r\nX-A: b\r\n\r\n");
    assert_eq!(head.target, "/mcp");
    assert_eq!(head.headers, vec![pair("Host", "127.0.0.1:9"), pair("X-A", "b")]);
}

/// A head without its empty line is incomplete, not malformed.
#[test]
fn a_head_without_its_empty_line_is_incomplete() {
    for cut in ["GET / HTTP/1.1\r\nHost: a\r\n", "GET / HTTP/1.1\r\nHost: a", "GET / HTTP/1.1\r"] {
        let refused = refusal(cut);
        assert_eq!(refused.status, 400, "{cut:?}");
        assert!(refused.message.contains("incomplete"), "{cut:?}: {refused:?}");
    }
    assert!(refusal("GET / HTTP/1.1\r\nHost: a\n").message.contains("bare CR or LF"));
}
