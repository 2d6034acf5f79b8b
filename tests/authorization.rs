//! Chapter 18's authorization where a transcript cannot go. The transcript runs one
//! server with its keys in a file; here:
//! - the keys come over HTTP from a small authorization server of the test's own, found
//!   through its metadata (RFC 8414, then OpenID Connect's address), fetched once, and
//!   fetched again when a token names a key the server does not hold, but not sooner
//!   than ten seconds after the last fetch;
//! - metadata that names another issuer is not trusted, and no keys at all is `503`,
//!   not a `401` that would make the client throw its token away;
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

fn sign(claims: &Value, pem: &[u8], kid: &str) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some("at+jwt".into());
    header.kid = Some(kid.into());
    encode(&header, claims, &EncodingKey::from_ec_pem(pem).unwrap()).unwrap()
}

/// A tiny authorization server: it answers the paths it was given with their JSON,
/// `404` otherwise, and counts the requests for each path. The workbook's HTTP base
/// serves it, in this process.
#[derive(Clone)]
struct Documents {
    address: SocketAddr,
    served: Arc<Mutex<HashMap<String, String>>>,
    asked: Arc<Mutex<HashMap<String, usize>>>,
}

impl Documents {
    fn start() -> Documents {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let documents =
            Documents { address: listener.local_addr().unwrap(), served: Arc::default(), asked: Arc::default() };
        let server = documents.clone();
        thread::spawn(move || {
            http::serve_listener(listener, http::Config::default(), move |request| {
                *server.asked.lock().unwrap().entry(request.path.clone()).or_default() += 1;
                match server.served.lock().unwrap().get(&request.path) {
                    Some(body) => http::Response::json(200, body.clone()),
                    None => http::Response::empty(404),
                }
            })
        });
        documents
    }

    fn issuer(&self) -> String {
        format!("http://{}", self.address)
    }

    fn serve(&self, path: &str, body: &str) {
        self.served.lock().unwrap().insert(path.into(), body.into());
    }

    fn asked(&self, path: &str) -> usize {
        self.asked.lock().unwrap().get(path).copied().unwrap_or(0)
    }
}

/// The chapter's server, the protected resource `RESOURCE`, with `args`.
fn start(args: &[&str]) -> RunningServer {
    common::start(BINARY, &[&["--resource", RESOURCE], args].concat())
}

/// A `tools/call` of `PingME` with `token`.
fn ping(address: SocketAddr, token: &str) -> HttpResponse {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "PingME" } });
    let authorization = format!("Bearer {token}");
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("Authorization", authorization.as_str()),
    ];
    replay::send(address, &request("POST", &headers, &body.to_string())).expect("the call is answered")
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
    let server = start(&[
        "--authorization-server",
        "https://auth.example.com",
        "--jwks-file",
        "tests/keys/jwks.json",
        "--max-calls-per-minute",
        "1",
    ]);
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
    let server = start(&[
        "--authorization-server",
        "https://auth.example.com",
        "--jwks-file",
        "tests/keys/jwks.json",
        "--max-calls-per-minute",
        "1",
    ]);
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
    let server = start(&["--authorization-server", "https://auth.example.com", "--jwks-file", "tests/keys/jwks.json"]);
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
    let server = start(&["--authorization-server", "https://auth.example.com", "--jwks-file", "tests/keys/jwks.json"]);
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
    let server = start(&[
        "--authorization-server",
        "https://auth.example.com",
        "--jwks-file",
        "tests/keys/jwks.json",
        "--clock-skew-secs",
        "0",
    ]);
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
