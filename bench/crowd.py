#!/usr/bin/env python3
"""A crowd of idle and slow connections against the base, and a client that talks.

The base page (book/src/base.md, "A crowd at the door") gives its figures. Two parts:

- footprint: what one connection costs the server, read from /proc/PID/status
  (VmRSS, VmHWM, VmSize, Threads) and /proc/PID/fd: with no connection, then with
  N connections idle, N with half a head sent, N with half a body sent, and N that
  each had a deeply nested request answered (which leaves its thread's stack touched);
- attacks: a crowd holds its connections open (reopening each one the server closes,
  as slowloris does) while two normal clients call `tools/call PingME`, one on a new
  connection per call and one on a kept-alive connection that it reopens when the
  server has closed it (as httpx and urllib3 do). Reported: how many of the normal
  calls were answered 200, their latency, and the server's peak threads, open files
  and memory during the attack.

The attacks: `idle` (2,000 connections that never send a byte), `slowloris` (300
connections, one byte of head every 3 s), `slow-body` (300 connections, a whole
head, then one byte of body every 3 s), `mix` (all of these, and clients that send
requests and never read an answer).

Only loopback; standard library only. Runs the release build of the starter
(`cargo build --release --bin ch10-starter`) unless given --starter.

    python3 bench/crowd.py                 # everything, 30 s per attack (~5 min)
    python3 bench/crowd.py --quick         # 8 s per attack
    python3 bench/crowd.py --attacks idle --seconds 60
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import resource
import select
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINGME = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"PingME","arguments":{}}}'


def request(extra: str = "", body: bytes = PINGME) -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{extra}Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The server and what /proc says of it.
# ---------------------------------------------------------------------------


class Server:
    def __init__(self, binary: Path, args: list[str]):
        self.process = subprocess.Popen(
            [str(binary), "--bind", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        line = self.process.stdout.readline()
        found = re.search(r"http://([\d.]+):(\d+)/", line)
        if not found:
            self.stop()
            raise RuntimeError(f"the server said {line!r}, not where it listens")
        self.address = (found.group(1), int(found.group(2)))
        self.pid = self.process.pid

    def status(self) -> dict[str, int]:
        """VmRSS, VmHWM, VmSize (KiB), Threads, and open files."""
        values = {}
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM", "VmSize", "Threads"):
                    values[key] = int(value.split()[0])
        values["files"] = len(os.listdir(f"/proc/{self.pid}/fd"))
        return values

    def settle(self, seconds: float = 1.0) -> dict[str, int]:
        time.sleep(seconds)
        return self.status()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def call(address, timeout: float = 10.0, extra: str = "Connection: close\r\n") -> tuple[str, float]:
    """One PingME on a new connection: ("200", or what went wrong; seconds)."""
    started = time.monotonic()
    try:
        with socket.create_connection(address, timeout=timeout) as s:
            s.sendall(request(extra))
            answer = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        return outcome(answer), time.monotonic() - started
    except OSError as error:
        return type(error).__name__, time.monotonic() - started


def outcome(answer: bytes) -> str:
    if answer.startswith(b"HTTP/1.1 200") and b"BISMILLAH" in answer:
        return "200"
    return answer[9:12].decode(errors="replace") or "closed, no answer"


# ---------------------------------------------------------------------------
# The crowd: connections held open, each reopened when the server closes it.
# ---------------------------------------------------------------------------

SLOW_HEAD = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nX-Slow: "
SLOW_BODY_HEAD = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"


class Crowd(threading.Thread):
    """`count` connections of one `kind`, kept open: every `every` seconds, each one
    the server has closed is reopened, and each slow one sends its next byte.

    kinds: idle (never sends), head (a head, a byte at a time), body (a whole head,
    then its body a byte at a time), deaf (sends requests, never reads an answer).
    """

    def __init__(self, address, kind: str, count: int, every: float):
        super().__init__(daemon=True)
        self.address, self.kind, self.count, self.every = address, kind, count, every
        self.sockets: list[socket.socket | None] = [None] * count
        self.opened = 0
        self.closed_by_server = 0
        self.halt = threading.Event()

    def open(self, index: int) -> None:
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(self.address)
        except BlockingIOError:
            pass  # in progress: the first send or recv tells
        except OSError:
            s.close()
            return
        self.sockets[index] = s
        self.opened += 1

    def first_bytes(self) -> bytes:
        return {"idle": b"", "head": b"", "body": SLOW_BODY_HEAD, "deaf": request() * 200}[self.kind]

    def gone(self, s: socket.socket) -> bool:
        """Whether the server has closed this connection (what it sent is read and dropped)."""
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    return True
        except BlockingIOError:
            return False
        except OSError as error:
            return error.errno not in (errno.ENOTCONN,)  # still connecting: not gone

    def tick(self, fresh: set[int]) -> None:
        for index, s in enumerate(self.sockets):
            if s is None:
                self.open(index)
                fresh.add(index)
                continue
            if self.kind != "deaf" and self.gone(s):
                s.close()
                self.closed_by_server += 1
                self.sockets[index] = None
                self.open(index)
                fresh.add(index)
                continue
            try:
                if index in fresh:
                    if self.first_bytes():
                        s.send(self.first_bytes())
                    fresh.discard(index)
                if self.kind in ("head", "body"):
                    s.send(b"a")
            except BlockingIOError:
                pass
            except OSError as error:
                if error.errno in (errno.ENOTCONN, errno.EAGAIN):
                    continue  # not connected yet: next round
                s.close()
                self.closed_by_server += 1
                self.sockets[index] = None

    def run(self) -> None:
        fresh: set[int] = set()
        while not self.halt.is_set():
            self.tick(fresh)
            self.halt.wait(self.every)

    def stop(self) -> None:
        self.halt.set()
        self.join()
        for s in self.sockets:
            if s is not None:
                s.close()


def readable(connection: socket.socket) -> bool:
    poller = select.poll()  # not select(): a crowd's descriptors go past 1024
    poller.register(connection, select.POLLIN)
    return bool(poller.poll(0))


class NormalClient(threading.Thread):
    """Calls PingME every `pause` seconds until stopped: on a new connection per call,
    or on one kept-alive connection, reopened when the server has closed it."""

    def __init__(self, address, keep_alive: bool, pause: float = 0.05):
        super().__init__(daemon=True)
        self.address, self.keep_alive, self.pause = address, keep_alive, pause
        self.answered, self.failed, self.latencies, self.failures = 0, 0, [], {}
        self.halt = threading.Event()

    def run(self) -> None:
        connection = None
        while not self.halt.is_set():
            if self.keep_alive:
                ok, seconds, connection = self.call_kept_alive(connection)
            else:
                ok, seconds = call(self.address)
            self.latencies.append(seconds)
            if ok == "200":
                self.answered += 1
            else:
                self.failed += 1
                self.failures[ok] = self.failures.get(ok, 0) + 1
            self.halt.wait(self.pause)
        if connection:
            connection.close()

    def call_kept_alive(self, connection):
        started = time.monotonic()
        try:
            # Before reusing a connection, look whether the server has closed it.
            if connection is not None and readable(connection):
                connection.close()
                connection = None
            if connection is None:
                connection = socket.create_connection(self.address, timeout=10)
            connection.sendall(request())
            answer = b""
            while b"\r\n\r\n" not in answer:
                chunk = connection.recv(65536)
                if not chunk:
                    raise ConnectionError("closed before the answer")
                answer += chunk
            head, _, body = answer.partition(b"\r\n\r\n")
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            while len(body) < length:
                chunk = connection.recv(65536)
                if not chunk:
                    raise ConnectionError("closed in the answer")
                body += chunk
            return outcome(head + b"\r\n\r\n" + body), time.monotonic() - started, connection
        except (OSError, AttributeError) as error:
            if connection is not None:
                connection.close()
            return type(error).__name__, time.monotonic() - started, None


class Sampler(threading.Thread):
    """Peak threads, open files and VmRSS of the server, every 100 ms."""

    def __init__(self, server: Server):
        super().__init__(daemon=True)
        self.server, self.peak, self.halt = server, {}, threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                for key, value in self.server.status().items():
                    self.peak[key] = max(self.peak.get(key, 0), value)
            except OSError:
                pass
            self.halt.wait(0.1)


ATTACKS = {
    "idle": [("idle", 2000, 1.0)],
    "slowloris": [("head", 300, 3.0)],
    "slow-body": [("body", 300, 3.0)],
    "mix": [("idle", 1000, 1.0), ("head", 300, 3.0), ("body", 300, 3.0), ("deaf", 50, 1.0)],
}


def attack(binary: Path, name: str, seconds: float, args: list[str]) -> dict:
    server = Server(binary, args)
    try:
        before = server.settle(0.5)
        crowds = [Crowd(server.address, kind, count, every) for kind, count, every in ATTACKS[name]]
        sampler = Sampler(server)
        sampler.start()
        for crowd in crowds:
            crowd.start()
        time.sleep(3)  # the crowd is in
        clients = [NormalClient(server.address, keep_alive=False), NormalClient(server.address, keep_alive=True)]
        for client in clients:
            client.start()
        time.sleep(seconds)
        for client in clients:
            client.halt.set()
        for client in clients:
            client.join()
        during = server.status()
        for crowd in crowds:
            crowd.stop()
        sampler.halt.set()
        sampler.join()
        # Nothing left behind: threads and files back where they were. Doors linger 2 s
        # after a close; a connection the kernel completed after its client had gone
        # (a SYN flood's side effect) waits out the keep-alive timeout (30 s).
        stopped = time.monotonic()
        after = server.status()
        while (after["Threads"], after["files"]) != (before["Threads"], before["files"]):
            if time.monotonic() - stopped > 40:
                break
            time.sleep(0.5)
            after = server.status()
        back_after = round(time.monotonic() - stopped, 1)
        result = {
            "attack": name,
            "crowd": [f"{count} {kind}" for kind, count, _ in ATTACKS[name]],
            "crowd_connections_opened": sum(crowd.opened for crowd in crowds),
            "crowd_connections_closed_by_server": sum(crowd.closed_by_server for crowd in crowds),
            "seconds": seconds,
            "before": before,
            "end_of_attack": during,
            "peak": sampler.peak,
            "after": after,
            "back_to_start_after_s": back_after,
            "alive": server.process.poll() is None,
        }
        for client in clients:
            label = "kept_alive" if client.keep_alive else "new_connection"
            latencies = sorted(client.latencies) or [0.0]
            total = client.answered + client.failed
            result[label] = {
                "calls": total,
                "answered": client.answered,
                "answered_percent": round(100 * client.answered / total, 2) if total else 0.0,
                "p50_ms": round(1000 * statistics.median(latencies), 2),
                "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2),
                "failures": client.failures,
            }
        return result
    finally:
        server.stop()


# ---------------------------------------------------------------------------
# Footprint: what a connection costs.
# ---------------------------------------------------------------------------


def deep_request(depth: int, shape: str = "arrays") -> bytes:
    """A tools/call whose arguments nest `depth` arrays (or objects) deep; serde_json
    reads 127 levels and refuses the 128th."""
    if shape == "arrays":
        nested = "[" * depth + "]" * depth
    else:
        nested = '{"a":' * depth + "1" + "}" * depth
    body = f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"PingME","arguments":{{"a":{nested}}}}}}}'
    return request(body=body.encode())


def footprint(binary: Path, count: int, args: list[str]) -> dict:
    server = Server(binary, args)
    states = {}
    try:
        states["none"] = server.settle(0.5)

        def hold(first: bytes, wait_for_answer: bool = False) -> dict:
            held = []
            for _ in range(count):
                s = socket.create_connection(server.address, timeout=10)
                if first:
                    s.sendall(first)
                if wait_for_answer:
                    s.recv(65536)
                held.append(s)
            status = server.settle(1.0)
            for s in held:
                s.close()
            server.settle(3.0)  # the doors linger up to 2 s after a close
            return status

        states["idle"] = hold(b"")
        states["half a head"] = hold(SLOW_HEAD + b"a" * 200)
        states["half a body (32 KiB of 64 KiB)"] = hold(
            b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 65536\r\n\r\n" + b"a" * 32768
        )
        states["answered a 127-deep request, then idle"] = hold(deep_request(127), wait_for_answer=True)
        states["after"] = server.status()
        states["alive"] = server.process.poll() is None
    finally:
        server.stop()
    base = states["none"]
    per_connection = {}
    for name, status in states.items():
        if name in ("none", "after", "alive"):
            continue
        per_connection[name] = {
            "VmRSS KiB": round((status["VmRSS"] - base["VmRSS"]) / count, 1),
            "VmSize KiB": round((status["VmSize"] - base["VmSize"]) / count, 1),
            "threads": round((status["Threads"] - base["Threads"]) / count, 2),
            "files": round((status["files"] - base["files"]) / count, 2),
        }
    return {"connections": count, "states": states, "per_connection": per_connection}


def deepest_survived(binary: Path) -> bool:
    """Whether the server lives through requests nested as deep as serde_json reads
    (127 levels, 128 refused as too deep) and deeper: a door's stack must hold them."""
    server = Server(binary, [])
    try:
        for shape in ("arrays", "objects"):
            for depth in (127, 128, 2000):
                try:
                    with socket.create_connection(server.address, timeout=10) as s:
                        s.sendall(deep_request(depth, shape))
                        if not s.recv(65536).startswith(b"HTTP/1.1 "):  # answered at all
                            return False
                except OSError:
                    return False
        return server.process.poll() is None
    finally:
        server.stop()


# ---------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starter", help="the binary to run (default: release ch10-starter, built first)")
    parser.add_argument("--attacks", default=",".join(ATTACKS), help="which attacks, comma-separated")
    parser.add_argument("--seconds", type=float, default=30, help="how long the normal clients call during each attack")
    parser.add_argument("--quick", action="store_true", help="8 s per attack")
    parser.add_argument("--footprint", type=int, default=200, metavar="N", help="connections per footprint state (0: skip)")
    parser.add_argument("--args", default="", help="more flags for the server, space-separated")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args()

    # A crowd of 2,000 needs more open files than many systems allow by default.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    if args.starter:
        binary = Path(args.starter)
    else:
        log("building the starter (release)")
        subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "ch10-starter"], cwd=ROOT, check=True)
        binary = ROOT / "target" / "release" / "ch10-starter"
    server_args = args.args.split()
    seconds = 8 if args.quick else args.seconds
    results = {"binary": str(binary), "args": server_args, "load_before": os.getloadavg()}

    if args.footprint:
        results["footprint"] = footprint(binary, args.footprint, server_args)
        results["footprint"]["deepest requests survived"] = deepest_survived(binary)
        log(f"footprint of one connection: {json.dumps(results['footprint']['per_connection'])}")
        log(f"the deepest requests survived: {results['footprint']['deepest requests survived']}")

    results["attacks"] = []
    for name in filter(None, args.attacks.split(",")):
        log(f"attack: {name}, {seconds} s")
        result = attack(binary, name, seconds, server_args)
        results["attacks"].append(result)
        log(
            f"  new connection: {result['new_connection']['answered']}/{result['new_connection']['calls']} "
            f"({result['new_connection']['answered_percent']}%) {result['new_connection']['failures'] or ''}, "
            f"p99 {result['new_connection']['p99_ms']} ms; "
            f"kept alive: {result['kept_alive']['answered']}/{result['kept_alive']['calls']} "
            f"({result['kept_alive']['answered_percent']}%) {result['kept_alive']['failures'] or ''}, "
            f"p99 {result['kept_alive']['p99_ms']} ms; "
            f"peak threads {result['peak'].get('Threads')}, files {result['peak'].get('files')}, "
            f"VmRSS {result['peak'].get('VmRSS')} KiB, VmHWM {result['end_of_attack'].get('VmHWM')} KiB; "
            f"crowd reopened {result['crowd_connections_closed_by_server']}; alive: {result['alive']}; "
            f"threads and files back to the start after {result['back_to_start_after_s']} s"
        )
    results["load_after"] = os.getloadavg()
    text = json.dumps(results, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
