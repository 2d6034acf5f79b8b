#!/usr/bin/env python3
"""Connect to a protected MCP server (chapter 18) the way a real machine client does.

The official Python SDK (`mcp` 2.x) with its client-credentials OAuth provider
(`mcp.client.auth.extensions.client_credentials.ClientCredentialsOAuthProvider`), given
only the MCP server's URL and the client's id and secret. Everything else the SDK must
find on its own, starting from the server's first `401`:

  POST /mcp                          -> 401, WWW-Authenticate: Bearer resource_metadata="...", scope="..."
  GET  resource_metadata             -> {"resource": ..., "authorization_servers": [ISSUER], ...}  (RFC 9728)
  GET  ISSUER/.well-known/oauth-authorization-server (or openid-configuration)  -> token_endpoint  (RFC 8414)
  POST token_endpoint                grant_type=client_credentials, resource=..., scope=...  (RFC 8707)
  POST /mcp, Authorization: Bearer   -> 200

Then, in each --mode: initialize (or not, 2026-07-28), tools/list, and a call of
lookup_order. With --step-up TOOL, TOOL is called last: a tool that needs more scope
than the first token has, so the server answers 403 insufficient_scope and the SDK must
ask for a token with the union of the scopes and retry. The server lists a caller only
the tools its token may call (chapter 18), so TOOL must be missing from the first list
and present in the list asked for again with the new token.

Every HTTP exchange is printed, and checked: the discovery above must have happened,
the token request must carry `resource` (the URL in the metadata) and the challenge's
scope, and no MCP request may have gone out with a token the server refused twice.

    .venv/bin/python auth_client.py --url http://127.0.0.1:PORT/mcp --issuer http://127.0.0.1:AS \\
        --client-id workbook-client --client-secret workbook-secret --step-up run_payroll

Exit codes: 0 all of it worked; 1 a check failed; 2 could not connect at all.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any
from urllib.parse import parse_qs

import anyio
import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

MODES = ("legacy", "auto", "2026-07-28")


class MemoryStorage:
    """The SDK's TokenStorage: where it keeps tokens between requests. A test keeps them in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Wire:
    """Every HTTP exchange the SDK makes (httpx event hooks see the OAuth flow's own requests too)."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        entry: dict[str, Any] = {
            "method": request.method,
            "url": str(request.url),
            "status": response.status_code,
            "bearer": request.headers.get("authorization", "").startswith("Bearer "),
            "challenge": response.headers.get("www-authenticate"),
        }
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = parse_qs(request.content.decode())
            form.pop("client_secret", None)  # never printed
            entry["form"] = {k: v[0] for k, v in form.items()}
        self.exchanges.append(entry)
        line = f"  http {entry['method']} {entry['url']} -> {entry['status']}"
        if entry["challenge"]:
            line += f"  WWW-Authenticate: {entry['challenge']}"
        if "form" in entry:
            line += f"  form {json.dumps(entry['form'])}"
        print(line)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    p.add_argument("--url", required=True, help="the MCP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    p.add_argument("--client-id", required=True)
    p.add_argument("--client-secret", required=True)
    p.add_argument(
        "--issuer",
        help="the authorization server these credentials belong to: the SDK then refuses any other "
        "the MCP server names (without it the SDK warns, and trusts whatever discovery yields)",
    )
    p.add_argument(
        "--scope",
        help="scopes to configure the provider with (the SDK replaces them by the 401's scope, "
        "or else by the metadata's scopes_supported, before it asks for a token)",
    )
    p.add_argument("--mode", action="append", choices=MODES, help="protocol era(s) (default: legacy, 2026-07-28)")
    p.add_argument("--tool", default="lookup_order", help="the read-only tool to call (default: lookup_order)")
    p.add_argument("--arguments", default='{"orderId": "A-1001"}', help="its arguments, JSON")
    p.add_argument("--step-up", metavar="TOOL", help="then call TOOL, which needs more scope: 403, new token, retry")
    p.add_argument("--step-up-arguments", default="{}", help="TOOL's arguments, JSON")
    return p.parse_args(argv)


def first_error(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


async def session(ns: argparse.Namespace, mode: str) -> list[str]:
    """One connection in MODE; the failures, as sentences (none: it worked)."""
    wire = Wire()
    provider = ClientCredentialsOAuthProvider(
        server_url=ns.url,
        storage=MemoryStorage(),
        client_id=ns.client_id,
        client_secret=ns.client_secret,
        scope=ns.scope,
        issuer=ns.issuer,
    )
    http = httpx2.AsyncClient(
        auth=provider,
        timeout=httpx2.Timeout(30.0, read=300.0),  # the SDK's defaults (create_mcp_http_client)
        event_hooks={"response": [wire.on_response]},
    )
    failures: list[str] = []
    print(f"mode {mode}")
    async with http:
        async with Client(streamable_http_client(ns.url, http_client=http), mode=mode, read_timeout_seconds=30) as client:
            listed_first = [t.name for t in (await client.list_tools()).tools]
            print(f"  connected protocol={client.protocol_version} tools={listed_first}")
            result = await client.call_tool(ns.tool, json.loads(ns.arguments))
            text = next((block.text for block in result.content if getattr(block, "text", None)), "")
            print(f"  {ns.tool}: isError={bool(result.is_error)} {text[:80]!r}")
            if result.is_error:
                failures.append(f"{ns.tool} answered isError: true")
            granted_first = provider.context.current_tokens.scope if provider.context.current_tokens else None
            if ns.step_up:
                if ns.step_up in listed_first:
                    failures.append(f"{ns.step_up} was listed to a token without its scope")
                result = await client.call_tool(ns.step_up, json.loads(ns.step_up_arguments))
                print(f"  {ns.step_up}: isError={bool(result.is_error)}")
                if result.is_error:
                    failures.append(f"{ns.step_up} answered isError: true")
                # The new token may call more, so its list is longer. The SDK's cache keeps a
                # 2026-07-28 list per Client, not per token ("private" lists included), so
                # the list is asked for again ("refresh"), as a host must when its token changes.
                listed_after = [t.name for t in (await client.list_tools(cache_mode="refresh")).tools]
                print(f"  tools after the step-up={listed_after}")
                if ns.step_up not in listed_after or not set(listed_first) < set(listed_after):
                    failures.append(f"the list after the step-up does not add {ns.step_up} to the first: {listed_after}")
            granted_last = provider.context.current_tokens.scope if provider.context.current_tokens else None
    failures += judge(wire.exchanges, ns, granted_first, granted_last)
    return failures


def judge(exchanges: list[dict[str, Any]], ns: argparse.Namespace, first: str | None, last: str | None) -> list[str]:
    """What the wire must show: discovery from the 401, a token request with resource and scope."""
    failures = []
    mcp = [e for e in exchanges if e["url"] == ns.url]
    metadata = [e for e in exchanges if "/.well-known/oauth-protected-resource" in e["url"] and e["status"] == 200]
    as_metadata = [
        e for e in exchanges if "/.well-known/oauth-authorization-server" in e["url"] or "openid-configuration" in e["url"]
    ]
    tokens = [e for e in exchanges if "form" in e and e["form"].get("grant_type") == "client_credentials"]
    if not mcp or mcp[0]["status"] != 401 or mcp[0]["bearer"]:
        failures.append("the first MCP request (without a token) was not answered 401")
    elif "resource_metadata=" not in (mcp[0]["challenge"] or ""):
        failures.append("the 401 named no resource_metadata")
    if not metadata:
        failures.append("the protected resource metadata was never fetched (200)")
    if not any(e["status"] == 200 for e in as_metadata):
        failures.append("the authorization server metadata was never fetched (200)")
    if not tokens:
        failures.append("no client_credentials token request")
    for token in tokens:
        form = token["form"]
        if token["status"] != 200:
            failures.append(f"token request answered {token['status']}")
        if form.get("resource") != ns.url:
            failures.append(f"token request resource={form.get('resource')!r}, expected the server's {ns.url!r}")
    if tokens and "mcp:read" not in tokens[0]["form"].get("scope", "").split():
        failures.append(f"first token request scope={tokens[0]['form'].get('scope')!r}: the challenge's mcp:read missing")
    if ns.step_up:
        refused = [e for e in mcp if e["status"] == 403 and 'error="insufficient_scope"' in (e["challenge"] or "")]
        if not refused:
            failures.append(f"{ns.step_up}: no 403 insufficient_scope came first")
        if len(tokens) < 2 or "payroll:run" not in tokens[-1]["form"].get("scope", "").split():
            failures.append(f"{ns.step_up}: no second token request with payroll:run")
        print(f"  scope granted: first {first!r}, after the step-up {last!r}")
    # A token refused twice in a row on the same request would mean the SDK retried blindly.
    after_token = [e for e in mcp if e["bearer"]]
    if any(a["status"] == 401 and b["status"] == 401 for a, b in zip(after_token, after_token[1:])):
        failures.append("two 401s in a row with a token: the token the SDK got is refused")
    return failures


async def run(ns: argparse.Namespace) -> int:
    total: list[str] = []
    for mode in ns.mode or ["legacy", "2026-07-28"]:
        try:
            failures = await session(ns, mode)
        except Exception as exc:  # the report is the point
            print(f"FAIL mode {mode}: {first_error(exc)}")
            return 2
        for failure in failures:
            print(f"FAIL mode {mode}: {failure}")
        print(f"{'ok  ' if not failures else 'FAIL'} mode {mode}")
        total += failures
    print(f"{'FAILED' if total else 'OK'}: {len(total)} failure(s)")
    return 1 if total else 0


def main() -> None:
    ns = parse_args(sys.argv[1:])
    if ns.issuer is None:
        warnings.simplefilter("ignore")  # the SDK's deprecation warning for a missing issuer: said in --help
    sys.exit(anyio.run(run, ns))


if __name__ == "__main__":
    main()
