//! Mint a JWT access token (RFC 9068) with the test keys of `tests/keys/`, for chapter
//! 18's transcript and tests: `cargo run --example mint-token -- --sub alice`.
//!
//! Every claim has a flag, so that a test can make each kind of token a server must
//! refuse: expired, not yet valid, for another audience or none, from another issuer,
//! of another type, signed with a shared secret, or from a client whose id is a user's
//! name. The defaults make a token chapter 18's transcript accepts. Times are fixed
//! numbers, not "now": the same flags make the same token on any day, until 2100.

use clap::Parser;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use serde_json::{Map, Value, json};

#[derive(Parser)]
struct Args {
    /// The subject: who the token is for.
    #[arg(long, default_value = "alice")]
    sub: String,
    /// The client it was issued to (`client_id`).
    #[arg(long, default_value = "workbook-client")]
    client_id: String,
    /// The scopes it grants, space-separated.
    #[arg(long, default_value = "mcp:read")]
    scope: String,
    #[arg(long, default_value = "https://auth.example.com")]
    iss: String,
    /// The audience; `--aud ''` leaves the claim out.
    #[arg(long, default_value = "http://127.0.0.1:8080/mcp")]
    aud: String,
    /// Expiry, in seconds since 1970 (default: 2100-01-01).
    #[arg(long, default_value_t = 4_102_444_800)]
    exp: u64,
    /// Not valid before, in seconds since 1970 (default: 2026-01-01).
    #[arg(long, default_value_t = 1_767_225_600)]
    nbf: u64,
    /// The JOSE header's `typ`.
    #[arg(long, default_value = "at+jwt")]
    typ: String,
    /// The key: `test` (private.pem), `next` (next.pem), or `hs256` to sign with a
    /// shared secret (a token a resource server must refuse).
    #[arg(long, default_value = "test")]
    key: String,
    /// The `kid` in the header [default: the key's own].
    #[arg(long)]
    kid: Option<String>,
}

fn main() {
    let args = Args::parse();
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/keys/");
    let pem = |name: &str| std::fs::read(format!("{folder}{name}")).expect("the test keys are in tests/keys");
    let (algorithm, key, kid) = match args.key.as_str() {
        "test" => (Algorithm::ES256, EncodingKey::from_ec_pem(&pem("private.pem")).unwrap(), "workbook-test-key"),
        "next" => (Algorithm::ES256, EncodingKey::from_ec_pem(&pem("next.pem")).unwrap(), "workbook-next-key"),
        "hs256" => (Algorithm::HS256, EncodingKey::from_secret(b"a shared secret"), "workbook-test-key"),
        other => panic!("no key named {other}: test, next or hs256"),
    };
    let mut header = Header::new(algorithm);
    header.typ = Some(args.typ);
    header.kid = Some(args.kid.unwrap_or_else(|| kid.to_string()));
    let mut claims = Map::new();
    for (name, value) in [
        ("iss", json!(args.iss)),
        ("sub", json!(args.sub)),
        ("aud", json!(args.aud)),
        ("exp", json!(args.exp)),
        ("nbf", json!(args.nbf)),
        ("iat", json!(args.nbf)),
        ("jti", json!(format!("{}-{}", args.sub, args.exp))),
        ("client_id", json!(args.client_id)),
        ("scope", json!(args.scope)),
    ] {
        claims.insert(name.to_string(), value);
    }
    if args.aud.is_empty() {
        claims.remove("aud");
    }
    println!("{}", encode(&header, &Value::Object(claims), &key).expect("the test keys sign"));
}
