#!/usr/bin/env python3
"""Drive a workbook server with the official Python MCP SDK (`mcp` 2.x).

Connects over Streamable HTTP (`--url`) or spawns a stdio server (`--stdio CMD ARGS...`),
lists the tools, calls every listed tool once, prints one line per call and exits
non-zero if anything failed.

    .venv/bin/python python_client.py --url http://127.0.0.1:PORT/mcp --mode legacy
    .venv/bin/python python_client.py --mode auto --args-file args.json --stdio target/debug/ch09 --stdio-flag
    .venv/bin/python python_client.py --url URL --args 'add={"a": 1, "b": 2}' --expect-error boom

Arguments for the calls: a JSON object mapping tool name -> arguments object, from
`--args-file FILE` and/or `--args NAME=JSON` (repeatable, wins over the file). A tool that
is listed by the server but has no entry is called with `{}`. A tool named in the
mapping that the server does not list is a failure (it catches a renamed tool).

Modes (the SDK's `Client(mode=...)`):
  legacy      `initialize` handshake (2025-11-25) only
  auto        `server/discover` first, falls back to `initialize` on an error answer
  2026-07-28  the stateless revision only, no probe, no handshake

A call fails when the SDK raises (JSON-RPC error, transport error, `structuredContent`
that does not match the tool's `outputSchema`) or when the result has `isError: true`,
unless the tool is named with `--expect-error`, which inverts the latter.

Exit codes: 0 every call as expected; 1 some call failed; 2 could not connect or list.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MODES = ("legacy", "auto", "2026-07-28")


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
        "--header",
        action="append",
        default=[],
        metavar="'K: V'",
        help="extra HTTP header on every request, e.g. 'Authorization: Bearer T' (repeatable; --url only)",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default: 30)")
    ns = p.parse_args(argv)
    if ns.stdio is not None and not ns.stdio:
        p.error("--stdio needs a command")
    if ns.stdio is not None and ns.header:
        p.error("--header applies to --url only")
    return ns


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
    expect_error = set(ns.expect_error)

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
    try:
        async with Client(server, mode=ns.mode, read_timeout_seconds=ns.timeout) as client:
            info = client.server_info
            who = f"{info.name} {info.version}" if info else "(no serverInfo)"
            tools = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            print(f"connected {target} mode={ns.mode} protocol={client.protocol_version} server={who} tools={len(tools)}")

            listed = {t.name for t in tools}
            for name in sorted(set(arguments) - listed):
                print(f"FAIL {name}: named in the arguments but not listed by the server")
                failures += 1
            for name in sorted(expect_error - listed):
                print(f"FAIL {name}: named in --expect-error but not listed by the server")
                failures += 1
            for name in sorted(set(ns.only) - listed):
                print(f"FAIL {name}: named in --only but not listed by the server")
                failures += 1

            for tool in tools:
                if ns.only and tool.name not in ns.only:
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
    except Exception as exc:
        print(f"FAIL session {target} mode={ns.mode} (connect, list or transport): {one_line(exc)}")
        return 2
    print(f"{'FAILED' if failures else 'OK'}: {failures} failure(s)")
    return 1 if failures else 0


def main() -> None:
    ns = parse_args(sys.argv[1:])
    sys.exit(anyio.run(run, ns))


if __name__ == "__main__":
    main()
