//! Chapter 18's authorization where a transcript cannot go. The transcript runs one
//! server with its keys in a file; here:
//! - the keys come over HTTP from a small authorization server of the test's own, found
//!   through its metadata (RFC 8414, then OpenID Connect's address), fetched once, and
//!   fetched again when a token names a key the server does not hold, but not sooner
//!   than ten seconds after the last fetch;
//! - metadata that names another issuer is not trusted, and no keys at all is `503`,
//!   not a `401` that would make the client throw its token away;
//! - a key endpoint that misbehaves does no harm: a slow one stalls no worker (a token
//!   whose key is not held waits at most a second, the others not at all), and one that
//!   answers JSON that is no JWK Set leaves the keys held as they were (a key not held is
//!   then `503`, not unknown, until a fetch works);
//! - a token with a `crit` header, or an `iss` that is not a string, is refused; an `exp`
//!   with a fraction is taken, as RFC 7519 allows;
//! - a redirect from the key or metadata address is not followed (it could lead to `http`);
//! - a token verified before is remembered (by its digest: one byte off is another
//!   token, checked in full), but still expires, still needs the scopes of each
//!   request, and is checked again once its key is withdrawn, even when no token but
//!   remembered ones arrives (the keys' hourly refresh, shortened here);
//! - the rate limit counts by caller (the token's subject with its client), a
//!   session's stream is its subject's, and a `requestState` its caller's: a client
//!   whose id is a user's name, as a client-credentials token's `sub`, is not that user;
//! - a stream (here a `subscriptions/listen`) ends when the token it was opened with
//!   expires, not minutes later;
//! - the flags: `--stdio` refuses the authorization flags, and keys over plain `http`
//!   are refused off the loopback.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mcp_workbook::http;
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript::HttpResponse;
use serde_json::{Value, json};

mod common;
use common::session_client::request;

const BINARY: &str = env!("CARGO_BIN_EXE_ch18-authorization");
const RESOURCE: &str = "http://127.0.0.1:8080/mcp";
const TEST_KEY: &[u8] = include_bytes!("keys/private.pem");
const NEXT_KEY: &[u8] = include_bytes!("keys/next.pem");
const TEST_JWKS: &str = include_str!("keys/jwks.json");
const NEXT_JWKS: &str = include_str!("keys/next-jwks.json");

/// A token for `subject` from `issuer`, signed with `pem` under `kid`, valid until 2100.
fn token(issuer: &str, subject: &str, scope: &str, pem: &[u8], kid: &str) -> String {
    token_until(issuer, subject, scope, pem, kid, 4_102_444_800)
}

/// The same, valid until `exp` (seconds since 1970).
fn token_until(issuer: &str, subject: &str, scope: &str, pem: &[u8], kid: &str, exp: u64) -> String {
    let claims = json!({ "iss": issuer, "sub": subject, "aud": RESOURCE, "exp": exp, "scope": scope });
    sign(&claims, pem, kid)
}

/// A token of `auth.example.com`'s test key for `subject`, issued to `client`, until 2100.
fn token_of_client(subject: &str, client: &str, scope: &str) -> String {
    let claims = json!({ "iss": "https://auth.example.com", "sub": subject, "client_id": client, "aud": RESOURCE, "exp": 4_102_444_800u64, "scope": scope });
    sign(&claims, TEST_KEY, "workbook-test-key")
}

/// A token signed with `pem`, whose claims are `claims` and whose header is ES256,
/// `at+jwt` and `kid`.
fn sign(claims: &Value, pem: &[u8], kid: &str) -> String {
    sign_with_header(claims, pem, |header| header.kid = Some(kid.into()))
}

/// A token signed with the test key under its `kid`, whose header `edit` may change:
/// the tokens no authorization server should issue, which this server must refuse all
/// the same.
fn signed(claims: Value, edit: impl FnOnce(&mut Header)) -> String {
    sign_with_header(&claims, TEST_KEY, |header| {
        header.kid = Some("workbook-test-key".into());
        edit(header);
    })
}

fn sign_with_header(claims: &Value, pem: &[u8], edit: impl FnOnce(&mut Header)) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    edit(&mut header);
    encode(&header, claims, &EncodingKey::from_ec_pem(pem).unwrap()).unwrap()
}

/// A tiny authorization server: it answers the paths it was given with their JSON,
/// `404` otherwise, and counts the requests for each path. The workbook's HTTP base
/// serves it, in this process. It misbehaves on demand: a path may answer slowly, or
/// with a redirect.
#[derive(Clone)]
struct Documents {
    address: SocketAddr,
    served: Arc<Mutex<HashMap<String, Served>>>,
    asked: Arc<Mutex<HashMap<String, usize>>>,
}

/// What one path answers.
#[derive(Clone, Default)]
struct Served {
    body: String,
    /// Answer `302` to this URL instead.
    redirect: Option<String>,
    /// Wait this long before answering.
    delay: Duration,
}

impl Documents {
    fn start() -> Documents {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let documents =
            Documents { address: listener.local_addr().unwrap(), served: Arc::default(), asked: Arc::default() };
        let server = documents.clone();
        // Workers enough that a slow path does not hold up the others.
        let config = http::Config { workers: 8, ..http::Config::default() };
        thread::spawn(move || {
            http::serve_listener(listener, config, move |request| {
                *server.asked.lock().unwrap().entry(request.path.clone()).or_default() += 1;
                let served = server.served.lock().unwrap().get(&request.path).cloned();
                let Some(served) = served else { return http::Response::empty(404) };
                thread::sleep(served.delay);
                match served.redirect {
                    Some(to) => http::Response::empty(302).with_header("Location", &to),
                    None => http::Response::json(200, served.body),
                }
            })
        });
        documents
    }

    fn issuer(&self) -> String {
        format!("http://{}", self.address)
    }

    fn serve(&self, path: &str, body: &str) {
        self.served.lock().unwrap().insert(path.into(), Served { body: body.into(), ..Served::default() });
    }

    /// From now on `path` takes `delay` to answer.
    fn slow(&self, path: &str, delay: Duration) {
        self.served.lock().unwrap().entry(path.into()).or_default().delay = delay;
    }

    /// `path` answers `302 Found` with `Location: to`.
    fn redirect(&self, path: &str, to: &str) {
        self.served.lock().unwrap().insert(path.into(), Served { redirect: Some(to.into()), ..Served::default() });
    }

    fn asked(&self, path: &str) -> usize {
        self.asked.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// The chapter's server, the protected resource `RESOURCE`, with `args`.
fn start(args: &[&str]) -> RunningServer {
    common::start(BINARY, &[&["--resource", RESOURCE], args].concat())
}

/// The chapter's server with the transcript's keys, from a file, and `extra` flags.
fn start_with_test_keys(extra: &[&str]) -> RunningServer {
    start(
        &[&["--authorization-server", "https://auth.example.com", "--jwks-file", "tests/keys/jwks.json"], extra]
            .concat(),
    )
}

/// A `tools/call` of `tool` with `token`.
fn call(address: SocketAddr, token: &str, tool: &str) -> HttpResponse {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": tool } });
    let authorization = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("Authorization", authorization.as_str()),
    ];
    replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered")
}

/// A `tools/call` of `PingME` with `token`.
fn ping(address: SocketAddr, token: &str) -> HttpResponse {
    call(address, token, "PingME")
}

#[test]
fn keys_are_found_fetched_once_and_fetched_again_for_a_new_key() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    let jwks_uri = format!("{issuer}/jwks");
    issuer_server.serve(
        "/.well-known/oauth-authorization-server",
        &json!({ "issuer": issuer, "jwks_uri": jwks_uri }).to_string(),
    );
    issuer_server.serve("/jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer]);
    let alice = token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key");

    // The first token fetches the metadata and the keys; the second uses them as held.
    for _ in 0..2 {
        let answer = ping(server.address, &alice);
        assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.stderr());
    }
    assert_eq!(issuer_server.asked("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(issuer_server.asked("/jwks"), 1);

    // The authorization server rotates to a new key. A token signed with it, right
    // away: the keys were fetched less than ten seconds ago, so not again: refused.
    let mut both: Value = serde_json::from_str(TEST_JWKS).unwrap();
    let next: Value = serde_json::from_str(NEXT_JWKS).unwrap();
    both["keys"].as_array_mut().unwrap().push(next["keys"][0].clone());
    issuer_server.serve("/jwks", &both.to_string());
    let rotated = token(&issuer, "alice", "mcp:read", NEXT_KEY, "workbook-next-key");
    let refused = ping(server.address, &rotated);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.header("WWW-Authenticate").unwrap().contains("unknown key"), "{refused:?}");
    assert_eq!(issuer_server.asked("/jwks"), 1, "fetched again within ten seconds");

    // Ten seconds on, the unknown key sends the server to fetch the keys again.
    thread::sleep(Duration::from_millis(10_500));
    let answer = ping(server.address, &rotated);
    assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.stderr());
    assert_eq!(issuer_server.asked("/jwks"), 2);
    // A made-up key right after: refused, and no fetch.
    let made_up = token(&issuer, "alice", "mcp:read", NEXT_KEY, "made-up");
    assert_eq!(ping(server.address, &made_up).status, 401);
    assert_eq!(issuer_server.asked("/jwks"), 2);
    assert_eq!(issuer_server.asked("/.well-known/oauth-authorization-server"), 1, "the jwks_uri is kept");
}

#[test]
fn metadata_that_names_another_issuer_is_not_trusted() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    // RFC 8414's address names someone else; OpenID Connect's, tried next, names the
    // right issuer, and its keys are used.
    issuer_server.serve(
        "/.well-known/oauth-authorization-server",
        &json!({ "issuer": "https://evil.example.com", "jwks_uri": format!("{issuer}/evil-jwks") }).to_string(),
    );
    issuer_server.serve(
        "/.well-known/openid-configuration",
        &json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/jwks") }).to_string(),
    );
    issuer_server.serve("/jwks", TEST_JWKS);
    issuer_server.serve("/evil-jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer]);
    let answer = ping(server.address, &token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key"));
    assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.stderr());
    assert_eq!(issuer_server.asked("/jwks"), 1);
    assert_eq!(issuer_server.asked("/evil-jwks"), 0);
}

#[test]
fn no_keys_is_503_not_a_bad_token() {
    // A port nothing listens on: the keys cannot be fetched.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let jwks_uri = format!("http://{closed}/jwks");
    let server = start(&["--authorization-server", "https://auth.example.com", "--jwks-uri", &jwks_uri]);
    let alice = token("https://auth.example.com", "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    // The first request tries the fetch; the second comes within ten seconds, when no
    // fetch is due: no keys is still no keys, never "an unknown key".
    for _ in 0..2 {
        let answer = ping(server.address, &alice);
        assert_eq!(answer.status, 503, "{}", answer.body);
        assert_eq!(answer.header("Retry-After"), Some("10"));
        assert_eq!(answer.header("WWW-Authenticate"), None, "not a challenge: the token may be fine");
    }
}

#[test]
fn the_rate_limit_counts_by_subject_not_by_address() {
    let server = start_with_test_keys(&["--max-calls-per-minute", "1"]);
    let alice = token("https://auth.example.com", "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    let bob = token("https://auth.example.com", "bob", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 200);
    assert_eq!(ping(server.address, &alice).status, 429, "alice's one call a minute is spent");
    assert_eq!(ping(server.address, &bob).status, 200, "bob, from the same address, has his own");
}

/// RFC 9068, section 5: an authorization server that writes a client's id as `sub` (client
/// credentials) and lets clients pick their ids lets a client take a user's `sub`. Its
/// calls must not spend that user's share.
#[test]
fn the_rate_limit_counts_by_subject_and_client() {
    let server = start_with_test_keys(&["--max-calls-per-minute", "1"]);
    let alice = token_of_client("alice", "workbook-client", "mcp:read");
    let client_named_alice = token_of_client("alice", "alice", "mcp:read");
    assert_eq!(ping(server.address, &client_named_alice).status, 200);
    assert_eq!(ping(server.address, &client_named_alice).status, 429, "its one call a minute is spent");
    assert_eq!(ping(server.address, &alice).status, 200, "alice, through her client, has her own");
}

/// The same client, with a `requestState` issued to the user whose `sub` it has: refused
/// as a state of another call, and the payroll does not run.
#[test]
fn a_request_state_is_its_callers_not_its_subjects() {
    let server = start_with_test_keys(&[]);
    let approve = |token: &str, extra: Value| {
        let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
        let mut params = json!({ "name": "approve_payroll", "_meta": meta });
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
        let authorization = format!("Bearer {token}");
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "approve_payroll"),
            ("Authorization", authorization.as_str()),
        ];
        let answer = replay::send(server.address, &request("POST", &headers, &body.to_string())).unwrap();
        serde_json::from_str::<Value>(&answer.body).unwrap()
    };
    let alice = token_of_client("alice", "workbook-client", "mcp:read payroll:run");
    let asked = approve(&alice, json!({}));
    let state = asked["result"]["requestState"].as_str().unwrap_or_else(|| panic!("no state in {asked}"));
    let yes = json!({ "requestState": state, "inputResponses": { "approval": { "action": "accept", "content": { "approve": true } } } });
    let client_named_alice = token_of_client("alice", "alice", "mcp:read payroll:run");
    let answer = approve(&client_named_alice, yes.clone());
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    // Alice's own retry still works: the state was refused, not used up.
    let answer = approve(&alice, yes);
    assert!(answer.pointer("/result/content/0/text").is_some(), "{answer}");
}

#[test]
fn a_sessions_stream_is_its_subjects() {
    let server = start_with_test_keys(&[]);
    let alice =
        format!("Bearer {}", token("https://auth.example.com", "alice", "mcp:read", TEST_KEY, "workbook-test-key"));
    let bob = format!("Bearer {}", token("https://auth.example.com", "bob", "mcp:read", TEST_KEY, "workbook-test-key"));
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "test", "version": "1" } } });
    let headers =
        [("Content-Type", "application/json"), ("Accept", "application/json"), ("Authorization", alice.as_str())];
    let opened = replay::send(server.address, &request("POST", &headers, &initialize.to_string())).unwrap();
    let session = opened.header("Mcp-Session-Id").expect("a session opens").to_string();
    let get = |authorization: &str| {
        let headers =
            [("Accept", "text/event-stream"), ("Mcp-Session-Id", session.as_str()), ("Authorization", authorization)];
        let mut stream = replay::open(server.address, &request("GET", &headers, "")).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = String::new();
        let _ = BufReader::new(&mut stream).read_line(&mut head);
        head
    };
    assert!(get(&bob).starts_with("HTTP/1.1 404"), "another subject's GET");
    assert!(get(&alice).starts_with("HTTP/1.1 200"), "the owner's GET");
}

#[test]
fn a_stream_ends_when_its_token_expires() {
    let server = start_with_test_keys(&["--clock-skew-secs", "0"]);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    // With `payroll:run`: what listening to the last run needs.
    let scope = "mcp:read payroll:run";
    let brief = token_until("https://auth.example.com", "alice", scope, TEST_KEY, "workbook-test-key", now + 3);
    let authorization = format!("Bearer {brief}");
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    let listen = json!({ "jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": { "_meta": meta, "notifications": { "resourceSubscriptions": ["payroll://last-run"] } } });
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "subscriptions/listen"),
        ("Authorization", authorization.as_str()),
    ];
    let started = Instant::now();
    let mut stream = replay::open(server.address, &request("POST", &headers, &listen.to_string())).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    // Acknowledged, then ended with its result once the token's three seconds were up,
    // not after MAX_STREAM_TIME's five minutes.
    assert!(answer.contains("notifications/subscriptions/acknowledged"), "{answer}");
    assert!(answer.contains(r#""resultType":"complete""#), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(10), "the stream lasted {:?}", started.elapsed());
}

#[test]
fn the_flags_refuse_what_would_not_protect() {
    // Over stdio the host is the caller: authorization flags there are a mistake to say.
    let output = Command::new(BINARY)
        .args(["--stdio", "--authorization-server", "https://auth.example.com", "--resource", RESOURCE])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"), "{output:?}");
    // Keys fetched over plain http from another machine could be swapped on the way.
    let output = Command::new(BINARY)
        .args(["--bind", "127.0.0.1:0", "--authorization-server", "http://auth.example.com", "--resource", RESOURCE])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("must be an https URL"), "{output:?}");
}

/// How long a request waits, at most, for a fetch of the keys it started (the page's
/// bound is one second; the rest is slack for a busy machine).
const WAIT_BOUND: Duration = Duration::from_millis(1_500);

#[test]
fn a_slow_key_endpoint_stalls_no_one() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    let jwks_uri = format!("{issuer}/jwks");
    issuer_server.serve("/jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer, "--jwks-uri", &jwks_uri, "--workers", "2"]);
    let holder = |n: usize| token(&issuer, &format!("user-{n}"), "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &holder(0)).status, 200, "{}", server.stderr());

    // The key endpoint turns slow: four seconds an answer. Ten seconds on, a key not held
    // may send the server to fetch again.
    issuer_server.slow("/jwks", Duration::from_secs(4));
    thread::sleep(Duration::from_millis(10_500));
    // A handful of tokens with made-up `kid`s, all at once: no valid signature needed.
    let strangers: Vec<_> = (0..6)
        .map(|n| {
            let (address, made_up) =
                (server.address, token(&issuer, "mallory", "mcp:read", NEXT_KEY, &format!("made-up-{n}")));
            thread::spawn(move || {
                let sent = Instant::now();
                (ping(address, &made_up).status, sent.elapsed())
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(200));
    // Meanwhile, tokens whose key is held (each a new one) are answered at once.
    for n in 1..=5 {
        let sent = Instant::now();
        let answer = ping(server.address, &holder(n));
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(sent.elapsed() < Duration::from_millis(500), "a token whose key is held waited {:?}", sent.elapsed());
    }
    // And no stranger held a worker longer than the bound: each got its refusal.
    for stranger in strangers {
        let (status, took) = stranger.join().unwrap();
        assert!(status == 401 || status == 503, "{status}");
        assert!(took < WAIT_BOUND, "a token with a made-up key waited {took:?}");
    }
    assert_eq!(issuer_server.asked("/jwks"), 2, "one fetch for them all");
}

#[test]
fn a_document_that_is_not_a_jwk_set_keeps_the_keys() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    let jwks_uri = format!("{issuer}/jwks");
    issuer_server.serve("/jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer, "--jwks-uri", &jwks_uri]);
    let alice = token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 200, "{}", server.stderr());

    // The key endpoint answers JSON that is not a JWK Set (RFC 7517, section 5: it "MUST
    // have a "keys" member"). Ten seconds on, a key not held sends the server to fetch.
    issuer_server.serve("/jwks", r#"{"error": "down for maintenance"}"#);
    thread::sleep(Duration::from_millis(10_500));
    let rotated = token(&issuer, "carol", "mcp:read", NEXT_KEY, "workbook-next-key");
    let unchecked = ping(server.address, &rotated);
    assert_eq!(issuer_server.asked("/jwks"), 2);
    // That fetch failed: the keys held are kept, and a token signed with a key held is
    // still taken.
    let bob = token(&issuer, "bob", "mcp:read", TEST_KEY, "workbook-test-key");
    let answer = ping(server.address, &bob);
    assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.stderr());
    // A key not held may be one the authorization server has rotated in since the last
    // fetch that worked: the token may be fine, so `503`, not a `401` that would send the
    // client for a new token signed with the same new key.
    assert_eq!(unchecked.status, 503, "{}", unchecked.body);
    assert_eq!(unchecked.header("Retry-After"), Some("10"));
    assert_eq!(unchecked.header("WWW-Authenticate"), None, "not a challenge: the token may be fine");

    // The endpoint serves the keys again (the new one among them). Ten seconds on, the
    // next fetch works: the rotated key is taken, and a key it did not bring is unknown.
    let mut both: Value = serde_json::from_str(TEST_JWKS).unwrap();
    let next: Value = serde_json::from_str(NEXT_JWKS).unwrap();
    both["keys"].as_array_mut().unwrap().push(next["keys"][0].clone());
    issuer_server.serve("/jwks", &both.to_string());
    thread::sleep(Duration::from_millis(10_500));
    let answer = ping(server.address, &rotated);
    assert_eq!(answer.status, 200, "{}\n{}", answer.body, server.stderr());
    assert_eq!(issuer_server.asked("/jwks"), 3);
    let made_up = token(&issuer, "mallory", "mcp:read", NEXT_KEY, "made-up");
    let refused = ping(server.address, &made_up);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.header("WWW-Authenticate").unwrap().contains("unknown key"), "{refused:?}");
}

/// The claims of a token the server takes, for `sub` alice.
fn good_claims() -> Value {
    json!({ "iss": "https://auth.example.com", "sub": "alice", "aud": RESOURCE, "exp": 4_102_444_800u64, "scope": "mcp:read" })
}

#[test]
fn a_critical_header_extension_is_refused() {
    let server = start_with_test_keys(&[]);
    assert_eq!(ping(server.address, &signed(good_claims(), |_| ())).status, 200);
    // RFC 7515, section 4.1.11: a recipient that does not understand every name in
    // `crit` must take the JWS as invalid. This server understands none.
    for crit in [vec!["https://example.com/must-understand"], vec!["exp"], vec![]] {
        let token = signed(good_claims(), |header| {
            header.crit = Some(crit.iter().map(|name| name.to_string()).collect());
            header.extras.insert("https://example.com/must-understand", true);
        });
        let refused = ping(server.address, &token);
        assert_eq!(refused.status, 401, "crit {crit:?}: {}", refused.body);
        assert!(refused.header("WWW-Authenticate").unwrap().contains("invalid_token"), "{refused:?}");
    }
}

#[test]
fn iss_is_a_string_equal_to_the_issuer() {
    let server = start_with_test_keys(&[]);
    // RFC 7519, section 4.1.1: `iss` is a string; RFC 9068, section 4: it must match the
    // issuer exactly. An array that holds the issuer is neither.
    for iss in [json!(["https://auth.example.com"]), json!(["https://auth.example.com", "https://evil.example.com"])] {
        let mut claims = good_claims();
        claims["iss"] = iss.clone();
        let refused = ping(server.address, &signed(claims, |_| ()));
        assert_eq!(refused.status, 401, "iss {iss}: {}", refused.body);
        assert!(refused.header("WWW-Authenticate").unwrap().contains("invalid_token"), "{refused:?}");
    }
}

/// RFC 7519, section 2: `exp` is a NumericDate, a JSON number of seconds that may have a
/// fraction (some authorization servers write one). Any number from 0 up is taken; a
/// token without one, or with another type, is refused, and the refusal says so.
#[test]
fn exp_is_any_number_from_zero_up() {
    let server = start_with_test_keys(&[]);
    let with_exp = |exp: Option<Value>| {
        let mut claims = good_claims();
        match exp {
            Some(exp) => claims["exp"] = exp,
            None => {
                claims.as_object_mut().unwrap().remove("exp");
            }
        }
        ping(server.address, &signed(claims, |_| ()))
    };
    let answer = with_exp(Some(json!(4_102_444_800.5)));
    assert_eq!(answer.status, 200, "a fractional exp: {}", answer.body);
    let expired = with_exp(Some(json!(1.5)));
    assert_eq!(expired.status, 401, "{}", expired.body);
    assert!(expired.header("WWW-Authenticate").unwrap().contains("expired"), "{expired:?}");
    for exp in [None, Some(json!("4102444800")), Some(json!(-1)), Some(json!(-0.5)), Some(json!(1e300))] {
        let refused = with_exp(exp.clone());
        assert_eq!(refused.status, 401, "exp {exp:?}: {}", refused.body);
        let challenge = refused.header("WWW-Authenticate").unwrap();
        assert!(challenge.contains("wrong type (iss, sub, exp, scope, client_id, azp)"), "exp {exp:?}: {challenge}");
    }
}

#[test]
fn redirects_are_not_followed() {
    // The keys' address, and then the metadata's, answer with a redirect. A redirect
    // could lead to plain `http` on another machine, where keys can be swapped on the
    // way: neither is followed, and with no keys the token cannot be checked.
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    issuer_server.serve("/moved-jwks", TEST_JWKS);
    issuer_server.redirect("/jwks", &format!("{issuer}/moved-jwks"));
    let jwks_uri = format!("{issuer}/jwks");
    let server = start(&["--authorization-server", &issuer, "--jwks-uri", &jwks_uri]);
    let alice = token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 503);
    assert_eq!((issuer_server.asked("/jwks"), issuer_server.asked("/moved-jwks")), (1, 0));

    let metadata = json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/moved-jwks") }).to_string();
    issuer_server.serve("/moved-metadata", &metadata);
    issuer_server.redirect("/.well-known/oauth-authorization-server", &format!("{issuer}/moved-metadata"));
    let server = start(&["--authorization-server", &issuer]);
    assert_eq!(ping(server.address, &alice).status, 503);
    assert_eq!(issuer_server.asked("/.well-known/oauth-authorization-server"), 1);
    assert_eq!((issuer_server.asked("/moved-metadata"), issuer_server.asked("/moved-jwks")), (0, 0));
}

#[test]
fn a_remembered_token_still_expires_and_still_needs_its_scopes() {
    let server = start_with_test_keys(&["--clock-skew-secs", "0"]);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let brief = token_until("https://auth.example.com", "alice", "mcp:read", TEST_KEY, "workbook-test-key", now + 3);
    // Verified once, then remembered: the second request is answered from the record...
    assert_eq!(ping(server.address, &brief).status, 200);
    assert_eq!(ping(server.address, &brief).status, 200);
    // ... which says who is calling, not what this request may do: the payroll needs a
    // scope this token does not grant.
    let refused = call(server.address, &brief, "run_payroll");
    assert_eq!(refused.status, 403, "{}", refused.body);
    // And once `exp` has passed, the token is expired, remembered or not.
    thread::sleep(Duration::from_secs(now + 4).saturating_sub(SystemTime::now().duration_since(UNIX_EPOCH).unwrap()));
    let expired = ping(server.address, &brief);
    assert_eq!(expired.status, 401, "{}", expired.body);
    assert!(expired.header("WWW-Authenticate").unwrap().contains("expired"), "{expired:?}");
}

/// The record knows a token by its digest: a token that differs from a remembered one
/// in one byte (here the signature's first character) is not it, and is checked in full.
#[test]
fn a_token_one_byte_off_a_remembered_one_is_checked_in_full() {
    let server = start_with_test_keys(&[]);
    let alice = token("https://auth.example.com", "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 200);
    assert_eq!(ping(server.address, &alice).status, 200, "remembered");
    let signature_at = alice.rfind('.').unwrap() + 1;
    let first = alice.as_bytes()[signature_at];
    let other = if first == b'A' { "B" } else { "A" };
    let forged = format!("{}{other}{}", &alice[..signature_at], &alice[signature_at + 1..]);
    let refused = ping(server.address, &forged);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.header("WWW-Authenticate").unwrap().contains("invalid_token"), "{refused:?}");
}

#[test]
fn a_remembered_token_is_checked_again_when_the_keys_change() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    let jwks_uri = format!("{issuer}/jwks");
    issuer_server.serve("/jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer, "--jwks-uri", &jwks_uri]);
    let alice = token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 200, "{}", server.stderr());
    assert_eq!(ping(server.address, &alice).status, 200, "remembered");

    // The authorization server withdraws its key for a new one. Ten seconds on, a token
    // signed with the new key has the server fetch the keys again.
    issuer_server.serve("/jwks", NEXT_JWKS);
    thread::sleep(Duration::from_millis(10_500));
    let bob = token(&issuer, "bob", "mcp:read", NEXT_KEY, "workbook-next-key");
    assert_eq!(ping(server.address, &bob).status, 200, "{}", server.stderr());
    // Alice's token was verified with a key no longer published: it is checked again,
    // and refused.
    let refused = ping(server.address, &alice);
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(refused.header("WWW-Authenticate").unwrap().contains("unknown key"), "{refused:?}");
}

/// Only a remembered token is sent, across the keys' maximum age (shortened here from an
/// hour to two seconds): the record answers it without looking up a key, and the keys
/// must be fetched again all the same, or a key withdrawn would work here until `exp`.
#[test]
fn a_remembered_token_alone_still_has_the_keys_refreshed() {
    let issuer_server = Documents::start();
    let issuer = issuer_server.issuer();
    let jwks_uri = format!("{issuer}/jwks");
    issuer_server.serve("/jwks", TEST_JWKS);
    let server = start(&["--authorization-server", &issuer, "--jwks-uri", &jwks_uri, "--keys-max-age-secs", "2"]);
    let alice = token(&issuer, "alice", "mcp:read", TEST_KEY, "workbook-test-key");
    assert_eq!(ping(server.address, &alice).status, 200, "{}", server.stderr());
    assert_eq!(ping(server.address, &alice).status, 200, "remembered");
    assert_eq!(issuer_server.asked("/jwks"), 1);

    // The authorization server withdraws the key. Once the keys held are older than their
    // maximum age, Alice's remembered token starts their refresh (and is answered with
    // the keys held, as any request is while a refresh runs); once the refresh is in,
    // her token is refused.
    issuer_server.serve("/jwks", NEXT_JWKS);
    thread::sleep(Duration::from_millis(2_500));
    let deadline = Instant::now() + Duration::from_secs(5);
    let refused = loop {
        let answer = ping(server.address, &alice);
        if answer.status != 200 || Instant::now() > deadline {
            break answer;
        }
        thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(refused.status, 401, "a withdrawn key still works: {}", refused.body);
    assert!(refused.header("WWW-Authenticate").unwrap().contains("unknown key"), "{refused:?}");
    assert_eq!(issuer_server.asked("/jwks"), 2, "one refresh");
}
