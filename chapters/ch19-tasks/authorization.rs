//! Chapter 18: authorization. Over HTTP, with `--authorization-server`, the server is an
//! OAuth 2.1 resource server (`2025-11-25/basic/authorization.mdx`): every request to
//! `/mcp` carries an access token that an authorization server issued for this server,
//! and the token's subject, with the client it was issued to, is who is calling. This
//! file is the whole of it:
//! - the Protected Resource Metadata (RFC 9728), which tells a client where to get a
//!   token, at `/.well-known/oauth-protected-resource` (with and without `/mcp`);
//! - `Authorization::caller`: the token checked (a JWT access token, RFC 9068, signed
//!   with a key the authorization server publishes), or the `401` that says why not;
//! - `Authorization::check_scopes`: the scopes a request needs, or the `403` that names them;
//! - `Keys`: the authorization server's signing keys, fetched, kept, and fetched again.
//!
//! The cryptography is not written here: `jsonwebtoken` checks signatures and the time
//! claims, `ureq` fetches the keys. Over stdio there is no token: the host that started
//! the process is the caller, and its credentials come from the environment.

use std::collections::HashMap;
use std::net::IpAddr;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation, decode, decode_header, errors::ErrorKind, get_current_timestamp,
};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::guard::{LOOPBACK_NAMES, bearer_token, host_name};
use crate::http::{Request, Response};
use crate::jsonrpc::{Message, RpcError, echo, refusal, reply};
use crate::mcp::{ServerInfo, lock};
use crate::subscriptions::MAX_STREAM_TIME;

// ANCHOR: flags
/// The flags that turn authorization on (HTTP only).
#[derive(clap::Args)]
pub struct AuthorizationFlags {
    /// Accept only access tokens from this OAuth 2.1 authorization server (its issuer
    /// URL, e.g. https://auth.example.com): every request must carry one, issued for
    /// `--resource`. Without it the server asks for no token (or only `--token`'s).
    #[arg(long, value_name = "ISSUER", requires = "resource", conflicts_with = "token")]
    pub authorization_server: Option<String>,
    /// This server's canonical URI, as clients reach it (e.g.
    /// https://mcp.example.com/mcp): the audience its tokens must be issued for.
    #[arg(long, value_name = "URL", requires = "authorization_server")]
    pub resource: Option<String>,
    /// Where the authorization server publishes its signing keys (a JWK Set) [default:
    /// the `jwks_uri` of its metadata, read from its well-known address].
    #[arg(long, value_name = "URL", requires = "authorization_server")]
    pub jwks_uri: Option<String>,
    /// Read the signing keys from this file instead (a JWK Set), read again when a token
    /// names a key it does not hold: for tests, and for servers that may not fetch.
    #[arg(long, value_name = "PATH", requires = "authorization_server", conflicts_with = "jwks_uri")]
    pub jwks_file: Option<PathBuf>,
    /// How far the clocks of this server and the authorization server may disagree, in
    /// seconds, when checking a token's `exp` and `nbf`.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    pub clock_skew_secs: u64,
    /// For tests: how old the keys may grow before they are fetched again, in seconds
    /// (`KEYS_MAX_AGE` unless given), so that a test can see the refresh.
    #[arg(long, value_name = "SECS", hide = true, requires = "authorization_server")]
    pub keys_max_age_secs: Option<u64>,
}
// ANCHOR_END: flags

/// The scope every request needs: to use this server at all.
pub const READ_SCOPE: &str = "mcp:read";

/// The scopes of this server, as YOUR TOOLS and YOUR RESOURCES name them (`main` hands
/// them down): those every user needs, which the metadata lists, and those each tool and
/// each resource needs besides.
#[derive(Clone, Copy)]
pub struct Scopes {
    pub basic: &'static [&'static str],
    /// By a tool's name or a resource's URI: what calling the tool needs besides, or
    /// reading the resource, subscribing to it and listening for its changes.
    pub needed_by: fn(&str) -> &'static [&'static str],
}

// ANCHOR: authorization
/// This server as a resource server: whose tokens it takes, and for which audience.
pub struct Authorization {
    /// The authorization server's issuer identifier: every token's `iss`, exactly.
    issuer: String,
    /// This server's canonical URI: every token's `aud` holds it (RFC 8707).
    resource: String,
    /// Where a client finds this server's metadata, for the challenges' `resource_metadata`.
    metadata_url: String,
    keys: Keys,
    /// Tokens already verified, so that a client's next request with the same token
    /// costs no signature check.
    verified: Verified,
    clock_skew_secs: u64,
    /// The scopes, as YOUR TOOLS and YOUR RESOURCES name them.
    scopes: Scopes,
    /// Who this server is: the metadata's `resource_name`.
    info: &'static ServerInfo,
}

/// Who is calling, and what they may do.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's subject (`sub`); `None` when the server asks for no token.
    subject: Option<String>,
    /// The client the token was issued to: its `client_id` (RFC 9068, section 2.2), or
    /// else OpenID Connect's `azp`; `None` when the token names none.
    client: Option<String>,
    /// The scopes the token grants; `None` when the server asks for no token (all).
    scopes: Option<Vec<String>>,
    /// Where the request came from, when no token says who sent it.
    address: Option<IpAddr>,
    /// When the token expires (`exp`, seconds since 1970); `None` without a token.
    expires: Option<u64>,
}

impl Caller {
    /// A caller of a server that asks for no token: known by its address alone.
    pub fn anonymous(address: IpAddr) -> Caller {
        Caller { subject: None, client: None, scopes: None, address: Some(address), expires: None }
    }

    /// The host that started the process, over stdio.
    pub fn stdio() -> Caller {
        Caller { subject: None, client: None, scopes: None, address: None, expires: None }
    }

    /// Who is calling, as the sessions, the `requestState` and the rate limit tell callers
    /// apart: the token's subject and the client it was issued to, together (as JSON, so
    /// that no two pairs read the same); `None` when the server asks for no token. Not
    /// the subject alone: an authorization server may write a client's own id as `sub`
    /// (client credentials), and a client that picks its id could pick a user's (RFC
    /// 9068, section 5).
    pub fn identity(&self) -> Option<String> {
        let subject = self.subject.as_ref()?;
        Some(json!({ "sub": subject, "client": self.client }).to_string())
    }

    /// Who the tool rate limit counts by: the caller's `identity`, who may call from many
    /// addresses; with no token, the address, the best a server without sign-in knows.
    pub fn rate_key(&self) -> String {
        match (self.identity(), self.address) {
            (Some(identity), _) => identity,
            (None, Some(address)) => address.to_string(),
            (None, None) => "stdio".to_string(),
        }
    }

    /// Whether the caller's token grants every scope in `needed`; always, when the server
    /// asks for no token. The one rule of what a token may do: `check_scopes` asks it of
    /// each request, and `tools/list` and `resources/list` of each entry they would show
    /// (router.rs), so a list shows a caller only what it may call and read.
    pub fn grants(&self, needed: &[&str]) -> bool {
        let Some(granted) = &self.scopes else { return true };
        needed.iter().all(|scope| granted.iter().any(|g| g == scope))
    }

    /// Whether what this caller is shown depends on its token: with authorization, yes.
    pub fn has_token(&self) -> bool {
        self.scopes.is_some()
    }

    /// How long a stream this caller opens may last: `MAX_STREAM_TIME`, or until its
    /// token expires, if that is sooner. A stream is one request, checked once; without
    /// this, a token that expired (or was revoked, and so not renewed) would still hear
    /// everything the stream tells, for minutes.
    pub fn stream_time(&self) -> Duration {
        // The clock `jsonwebtoken` checked `exp` against.
        let left = self.expires.map(|exp| Duration::from_secs(exp.saturating_sub(get_current_timestamp())));
        left.map_or(MAX_STREAM_TIME, |left| left.min(MAX_STREAM_TIME))
    }
}
// ANCHOR_END: authorization

impl Authorization {
    /// From the flags, with the scopes and the name of this server: `None` when
    /// `--authorization-server` is not given.
    pub fn from_flags(
        flags: &AuthorizationFlags,
        scopes: Scopes,
        info: &'static ServerInfo,
    ) -> Result<Option<Authorization>, String> {
        let (Some(issuer), Some(resource)) = (&flags.authorization_server, &flags.resource) else {
            return Ok(None);
        };
        for url in [Some(issuer), Some(resource), flags.jwks_uri.as_ref()].into_iter().flatten() {
            if !is_https_or_loopback(url) {
                return Err(format!("{url} must be an https URL (http only on this machine's loopback)"));
            }
        }
        // RFC 8707, section 2: a resource indicator has no fragment (and this server's,
        // no query either: a client would have to guess whether to send it).
        if resource.contains(['#', '?']) {
            return Err(format!("--resource {resource} must have no query or fragment"));
        }
        let source = match (&flags.jwks_file, &flags.jwks_uri) {
            (Some(path), _) => KeySource::File(path.clone()),
            (None, Some(uri)) => KeySource::Uri(uri.clone()),
            (None, None) => KeySource::Discover(issuer.clone()),
        };
        Ok(Some(Authorization {
            issuer: issuer.clone(),
            metadata_url: metadata_url(resource).ok_or_else(|| format!("{resource} is not an absolute URL"))?,
            resource: resource.clone(),
            keys: Keys::new(source, flags.keys_max_age_secs.map_or(KEYS_MAX_AGE, Duration::from_secs)),
            verified: Verified::default(),
            clock_skew_secs: flags.clock_skew_secs,
            scopes,
            info,
        }))
    }

    // ANCHOR: metadata
    /// The Protected Resource Metadata (RFC 9728, section 3), when `request` asks for it.
    /// It is public: it is how a client that holds no token learns where to get one. It
    /// is served at the address RFC 9728 derives from the resource (the well-known path,
    /// then `/mcp`) and, for clients that try it, at the root (`2025-11-25/basic/
    /// authorization.mdx`, Protected Resource Metadata Discovery Requirements).
    pub fn metadata(&self, request: &Request) -> Option<Response> {
        let suffixed = format!("{WELL_KNOWN}{}", split_url(&self.resource).1);
        if request.path != suffixed && request.path != WELL_KNOWN {
            return None;
        }
        if request.method != "GET" {
            return Some(Response::empty(405).with_header("Allow", "GET"));
        }
        let document = json!({
            "resource": self.resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes.basic,
            "bearer_methods_supported": ["header"],
            "resource_name": self.info.name,
        });
        let body = serde_json::to_vec_pretty(&document).expect("a JSON value serializes");
        Some(Response::empty(200).with_header("Content-Type", "application/json").with_body(body))
    }
    // ANCHOR_END: metadata

    // ANCHOR: caller
    /// Who sent `request`: the subject of a valid access token, or the `401` that tells
    /// the client where to get one and, for a token it did send, why that one is refused.
    pub fn caller(&self, request: &Request) -> Result<Caller, Response> {
        // RFC 6750, section 3.1: a request with no token gets a bare challenge; one whose
        // token is refused also gets `error="invalid_token"`, and why.
        let Some(token) = bearer_token(request) else {
            return Err(self.challenge(401, None, &[READ_SCOPE], Value::Null));
        };
        match self.validate(token) {
            Ok(caller) => Ok(caller),
            Err(Invalid::Token(why)) => {
                Err(self.challenge(401, Some(("invalid_token", &why)), &[READ_SCOPE], Value::Null))
            }
            Err(Invalid::KeysUnavailable) => Err(keys_unavailable()),
        }
    }
    // ANCHOR_END: caller

    // ANCHOR: validate
    /// Check an access token as RFC 9068 (section 4) asks of a resource server: a JWT
    /// of type `at+jwt`, signed by the authorization server with a key it publishes,
    /// from that issuer, for this server as its audience, not expired and already
    /// valid, naming a subject. Anything else is refused, and never passed on.
    fn validate(&self, token: &str) -> Result<Caller, Invalid> {
        // A token verified before, with the keys held now, and not yet expired: who it names.
        // The record answers without `Keys::find`, so the keys' hourly refresh starts here
        // too: else, with every token in use remembered, a key withdrawn would work on.
        let keys_version = self.keys.version();
        if let Some(caller) = self.verified.get(token, keys_version) {
            self.keys.refresh_if_old();
            return Ok(caller);
        }
        let header = decode_header(token).map_err(|_| Invalid::token("the token is not a JWT"))?;
        // RFC 7515, section 4.1.11: a token whose `crit` names an extension the server
        // does not understand "is invalid". This server understands none.
        if header.crit.is_some() {
            return Err(Invalid::token("the token names critical header extensions this server does not support"));
        }
        // An access token, not an ID token, which tells the client who the user is.
        let typ = header.typ.as_deref().unwrap_or_default().to_ascii_lowercase();
        if typ != "at+jwt" && typ != "application/at+jwt" {
            return Err(Invalid::token("the token is not a JWT access token (`typ` must be `at+jwt`)"));
        }
        // Only the issuer's public-key algorithms: an `HS256` token would be checked
        // with a public key as its secret, which anyone can read.
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Invalid::token("the token is not signed with an algorithm this server accepts"));
        }
        let key = self.keys.find(header.kid.as_deref(), header.alg)?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["iss", "aud", "exp", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = self.clock_skew_secs;
        let claims = decode::<Claims>(token, &key, &validation).map_err(|error| match error.kind() {
            ErrorKind::ExpiredSignature => Invalid::token("the token has expired"),
            ErrorKind::ImmatureSignature => Invalid::token("the token is not valid yet"),
            ErrorKind::InvalidIssuer => Invalid::token("the token was issued by another authorization server"),
            ErrorKind::InvalidAudience => Invalid::token("the token was issued for another resource"),
            ErrorKind::InvalidSignature => Invalid::token("the token's signature is not valid"),
            ErrorKind::MissingRequiredClaim(claim) => Invalid::token(&format!("the token has no `{claim}`")),
            // At most 80 characters, as every description: `quoted` cuts a longer one with
            // an ellipsis, which a header cannot carry (the base would answer 500).
            ErrorKind::Json(_) => {
                Invalid::token("a claim is missing or has the wrong type (iss, sub, exp, scope, client_id, azp)")
            }
            _ => Invalid::token("the token is not valid"),
        })?;
        let claims = claims.claims;
        // RFC 9068, section 2.2.3: `scope` is a space-separated list, like OAuth's.
        let scopes = claims.scope.unwrap_or_default().split_whitespace().map(str::to_string).collect();
        let client = claims.client_id.or(claims.azp);
        let caller = Caller {
            subject: Some(claims.sub),
            client,
            scopes: Some(scopes),
            address: None,
            expires: Some(claims.exp),
        };
        self.verified.insert(token, &caller, keys_version);
        Ok(caller)
    }
    // ANCHOR_END: validate

    // ANCHOR: challenge
    /// A refusal with the challenge RFC 6750 (section 3) and RFC 9728 (section 5.1)
    /// define: `Bearer`, with `resource_metadata`, where a client learns which
    /// authorization server to ask, and the `scope` the request needs; then, for a
    /// token that was sent, the `error` code and why. The body says the same to a
    /// client that shows JSON-RPC errors, with the request's `id` once it was read.
    fn challenge(&self, status: u16, error: Option<(&str, &str)>, scopes: &[&str], id: Value) -> Response {
        let mut parameters = Vec::new();
        if let Some((code, description)) = error {
            parameters.push(format!("error=\"{code}\""));
            parameters.push(format!("error_description=\"{}\"", quoted(description)));
        }
        parameters.push(format!("resource_metadata=\"{}\"", self.metadata_url));
        parameters.push(format!("scope=\"{}\"", scopes.join(" ")));
        let message = match error {
            None => "Unauthorized: send `Authorization: Bearer <access token>`".to_string(),
            Some((_, description)) => format!("{}: {description}", status_word(status)),
        };
        reply(status, id, Err(RpcError { code: -32600, message, data: None }))
            .with_header("WWW-Authenticate", &format!("Bearer {}", parameters.join(", ")))
    }
    // ANCHOR_END: challenge

    // ANCHOR: may
    /// Whether `caller` may send `message`: `Ok`, or the `403` `insufficient_scope`
    /// challenge that names every scope the request needs, all at once, so that one
    /// new token is enough (`2026-07-28/basic/authorization/index.mdx`, Scope Challenge
    /// Handling). Granted scopes do not imply one another here: there is no hierarchy.
    /// `message` is `None` for a GET or a DELETE, which carry none.
    pub fn check_scopes(&self, caller: &Caller, message: Option<&Message>) -> Result<(), Response> {
        let needed = scopes_needed(message, self.scopes.needed_by);
        if caller.grants(&needed) {
            return Ok(());
        }
        let description = format!("this request needs the scopes {}", needed.join(" "));
        let id = message.map_or(Value::Null, Message::id);
        Err(self.challenge(403, Some(("insufficient_scope", &description)), &needed, id))
    }
    // ANCHOR_END: may
}

// ANCHOR: scopes_needed
/// The scopes a message needs: `mcp:read`, and what YOUR TOOLS and YOUR RESOURCES say
/// (`needed_by`, `main.rs`'s `scopes_for`) the names it holds need besides: the tool a
/// `tools/call` calls, and every resource a request would show, or tell of a change to,
/// by its URI: `resources/read`, `resources/subscribe`, and each URI a
/// `subscriptions/listen` names.
fn scopes_needed(message: Option<&Message>, needed_by: fn(&str) -> &'static [&'static str]) -> Vec<&'static str> {
    let mut needed = vec![READ_SCOPE];
    let Some(Message::Request { method, params: Some(params), .. }) = message else {
        return needed;
    };
    let names: Vec<&Value> = match method.as_str() {
        "tools/call" => params.get("name").into_iter().collect(),
        "resources/read" | "resources/subscribe" => params.get("uri").into_iter().collect(),
        "subscriptions/listen" => {
            let uris = params.pointer("/notifications/resourceSubscriptions").and_then(Value::as_array);
            uris.into_iter().flatten().collect()
        }
        _ => Vec::new(),
    };
    for scope in names.into_iter().filter_map(Value::as_str).flat_map(needed_by) {
        if !needed.contains(scope) {
            needed.push(scope);
        }
    }
    needed
}
// ANCHOR_END: scopes_needed

/// The claims this server reads from an access token; `jsonwebtoken` checks the rest.
#[derive(Deserialize)]
struct Claims {
    /// Read only to hold it to a string (RFC 7519, section 4.1.1): `jsonwebtoken`, which
    /// checks that it is the issuer, would also take an array that holds the issuer.
    #[allow(dead_code)]
    iss: String,
    sub: String,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    #[serde(deserialize_with = "numeric_date")]
    exp: u64,
}

/// A NumericDate (RFC 7519, section 2), as `exp` is: a JSON number of seconds since
/// 1970, "non-integer values" included, which some authorization servers write. Any
/// number from 0 up, as `jsonwebtoken` takes it for its own check of `exp`; rounded
/// down here, so that the record of verified tokens never takes a token past its `exp`.
fn numeric_date<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let number = serde_json::Number::deserialize(deserializer)?;
    match (number.as_u64(), number.as_f64()) {
        (Some(whole), _) => Ok(whole),
        // `as` drops the fraction: for a number from 0 up, that rounds it down.
        (None, Some(seconds)) if (0.0..u64::MAX as f64).contains(&seconds) => Ok(seconds as u64),
        _ => Err(serde::de::Error::custom("not a NumericDate")),
    }
}

/// The answer when the keys cannot be had: `503`, not the token's fault nor the
/// client's, with `Retry-After`.
fn keys_unavailable() -> Response {
    refusal(503, "Service Unavailable: the server cannot check tokens now; try again later")
        .with_header("Retry-After", &KEYS_RETRY_AFTER.as_secs().to_string())
}

/// Why a token was not accepted.
enum Invalid {
    /// The token is at fault: `401` and `invalid_token`, with why.
    Token(String),
    /// This server could not get the keys to check it: not the client's fault.
    KeysUnavailable,
}

impl Invalid {
    fn token(why: &str) -> Invalid {
        Invalid::Token(why.to_string())
    }
}

/// The signature algorithms accepted: public-key ones only, never `none` or a shared secret.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// The well-known path of RFC 9728, section 3.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// `https://mcp.example.com/mcp` -> `https://mcp.example.com/.well-known/oauth-protected-resource/mcp`
/// (RFC 9728, section 3: the well-known path goes between the host and the path).
fn metadata_url(resource: &str) -> Option<String> {
    let (origin, path) = split_url(resource);
    origin
        .split_once("://")
        .is_some_and(|(_, authority)| !authority.is_empty())
        .then(|| format!("{origin}{WELL_KNOWN}{path}"))
}

/// `https://host:8443/a/b?q` -> (`https://host:8443`, `/a/b`): the origin, and the
/// path without a trailing `/`.
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    let start = url[after_scheme..].find(['/', '?', '#']).map_or(url.len(), |at| after_scheme + at);
    let path = url[start..].split(['?', '#']).next().unwrap_or("");
    (&url[..start], path.trim_end_matches('/'))
}

/// A text inside a quoted-string of a header, `error_description`'s: cut as `echo`
/// cuts, but with `...`, and in the characters RFC 6750 (section 3) allows there, the
/// visible ASCII and the space, without `"` or `\` (either would end it early). Anything
/// else, `echo`'s `…` included, would make the header invalid, and the answer a `500`.
fn quoted(text: &str) -> String {
    let visible = |character: char| matches!(character, ' '..='~') && !matches!(character, '"' | '\\');
    let cut = echo(text).replace('…', "...");
    cut.chars().map(|character| if visible(character) { character } else { '\'' }).collect()
}

#[test]
fn a_description_of_any_length_or_text_makes_a_valid_header() {
    let long = "this request needs the scopes mcp:read payroll:run reports:export invoices:write ledger:close";
    assert_eq!(quoted(long), format!("{}...", &long[..80]));
    assert_eq!(quoted(r#"a "quoted" \path, naïve"#), "a 'quoted' 'path, na've");
}

fn status_word(status: u16) -> &'static str {
    if status == 403 { "Forbidden" } else { "Unauthorized" }
}

/// An https URL, or an http one on this machine's loopback (for tests): the names
/// `guard.rs` knows as loopback, on any port.
fn is_https_or_loopback(url: &str) -> bool {
    let origin = split_url(url).0.to_ascii_lowercase();
    let loopback =
        origin.strip_prefix("http://").and_then(host_name).is_some_and(|name| LOOPBACK_NAMES.contains(&name));
    origin.starts_with("https://") || loopback
}

// ANCHOR: verified
/// The tokens this server has verified, each with who it names, so that a client's next
/// request with the same token skips the signature, the check that costs. Keyed by the
/// token's SHA-256 digest, not the token: a token changed in any byte has another digest,
/// and is checked in full; and the record holds no token that whoever reads this
/// process's memory could send (a core dump, a debugger). An entry is used only before
/// the token's `exp`, and all go when the keys change (a key withdrawn takes its tokens
/// with it). At most `MAX_VERIFIED` entries: a new one, when full, first drops those
/// expired, then the one that expires soonest. A hit gives the
/// caller only; what depends on the request (the scopes it needs, now against `exp`) is
/// checked for every request.
#[derive(Default)]
struct Verified {
    held: Mutex<VerifiedTokens>,
}

#[derive(Default)]
struct VerifiedTokens {
    /// The version of the keys these tokens were verified with (`Keys::version`).
    keys_version: u64,
    /// By the digest of each token (`token_digest`).
    callers: HashMap<[u8; 32], Caller>,
}

/// The most tokens remembered: a digest and a `Caller` each, a few hundred bytes.
const MAX_VERIFIED: usize = 10_000;

/// What the record knows a token by: its SHA-256 digest, from which the token cannot be
/// found again.
fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Verified {
    /// Who `token` names, if it was verified with the keys of `keys_version` and has not
    /// expired.
    fn get(&self, token: &str, keys_version: u64) -> Option<Caller> {
        let mut held = lock(&self.held);
        if keys_version > held.keys_version {
            // The keys changed since these tokens were verified: check each again.
            held.callers.clear();
            held.keys_version = keys_version;
        }
        if keys_version != held.keys_version {
            return None;
        }
        let digest = token_digest(token);
        let caller = held.callers.get(&digest)?;
        if caller.expires.is_some_and(|exp| get_current_timestamp() < exp) {
            return Some(caller.clone());
        }
        // Expired: the full check says so (or lets it through within the clock skew).
        held.callers.remove(&digest);
        None
    }

    /// Remember that `token`, verified with the keys of `keys_version`, names `caller`;
    /// not if the keys changed meanwhile.
    fn insert(&self, token: &str, caller: &Caller, keys_version: u64) {
        let mut held = lock(&self.held);
        if keys_version != held.keys_version {
            return;
        }
        if held.callers.len() >= MAX_VERIFIED {
            let now = get_current_timestamp();
            held.callers.retain(|_, caller| caller.expires.is_some_and(|exp| now < exp));
        }
        if held.callers.len() >= MAX_VERIFIED {
            let soonest = held.callers.iter().min_by_key(|(_, caller)| caller.expires).map(|(digest, _)| *digest);
            if let Some(soonest) = soonest {
                held.callers.remove(&soonest);
            }
        }
        held.callers.insert(token_digest(token), caller.clone());
    }
}
// ANCHOR_END: verified

// ANCHOR: keys
/// The authorization server's signing keys (a JWK Set, RFC 7517), kept in memory.
/// They are fetched when first needed, so that the server starts even while the
/// authorization server is down; fetched again when a token names a key not held (the
/// authorization server rotated its keys), but not more often than `REFETCH_AFTER`, so
/// that tokens naming made-up keys cannot make this server flood it; and fetched again
/// when older than `KEYS_MAX_AGE`, by the next request with a token, even one the record
/// of verified tokens answers, so that a key withdrawn is soon refused.
///
/// A fetch runs on a thread of its own, never on a worker: a slow authorization server
/// must not hold the workers that answer everyone else. A request whose key is held
/// never waits, not even the one that starts the hourly refresh. A request whose key is
/// not held waits only for a fetch it starts itself, and for at most `WAIT_FOR_FETCH`;
/// while another request's fetch is under way it does not wait at all. It is an unknown
/// key (`401`) only if the last fetch brought the keys; else `503`.
struct Keys {
    /// Shared with the thread that fetches.
    shared: Arc<Shared>,
    /// How old the keys may grow: `KEYS_MAX_AGE`, but for tests.
    max_age: Duration,
}

struct Shared {
    source: KeySource,
    /// What is held. Every request reads it, for a moment.
    cache: Mutex<Cache>,
    /// Told when a fetch ends, for the request that started it and waits.
    fetch_ended: Condvar,
    /// One more each time a fetch brings keys that differ from those held.
    version: AtomicU64,
}

enum KeySource {
    /// `--jwks-uri`.
    Uri(String),
    /// `--jwks-file`.
    File(PathBuf),
    /// The `jwks_uri` of this issuer's metadata (RFC 8414, or OpenID Connect Discovery).
    Discover(String),
}

#[derive(Default)]
struct Cache {
    /// The keys held.
    keys: Vec<Key>,
    /// When the keys were last fetched, or last tried.
    fetched: Option<Instant>,
    /// Whether a fetch is under way.
    fetching: bool,
    /// Whether the last fetch failed: the keys held may not be all the keys there are.
    last_fetch_failed: bool,
    /// The `jwks_uri` discovered, once it is.
    jwks_uri: Option<String>,
}

/// A key as published (its `kid` and algorithm), and as `jsonwebtoken` checks
/// signatures with it, made once when fetched.
type Key = (Jwk, DecodingKey);

/// How soon the keys may be fetched again for a token that names an unknown key.
const REFETCH_AFTER: Duration = Duration::from_secs(10);
/// How long fetched keys are used before they are fetched again.
const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// What `Retry-After` says when the keys cannot be had.
const KEYS_RETRY_AFTER: Duration = Duration::from_secs(10);
/// The longest a fetch of the keys (or of the metadata naming them) may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest a request waits for the fetch it started, holding its worker.
const WAIT_FOR_FETCH: Duration = Duration::from_secs(1);
/// The largest JWK Set or metadata document read: a few keys are a few kilobytes.
const MAX_DOCUMENT_BYTES: u64 = 256 * 1024;
// ANCHOR_END: keys

impl Keys {
    fn new(source: KeySource, max_age: Duration) -> Keys {
        let shared =
            Shared { source, cache: Mutex::default(), fetch_ended: Condvar::new(), version: AtomicU64::new(0) };
        Keys { shared: Arc::new(shared), max_age }
    }

    /// Which keys are held: a number that changes when they do.
    fn version(&self) -> u64 {
        self.shared.version.load(Ordering::Acquire)
    }

    /// Fetch the keys again in the background if those held are older than `max_age`
    /// and no fetch is under way; the request goes on with the keys held. For a token the
    /// record of verified tokens answers, which needs no key.
    fn refresh_if_old(&self) {
        let mut cache = lock(&self.shared.cache);
        if cache.fetched.is_some_and(|at| at.elapsed() >= self.max_age) && !cache.fetching {
            self.start_fetch(&mut cache);
        }
    }

    /// The key named `kid` that may check `alg`. A token without a `kid` may use the
    /// only key.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Invalid> {
        let mut cache = lock(&self.shared.cache);
        let since = |cache: &Cache, age: Duration| cache.fetched.is_none_or(|at| at.elapsed() >= age);
        if let Some((_, key)) = pick(&cache.keys, kid, alg) {
            let key = key.clone();
            // Old keys are refreshed in the background; this request goes on with the key held.
            if since(&cache, self.max_age) && !cache.fetching {
                self.start_fetch(&mut cache);
            }
            return Ok(key);
        }
        // Not held: fetch, if a fetch is due and none is under way, and wait for it a little.
        if since(&cache, REFETCH_AFTER) && !cache.fetching {
            self.start_fetch(&mut cache);
            let deadline = Instant::now() + WAIT_FOR_FETCH;
            while cache.fetching {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                cache = self.shared.fetch_ended.wait_timeout(cache, left).unwrap_or_else(|e| e.into_inner()).0;
            }
        }
        match pick(&cache.keys, kid, alg) {
            Some((_, key)) => Ok(key.clone()),
            // A fetch under way may bring the key; with none held, or after a fetch that
            // failed, the key may be one published since (a rotation). Either way the
            // token may be fine: it cannot be told now.
            None if cache.fetching || cache.keys.is_empty() || cache.last_fetch_failed => Err(Invalid::KeysUnavailable),
            // The last fetch brought the keys published, and this one is not among them.
            None => Err(Invalid::token("the token is signed with an unknown key")),
        }
    }

    /// Fetch the keys on a thread of its own, and keep them; on failure keep those held,
    /// and say why on stderr. `cache` is locked by the caller, who checked that no fetch
    /// is under way.
    fn start_fetch(&self, cache: &mut Cache) {
        cache.fetching = true;
        let jwks_uri = cache.jwks_uri.clone();
        let shared = Arc::clone(&self.shared);
        thread::spawn(move || {
            // A panic in a fetch must not leave `fetching` set, and the keys never fetched again.
            let fetched = catch_unwind(AssertUnwindSafe(|| shared.fetch(jwks_uri)))
                .unwrap_or_else(|_| Err("the fetch failed unexpectedly".to_string()));
            let mut cache = lock(&shared.cache);
            cache.fetching = false;
            cache.fetched = Some(Instant::now());
            cache.last_fetch_failed = fetched.is_err();
            match fetched {
                Ok((keys, jwks_uri)) => {
                    if !keys.iter().map(|(jwk, _)| jwk).eq(cache.keys.iter().map(|(jwk, _)| jwk)) {
                        shared.version.fetch_add(1, Ordering::AcqRel);
                    }
                    cache.keys = keys;
                    cache.jwks_uri = jwks_uri;
                }
                Err(why) => eprintln!("authorization: cannot fetch the signing keys: {why}"),
            }
            shared.fetch_ended.notify_all();
        });
    }
}

impl Shared {
    /// The signing keys from the source, those this server can use, and the `jwks_uri`
    /// they came from when it was discovered (`jwks_uri`: the one found before).
    fn fetch(&self, jwks_uri: Option<String>) -> Result<(Vec<Key>, Option<String>), String> {
        let (set, jwks_uri, from) = match &self.source {
            KeySource::File(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
                let set = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
                (set, None, path.display().to_string())
            }
            KeySource::Uri(uri) => (get_json(uri)?, None, uri.clone()),
            KeySource::Discover(issuer) => {
                let uri = match jwks_uri {
                    Some(uri) => uri,
                    None => discover_jwks_uri(issuer)?,
                };
                (get_json(&uri)?, Some(uri.clone()), uri)
            }
        };
        // RFC 7517, section 5: a JWK Set "MUST have a "keys" member" whose value is an
        // array. A document without one is not a JWK Set, and not a set of no keys: the
        // fetch failed, and the keys held are kept.
        let keys = set.get("keys").and_then(Value::as_array).ok_or(format!("{from}: no \"keys\" array"))?;
        Ok((signing_keys(keys), jwks_uri))
    }
}

/// Of a JWK Set's keys, those meant for signatures that this server can use; others (for
/// encryption, or of a kind it does not know) are skipped, not fatal.
fn signing_keys(keys: &[Value]) -> Vec<Key> {
    keys.iter()
        .filter(|key| key.get("use").is_none_or(|usage| usage == "sig"))
        .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
        .filter_map(|jwk| DecodingKey::from_jwk(&jwk).ok().map(|key| (jwk, key)))
        .collect()
}

/// The key for `kid` (or the only key, when the token names none) whose algorithm, if
/// the key names one, is `alg`.
fn pick<'a>(keys: &'a [Key], kid: Option<&str>, alg: Algorithm) -> Option<&'a Key> {
    let fits =
        |(jwk, _): &&Key| jwk.common.key_algorithm.is_none_or(|algorithm| algorithm.to_string() == format!("{alg:?}"));
    match kid {
        Some(kid) => keys.iter().filter(fits).find(|(jwk, _)| jwk.common.key_id.as_deref() == Some(kid)),
        None if keys.len() == 1 => keys.iter().find(fits),
        None => None,
    }
}

/// Where `issuer` publishes its keys: the `jwks_uri` of its metadata, from the first
/// well-known address that has it, in the order `2025-11-25/basic/authorization.mdx`
/// asks clients to try (Authorization Server Metadata Discovery): RFC 8414's, then
/// OpenID Connect's. The document must name the same issuer (RFC 8414, section 3.3),
/// or an attacker's metadata could hand this server the attacker's keys.
fn discover_jwks_uri(issuer: &str) -> Result<String, String> {
    let (origin, path) = split_url(issuer);
    let candidates = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    let mut tried = Vec::new();
    for url in candidates {
        match get_json(&url) {
            Ok(metadata) if metadata["issuer"] != issuer => tried.push(format!("{url} names another issuer")),
            Ok(metadata) => match metadata["jwks_uri"].as_str() {
                Some(uri) if is_https_or_loopback(uri) => return Ok(uri.to_string()),
                _ => tried.push(format!("{url} has no usable jwks_uri")),
            },
            Err(why) => tried.push(why),
        }
    }
    Err(tried.join("; "))
}

/// GET a JSON document, within `FETCH_TIMEOUT` and `MAX_DOCUMENT_BYTES`. Redirects are
/// not followed: the URL checked for `https` is the one fetched, and a redirect could
/// lead to plain `http`, where keys can be swapped on the way.
fn get_json(url: &str) -> Result<Value, String> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(FETCH_TIMEOUT)).max_redirects(0).build().into();
    let mut response = agent.get(url).call().map_err(|e| format!("{url}: {e}"))?;
    if response.status() != 200 {
        return Err(format!("{url}: answered {}, not 200 (redirects are not followed)", response.status()));
    }
    let text = response
        .body_mut()
        .with_config()
        .limit(MAX_DOCUMENT_BYTES)
        .read_to_string()
        .map_err(|e| format!("{url}: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("{url}: {e}"))
}
