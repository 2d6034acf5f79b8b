//! Who may talk to this server (chapter 7): every HTTP request passes the guard before
//! anything else is read. It checks the `Host` a request names and the `Origin` a
//! browser adds, and the bearer token every client must carry when one is set.

use std::net::ToSocketAddrs;

use crate::http::{Request, Response};
use crate::jsonrpc::{echo, refusal};

/// The environment variable that holds the bearer token when `--token` is not given.
pub const TOKEN_VARIABLE: &str = "MCP_WORKBOOK_TOKEN";

// ANCHOR: guard
/// Who may talk to this server. Every request passes [`Guard::admit`] before its body
/// is even parsed.
pub struct Guard {
    /// Host names (lowercase, no port) this server answers as, besides the loopback ones.
    hosts: Vec<String>,
    /// Origins (lowercase) allowed besides the loopback ones.
    origins: Vec<String>,
    /// The bearer token every request must carry, when one is set.
    token: Option<String>,
}

/// The names a server on this machine is always reachable as, on any port.
pub const LOOPBACK_NAMES: &[&str] = &["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    /// The guard for a server bound to `bind`. Warns, on stderr, when that address is
    /// reachable from other machines.
    pub fn new(bind: &str, hosts: &[String], origins: &[String], token: Option<String>) -> Guard {
        let mut hosts: Vec<String> = hosts.iter().filter_map(|h| host_name(h)).map(str::to_ascii_lowercase).collect();
        for address in bind.to_socket_addrs().into_iter().flatten().filter(|a| !a.ip().is_loopback()) {
            eprintln!(
                "warning: binding to {address}, which other machines can reach. Anyone who reaches it can \
                 call its tools: set a token ({TOKEN_VARIABLE}) and name the hosts clients use with --allowed-host."
            );
            // A specific address is a name the server answers as; 0.0.0.0 and [::] are not.
            if !address.ip().is_unspecified() {
                let name = if address.is_ipv6() { format!("[{}]", address.ip()) } else { address.ip().to_string() };
                hosts.push(name);
            }
        }
        let origins = origins.iter().map(|o| o.trim_end_matches('/').to_ascii_lowercase()).collect();
        Guard { hosts, origins, token }
    }

    /// Let a request through, or answer it with the reason it may not pass.
    pub fn admit(&self, request: &Request) -> Result<(), Response> {
        self.admit_browser(request)?;
        // Anyone else who can reach the port: other users, other programs.
        let Some(expected) = &self.token else { return Ok(()) };
        match bearer_token(request) {
            Some(given) if same_secret(given.as_bytes(), expected.as_bytes()) => Ok(()),
            // RFC 6750, section 3: a `Bearer` challenge carries at least one parameter. The
            // realm names what the token guards: here one token guards the whole server,
            // so one fixed name, never the `Host` a client chose. No credentials get no
            // error code (section 3.1); a wrong token is told so.
            Some(_) => Err(refusal(401, "Unauthorized: wrong bearer token")
                .with_header("WWW-Authenticate", r#"Bearer realm="mcp", error="invalid_token""#)),
            None => Err(refusal(401, "Unauthorized: send `Authorization: Bearer <token>`")
                .with_header("WWW-Authenticate", r#"Bearer realm="mcp""#)),
        }
    }

    /// The checks a page a person opens in a browser passes (chapter 15's consent page):
    /// `Host` and `Origin`, and no token, which a browser does not carry.
    pub fn admit_browser(&self, request: &Request) -> Result<(), Response> {
        // DNS rebinding: a web page whose own host name now resolves to 127.0.0.1
        // still says that name in `Host`.
        let host = request.header("Host").unwrap_or("");
        if !self.answers_as(host) {
            return Err(refusal(
                403,
                &format!("Forbidden: Host '{}' is not a name this server answers to", echo(host)),
            ));
        }
        // A web page on another site, sending requests from the user's own browser.
        // Browsers say which site in `Origin`; other clients do not send one.
        if let Some(origin) = request.header("Origin")
            && !self.allows_origin(origin)
        {
            return Err(refusal(403, &format!("Forbidden: Origin '{}' is not allowed", echo(origin))));
        }
        Ok(())
    }

    /// Is `host` (a `Host` header: name and optional port) one of our names? Any port
    /// goes: a port forward or a proxy changes the port, a rebinding attack the name.
    fn answers_as(&self, host: &str) -> bool {
        host_name(host)
            .map(str::to_ascii_lowercase)
            .is_some_and(|name| LOOPBACK_NAMES.contains(&name.as_str()) || self.hosts.contains(&name))
    }

    /// Is `origin` (scheme, host, optional port) allowed? The loopback ones on any
    /// port, and those given with `--allowed-origin`, exactly.
    fn allows_origin(&self, origin: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        let loopback = origin.strip_prefix("http://").and_then(host_name).is_some_and(|n| LOOPBACK_NAMES.contains(&n));
        loopback || self.origins.contains(&origin)
    }
}

/// `localhost:8080` -> `localhost`, `[::1]:8080` -> `[::1]`, `127.0.0.1` -> `127.0.0.1`.
/// `None` when what follows the name is not a port: `localhost.evil.example` is a name
/// of its own, and `localhost/x` or `localhost:80@evil.example` are not a host at all.
pub fn host_name(authority: &str) -> Option<&str> {
    let end = if authority.starts_with('[') {
        authority.find(']')? + 1
    } else {
        authority.find(':').unwrap_or(authority.len())
    };
    let (name, rest) = authority.split_at(end);
    let port_ok = rest.is_empty()
        || rest.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let name_ok = !name.is_empty() && !name.contains(['/', '@', '?', '#']);
    (port_ok && name_ok).then_some(name)
}

/// The token in `Authorization: Bearer <token>` (the scheme is case-insensitive).
pub fn bearer_token(request: &Request) -> Option<&str> {
    let (scheme, token) = request.header("Authorization")?.split_once(' ')?;
    scheme.eq_ignore_ascii_case("Bearer").then(|| token.trim())
}

/// Compare two secrets in time that does not depend on where they first differ, so
/// that timing the 401s cannot reveal the token a byte at a time. (The time does
/// depend on the expected token's length, which is not the secret.) `black_box` keeps
/// the compiler from turning the loop back into an early return in practice, but Rust
/// promises that only on a best-effort basis: a precaution, not a proof; a long random
/// token is what makes guessing hopeless.
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (i, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(i).copied().unwrap_or(0));
    }
    std::hint::black_box(difference) == 0
}
// ANCHOR_END: guard
