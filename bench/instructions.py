#!/usr/bin/env python3
"""Count the instructions one `tools/call PingME` costs a server, under callgrind.

    python3 bench/instructions.py BINARY [SERVER FLAGS...]        e.g.
    python3 bench/instructions.py target/release/ch10-starter --workers 2
    python3 bench/instructions.py bench/target/release/bench-rmcp-server

It starts the server under `valgrind --tool=callgrind`, sends N requests over one
keep-alive connection, has callgrind dump its counts, sends N more, dumps again,
and divides the difference by N: start-up and first-request costs cancel out, and
what is left is the steady cost of one request, in instructions. Unlike a time,
the count does not depend on what else the machine is doing, so two servers can
be compared on a busy machine. The second dump is kept in bench/target/profile/
for `callgrind_annotate --inclusive=yes FILE | head -60`, which shows where the
instructions go. (Time also goes to waiting and to switching threads, which
callgrind does not count: the load test measures that.)

The server must accept `--bind ADDR`. bench.py uses `count()` for its table.
Standard library only; needs valgrind.
"""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"PingME","arguments":{}}}'
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
N = 2000


def send(port: int, count: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for _ in range(count):
        connection.request("POST", "/mcp", body=BODY, headers=HEADERS)
        response = connection.getresponse()
        body = response.read()
        if response.status != 200 or b"BISMILLAH" not in body:
            sys.exit(f"unexpected answer: {response.status} {body[:200]!r}")
    connection.close()


def total_ir(path: Path) -> int:
    for line in path.read_text().splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def count(command: list[str], port: int, name: str, cwd: Path | None = None, n: int = N) -> tuple[float, Path]:
    """Instructions per request of the server `command` (already told to listen on
    `port`), and the callgrind dump of the measured requests."""
    out_dir = BENCH / "target" / "profile"
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob(f"{name}.callgrind*"):
        old.unlink()
    prefix = out_dir / f"{name}.callgrind"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={prefix}.%p", *command]
    server = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:  # valgrind starts slowly: wait until the port answers
            try:
                send(port, 1)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not start under valgrind")
                time.sleep(0.2)
        counts = []
        for _ in (1, 2):
            send(port, n)
            time.sleep(0.5)
            subprocess.run(["callgrind_control", "--dump", str(server.pid)], check=True, capture_output=True)
            time.sleep(1.0)
            dumps = sorted(out_dir.glob(f"{name}.callgrind.{server.pid}.*"), key=lambda p: p.stat().st_mtime)
            counts.append((dumps[-1], total_ir(dumps[-1])))
        # Each dump holds what was counted since the one before: the second holds
        # exactly n requests, with start-up and first-request costs left in the first.
        dump, instructions = counts[1]
        return instructions / n, dump
    finally:
        server.terminate()
        server.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    if len(sys.argv) < 2 or not shutil.which("valgrind"):
        sys.exit(__doc__)
    port = free_port()
    name = Path(sys.argv[1]).name
    per_request, dump = count([*sys.argv[1:], "--bind", f"127.0.0.1:{port}"], port, name)
    print(f"{name}: {per_request:,.0f} instructions per request ({N} requests after {N} to warm up)\n"
          f"where they go: callgrind_annotate --inclusive=yes {dump} | head -60")


if __name__ == "__main__":
    main()
