//! A request's framing: where its head and its body end. Two readers of the same bytes
//! that disagree there turn one request into two (request smuggling), so the door
//! refuses whatever is malformed or ambiguous (a bare CR or LF, two lengths, a length
//! and chunks, an unknown coding, another HTTP version), with the status RFC 9112 gives,
//! a JSON-RPC error, and the connection closed; nothing sent behind a refused request is
//! ever answered. What a careful client may send (chunks with extensions, `Expect:
//! 100-continue`, HTTP/1.0, an absolute target, `TE`, `Upgrade`) is served. Each attack
//! goes to the starter's own binary, which must answer a normal call after it.

use std::io::Write;

use crate::common::raw::{connect, read_all, send, send_then_stop, status};
use crate::support::{PING_ME, assert_no_leak, assert_serves, body_of, door_refusal, footprint, post, start};

/// Each case: what it is, the bytes, the status the door must refuse it with.
const REFUSED: &[(&str, &[u8], u16)] = &[
    (
        "a bare LF hiding a second Content-Length (one reader sees a length of 0, another 100 GB)",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: b\nContent-Length: 0\r\nContent-Length: 100000000000\r\n\r\n",
        400,
    ),
    ("bare LF line ends throughout", b"POST /mcp HTTP/1.1\nHost: localhost\nContent-Length: 2\n\n{}", 400),
    ("a bare CR inside a line", b"POST /mcp HTTP/1.1\r\nHost: localhost\rX: y\r\nContent-Length: 0\r\n\r\n", 400),
    (
        "Content-Length and Transfer-Encoding together",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    (
        "Content-Length: 0 with a chunked body behind it",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "two equal Content-Lengths",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
        400,
    ),
    (
        "two different Content-Lengths",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 20\r\n\r\n{}",
        400,
    ),
    ("a Content-Length list", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2, 2\r\n\r\n{}", 400),
    ("a signed Content-Length", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: +2\r\n\r\n{}", 400),
    ("a negative Content-Length", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n", 400),
    (
        "Transfer-Encoding twice",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    // RFC 9112, section 6.3, rule 4: chunked not the final coding is 400, and the close.
    ("a Transfer-Encoding other than chunked", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    (
        "chunked, not last",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n",
        400,
    ),
    ("an empty Transfer-Encoding", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ,\r\n\r\n", 400),
    // Empty elements skipped, no coding is left: chunked is not last (section 6.3, rule 4).
    ("a Transfer-Encoding of empty elements", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: , ,\r\n\r\n", 400),
    (
        "an empty element, then gzip",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, , gzip\r\n\r\n0\r\n\r\n",
        400,
    ),
    (
        "chunked twice in one Transfer-Encoding",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    // Framed by chunks, but gzip under them, which the door cannot decode: 501 (section 6.1).
    (
        "gzip under chunked",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        501,
    ),
    (
        "Transfer-Encoding in HTTP/1.0",
        b"POST /mcp HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    ("the HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    ("an HTTP/2.0 request line", b"POST /mcp HTTP/2.0\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n", 505),
    ("HTTP/3.0", b"GET /mcp HTTP/3.0\r\nHost: localhost\r\n\r\n", 505),
    ("HTTP/0.9", b"GET /mcp\r\n\r\n", 400),
    ("a lowercase version", b"GET /mcp http/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("two spaces in the request line", b"GET  /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a method that is not a token", b"G(T /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a control character in the target", b"GET /m\x01cp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a target that is not a path", b"GET mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("CONNECT's authority form", b"CONNECT localhost:80 HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("no Host in HTTP/1.1", b"POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 400),
    ("two Hosts", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a space in it", b"POST /mcp HTTP/1.1\r\nHost: local host\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with user info", b"POST /mcp HTTP/1.1\r\nHost: user@localhost\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a path", b"POST /mcp HTTP/1.1\r\nHost: localhost/mcp\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host whose port is not digits", b"POST /mcp HTTP/1.1\r\nHost: localhost:80a\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a colon and no port", b"POST /mcp HTTP/1.1\r\nHost: localhost:\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with two ports", b"POST /mcp HTTP/1.1\r\nHost: localhost:80:81\r\nContent-Length: 0\r\n\r\n", 400),
    ("a Host with a bad percent-encoding", b"POST /mcp HTTP/1.1\r\nHost: local%zzhost\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host without its closing bracket", b"POST /mcp HTTP/1.1\r\nHost: [::1\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host that is no address", b"POST /mcp HTTP/1.1\r\nHost: [localhost]\r\nContent-Length: 0\r\n\r\n", 400),
    ("an IP literal Host followed by no port", b"POST /mcp HTTP/1.1\r\nHost: [::1]8080\r\nContent-Length: 0\r\n\r\n", 400),
    ("a target whose authority has a port that is not digits", b"GET http://localhost:80a/mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("a space before the colon", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length : 0\r\n\r\n", 400),
    ("a folded header line", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n", 400),
    ("a NUL in a value", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n", 400),
    ("a byte over 127 in a value", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n", 400),
    ("a line without a colon", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nnonsense\r\nContent-Length: 0\r\n\r\n", 400),
    ("an Expect other than 100-continue", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: magic\r\nContent-Length: 0\r\n\r\n", 417),
    (
        "a declared body of 100 GB",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000000000\r\n\r\n{\"jsonrpc\"",
        413,
    ),
    (
        "a length past u64",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999999999\r\n\r\n",
        413,
    ),
    (
        "a chunk size that is not hexadecimal",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "a chunk size past u64",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nx\r\n",
        400,
    ),
    (
        "a chunk larger than the limit",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffff\r\nx\r\n",
        413,
    ),
    (
        "a chunk longer than its size",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhello\r\n0\r\n\r\n",
        400,
    ),
    (
        "a chunk line with a bare LF",
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\n{}\r\n0\r\n\r\n",
        400,
    ),
];

#[test]
fn every_ambiguous_or_malformed_request_is_refused_and_the_starter_goes_on() {
    let mut server = start(&[]);
    let baseline = footprint(server.pid()); // one thread, accepting
    for (what, bytes, expected) in REFUSED {
        let answer = send(server.address, bytes);
        assert_eq!(status(&answer), *expected, "{what}: {answer:?}");
        assert!(answer.contains("Connection: close"), "{what}: a refusal closes the connection: {answer:?}");
        assert!(answer.contains(r#""code":-32600"#), "{what}: a refusal carries a JSON-RPC error: {answer:?}");
        assert_serves(&mut server, what);
    }
    assert_no_leak(&server, baseline);
}

/// Two requests in one write: the second is what an attacker hides behind the first.
/// Whatever the first is, the answer to the hidden one (id 666) must never be sent.
#[test]
fn nothing_hidden_behind_a_request_is_ever_answered() {
    let mut server = start(&[]);
    let hidden = String::from_utf8(post("", r#"{"jsonrpc":"2.0","id":666,"method":"ping"}"#)).unwrap();
    let cases = [
        // A Content-Length longer than the chunked body: a reader that goes by the
        // length and one that goes by the chunks end the body in different places, and
        // for one of them the rest is "the next request".
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 300\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{hidden}"
        ),
        // A request hidden behind a bare LF, inside what one reader takes for a header.
        format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-A: b\nContent-Length: {}\r\n\r\n{hidden}", hidden.len()),
        // A Content-Length of 0 before a chunked body that holds the hidden request.
        format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{hidden}\r\n0\r\n\r\n",
            hidden.len()
        ),
        // A coding that does not say where the body ends: a reader that takes it for no
        // body at all reads the hidden request next (RFC 9112, section 6.3, rule 4).
        format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n{hidden}"),
    ];
    for case in &cases {
        let answer = send(server.address, case.as_bytes());
        assert_eq!(status(&answer), 400, "{answer:?}");
        assert!(!answer.contains("666"), "a hidden request was answered: {answer:?}");
        assert_serves(&mut server, "a smuggling attempt");
    }
}

#[test]
fn a_head_over_64_kib_or_with_too_many_headers_is_431() {
    let mut server = start(&[]);
    let long = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Long: {}\r\n\r\n", "a".repeat(70 * 1024));
    assert_eq!(status(&send(server.address, long.as_bytes())), 431);
    let many: String = (0..101).map(|i| format!("X-{i}: {i}\r\n")).collect();
    let many = format!("POST /mcp HTTP/1.1\r\nHost: localhost\r\n{many}\r\n");
    assert_eq!(status(&send(server.address, many.as_bytes())), 431);
    assert_serves(&mut server, "long heads");
}

/// RFC 9112, section 3: "A server that receives a request-target longer than any URI it
/// wishes to parse MUST respond with a 414 (URI Too Long) status code". A request line
/// still going at the 64 KiB cap is `414` when its target is what is long, and `501`
/// (the same section's SHOULD for a method longer than any the server implements) when
/// its method is; the connection closes, and the starter goes on.
#[test]
fn a_request_target_over_64_kib_is_414_and_a_method_501() {
    let mut server = start(&[]);
    let long_target = format!("GET /mcp?q={} HTTP/1.1\r\nHost: localhost\r\n\r\n", "a".repeat(70 * 1024));
    assert_eq!(
        send(server.address, long_target.as_bytes()),
        door_refusal("HTTP/1.1 414 URI Too Long", "URI Too Long: the request target is over 64 KiB")
    );
    let long_method = format!("{} /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n", "G".repeat(70 * 1024));
    assert_eq!(
        send(server.address, long_method.as_bytes()),
        door_refusal("HTTP/1.1 501 Not Implemented", "Not Implemented: no method of this server is over 64 KiB long")
    );
    // A target under the cap, with headers that take the head past it, is still 431.
    let long_head = format!(
        "GET /mcp?q={} HTTP/1.1\r\nHost: localhost\r\nX-Long: {}\r\n\r\n",
        "a".repeat(40 * 1024),
        "b".repeat(40 * 1024)
    );
    assert_eq!(status(&send(server.address, long_head.as_bytes())), 431);
    assert_serves(&mut server, "long request lines");
}

/// RFC 9110, section 6.2: a message of a major version the server implements and a
/// higher minor version "SHOULD process the message as if it were in the highest minor
/// version within that major version to which the recipient is conformant": HTTP/1.2 to
/// HTTP/1.9 are served as HTTP/1.1, and answered in HTTP/1.1. HTTP/2.0 and HTTP/3.0 are
/// another major version, `505` (in `REFUSED`).
#[test]
fn a_later_http_1_minor_version_is_served_as_http_1_1() {
    let server = start(&[]);
    for minor in 2..=9 {
        let request = String::from_utf8(post("Connection: close\r\n", PING_ME)).unwrap().replacen(
            "HTTP/1.1",
            &format!("HTTP/1.{minor}"),
            1,
        );
        let answer = send(server.address, request.as_bytes());
        assert!(
            answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.contains("BISMILLAH"),
            "HTTP/1.{minor}: {answer:?}"
        );
    }
    // Kept alive like HTTP/1.1 (not closed like HTTP/1.0): two requests, two answers.
    let one = String::from_utf8(post("", PING_ME)).unwrap().replacen("HTTP/1.1", "HTTP/1.5", 1);
    let two = String::from_utf8(post("Connection: close\r\n", PING_ME)).unwrap().replacen("HTTP/1.1", "HTTP/1.5", 1);
    let answer = send(server.address, format!("{one}{two}").as_bytes());
    assert_eq!(answer.matches("BISMILLAH").count(), 2, "{answer:?}");
}

/// Served as HTTP/1.1, a later minor version is framed as HTTP/1.1 too: a request with
/// both `Content-Length` and `Transfer-Encoding` is refused in HTTP/1.5 as in 1.1, its
/// connection closed, and the server answers the next client.
#[test]
fn a_later_minor_version_gets_no_looser_framing() {
    let server = start(&[]);
    let smuggling = "POST /mcp HTTP/1.5\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                     Accept: application/json, text/event-stream\r\nContent-Length: 4\r\n\
                     Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
    let answer = send(server.address, smuggling.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer:?}");
    assert!(answer.contains("Connection: close\r\n"), "{answer:?}");
    assert_eq!(answer.matches("HTTP/1.1 ").count(), 1, "{answer:?}");
    let next = send(server.address, &post("Connection: close\r\n", PING_ME));
    assert!(next.starts_with("HTTP/1.1 200 OK\r\n") && next.contains("BISMILLAH"), "{next:?}");
}

/// RFC 9110, section 5.6.1.2: "a recipient MUST accept lists that satisfy the following
/// syntax: #element => [ element ] *( OWS "," OWS [ element ] )", empty elements
/// ignored. `Transfer-Encoding: , chunked` (what a sender that merges two values may
/// send) is `chunked`, and the body is read by its chunks.
#[test]
fn empty_elements_in_transfer_encoding_are_skipped() {
    let server = start(&[]);
    for codings in [", chunked", "chunked,", " ,chunked , ", ",,chunked"] {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: {codings}\r\n\
             Connection: close\r\n\r\n{:x}\r\n{PING_ME}\r\n0\r\n\r\n",
            PING_ME.len()
        );
        let answer = send(server.address, request.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{codings:?}: {answer:?}");
    }
}

/// A chunk size of 2^64 - 1 after a first chunk: added to the body so far, it wraps
/// around to a small number in a release build (which does not check), and a sum that
/// passed the limit so would let "the chunk" be read into memory without end. The room
/// left under the limit decides, whatever the sizes: 413, the door's refusal byte for
/// byte.
#[test]
fn a_chunk_size_that_would_overflow_the_running_total_is_413() {
    let mut server = start(&[]);
    for (first, size) in
        [("1\r\n{", "ffffffffffffffff"), ("2\r\n{}", "fffffffffffffffe"), ("1\r\n{", "fffffffffffffff0")]
    {
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n{first}\r\n{size}\r\nxxxxxxxx"
        );
        let answer = send_then_stop(server.address, request.as_bytes());
        let expected = door_refusal("HTTP/1.1 413 Content Too Large", "Request body larger than 4194304 bytes");
        assert_eq!(answer, expected, "a chunk of {size} after {first:?}");
        assert_serves(&mut server, "a chunk size that overflows");
    }
}

/// A client that stops sending in the middle of a head hears that its head is
/// incomplete: not a complaint about a bare CR or LF it never sent, and not silence.
#[test]
fn a_head_cut_short_by_the_client_is_refused_as_incomplete() {
    let server = start(&[]);
    let refused = door_refusal(
        "HTTP/1.1 400 Bad Request",
        "Bad Request: the head is incomplete: the client stopped sending before its empty line",
    );
    for cut in ["POST /mcp HTTP/1.1\r\nHost: 127", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", "POST /mcp HTTP/1.1\r"]
    {
        assert_eq!(send_then_stop(server.address, cut.as_bytes()), refused, "{cut:?}");
    }
    // Nothing at all, or blank lines only, is not a request: the connection just ends.
    assert_eq!(send_then_stop(server.address, b"\r\n\r\n"), "");
}

/// `Connection` names hop-by-hop headers for a proxy to remove. The door is no proxy:
/// a client that lists `Origin` there must not make the door forget its `Origin`, which
/// would skip the guard's 403, nor any other header the handler reads.
#[test]
fn a_connection_header_cannot_delete_an_end_to_end_header() {
    let server = start(&[]);
    let answer = send(server.address, &post("Origin: http://evil.example\r\nConnection: Origin, close\r\n", PING_ME));
    assert_eq!(status(&answer), 403, "{answer:?}");
    assert_eq!(
        body_of(&answer),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Forbidden: Origin 'http://evil.example' is not allowed"}}"#
    );
    let answer = send(
        server.address,
        &post("MCP-Protocol-Version: 1999-01-01\r\nConnection: MCP-Protocol-Version, close\r\n", PING_ME),
    );
    assert_eq!(status(&answer), 400, "{answer:?}");
    assert!(body_of(&answer).contains("1999-01-01"), "{answer:?}");
}

/// `TE: chunked` asks for a chunked answer, which a client that expects a length would
/// take for the start of the next answer. The door drops `TE`: the answers keep their
/// length, and pipelined ones come in order.
#[test]
fn a_te_header_changes_nothing_and_pipelined_answers_come_in_order() {
    let server = start(&[]);
    let mut both = post("TE: chunked\r\n", PING_ME);
    both.extend(post("Connection: close\r\n", r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#));
    let answer = send(server.address, &both);
    assert!(!answer.to_ascii_lowercase().contains("transfer-encoding"), "{answer:?}");
    let first = answer.find("BISMILLAH").expect("the first answer");
    let second = answer.find(r#""id":2"#).expect("the second answer");
    assert!(first < second, "{answer:?}");
    assert_eq!(answer.matches("HTTP/1.1 200").count(), 2, "{answer:?}");
}

/// `curl --http2 http://...` asks to switch to HTTP/2 with `Upgrade: h2c`. A server may
/// ignore that (RFC 9110, section 7.8): the request is answered in HTTP/1.1, and the
/// connection goes on: what follows the request is the next request, never a stream
/// handed to the first.
#[test]
fn an_upgrade_request_is_answered_in_http_1_1() {
    let server = start(&[]);
    let mut stream = connect(server.address);
    let upgrade = "Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n";
    stream.write_all(&post(upgrade, PING_ME)).unwrap();
    stream.write_all(&post("Connection: close\r\n", PING_ME)).unwrap();
    let answer = read_all(&mut stream);
    assert_eq!(answer.matches("BISMILLAH").count(), 2, "{answer:?}");
    assert!(!answer.contains("101"), "{answer:?}");
}

/// Chunked bodies are decoded by the door: extensions and trailer fields are legal.
#[test]
fn chunked_bodies_with_extensions_and_trailers_are_served() {
    let server = start(&[]);
    let (first, second) = PING_ME.split_at(20);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n{:x};name=value\r\n{first}\r\n{:X}\r\n{second}\r\n0\r\nX-Checksum: 1\r\n\r\n",
        first.len(),
        second.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
}

#[test]
fn expect_100_continue_is_answered_by_the_door_then_the_request() {
    let server = start(&[]);
    let answer = send(server.address, &post("Expect: 100-continue\r\nConnection: close\r\n", PING_ME));
    assert!(answer.starts_with("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"), "{answer:?}");
    // A body over the limit is refused before the client is told to send it.
    let answer = send(
        server.address,
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5000000\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer:?}");
}

/// RFC 9110, section 10.1.1: a server MUST ignore `100-continue` from an HTTP/1.0
/// client (which does not know the interim answer), and every expectation counts, not
/// only the first `Expect` header's.
#[test]
fn expect_is_read_whole_and_ignored_from_http_1_0() {
    let server = start(&[]);
    let request = format!(
        "POST /mcp HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\n\
         Content-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "no 100 Continue for HTTP/1.0: {answer:?}");
    assert!(answer.contains("BISMILLAH"), "{answer:?}");
    let refused =
        door_refusal("HTTP/1.1 417 Expectation Failed", "Expectation Failed: only 100-continue is understood");
    for expect in [
        "Expect: 100-continue\r\nExpect: foo\r\n",
        "Expect: 100-continue, foo\r\n",
        "Expect: foo\r\nExpect: 100-continue\r\n",
    ] {
        assert_eq!(send(server.address, &post(expect, PING_ME)), refused, "{expect:?}");
    }
}

#[test]
fn http_1_0_and_absolute_targets_are_served() {
    let server = start(&[]);
    let answer = send(
        server.address,
        format!(
            "POST /mcp HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{PING_ME}",
            PING_ME.len()
        )
        .as_bytes(),
    );
    assert!(answer.contains("BISMILLAH") && answer.contains("Connection: close"), "{answer:?}");
    // The absolute form names the host itself, and wins over `Host` (RFC 9112, 3.2.2).
    let answer = send(
        server.address,
        format!(
            "POST http://localhost:1/mcp HTTP/1.1\r\nHost: evil.example\r\nContent-Type: application/json\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{PING_ME}",
            PING_ME.len()
        )
        .as_bytes(),
    );
    assert!(answer.contains("BISMILLAH"), "{answer:?}");
}

/// RFC 9112, section 3.2.2: the authority of an absolute-form target takes the place
/// of `Host`, also when there is no `Host` to replace (HTTP/1.0 may leave it out).
#[test]
fn an_absolute_target_is_the_host_of_an_http_1_0_request_without_one() {
    let server = start(&[]);
    let request = format!(
        "POST http://127.0.0.1/mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.contains("BISMILLAH"), "{answer:?}");
}

/// A `Host` that is an IP literal with a port, `[::1]:8080`, is a valid `uri-host [ ":" port ]`:
/// the door lets it through, and the starter's guard takes `[::1]` for loopback.
#[test]
fn a_host_in_brackets_with_a_port_is_served() {
    let server = start(&[]);
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{PING_ME}",
        PING_ME.len()
    );
    let answer = send(server.address, request.as_bytes());
    assert!(answer.starts_with("HTTP/1.1 200") && answer.contains("BISMILLAH"), "{answer:?}");
}
