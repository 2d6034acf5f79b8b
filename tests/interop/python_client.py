#!/usr/bin/env python3
"""Drive a workbook server with the official Python MCP SDK (`mcp` 2.x).

Connects over Streamable HTTP (`--url`) or spawns a stdio server (`--stdio CMD ARGS...`),
lists the tools, calls every listed tool once, prints one line per call and exits
non-zero if anything failed. With `--resources`, `--prompts` and `--completions` (and the
values in `--catalog FILE`) it also lists and reads every resource, gets every prompt,
and asks for completions; see CATALOG below.

    .venv/bin/python python_client.py --url http://127.0.0.1:PORT/mcp --mode legacy
    .venv/bin/python python_client.py --mode auto --args-file args.json --stdio target/debug/ch09 --stdio-flag
    .venv/bin/python python_client.py --url URL --args 'add={"a": 1, "b": 2}' --expect-error boom

Arguments for the calls: a JSON object mapping tool name -> arguments object, from
`--args-file FILE` and/or `--args NAME=JSON` (repeatable, wins over the file). A tool that
is listed by the server but has no entry is called with `{}`. A tool named in the
mapping that the server does not list is a failure (it catches a renamed tool), unless
`--skip-unlisted`.

Modes (the SDK's `Client(mode=...)`):
  legacy      `initialize` handshake (2025-11-25) only
  auto        `server/discover` first, falls back to `initialize` on an error answer
  2026-07-28  the stateless revision only, no probe, no handshake

A call fails when the SDK raises (JSON-RPC error, transport error, `structuredContent`
that does not match the tool's `outputSchema`) or when the result has `isError: true`,
unless the tool is named with `--expect-error`, which inverts the latter.

CATALOG (`--catalog FILE`, a JSON object; each part runs only with its flag):
  "resourceList"     {"uris": [...], "minPages": n}: `resources/list`, paged through by
                     nextCursor, must take at least n pages and list each of the uris,
                     and no uri twice                                 [--resources]
  "resourceReads"    {uri: "ok" | "not found"}: reads beyond the listed resources (a
                     template's URI, say); "not found" must fail with the code of the
                     era: -32002 (handshake) or -32602 (2026-07-28)   [--resources]
  "promptArguments"  {prompt: {argument: value}}: the arguments for each prompt; a
                     prompt not named is got with none                [--prompts]
  "completions"      [{"ref": {...}, "argument": name, "value": typed, "values": [...]}]:
                     each must answer exactly those values             [--completions]
With `--stream NAME` the tool NAME is called once more with a progress callback, and
log messages are asked for (from `info` up: in 2026-07-28 per request, the client's
`log_level`); it must send at least two progress notifications, each larger than the
last, and log messages where they are due (in 2026-07-28, and in the handshake era when
the server announced `logging`) and none where they are not, before its result
(chapter 14).

With `--ask NAME=JSON` the tool NAME asks the user before it acts (chapter 15:
elicitation, by `input_required` in 2026-07-28): the client declares the elicitation
capability, and NAME is called twice instead of once, its question answered first
`accept` with JSON as the form's content, then `decline`. Each call must ask exactly
once and end in a result without isError, and the two results must differ: the
answer, not the call, decides what the tool did.

With `--connect NAME` the tool NAME needs the user to take a step outside the client, at
a URL (chapter 15: URL-mode elicitation, by `input_required` in 2026-07-28). NAME is
called three times: the user first declines to open the link (the result must be
isError); then the user "opens" it, as a browser would (a GET of the page, then the
POST its button sends, with the page's own Origin), and accepts, and the SDK's retry must
end in the result, without isError; then a third call must not ask at all. Where a run
before this one has connected already (the same server, another mode), the first call
is not asked either, and says so.

In the handshake era (a 2025-11-25 session, chapter 16 on) the same `--connect` goes the
way of that revision: the call must fail with the JSON-RPC error -32042
(`UrlElicitationRequiredError`) holding one URL-mode elicitation (`mode`, `message`,
`url`, `elicitationId`); the user opens the URL as above; the client waits for
`notifications/elicitation/complete` with that `elicitationId` (with `--expect-complete`
it must come within COMPLETE_WAIT seconds: chapter 17 on, where the session has its
stream; without, the client waits NO_STREAM_WAIT and retries anyway, as the spec lets
it); the retry must end in the result. `--url-required NAME` (a run that checks the
question, not the page: behind nginx, in the proxy part): NAME must fail with -32042 and a
URL, and the link is not opened.

With --resources every listed resource is read too, and must answer contents with
text or a blob; the template list must not be empty. With --prompts every listed
prompt is got, and must answer at least one message.

With `--subscribe URI=NAME` the client subscribes to the resource URI, which the tool
NAME changes (chapter 17): in the handshake era the subscription must answer, a call
of NAME must bring one `notifications/resources/updated` for URI (on the session's
stream over HTTP, a line over stdio), and after `resources/unsubscribe` a second call
none. In 2026-07-28, which has no `resources/subscribe`, that must fail with -32601, and
the client listens instead (`Client.listen`, `subscriptions/listen`) for URI and for
`toolsListChanged`: the acknowledgment must honour both (an operator may switch a tool
off, chapter 17), a call of NAME must bring one `ResourceUpdated` for URI,
and once the client has left the subscription (it closes the stream over HTTP, sends
`notifications/cancelled` over stdio) a second call must still answer.

With `--list-changed NAME --operator-off CMD --operator-on CMD` (chapter 17; over
HTTP the run script knows the server's PID, over stdio the SDK starts the server
through a shell that writes its PID to a file first) the client listens for the tool list's
changes (the handshake era: on the session's stream, which the SDK opens; 2026-07-28:
`Client.listen(tools_list_changed=True)`, which must be acknowledged), runs the shell
command CMD_OFF (the operator: NAME into the server's --tools-off file, then SIGHUP),
and must hear `notifications/tools/list_changed` and list again without NAME (in
2026-07-28 through the SDK's response cache, which the notice must evict: the list it
holds is fresh for ttlMs); then CMD_ON, the notice again, and NAME listed again.

Exit codes: 0 every call as expected; 1 some call failed; 2 could not connect or list.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import urllib.parse
import urllib.request
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters, UrlElicitationRequiredError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import ElicitResult

MODES = ("legacy", "auto", "2026-07-28")
# The longest the client waits for `notifications/elicitation/complete`, in seconds.
COMPLETE_WAIT = 10.0
# ... and without --expect-complete, where the notice has nowhere to travel (chapter 16).
NO_STREAM_WAIT = 1.0
URL_ELICITATION_REQUIRED = -32042


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
    )
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--url", help="Streamable HTTP endpoint, e.g. http://127.0.0.1:PORT/mcp")
    target.add_argument(
        "--stdio",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="spawn this command (and every argument after it) as a stdio server; must come last",
    )
    p.add_argument("--mode", choices=MODES, default="auto", help="protocol negotiation (default: auto)")
    p.add_argument("--args-file", help="JSON file: {tool name: arguments object}")
    p.add_argument(
        "--args",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="arguments for one tool, e.g. 'add={\"a\":1,\"b\":2}' (repeatable)",
    )
    p.add_argument(
        "--expect-error",
        action="append",
        default=[],
        metavar="NAME",
        help="this tool must answer isError: true (repeatable)",
    )
    p.add_argument("--only", action="append", default=[], metavar="NAME", help="call only these tools (repeatable)")
    p.add_argument(
        "--skip-unlisted",
        action="store_true",
        help="a tool named in the arguments but not listed by the server is skipped, not a failure "
        "(for one arguments file shared by servers with different tools)",
    )
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'K: V'",
        help="extra HTTP header on every request, e.g. 'Authorization: Bearer T' (repeatable; --url only)",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default: 30)")
    p.add_argument("--catalog", help="JSON file for --resources, --prompts, --completions (see CATALOG)")
    p.add_argument(
        "--shown",
        action="store_true",
        help="serverInfo must say who the server is to people: a title, a description, and a PNG icon "
        "as a data: URI (where the client read serverInfo)",
    )
    p.add_argument("--resources", action="store_true", help="list the resources and templates, read each")
    p.add_argument("--prompts", action="store_true", help="list the prompts, get each")
    p.add_argument("--completions", action="store_true", help="ask for the completions in the catalog")
    p.add_argument(
        "--ask",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="this tool asks the user: answer accept with JSON as content, then decline (repeatable)",
    )
    p.add_argument(
        "--connect",
        action="append",
        default=[],
        metavar="NAME",
        help="this tool sends the user to a URL: declined, then opened (GET, POST) and accepted, then not asked (repeatable)",
    )
    p.add_argument(
        "--expect-complete",
        action="store_true",
        help="--connect in a 2025-11-25 session: notifications/elicitation/complete must come before the retry",
    )
    p.add_argument(
        "--url-required",
        action="append",
        default=[],
        metavar="NAME",
        help="in a 2025-11-25 session this tool must answer -32042 with a URL, not opened (repeatable)",
    )
    p.add_argument(
        "--subscribe",
        action="append",
        default=[],
        metavar="URI=NAME",
        help="subscribe to URI, which tool NAME changes: one update per call, none once unsubscribed (repeatable)",
    )
    p.add_argument("--list-changed", metavar="NAME", help="switch tool NAME off and on (with --operator-off/-on)")
    p.add_argument("--operator-off", metavar="CMD", help="shell command that switches --list-changed's tool off")
    p.add_argument("--operator-on", metavar="CMD", help="shell command that switches it on again")
    p.add_argument(
        "--stream",
        action="append",
        default=[],
        metavar="NAME",
        help="call this tool with a progress callback: it must report progress and log messages (repeatable)",
    )
    ns = p.parse_args(argv)
    if ns.stdio is not None and not ns.stdio:
        p.error("--stdio needs a command")
    if ns.stdio is not None and ns.header:
        p.error("--header applies to --url only")
    return ns


def load_asks(ns: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """`--ask NAME=JSON`: the tools that ask the user, and the form content to accept with."""
    asks: dict[str, dict[str, Any]] = {}
    for item in ns.ask:
        name, sep, raw = item.partition("=")
        if not sep or not isinstance(json.loads(raw), dict):
            raise SystemExit(f"--ask wants NAME=JSON with a JSON object, got {item!r}")
        asks[name] = json.loads(raw)
    return asks


def load_arguments(ns: argparse.Namespace) -> dict[str, dict[str, Any]]:
    mapping: dict[str, Any] = {}
    if ns.args_file:
        with open(ns.args_file, encoding="utf-8") as f:
            mapping.update(json.load(f))
    for item in ns.args:
        name, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--args wants NAME=JSON, got {item!r}")
        mapping[name] = json.loads(raw)
    for name, value in mapping.items():
        if not isinstance(value, dict):
            raise SystemExit(f"arguments for {name!r} must be a JSON object, got {json.dumps(value)}")
    return mapping


def describe_block(block: Any) -> str:
    d = block.model_dump(by_alias=True, exclude_none=True)
    kind = d.get("type", "?")
    if kind == "text":
        text = d.get("text", "")
        return "text:" + json.dumps(text if len(text) <= 60 else text[:57] + "...")
    if kind in ("image", "audio"):
        return f"{kind}:{d.get('mimeType')}({len(d.get('data', ''))}b64)"
    if kind == "resource":
        return f"resource:{d.get('resource', {}).get('uri')}"
    if kind == "resource_link":
        return f"resource_link:{d.get('uri')}"
    return kind


def summarize(result: Any) -> str:
    parts = [describe_block(b) for b in result.content]
    line = "content=[" + ", ".join(parts) + "]"
    if result.structured_content is not None:
        s = json.dumps(result.structured_content, separators=(",", ":"))
        line += " structured=" + (s if len(s) <= 80 else s[:77] + "...")
    return line


def one_line(exc: BaseException) -> str:
    # anyio task groups wrap failures in ExceptionGroups; show the first leaf.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).replace("\n", " ")
    return f"{type(exc).__name__}: {text}"


async def run(ns: argparse.Namespace) -> int:
    arguments = load_arguments(ns)
    asks = load_asks(ns)
    expect_error = set(ns.expect_error)
    catalog: dict[str, Any] = {}
    if ns.catalog:
        with open(ns.catalog, encoding="utf-8") as f:
            catalog = json.load(f)

    if ns.url:
        if ns.header:
            headers = {}
            for h in ns.header:
                k, sep, v = h.partition(":")
                if not sep:
                    raise SystemExit(f"--header wants 'Name: value', got {h!r}")
                headers[k.strip()] = v.strip()
            server: Any = streamable_http_client(ns.url, http_client=create_mcp_http_client(headers=headers))
        else:
            server = ns.url
        target = ns.url
    else:
        server = StdioServerParameters(command=ns.stdio[0], args=ns.stdio[1:])
        target = "stdio:" + " ".join(ns.stdio)

    failures = 0
    logs: list[Any] = []

    async def on_log(params: Any) -> None:
        logs.append(params)

    # The URIs of every `notifications/resources/updated` the server sent, in order.
    updates: list[str] = []

    async def on_message(message: Any) -> None:
        notification = getattr(message, "root", message)
        if getattr(notification, "method", None) == "notifications/resources/updated":
            updates.append(str(notification.params.uri))
        if getattr(notification, "method", None) == "notifications/tools/list_changed":
            updates.append(TOOLS_LIST_CHANGED)
        if getattr(notification, "method", None) == "notifications/elicitation/complete":
            user.completed.append(notification.params.elicitation_id)

    # The user, for the tools that ask: what check_ask sets, and each question asked.
    user = Answers()
    try:
        async with Client(
            server,
            mode=ns.mode,
            read_timeout_seconds=ns.timeout,
            logging_callback=on_log,
            log_level="info",
            elicitation_callback=user.answer if asks or ns.connect else None,
            message_handler=on_message,
        ) as client:
            info = client.server_info
            who = f"{info.name} {info.version}" if info else "(no serverInfo)"
            tools, _ = await all_pages(client.list_tools, "tools")
            print(f"connected {target} mode={ns.mode} protocol={client.protocol_version} server={who} tools={len(tools)}")
            failures += check_hints(client, tools, ns.shown)

            listed = {t.name for t in tools}
            for name in sorted(set(arguments) - listed):
                if ns.skip_unlisted:
                    print(f"skip {name}: named in the arguments, not listed by this server")
                    continue
                print(f"FAIL {name}: named in the arguments but not listed by the server")
                failures += 1
            for name in sorted(expect_error - listed):
                print(f"FAIL {name}: named in --expect-error but not listed by the server")
                failures += 1
            for name in sorted(set(asks) - listed):
                print(f"FAIL {name}: named in --ask but not listed by the server")
                failures += 1
            for name in sorted(set(ns.connect + ns.url_required) - listed):
                print(f"FAIL {name}: named in --connect but not listed by the server")
                failures += 1
            for name in sorted(set(ns.only) - listed):
                print(f"FAIL {name}: named in --only but not listed by the server")
                failures += 1

            for tool in tools:
                skip = asks.keys() | set(ns.connect) | set(ns.url_required)
                if (ns.only and tool.name not in ns.only) or tool.name in skip:
                    continue
                args = arguments.get(tool.name, {})
                try:
                    result = await client.call_tool(tool.name, args)
                except Exception as exc:  # the report is the point: one line per failure
                    print(f"FAIL {tool.name} {json.dumps(args)}: {one_line(exc)}")
                    failures += 1
                    continue
                wanted = tool.name in expect_error
                if bool(result.is_error) == wanted:
                    tag = "ok   (isError as expected)" if wanted else "ok  "
                    print(f"{tag} {tool.name} {json.dumps(args)}: {summarize(result)}")
                else:
                    why = "expected isError: true" if wanted else "isError: true"
                    print(f"FAIL {tool.name} {json.dumps(args)}: {why}: {summarize(result)}")
                    failures += 1

            for name, content in asks.items():
                if name in listed:
                    failures += await check_ask(client, name, arguments.get(name, {}), content, user)
            for name in ns.connect:
                if name in listed and client.protocol_version == "2026-07-28":
                    failures += await check_connect(client, name, user)
                elif name in listed:
                    failures += await check_connect_in_session(client, name, user, ns.expect_complete)
            for name in ns.url_required:
                if name in listed:
                    failures += await check_url_required(client, name)
            for name in ns.stream:
                failures += await check_stream(client, name, logs)
            modern = client.protocol_version == "2026-07-28"
            if ns.resources:
                failures += await check_resources(client, catalog, modern)
            if ns.prompts:
                failures += await check_prompts(client, catalog)
            if ns.completions:
                failures += await check_completions(client, catalog)
            for item in ns.subscribe:
                uri, _, name = item.rpartition("=")
                failures += await check_subscribe(client, uri, name, modern, updates)
            if ns.list_changed:
                operator = (ns.list_changed, ns.operator_off, ns.operator_on)
                failures += await check_list_changed(client, operator, modern, updates)
    except Exception as exc:
        print(f"FAIL session {target} mode={ns.mode} (connect, list or transport): {one_line(exc)}")
        return 2
    print(f"{'FAILED' if failures else 'OK'}: {failures} failure(s)")
    return 1 if failures else 0


def check_hints(client: Any, tools: list[Any], shown: bool) -> int:
    """What a host shows and decides by, as the SDK parsed it (chapter 3): the server's
    instructions, where the client read an answer that carries them (`initialize`, or
    `server/discover`: the answers that say who the server is; a 2026-07-28 client that
    skips discovery reads neither), with `shown` (chapter 11) the title, description and
    icon of serverInfo in the same answer, and each tool's annotations: read-only and
    open-world always, and destructive and idempotent when it is not read-only."""
    failures = 0
    if client.server_info is not None:
        if client.instructions:
            print(f"ok   instructions: {len(client.instructions)} characters")
        else:
            print("FAIL instructions: none in the answer the client read")
            failures += 1
        if shown:
            failures += check_shown(client.server_info)
    for tool in tools:
        hints = tool.annotations
        stated = hints is not None and hints.read_only_hint is not None and hints.open_world_hint is not None
        if stated and hints.read_only_hint is False:
            stated = hints.destructive_hint is not None and hints.idempotent_hint is not None
        if not stated:
            print(f"FAIL {tool.name}: annotations {hints!r} leave a host to assume the worst")
            failures += 1
            continue
        said = "read-only" if hints.read_only_hint else (
            ("destructive" if hints.destructive_hint else "additive")
            + (", idempotent" if hints.idempotent_hint else ", not idempotent"))
        world = "open world" if hints.open_world_hint else "closed world"
        print(f"ok   {tool.name} annotations: {said}, {world}")
    return failures


class Answers:
    """The user at the keyboard: answers every question with `action` (and `content`)."""

    def __init__(self) -> None:
        self.action = "decline"
        self.content: dict[str, Any] | None = None
        self.questions: list[str] = []
        # URL mode: the URLs asked to open, and whether the user opens one before accepting.
        self.urls: list[str] = []
        self.opens = False
        # The `elicitationId`s of every `notifications/elicitation/complete` heard, in order.
        self.completed: list[str] = []

    async def answer(self, context: Any, params: Any) -> Any:
        self.questions.append(params.message)
        url = getattr(params, "url", None)
        if getattr(params, "mode", None) == "url" and url:
            self.urls.append(url)
            if self.opens and self.action == "accept":
                await anyio.to_thread.run_sync(open_as_a_browser, url)
            return ElicitResult(action=self.action)
        return ElicitResult(action=self.action, content=self.content if self.action == "accept" else None)



def check_shown(info: Any) -> int:
    """serverInfo as a host shows it (chapter 11): a title, a description, and an icon
    that is a PNG in a `data:` URI, which decodes to bytes that are a PNG (the magic bytes,
    as the spec asks a client to check before it renders one)."""
    problems = []
    if not info.title:
        problems.append("no title")
    if not info.description:
        problems.append("no description")
    icons = info.icons or []
    prefix = "data:image/png;base64,"
    if not icons or not icons[0].src.startswith(prefix) or icons[0].mime_type != "image/png":
        problems.append(f"no PNG icon as a data: URI (icons={icons!r:.120})")
    else:
        try:
            png = base64.b64decode(icons[0].src[len(prefix) :], validate=True)
        except ValueError as exc:
            png = b""
            problems.append(f"icon is not base64: {exc}")
        if not png.startswith(b"\x89PNG\r\n\x1a\n"):
            problems.append(f"icon's bytes are not a PNG: {png[:8]!r}")
    if problems:
        print(f"FAIL serverInfo as a host shows it: {'; '.join(problems)}")
        return 1
    print(f"ok   serverInfo shown: {info.title!r}, a description, a {len(png)}-byte PNG icon in a data: URI")
    return 0

def open_as_a_browser(url: str) -> None:
    """What the user does with the link: the page (GET), then its button (POST), from the
    page's own origin, as a browser sends it. Either failing raises."""
    parts = urllib.parse.urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc}"
    with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=10) as page:
        if page.status != 200 or b"<form" not in page.read():
            raise RuntimeError(f"GET {url}: no page with a form")
    button = urllib.request.Request(url, data=b"", method="POST", headers={"Origin": origin})
    with urllib.request.urlopen(button, timeout=10) as done:
        if done.status != 200:
            raise RuntimeError(f"POST {url}: {done.status}")


async def check_connect(client: Any, name: str, user: Answers) -> int:
    """Call NAME: declined (isError), then the link opened and accepted (the result), then
    not asked at all (the result again)."""
    steps = (("decline", False, "asked once, isError"), ("accept", True, "asked once, opened, the result"),
             ("accept", False, "not asked, the result"))
    already = False
    for i, (action, opens, wanted) in enumerate(steps):
        user.action, user.opens, user.content, user.questions, user.urls = action, opens, None, [], []
        if i == 1 and already:
            continue
        try:
            result = await client.call_tool(name, {})
        except Exception as exc:
            print(f"FAIL connect {name} ({wanted}): {one_line(exc)}")
            return 1
        asked = len(user.questions)
        if i == 0 and asked == 0 and not result.is_error:
            already = True  # connected by an earlier run against the same server
            print(f"ok   connect {name}: connected already, not asked: {summarize(result)}")
            continue
        fine = {0: asked == 1 and bool(result.is_error), 1: asked == 1 and not result.is_error,
                2: asked == 0 and not result.is_error}[i]
        if i < 2 and not all(u.startswith(("http://", "https://")) for u in user.urls):
            fine = False
        print(f"{'ok  ' if fine else 'FAIL'} connect {name} ({wanted}): urls {user.urls} {summarize(result)}")
        if not fine:
            return 1
    return 0


async def url_elicitation(client: Any, name: str) -> tuple[Any, Any]:
    """Call NAME in a 2025-11-25 session: (the result, None) when it answers one, (None, the
    one URL-mode elicitation of its -32042). Any other error raises."""
    try:
        return await client.call_tool(name, {}), None
    except MCPError as exc:
        if exc.code != URL_ELICITATION_REQUIRED:
            raise
        elicitations = UrlElicitationRequiredError.from_error(exc.error).elicitations
        if len(elicitations) != 1:
            raise RuntimeError(f"-32042 with {len(elicitations)} elicitations, not one") from exc
        return None, elicitations[0]


def looks_right(elicitation: Any) -> bool:
    """A URL-mode elicitation as the schema has it: mode url, an id, a message, an http(s) URL."""
    return (elicitation.mode == "url" and bool(elicitation.elicitation_id) and bool(elicitation.message)
            and elicitation.url.startswith(("http://", "https://")))


async def check_connect_in_session(client: Any, name: str, user: Answers, expect_complete: bool) -> int:
    """Call NAME in a 2025-11-25 session: -32042 with one URL-mode elicitation; the user
    opens the URL (GET, POST); the completion notice, when it comes (it must, with
    expect_complete); the retry, the result."""
    try:
        result, asked = await url_elicitation(client, name)
        if asked is None:
            fine = not result.is_error
            said = "connected already, not sent to a URL" if fine else "isError"
            print(f"{'ok  ' if fine else 'FAIL'} connect {name} in a session: {said}: {summarize(result)}")
            return 0 if fine else 1
        if not looks_right(asked):
            print(f"FAIL connect {name} in a session: -32042, but not a URL-mode elicitation: {asked!r}")
            return 1
        # The test plays the user; a real client MUST NOT open the URL without the user's consent.
        await anyio.to_thread.run_sync(open_as_a_browser, asked.url)
        wait = COMPLETE_WAIT if expect_complete else NO_STREAM_WAIT
        with anyio.move_on_after(wait):
            while asked.elicitation_id not in user.completed:
                await anyio.sleep(0.05)
        told = asked.elicitation_id in user.completed
        result, again = await url_elicitation(client, name)
    except Exception as exc:
        print(f"FAIL connect {name} in a session: {one_line(exc)}")
        return 1
    fine = again is None and not result.is_error and (told or not expect_complete)
    notice = "told by notifications/elicitation/complete" if told else f"no completion notice in {wait:g} s"
    outcome = summarize(result) if result is not None else "-32042 again"
    print(f"{'ok  ' if fine else 'FAIL'} connect {name} in a session: -32042 url {asked.url}, opened, {notice}; "
          f"the retry: {outcome}")
    return 0 if fine else 1


async def check_url_required(client: Any, name: str) -> int:
    """NAME in a 2025-11-25 session: -32042 with one URL-mode elicitation, not opened (or,
    connected already, the result)."""
    try:
        result, asked = await url_elicitation(client, name)
    except Exception as exc:
        print(f"FAIL url-required {name}: {one_line(exc)}")
        return 1
    if asked is None:
        fine = not result.is_error
        print(f"{'ok  ' if fine else 'FAIL'} url-required {name}: connected already: {summarize(result)}")
        return 0 if fine else 1
    fine = looks_right(asked)
    print(f"{'ok  ' if fine else 'FAIL'} url-required {name}: -32042 url {asked.url}, not opened")
    return 0 if fine else 1


async def check_ask(client: Any, name: str, args: dict[str, Any], content: dict[str, Any], user: Answers) -> int:
    """Call NAME answering its question accept (with CONTENT), then decline."""
    results = {}
    for action in ("accept", "decline"):
        user.action, user.content, user.questions = action, content, []
        try:
            result = await client.call_tool(name, args)
        except Exception as exc:
            print(f"FAIL ask {name} ({action}): {one_line(exc)}")
            return 1
        fine = len(user.questions) == 1 and not result.is_error
        print(f"{'ok  ' if fine else 'FAIL'} ask {name} ({action}): asked {user.questions} {summarize(result)}")
        if not fine:
            return 1
        results[action] = summarize(result)
    if results["accept"] == results["decline"]:
        print(f"FAIL ask {name}: the same result whether the user accepted or declined")
        return 1
    return 0


async def check_stream(client: Any, name: str, logs: list[Any]) -> int:
    """Call NAME with a progress callback: progress must come, increasing, and log messages
    exactly when the server announced `logging` (chapters 14 and 15 do not over HTTP in the
    handshake era, where no level could last: they send none there)."""
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    before = len(logs)
    try:
        result = await client.call_tool(name, {}, progress_callback=on_progress)
    except Exception as exc:
        print(f"FAIL stream {name}: {one_line(exc)}")
        return 1
    logged = [getattr(entry, "level", "?") for entry in logs[before:]]
    increasing = all(a < b for a, b in zip(progress, progress[1:]))
    # 2026-07-28: the client asked for log messages in every request (its `log_level`);
    # the handshake era: they are due exactly when the server announced `logging`.
    due = client.protocol_version == "2026-07-28" or client.server_capabilities.logging is not None
    fine = len(progress) >= 2 and increasing and bool(logged) == due and not result.is_error
    print(f"{'ok  ' if fine else 'FAIL'} stream {name}: progress={progress} logs={logged} {summarize(result)}")
    return 0 if fine else 1


async def updates_for(uri: str, updates: list[str], wanted: int, seconds: float) -> int:
    """Wait up to SECONDS for WANTED updates of URI (fewer if they do not come): how many came."""
    with anyio.move_on_after(seconds):
        while updates.count(uri) < wanted:
            await anyio.sleep(0.05)
    return updates.count(uri)


async def check_subscribe(client: Any, uri: str, name: str, modern: bool, updates: list[str]) -> int:
    """Subscribe to URI and call NAME: one update; unsubscribe and call it again: none."""
    if modern:
        try:
            await client.subscribe_resource(uri)
        except Exception as exc:
            code = getattr(getattr(exc, "error", None), "code", None)
            fine = code == -32601
            print(f"{'ok  ' if fine else 'FAIL'} subscribe {uri} (2026-07-28 has none, code {code}): {one_line(exc)}")
            return (0 if fine else 1) + await check_listen(client, uri, name)
        print(f"FAIL subscribe {uri}: answered in 2026-07-28, which has no resources/subscribe")
        return 1
    updates.clear()
    try:
        await client.subscribe_resource(uri)
        await client.call_tool(name, {})
        heard = await updates_for(uri, updates, 1, 5.0)
        await client.unsubscribe_resource(uri)
        await client.call_tool(name, {})
        after = await updates_for(uri, updates, heard + 1, 1.0)
    except Exception as exc:
        print(f"FAIL subscribe {uri}: {one_line(exc)}")
        return 1
    fine = heard == 1 and after == 1
    print(
        f"{'ok  ' if fine else 'FAIL'} subscribe {uri}: {heard} update(s) after {name}, "
        f"{after - heard} more once unsubscribed (expected 1, then 0)"
    )
    return 0 if fine else 1


async def check_listen(client: Any, uri: str, name: str) -> int:
    """2026-07-28: listen for URI and for the tool list's changes, call NAME: the
    acknowledgment honours both, one ResourceUpdated for URI comes; leave, call again."""
    try:
        async with client.listen(resource_subscriptions=[uri], tools_list_changed=True) as subscription:
            honored = subscription.honored
            acknowledged = list(honored.resource_subscriptions or []) == [uri] and honored.tools_list_changed
            await client.call_tool(name, {})
            with anyio.fail_after(5.0):
                event = await subscription.__anext__()
        # Left: over HTTP the stream is closed, over stdio `notifications/cancelled` sent.
        await client.call_tool(name, {})
    except Exception as exc:
        print(f"FAIL listen {uri}: {one_line(exc)}")
        return 1
    heard = getattr(event, "uri", None) == uri
    fine = acknowledged and heard
    print(
        f"{'ok  ' if fine else 'FAIL'} listen {uri}: acknowledged {honored.model_dump(by_alias=True, exclude_none=True)}"
        f" (expected {uri} and toolsListChanged), then {type(event).__name__} {getattr(event, 'uri', '')} after {name}"
    )
    return 0 if fine else 1


# What `updates` records for a `notifications/tools/list_changed` on the session's stream.
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"


async def operate(command: str) -> None:
    """The operator's step, a shell command: it must succeed."""
    process = await anyio.run_process(["sh", "-c", command], check=False)
    if process.returncode != 0:
        raise RuntimeError(f"operator command failed ({process.returncode}): {command}")


async def tool_names(client: Any) -> set[str]:
    tools, _ = await all_pages(client.list_tools, "tools")
    return {tool.name for tool in tools}


async def check_list_changed(client: Any, operator: tuple[str, str, str], modern: bool, updates: list[str]) -> int:
    """The operator switches NAME off, then on: each time the client must hear that the tool
    list changed, and its next list must leave NAME out, then hold it again."""
    name, off, on = operator
    if not (off and on):
        print("FAIL list_changed: --list-changed needs --operator-off and --operator-on")
        return 1
    seen: list[tuple[bool, bool]] = []  # (heard the notice, NAME listed), after off, after on
    try:
        await tool_names(client)  # a list the 2026-07-28 cache now holds, fresh for ttlMs
        if modern:
            async with client.listen(tools_list_changed=True) as subscription:
                acknowledged = bool(subscription.honored.tools_list_changed)
                for command in (off, on):
                    await operate(command)
                    with anyio.fail_after(5.0):
                        event = await subscription.__anext__()
                    seen.append((type(event).__name__ == "ToolsListChanged", name in await tool_names(client)))
        else:
            acknowledged = True  # the session's stream needs no acknowledgment
            for command in (off, on):
                before = updates.count(TOOLS_LIST_CHANGED)
                await operate(command)
                heard = await updates_for(TOOLS_LIST_CHANGED, updates, before + 1, 5.0) > before
                seen.append((heard, name in await tool_names(client)))
    except Exception as exc:
        print(f"FAIL list_changed {name}: {one_line(exc)}")
        return 1
    fine = acknowledged and seen == [(True, False), (True, True)]
    print(
        f"{'ok  ' if fine else 'FAIL'} list_changed {name}: acknowledged={acknowledged}, "
        f"(heard, listed) after off then on: {seen} (expected [(True, False), (True, True)])"
    )
    return 0 if fine else 1


async def all_pages(list_page: Any, field: str) -> tuple[list[Any], int]:
    """Every item of a paginated list, following nextCursor, and how many pages it took.

    The end is a page without nextCursor: "an empty string is a valid cursor" (2026-07-28).
    A cursor that comes back again would page forever, and is an error."""
    items: list[Any] = []
    cursor, seen, count = None, set(), 0
    while True:
        page = await list_page(cursor=cursor)
        count += 1
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            return items, count
        if cursor in seen:
            raise RuntimeError(f"{field}: nextCursor {cursor!r} came back again, on page {count}")
        seen.add(cursor)


def describe_contents(result: Any) -> str:
    parts = []
    for entry in result.contents:
        d = entry.model_dump(by_alias=True, exclude_none=True)
        body = f"text({len(d['text'])})" if "text" in d else f"blob({len(d.get('blob', ''))}b64)"
        parts.append(f"{d.get('uri')} {d.get('mimeType')} {body}")
    return "contents=[" + ", ".join(parts) + "]"


async def check_resources(client: Any, catalog: dict[str, Any], modern: bool) -> int:
    """List resources and templates, read every listed resource and the catalog's reads."""
    failures = 0
    resources, pages = await all_pages(client.list_resources, "resources")
    templates, _ = await all_pages(client.list_resource_templates, "resource_templates")
    uris = [str(r.uri) for r in resources]
    print(f"resources={len(resources)} in {pages} pages, templates={[t.uri_template for t in templates]}")
    if not resources or not templates:
        print("FAIL resources: expected at least one resource and one template")
        failures += 1
    # Paged by nextCursor, every resource once: none lost, none twice.
    expected = catalog.get("resourceList", {})
    missing = [uri for uri in expected.get("uris", []) if uri not in uris]
    twice = sorted({uri for uri in uris if uris.count(uri) > 1})
    if pages < expected.get("minPages", 1) or missing or twice:
        print(
            f"FAIL resources/list: {pages} pages (at least {expected.get('minPages', 1)} expected), "
            f"missing {missing}, listed twice {twice}"
        )
        failures += 1
    else:
        print(f"ok   resources/list paged: {pages} pages, each resource once: {uris}")
    reads = {str(r.uri): "ok" for r in resources} | catalog.get("resourceReads", {})
    not_found = -32602 if modern else -32002
    for uri, expected in reads.items():
        try:
            result = await client.read_resource(uri)
        except Exception as exc:
            code = getattr(getattr(exc, "error", None), "code", None)
            if expected == "not found" and code == not_found:
                print(f"ok   (not found, {code}) read {uri}: {one_line(exc)}")
            else:
                print(f"FAIL read {uri}: {one_line(exc)} (code {code}, expected {expected})")
                failures += 1
            continue
        fine = expected == "ok" and result.contents and all(
            getattr(e, "text", None) is not None or getattr(e, "blob", None) for e in result.contents
        )
        print(f"{'ok  ' if fine else 'FAIL'} read {uri}: {describe_contents(result)} (expected {expected})")
        failures += 0 if fine else 1
    return failures


async def check_prompts(client: Any, catalog: dict[str, Any]) -> int:
    """List the prompts and get each, with the catalog's arguments."""
    failures = 0
    prompts, _ = await all_pages(client.list_prompts, "prompts")
    print(f"prompts={[p.name for p in prompts]}")
    if not prompts:
        print("FAIL prompts: none listed")
        failures += 1
    arguments = catalog.get("promptArguments", {})
    for prompt in prompts:
        args = arguments.get(prompt.name, {})
        try:
            result = await client.get_prompt(prompt.name, args)
        except Exception as exc:
            print(f"FAIL get {prompt.name} {json.dumps(args)}: {one_line(exc)}")
            failures += 1
            continue
        kinds = [m.content.type for m in result.messages]
        fine = bool(result.messages)
        print(f"{'ok  ' if fine else 'FAIL'} get {prompt.name} {json.dumps(args)}: messages={kinds}")
        failures += 0 if fine else 1
    return failures


async def check_completions(client: Any, catalog: dict[str, Any]) -> int:
    """Each completion in the catalog answers exactly the values expected."""
    from mcp.types import PromptReference, ResourceTemplateReference

    failures = 0
    for case in catalog.get("completions", []):
        ref = case["ref"]
        reference = (
            PromptReference(type="ref/prompt", name=ref["name"])
            if ref["type"] == "ref/prompt"
            else ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
        )
        what = f"complete {ref.get('name') or ref.get('uri')} {case['argument']}={case['value']!r}"
        try:
            result = await client.complete(reference, {"name": case["argument"], "value": case["value"]})
        except Exception as exc:
            print(f"FAIL {what}: {one_line(exc)}")
            failures += 1
            continue
        fine = result.completion.values == case["values"]
        print(f"{'ok  ' if fine else 'FAIL'} {what}: values={result.completion.values} (expected {case['values']})")
        failures += 0 if fine else 1
    return failures


def main() -> None:
    ns = parse_args(sys.argv[1:])
    sys.exit(anyio.run(run, ns))


if __name__ == "__main__":
    main()
