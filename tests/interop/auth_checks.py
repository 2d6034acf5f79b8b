#!/usr/bin/env python3
"""The checks of `tests/interop/run auth` that no well-behaved client makes: tokens got
straight from the authorization server's token endpoint (or made up), sent to a protected
MCP server (chapter 18), and its answers read on the wire.

    auth_checks.py CHECK --url http://127.0.0.1:PORT/mcp --issuer http://127.0.0.1:AS

CHECK (or `all`):
  metadata            the Protected Resource Metadata (RFC 9728) at both well-known paths,
                      unauthenticated: resource, authorization_servers, scopes_supported,
                      bearer_methods_supported as expected, and the two documents equal
  no-token            no Authorization: 401, Bearer challenge with resource_metadata and
                      scope, no error (RFC 6750 3.1: none for a request without a token)
  other-scheme        `Authorization: Basic ...`: treated as no token, the same 401
  garbage             a bearer that is no JWT: 401 error="invalid_token"
  opaque              a real token asked for without `resource` (oidc-provider makes it
                      opaque: no audience): 401 error="invalid_token"
  foreign-audience    a real JWT for another resource (aud http://127.0.0.1:9/other):
                      401 error="invalid_token"
  forged-signature    the claims of a real token, signed with a key the issuer never
                      published: 401 error="invalid_token"
  read-only           a token with mcp:read only: lookup_order answered 200
  insufficient-scope  the same token calling run_payroll: 403 error="insufficient_scope"
                      whose scope names payroll:run
  scoped-list         a 2026-07-28 tools/list with each of two real tokens: mcp:read lists
                      no run_payroll or approve_payroll, mcp:read payroll:run lists both;
                      each "cacheScope": "private" (the list is the token's own)
  expired             a 1 s token (client workbook-brief) used after 2 s: 401
                      error="invalid_token" (the server must run with --clock-skew-secs 0)

  keys-unavailable    a token (--token) sent while the authorization server is down, to a
                      server that never fetched its keys: 503 with Retry-After (it cannot
                      tell a good token from a bad one), not a 401 that blames the token;
                      not part of `all`

`print-token` prints a token for --url with --scope (default mcp:read) and checks nothing:
for a client that takes a token rather than credentials.

Every 401 and 403 must name resource_metadata (RFC 9728 5.1), and its body, if any, be a
JSON-RPC error, never a result. Standard library only, but
forged-signature needs PyJWT and cryptography (the Python SDK brings both): run it with
tests/interop/.venv/bin/python. Exit 0 when every check holds; 1, with what was seen, when not.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlencode, urlsplit

CLIENT = ("workbook-client", "workbook-secret")  # the fixed test client of auth/authorization_server.mjs
BRIEF = ("workbook-brief", "workbook-secret")  # the same, but its tokens live 1 s
FOREIGN = "http://127.0.0.1:9/other"
BASIC_SCOPES = ["mcp:read"]  # scopes_supported: "the minimal set of scopes necessary for basic functionality"


# --- the wire -------------------------------------------------------------------------


def http(method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None):
    """(status, headers, body) of one request; an error status is an answer, not an exception."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def token(issuer: str, client: tuple[str, str], scope: str | None, resource: str | None) -> str:
    """An access token from the token endpoint: grant_type=client_credentials."""
    status, _, body = http("GET", issuer + "/.well-known/openid-configuration")
    endpoint = json.loads(body)["token_endpoint"]
    form = {"grant_type": "client_credentials"}
    if scope:
        form["scope"] = scope
    if resource:
        form["resource"] = resource
    basic = base64.b64encode(f"{client[0]}:{client[1]}".encode()).decode()
    status, _, body = http(
        "POST",
        endpoint,
        urlencode(form).encode(),
        {"Content-Type": "application/x-www-form-urlencoded", "Authorization": f"Basic {basic}"},
    )
    if status != 200:
        raise SystemExit(f"token endpoint answered {status}: {body.decode()}")
    return json.loads(body)["access_token"]


def call(url: str, authorization: str | None, tool: str, arguments: dict) -> tuple[int, object, bytes]:
    """tools/call TOOL, a request that needs no session (the handshake era's sessionless
    form, as the conformance suite sends it)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    return http("POST", url, json.dumps(body).encode(), headers)


def challenge(headers) -> tuple[str, dict[str, str]]:
    """WWW-Authenticate parsed (RFC 9110 11.6.1): the scheme and its parameters. Parameter
    order is the server's to choose; only the values count."""
    value = headers.get("WWW-Authenticate") or ""
    scheme, _, rest = value.strip().partition(" ")
    params = {}
    for match in re.finditer(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^,\s]*)\s*,?', rest):
        name, raw, quoted = match.group(1), match.group(2), match.group(3)
        params[name.lower()] = re.sub(r"\\(.)", r"\1", quoted) if raw.startswith('"') else raw
    return scheme, params


def metadata_url(url: str) -> str:
    """Where RFC 9728 3.1 puts the metadata of the resource URL: the well-known name
    between the host and the path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"


class Seen:
    """What was seen, printed as it comes; false once anything was not as expected."""

    def __init__(self) -> None:
        self.fine = True

    def expect(self, condition: bool, what: str) -> None:
        print(f"  {'ok  ' if condition else 'FAIL'} {what}")
        self.fine &= bool(condition)


def refused(seen: Seen, ns, answer, status: int, error: str | None) -> dict[str, str]:
    """The common shape of a 401 or 403: status, Bearer, resource_metadata, the error."""
    code, headers, body = answer
    scheme, params = challenge(headers)
    print(f"  HTTP {code}  WWW-Authenticate: {headers.get('WWW-Authenticate')}")
    seen.expect(code == status, f"status {code}, expected {status}")
    seen.expect(scheme.lower() == "bearer", f"scheme {scheme!r} is Bearer")
    seen.expect(
        params.get("resource_metadata") == metadata_url(ns.url),
        f"resource_metadata {params.get('resource_metadata')!r} is {metadata_url(ns.url)!r}",
    )
    seen.expect(params.get("error") == error, f"error {params.get('error')!r}, expected {error!r}")
    if error:
        seen.expect(bool(params.get("error_description")), "an error_description says why")
    # Whatever the body says, it must not be an answer: at most a JSON-RPC error.
    answer = json.loads(body) if body.strip().startswith(b"{") else None
    seen.expect(
        body == b"" or (isinstance(answer, dict) and "error" in answer and "result" not in answer),
        f"no answer in the body, empty or a JSON-RPC error (got {body[:100]!r})",
    )
    return params


# --- the checks -----------------------------------------------------------------------


def check_metadata(ns, seen: Seen) -> None:
    expected = {
        "resource": ns.url,
        "authorization_servers": [ns.issuer],
        "scopes_supported": BASIC_SCOPES,
        "bearer_methods_supported": ["header"],
    }
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(ns.url))
    documents = []
    for url in (metadata_url(ns.url), origin + "/.well-known/oauth-protected-resource"):
        status, headers, body = http("GET", url)
        print(f"  GET {url} -> {status} {headers.get('Content-Type')}: {body.decode(errors='replace')}")
        seen.expect(status == 200, f"{url} answered without a token")
        seen.expect("application/json" in (headers.get("Content-Type") or ""), "as application/json")
        document = json.loads(body) if status == 200 else {}
        for key, value in expected.items():
            seen.expect(document.get(key) == value, f"{key} is {json.dumps(value)}")
        documents.append(document)
    seen.expect(documents[0] == documents[1], "the two documents are equal")


def check_no_token(ns, seen: Seen) -> None:
    params = refused(seen, ns, call(ns.url, None, "lookup_order", ns.lookup), 401, None)
    seen.expect("mcp:read" in params.get("scope", "").split(), f"scope {params.get('scope')!r} names mcp:read")


def check_other_scheme(ns, seen: Seen) -> None:
    basic = "Basic " + base64.b64encode(b"workbook-client:workbook-secret").decode()
    refused(seen, ns, call(ns.url, basic, "lookup_order", ns.lookup), 401, None)


def check_garbage(ns, seen: Seen) -> None:
    refused(seen, ns, call(ns.url, "Bearer not-a-jwt", "lookup_order", ns.lookup), 401, "invalid_token")


def check_opaque(ns, seen: Seen) -> None:
    opaque = token(ns.issuer, CLIENT, "mcp:read", None)
    print(f"  token without resource: {opaque[:12]}... ({opaque.count('.')} dots: not a JWT)")
    refused(seen, ns, call(ns.url, f"Bearer {opaque}", "lookup_order", ns.lookup), 401, "invalid_token")


def check_foreign_audience(ns, seen: Seen) -> None:
    foreign = token(ns.issuer, CLIENT, "mcp:read", FOREIGN)
    print(f"  token claims: {json.dumps(claims(foreign))}")
    refused(seen, ns, call(ns.url, f"Bearer {foreign}", "lookup_order", ns.lookup), 401, "invalid_token")


def check_forged_signature(ns, seen: Seen) -> None:
    import jwt  # PyJWT, from the Python SDK's dependencies
    from cryptography.hazmat.primitives.asymmetric import rsa

    real = token(ns.issuer, CLIENT, "mcp:read payroll:run", ns.url)
    header = json.loads(b64(real.split(".")[0]))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(claims(real), stranger, algorithm="RS256", headers={"typ": "at+jwt", "kid": header.get("kid")})
    print(f"  the claims of a real token, header {header}, signed with another key")
    refused(seen, ns, call(ns.url, f"Bearer {forged}", "lookup_order", ns.lookup), 401, "invalid_token")


def check_read_only(ns, seen: Seen) -> None:
    reader = token(ns.issuer, CLIENT, "mcp:read", ns.url)
    print(f"  token claims: {json.dumps(claims(reader))}")
    status, headers, body = call(ns.url, f"Bearer {reader}", "lookup_order", ns.lookup)
    text = body.decode(errors="replace")
    print(f"  HTTP {status} {headers.get('Content-Type')}: {text[:160]}")
    seen.expect(status == 200, f"status {status}, expected 200")
    seen.expect('"result"' in text and '"isError":true' not in text.replace(" ", ""), "a result, not an error")


def check_insufficient_scope(ns, seen: Seen) -> None:
    reader = token(ns.issuer, CLIENT, "mcp:read", ns.url)
    params = refused(seen, ns, call(ns.url, f"Bearer {reader}", "run_payroll", {}), 403, "insufficient_scope")
    scope = params.get("scope", "").split()
    seen.expect("payroll:run" in scope, f"scope {params.get('scope')!r} names payroll:run")


def check_scoped_list(ns, seen: Seen) -> None:
    payroll_tools = {"run_payroll", "approve_payroll"}
    for scope, listed in (("mcp:read", False), ("mcp:read payroll:run", True)):
        bearer = token(ns.issuer, CLIENT, scope, ns.url)
        status, _, body = list_tools_2026(ns.url, f"Bearer {bearer}")
        result = json.loads(body).get("result", {}) if status == 200 else {}
        names = {tool.get("name") for tool in result.get("tools", [])}
        print(f"  scope {scope!r}: HTTP {status}, tools {sorted(names)}, cacheScope {result.get('cacheScope')!r}")
        seen.expect(status == 200 and "lookup_order" in names, f"{scope}: lists lookup_order")
        seen.expect(payroll_tools <= names if listed else not payroll_tools & names, f"{scope}: the payroll tools listed: {listed}")
        seen.expect(result.get("cacheScope") == "private", f"{scope}: cacheScope private")


def list_tools_2026(url: str, authorization: str) -> tuple[int, object, bytes]:
    """tools/list in 2026-07-28: no session, the revision in a header and in `_meta`."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
        "Authorization": authorization,
    }
    return http("POST", url, json.dumps(body).encode(), headers)


def check_expired(ns, seen: Seen) -> None:
    brief = token(ns.issuer, BRIEF, "mcp:read", ns.url)
    c = claims(brief)
    print(f"  token lives {c['exp'] - c['iat']} s; waiting 2 s")
    time.sleep(2)
    refused(seen, ns, call(ns.url, f"Bearer {brief}", "lookup_order", ns.lookup), 401, "invalid_token")


def check_keys_unavailable(ns, seen: Seen) -> None:
    if not ns.token:
        raise SystemExit("keys-unavailable needs --token")
    status, headers, body = call(ns.url, f"Bearer {ns.token}", "lookup_order", ns.lookup)
    print(f"  HTTP {status}  Retry-After: {headers.get('Retry-After')}  {body.decode(errors='replace')[:120]}")
    seen.expect(status == 503, f"status {status}, expected 503")
    seen.expect((headers.get("Retry-After") or "").isdigit(), "Retry-After says when to try again")
    seen.expect(headers.get("WWW-Authenticate") is None, "no challenge: the token is not what failed")


def b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def claims(jwt_value: str) -> dict:
    """A JWT's payload, read without checking anything (only to print and to forge)."""
    return json.loads(b64(jwt_value.split(".")[1]))


CHECKS = {name.removeprefix("check_").replace("_", "-"): f for name, f in globals().items() if name.startswith("check_")}


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    p.add_argument("check", choices=[*CHECKS, "all", "print-token"], help="print-token: only print a token for --url")
    p.add_argument("--token", help="keys-unavailable: the token to send")
    p.add_argument("--scope", default="mcp:read", help="print-token: the scopes to ask for (default: mcp:read)")
    p.add_argument("--url", required=True, help="the protected MCP endpoint")
    p.add_argument("--issuer", required=True, help="the authorization server's issuer")
    p.add_argument("--lookup", type=json.loads, default={"orderId": "A-1001"}, help="lookup_order's arguments, JSON")
    ns = p.parse_args()
    if ns.check == "print-token":  # for clients that take a token, not credentials (the Inspector CLI)
        print(token(ns.issuer, CLIENT, ns.scope, ns.url))
        return
    fine = True
    for name in [c for c in CHECKS if c != "keys-unavailable"] if ns.check == "all" else [ns.check]:
        print(name)
        seen = Seen()
        CHECKS[name](ns, seen)
        fine &= seen.fine
    sys.exit(0 if fine else 1)


if __name__ == "__main__":
    main()
