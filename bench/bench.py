#!/usr/bin/env python3
"""Measure the workbook's starter side by side with its peers, on this machine, in one run.

Run it through `bench/run.sh` (which installs wrk and the Python peer first); the
flags are the same. What it measures, for each server:

- throughput and latency (p50, p99) of `tools/call PingME` over keep-alive
  connections at 1, 16 and 64 concurrent clients (wrk, closed loop);
- resident memory (RSS, the whole process tree) idle after start-up, and its peak
  under load;
- cold build time from an empty target directory, and the release binary's size.

The servers: the workbook's starter (or, with --starter, any workbook binary that
has PingME), the same two tools on the official Rust SDK (rmcp) and on the
official Python SDK (mcp), and two ceilings answering one fixed response: the
workbook's bare base (its door and tiny_http writing the answer), and tiny_http
alone, clients talking to it with no door (what the door costs). Every run starts each server afresh and measures the
servers in turn, so a slow drift of the machine touches all of them alike; each
peer's figures are divided by the starter's *from the same run* (paired ratios),
and the report gives the median ratio with its min and max over the runs.

Chapter 20 (the last chapter, every piece of Part III) has rows of its own, not run by
default (`--servers fleet,fleet_redis,fleet_approval,fleet_redis_approval`): its state
store in the process, and in a Redis the harness starts for each run (redis-server on
a free loopback port, no persistence, pinned to the server's CPU, stopped by its pid).
`PingME` with the store is one round trip to Redis (the rate limit counts every tool
call there); an approval's retry is two (the rate limit, and the record that the state
is used). The approval rows send one retry, answered yes, over and over: the first
runs the payroll, every later one is refused as used, after the same round trips.

Only loopback; every load is bounded by its duration. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime
import json
import os
import platform
import re
import resource
import shutil
import socket
import statistics
import subprocess
import tomllib
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import instructions  # bench/instructions.py

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
LUA = BENCH / "pingme.lua"
PINGME = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"PingME","arguments":{}}}'
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(command: list[str], cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=env, text=True, capture_output=True, check=False)


# ---------------------------------------------------------------------------
# Processes: start, wait until they answer, measure, stop.
# ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[int]:
    """pid and all its descendants (uvicorn's workers are children)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def rss_bytes(pid: int) -> int:
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process tree so far (all threads)."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / CLK_TCK


def context_switches(pid: int) -> int:
    """Voluntary and involuntary context switches so far, over every thread of the tree."""
    total = 0
    for p in tree(pid):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/status") as f:
                    for line in f:
                        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                            total += int(line.split()[1])
            except OSError:
                pass
    return total


def post_pingme(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=PINGME, headers=HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, response.read()


class Running:
    """A server process started for one run, stopped by its own pid."""

    def __init__(self, command: list[str], cwd: Path, url: str, log_path: Path):
        self.url = url
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            command, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_ready(self, deadline_s: float = 60.0) -> None:
        start = time.monotonic()
        problem = "no answer"
        while time.monotonic() - start < deadline_s:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; see {self.log.name}")
            try:
                status, body = post_pingme(self.url)
                if status == 200 and b"BISMILLAH" in body:
                    return
                problem = f"status {status}, body {body[:200]!r}"
                break
            except OSError as e:
                problem = str(e)
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.url} did not answer PingME with BISMILLAH: {problem}")

    def stop(self) -> None:
        if self.process.poll() is None:
            # The server's own process group (start_new_session): uvicorn's workers too.
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait()
        self.log.close()


class Sampler(threading.Thread):
    """Samples the server tree's RSS every 100 ms while a load runs; keeps the peak."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.peak, self.halt = pid, 0, threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self.halt.wait(0.1)

    def finish(self) -> int:
        self.halt.set()
        self.join()
        return max(self.peak, rss_bytes(self.pid))


def wrk(url: str, connections: int, seconds: float, client_cpus: str | None, script: Path = LUA) -> dict:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "-s", str(script), url]
    if client_cpus:
        command = ["taskset", "-c", client_cpus, *command]
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = process.communicate(timeout=seconds + 60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next((l for l in out.splitlines() if l.startswith("BENCH ")), None)
    if process.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({process.returncode}): {err.strip() or out.strip()}")
    result = json.loads(line[len("BENCH ") :])
    result["wall_s"] = time.monotonic() - started
    # wrk's own CPU time: near 100% of its one thread means the client, not the
    # server, set the pace.
    result["client_cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return result


# ---------------------------------------------------------------------------
# The servers.
# ---------------------------------------------------------------------------


class Server:
    key = ""
    label = ""

    def config(self) -> str:
        raise NotImplementedError

    def prepare(self, args) -> None:
        """Build (cold, timed, when asked) and find what to run."""

    def command(self, port: int) -> list[str]:
        raise NotImplementedError

    def cwd(self) -> Path:
        return ROOT

    def around(self, scratch: str, cpus: str | None):
        """What the server needs running beside it for one run (chapter 20's Redis)."""
        return contextlib.nullcontext()

    def script(self, url: str, scratch: str) -> Path:
        """The wrk script for the request this row measures, once the server answers."""
        return LUA

    def store_cpu_seconds(self) -> float | None:
        """The CPU time of what runs beside the server (chapter 20's Redis) so far."""
        return None


class CargoServer(Server):
    """A Rust server built by cargo in release mode."""

    manifest: Path
    package_args: list[str]
    binary_name: str

    def __init__(self):
        self.binary: Path | None = None
        self.builds: list[float] = []
        self.size: int | None = None
        self.build_env: dict[str, str] = {}

    locked = True

    def build_command(self) -> list[str]:
        # The starter's copy carries the workbook's whole Cargo.lock; cargo drops the
        # entries it does not use (the versions it uses stay as locked), so no --locked.
        locked = ["--locked"] if self.locked else []
        return ["cargo", "build", "--release", *locked, "--manifest-path", str(self.manifest), *self.package_args]

    def prepare(self, args) -> None:
        # Downloads are not build time.
        run(["cargo", "fetch", *(["--locked"] if self.locked else []), "--manifest-path", str(self.manifest)])
        if args.build_runs == 0:
            # Warm build in the usual target directory: for trying the harness quickly.
            result = run(self.build_command(), env=dict(os.environ, **self.build_env))
            if result.returncode != 0:
                raise RuntimeError(f"build of {self.label} failed:\n{result.stderr}")
            target = Path(json.loads(run(["cargo", "metadata", "--format-version", "1", "--no-deps", "--manifest-path", str(self.manifest)]).stdout)["target_directory"])
            self.binary = target / "release" / self.binary_name
        else:
            for i in range(args.build_runs):
                target = Path(tempfile.mkdtemp(prefix=f"bench-{self.key}-", dir=args.scratch))
                env = dict(os.environ, CARGO_TARGET_DIR=str(target), **self.build_env)
                log(f"  cold build {i + 1}/{args.build_runs} of {self.label} ...")
                started = time.monotonic()
                result = run(self.build_command(), env=env)
                elapsed = time.monotonic() - started
                if result.returncode != 0:
                    raise RuntimeError(f"build of {self.label} failed:\n{result.stderr}")
                self.builds.append(elapsed)
                log(f"    {elapsed:.1f} s")
                binary = target / "release" / self.binary_name
                kept = Path(args.scratch) / f"{self.key}-{self.binary_name}"
                shutil.copy2(binary, kept)
                shutil.rmtree(target)
                self.binary = kept
        self.size = self.binary.stat().st_size


def required_features(manifest: Path, bin_name: str) -> list[str]:
    """`--features ...` for a workbook binary that needs some (chapter 18's crates are
    behind the `authorization` feature), as its `[[bin]]` entry says; else nothing."""
    for entry in tomllib.loads(manifest.read_text()).get("bin", []):
        if entry.get("name") == bin_name and entry.get("required-features"):
            return ["--features", ",".join(entry["required-features"])]
    return []


# The largest `--max-calls-per-minute` (a u32): no benchmark run comes near it.
UNLIMITED_CALLS = 4_294_967_295


class Starter(CargoServer):
    key = "starter"

    def __init__(self, workbook: Path, bin_name: str, workers: int | None):
        super().__init__()
        self.manifest = workbook / "Cargo.toml"
        self.binary_name = bin_name
        self.package_args = ["--bin", bin_name] + required_features(self.manifest, bin_name)
        self.label = f"starter ({bin_name})"
        self.workers = workers
        self.has_workers_flag = False
        self.has_rate_limit = False
        self.written_out = False

    def prepare(self, args) -> None:
        workbook = self.manifest.parent
        if self.binary_name == "ch10-starter" and (workbook / "src" / "starter.rs").exists():
            # Build the starter as a reader does: written out by `workbook starter` as a
            # crate of its own, with only its four dependencies (that build is not timed).
            copy = Path(args.scratch) / "mcp-starter"
            made = run(["cargo", "run", "--release", "--locked", "--quiet", "--manifest-path", str(self.manifest),
                        "--bin", "workbook", "--", "starter", str(copy)])
            if made.returncode != 0:
                raise RuntimeError(f"workbook starter failed:\n{made.stderr}")
            self.manifest, self.binary_name, self.package_args = copy / "Cargo.toml", "mcp-starter", []
            self.written_out, self.locked = True, False
        super().prepare(args)
        help_text = run([str(self.binary), "--help"]).stdout
        self.has_workers_flag = "--workers" in help_text
        # From chapter 10 tool calls are rate limited per caller (default 120 a minute);
        # the benchmark is one caller making thousands a second, so it lifts the limit.
        self.has_rate_limit = "--max-calls-per-minute" in help_text

    def config(self) -> str:
        if not self.has_workers_flag:
            workers = "one worker thread (this chapter has no --workers flag)"
        elif self.workers:
            workers = f"--workers {self.workers}"
        else:
            workers = "its default --workers"
        if self.has_rate_limit:
            workers += f", --max-calls-per-minute {UNLIMITED_CALLS} (the rate limit lifted: one caller, many calls)"
        if self.written_out:
            return (f"chapter 10 written out by `workbook starter` as a crate of its own (four dependencies), "
                    f"cargo release profile, {workers}")
        return f"the workbook's `{self.binary_name}`, cargo release profile, {workers}"

    def command(self, port: int) -> list[str]:
        command = [str(self.binary), "--bind", f"127.0.0.1:{port}"]
        if self.has_workers_flag and self.workers:
            command += ["--workers", str(self.workers)]
        if self.has_rate_limit:
            command += ["--max-calls-per-minute", str(UNLIMITED_CALLS)]
        return command


# Chapter 20's rows: one fixed --state-key, so that every instance verifies its states.
STATE_KEY = "f0e1d2c3b4a5968778695a4b3c2d1e0f"
MODERN_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "approve_payroll",
}
CAN_ASK = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}


class Redis:
    """redis-server on a free loopback port, no persistence, as a process of its own
    (never the system service), pinned to `cpus`; stopped by its pid."""

    def __init__(self, scratch: str, cpus: str | None):
        self.port = free_port()
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if cpus:
            command = ["taskset", "-c", cpus, *command]
        self.log = open(Path(scratch) / f"redis-{self.port}.log", "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 10
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}; see {self.log.name}")
            time.sleep(0.05)

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class Fleet(Starter):
    """Chapter 20, its store in the process (as chapters 10 to 19 keep their state) or in a
    Redis started for each run; called with PingME, as every row, or with an approval's
    retry (2026-07-28: approve_payroll with the state it was given and the user's yes)."""

    def __init__(self, workbook: Path, workers: int | None, key: str, redis: bool, approval: bool):
        super().__init__(workbook, "ch20-fleet", workers)
        self.key, self.redis, self.approval = key, redis, approval
        where = "its store in Redis" if redis else "its store in the process"
        what = "an approval's retry" if approval else "PingME"
        self.label = f"chapter 20, {where}, {what}"
        self.running_redis: Redis | None = None

    def prepare(self, args) -> None:
        # One warm build for the four rows: these rows are about the store's cost per
        # request, not chapter 20's build.
        warm = copy.copy(args)
        warm.build_runs = 0
        super().prepare(warm)

    def config(self) -> str:
        store = ("--state-store redis://127.0.0.1:PORT, a redis-server "
                 f"{redis_version()} started for each run on a free loopback port, no persistence, "
                 "pinned to the server's CPU" if self.redis else "no --state-store (the store in the process)")
        call = ("approve_payroll's retry, the same one every time (2026-07-28, the state it was given and the "
                "user's yes): the first runs the payroll, every later one is refused as used, after the same "
                "look-ups" if self.approval else "PingME, as every row")
        return f"{super().config()}, --state-key, {store}; the request: {call}"

    @contextlib.contextmanager
    def around(self, scratch: str, cpus: str | None):
        if not self.redis:
            yield
            return
        self.running_redis = Redis(scratch, cpus)
        try:
            yield
        finally:
            self.running_redis.stop()
            self.running_redis = None

    def store_cpu_seconds(self) -> float | None:
        return cpu_seconds(self.running_redis.process.pid) if self.running_redis else None

    def command(self, port: int) -> list[str]:
        command = super().command(port) + ["--state-key", STATE_KEY]
        if self.redis:
            command += ["--state-store", self.running_redis.url()]
        return command

    def script(self, url: str, scratch: str) -> Path:
        if not self.approval:
            return LUA
        asked = post_json(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "approve_payroll", "_meta": CAN_ASK}})
        state = asked["result"]["requestState"]
        retry = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "approve_payroll", "_meta": CAN_ASK, "requestState": state,
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": True}}}}}
        first, again = post_json(url, retry), post_json(url, retry)
        ran = first.get("result", {}).get("content", [{}])[0].get("text", "")
        refused = again.get("error", {}).get("message", "")
        if "run" not in ran or "has been used already" not in refused:
            raise RuntimeError(f"the approval did not run once, then refused: {first} {again}")
        body = json.dumps(retry, separators=(",", ":"))
        # pingme.lua, with this body and these headers; its `done` as it is.
        done = LUA.read_text().split("function done", 1)[1]
        headers = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in MODERN_HEADERS.items())
        script = Path(scratch) / f"{self.key}.lua"
        script.write_text(f'wrk.method = "POST"\nwrk.body = [==[{body}]==]\n{headers}\nfunction done{done}')
        return script


def post_json(url: str, body: dict) -> dict:
    """A 2026-07-28 POST (approve_payroll's headers): the JSON answer."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=MODERN_HEADERS, method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def redis_version() -> str:
    found = re.search(r"v=(\S+)", run(["redis-server", "--version"]).stdout)
    return found.group(1) if found else "?"


class Rmcp(CargoServer):
    key = "rmcp"
    label = "rmcp (Rust SDK)"

    def __init__(self):
        super().__init__()
        self.manifest = BENCH / "Cargo.toml"
        self.binary_name = "bench-rmcp-server"
        self.package_args = ["-p", "bench-rmcp-server"]

    def config(self) -> str:
        version = sdk_version(BENCH / "Cargo.lock", "rmcp")
        return (f"rmcp {version} on axum + tokio (multi-threaded runtime, one worker thread per CPU it may use), "
                "stateless, JSON responses, cargo release profile")

    def command(self, port: int) -> list[str]:
        return [str(self.binary), "--bind", f"127.0.0.1:{port}"]


class Ceiling(CargoServer):
    key = "ceiling"
    label = "ceiling (bare base)"

    def __init__(self, workbook: Path, workers: int | None):
        super().__init__()
        self.manifest = BENCH / "Cargo.toml"
        self.binary_name = "bench-ceiling"
        self.package_args = ["-p", "bench-ceiling"]
        self.workers = workers
        # The base of the workbook under test, whichever checkout or ref that is.
        self.build_env = {"BENCH_HTTP_RS": str(workbook / "src" / "http.rs")}

    def config(self) -> str:
        return (f"the starter's base (src/http.rs of the same workbook) answering a fixed PingME response, no JSON parsed, "
                f"--workers {self.workers or 1}, cargo release profile")

    def command(self, port: int) -> list[str]:
        return [str(self.binary), "--bind", f"127.0.0.1:{port}", "--workers", str(self.workers or 1)]


class TinyHttpAlone(CargoServer):
    key = "tiny_http"
    label = "tiny_http alone (no door)"

    def __init__(self, workers: int | None):
        super().__init__()
        self.manifest = BENCH / "Cargo.toml"
        self.binary_name = "bench-tiny-http-alone"
        self.package_args = ["-p", "bench-tiny-http-alone"]
        self.workers = workers

    def config(self) -> str:
        return (f"tiny_http {sdk_version(BENCH / 'Cargo.lock', 'tiny_http')}'s own server, clients connected to it "
                f"directly, answering a fixed PingME response, no JSON parsed, {self.workers or 1} worker threads, "
                "cargo release profile")

    def command(self, port: int) -> list[str]:
        return [str(self.binary), "--bind", f"127.0.0.1:{port}", "--workers", str(self.workers or 1)]


class Python(Server):
    key = "python"
    label = "mcp (Python SDK)"

    def __init__(self, workers: int):
        self.workers = workers
        self.venv = BENCH / ".venv"
        self.builds: list[float] = []
        self.size: int | None = None

    def prepare(self, args) -> None:
        uvicorn = self.venv / "bin" / "uvicorn"
        if not uvicorn.exists():
            raise RuntimeError(f"{uvicorn} is missing: run bench/run.sh, which makes the venv")
        site = next((self.venv / "lib").glob("python*/site-packages"))
        self.size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())

    def config(self) -> str:
        versions = run([str(self.venv / "bin" / "python"), "-c",
                        "import importlib.metadata as m, sys; print(' '.join(m.version(p) for p in ('mcp', 'uvicorn', 'uvloop', 'httptools')), sys.version.split()[0])"]).stdout.split()
        mcp, uvicorn, uvloop, httptools, python = (versions + ["?"] * 5)[:5]
        return (f"mcp {mcp} (MCPServer, stateless_http, json_response) under uvicorn {uvicorn} "
                f"--workers {self.workers} (one per CPU it may use), uvloop {uvloop}, httptools {httptools}, "
                f"--no-access-log, CPython {python}")

    def cwd(self) -> Path:
        return BENCH / "python"

    def command(self, port: int, workers: int | None = None) -> list[str]:
        return [str(self.venv / "bin" / "uvicorn"), "server:app", "--host", "127.0.0.1", "--port", str(port),
                "--workers", str(workers or self.workers), "--loop", "uvloop", "--http", "httptools",
                "--no-access-log", "--log-level", "warning"]


def export_workbook(ref: str) -> Path:
    """The workbook as it is at `ref`, in a folder of its own: a plain export (git
    archive), so nothing of another checkout's work tree or target dir is touched."""
    commit = run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"]).stdout.strip()
    if not commit:
        sys.exit(f"no such git ref: {ref}")
    folder = BENCH / "target" / "workbook" / re.sub(r"[^A-Za-z0-9_.-]", "_", ref)
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / ".bench-commit").write_text(commit + "\n")
    log(f"starter from {ref} ({commit[:10]}), exported to {folder}")
    return folder


def sdk_version(lock: Path, name: str) -> str:
    match = re.search(rf'name = "{re.escape(name)}"\nversion = "([^"]+)"', lock.read_text())
    return match.group(1) if match else "?"


def default_starter(workbook: Path) -> str:
    """ch10-starter once it exists; until then the newest chapter whose tools/call has PingME."""
    names = re.findall(r'^name = "(ch\d\d-[a-z0-9-]+)"', (workbook / "Cargo.toml").read_text(), re.M)
    if "ch10-starter" in names:
        return "ch10-starter"
    with_pingme = [n for n in names if n >= "ch04" and "tools/call" in (workbook / "chapters" / n / "main.rs").read_text()
                   and "PingME" in (workbook / "chapters" / n / "main.rs").read_text()]
    if not with_pingme:
        sys.exit("no chapter with PingME yet: pass --starter BIN")
    return max(with_pingme)


# ---------------------------------------------------------------------------
# Statistics and the report.
# ---------------------------------------------------------------------------


def summary(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {}
    median = statistics.median(values)
    return {
        "median": median,
        "min": min(values),
        "max": max(values),
        "n": len(values),
        "spread": (max(values) - min(values)) / median if median else 0.0,
    }


def paired_ratios(peer: list[float], starter: list[float]) -> dict:
    return summary([p / s for p, s in zip(peer, starter) if p is not None and s])


def fmt_rps(v: float) -> str:
    return f"{v:,.0f}"


def fmt_ms(us: float) -> str:
    ms = us / 1000
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.1f}"


def fmt_mib(b: float) -> str:
    return f"{b / 2**20:.1f} MiB"


def fmt_ratio(r: dict) -> str:
    if not r:
        return ""
    if r["n"] == 1 or r["min"] == r["max"]:
        return f"{r['median']:.2f}×"
    return f"{r['median']:.2f}× ({r['min']:.2f}–{r['max']:.2f})"


def fmt_spread(s: dict) -> str:
    return "" if not s or s["n"] < 2 else f" ±{s['spread'] * 50:.0f}%"


def build_report(data: dict) -> str:
    """The Markdown tables: every figure is a median over the runs, with the
    half-spread ((max-min)/2 over median) and the paired ratio to the starter."""
    servers = data["servers"]
    order = [s["key"] for s in servers]
    starter = "starter"
    levels = data["method"]["concurrency"]
    runs = data["method"]["runs"]
    lines = []

    def cell(key: str, metric: str, level: int, fmt, higher_is_better: bool) -> str:
        values = [r["load"][str(level)][metric] if r["load"].get(str(level)) else None
                  for r in data["runs"] if r["server"] == key]
        s = summary(values)
        if not s:
            return "—"
        text = f"{fmt(s['median'])}{fmt_spread(s)}"
        if key != starter:
            starter_values = [r["load"][str(level)][metric] for r in data["runs"] if r["server"] == starter]
            text += f" · {fmt_ratio(paired_ratios(values, starter_values))}"
        return text

    name = {s["key"]: s["label"] for s in servers}
    lines.append(f"**Throughput** (requests per second, higher is better; median of {runs} runs ± half the "
                 "spread, then the ratio to the starter: above 1× the peer is faster)\n")
    lines.append("| server | " + " | ".join(f"{c} client{'s' if c > 1 else ''}" for c in levels) + " |")
    lines.append("|---|" + "---:|" * len(levels))
    for key in order:
        lines.append(f"| {name[key]} | " + " | ".join(cell(key, "rps", c, fmt_rps, True) for c in levels) + " |")

    for metric, title in (("p50_us", "Median latency, p50"), ("p99_us", "Tail latency, p99")):
        lines.append(f"\n**{title}** (milliseconds, lower is better; ratio to the starter: below 1× the peer "
                     "is quicker)\n")
        lines.append("| server | " + " | ".join(f"{c} client{'s' if c > 1 else ''}" for c in levels) + " |")
        lines.append("|---|" + "---:|" * len(levels))
        for key in order:
            lines.append(f"| {name[key]} | " + " | ".join(cell(key, metric, c, fmt_ms, False) for c in levels) + " |")

    lines.append("\n**Memory, build, size** (median over the runs; ratio to the starter)\n")
    lines.append("| server | RSS idle | RSS peak under load | CPU per request at 64 clients "
                 "| instructions per request | cold build | binary size |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    top = str(max(levels))
    for key in order:
        server = next(s for s in servers if s["key"] == key)
        mine = [r for r in data["runs"] if r["server"] == key]
        starters = [r for r in data["runs"] if r["server"] == starter]
        row = [name[key]]
        for field, fmt in (("rss_idle", fmt_mib), ("rss_peak", fmt_mib)):
            values = [r[field] for r in mine]
            s = summary(values)
            text = f"{fmt(s['median'])}{fmt_spread(s)}" if s else "—"
            if key != starter and s:
                text += f" · {fmt_ratio(paired_ratios(values, [r[field] for r in starters]))}"
            row.append(text)
        cpu = [r["load"][top]["cpu_us_per_request"] if r["load"].get(top) else None for r in mine]
        s = summary(cpu)
        text = f"{s['median']:.0f} µs{fmt_spread(s)}" if s else "—"
        if key != starter and s:
            text += f" · {fmt_ratio(paired_ratios(cpu, [r['load'][top]['cpu_us_per_request'] for r in starters]))}"
        row.append(text)
        counted = data.get("instructions", {})
        if key in counted:
            text = f"{counted[key]['per_request'] / 1000:,.0f} k"
            if key != starter and starter in counted:
                text += f" · {counted[key]['per_request'] / counted[starter]['per_request']:.2f}×"
        else:
            text = "not counted"
        row.append(text)
        builds = summary(server["build_s"])
        starter_builds = summary(next(s for s in servers if s["key"] == starter)["build_s"])
        if builds:
            text = f"{builds['median']:.1f} s{fmt_spread(builds)}"
            if key != starter and starter_builds:
                text += f" · {builds['median'] / starter_builds['median']:.2f}×"
        else:
            text = "n/a (interpreted)" if key == "python" else "not measured"
        row.append(text)
        size = server["size_bytes"]
        starter_size = next(s for s in servers if s["key"] == starter)["size_bytes"]
        if size is None:
            text = "—"
        else:
            text = fmt_mib(size)
            if key == "python":
                text += " of packages in site-packages"
            elif key != starter and starter_size:
                text += f" · {size / starter_size:.2f}×"
        row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def environment(args) -> dict:
    def first_line(command: list[str]) -> str:
        try:
            out = run(command)
            return (out.stdout or out.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"

    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "kernel": platform.release(),
        "rustc": first_line(["rustc", "--version"]),
        "wrk": first_line(["wrk", "--version"]),
        "commit": first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]),
    }


def loadavg() -> list[float]:
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


# ---------------------------------------------------------------------------
# Main.
# ---------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starter", help="workbook binary to measure as the starter (default: ch10-starter, "
                        "or until it exists the newest chapter with PingME)")
    parser.add_argument("--workbook-ref", metavar="REF",
                        help="take the starter from this git ref of the workbook (a branch or commit), exported "
                        "into bench/target/workbook; default: this checkout as it is")
    parser.add_argument("--workbook", metavar="DIR",
                        help="take the starter from the workbook checked out in DIR, as it is (for trying a change)")
    parser.add_argument("--source-note", metavar="TEXT",
                        help="how to describe the starter's source in the results (with --workbook)")
    parser.add_argument("--servers", default="starter,rmcp,python,ceiling,tiny_http",
                        help="which servers, comma-separated (the starter is always measured)")
    parser.add_argument("--runs", type=int, default=3, help="runs of the whole load matrix (default 3)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measured load (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="seconds of unmeasured load after start (default 2)")
    parser.add_argument("--concurrency", default="1,16,64", help="client counts (default 1,16,64)")
    parser.add_argument("--build-runs", type=int, default=3,
                        help="cold builds per Rust server (default 3; 0 = warm build, not timed)")
    parser.add_argument("--workers", type=int, default=None,
                        help="--workers for the starter and the ceilings (default: the starter's own default)")
    parser.add_argument("--no-pin", action="store_true",
                        help="do not pin: server and wrk share every CPU (default: server on CPU 1, wrk on CPU 0)")
    parser.add_argument("--quick", action="store_true",
                        help="try the harness: 1 run, 2 s loads, 1 s warm-up, warm builds; writes to bench/target")
    parser.add_argument("--out", help="where to write results JSON and table (default bench/results, or "
                        "bench/target/quick with --quick)")
    parser.add_argument("--chart", help="where to draw the SVG chart (default book/src/appendix-benchmarks-throughput.svg, "
                        "or OUT/throughput.svg with --quick or --out)")
    parser.add_argument("--callgrind", action=argparse.BooleanOptionalAction, default=None,
                        help="count instructions per request under valgrind (default: on, off with --quick)")
    args = parser.parse_args()
    if args.callgrind is None:
        args.callgrind = not args.quick and shutil.which("valgrind") is not None
    if args.quick:
        args.runs, args.duration, args.warmup, args.build_runs = 1, 2, 1, 0
    out = Path(args.out) if args.out else (BENCH / "target" / "quick" if args.quick else BENCH / "results")
    out.mkdir(parents=True, exist_ok=True)
    levels = [int(c) for c in args.concurrency.split(",")]

    cpus = os.cpu_count() or 1
    if args.no_pin or cpus < 2:
        server_cpus, client_cpus, server_cpu_count = None, None, cpus
    else:
        server_cpus, client_cpus, server_cpu_count = ",".join(str(c) for c in range(1, cpus)), "0", cpus - 1

    wanted = ["starter"] + [k for k in args.servers.split(",") if k and k != "starter"]
    if args.workbook_ref and args.workbook:
        sys.exit("--workbook-ref and --workbook exclude each other")
    workbook = (export_workbook(args.workbook_ref) if args.workbook_ref
                else Path(args.workbook).resolve() if args.workbook else ROOT)
    starter_bin = args.starter or default_starter(workbook)
    catalogue = {
        "starter": lambda: Starter(workbook, starter_bin, args.workers),
        "rmcp": Rmcp,
        "python": lambda: Python(server_cpu_count),
        # The ceiling runs as many workers as the starter would by default (one per CPU it may use).
        "ceiling": lambda: Ceiling(workbook, args.workers or server_cpu_count),
        "tiny_http": lambda: TinyHttpAlone(args.workers or server_cpu_count),
        "fleet": lambda: Fleet(workbook, args.workers, "fleet", redis=False, approval=False),
        "fleet_redis": lambda: Fleet(workbook, args.workers, "fleet_redis", redis=True, approval=False),
        "fleet_approval": lambda: Fleet(workbook, args.workers, "fleet_approval", redis=False, approval=True),
        "fleet_redis_approval": lambda: Fleet(workbook, args.workers, "fleet_redis_approval", redis=True, approval=True),
    }
    servers: list[Server] = [catalogue[k]() for k in wanted]

    tools = ("wrk", "cargo") + (("taskset",) if server_cpus else ())
    tools += ("redis-server",) if any(getattr(server, "redis", False) for server in servers) else ()
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed: run bench/run.sh, which installs what is missing")

    args.scratch = tempfile.mkdtemp(prefix="mcp-bench-")
    data: dict = {"environment": environment(args), "load_before": loadavg()}
    data["environment"]["starter_source"] = (
        f"{args.workbook_ref} ({(workbook / '.bench-commit').read_text().strip()[:10]})" if args.workbook_ref
        else (args.source_note or f"{workbook}") if args.workbook
        else f"this checkout ({data['environment']['commit']})")
    log(f"load average before: {data['load_before']}")
    try:
        log("building" + (" (cold, timed)" if args.build_runs else " (warm, not timed)"))
        for server in servers:
            server.prepare(args)
        if isinstance(servers[0], Starter) and servers[0].workers is None:
            pass  # the starter's own default
        data["method"] = {
            "runs": args.runs,
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "concurrency": levels,
            "build_runs": args.build_runs,
            "pinning": (f"server on CPU {server_cpus}, wrk on CPU {client_cpus}" if server_cpus
                        else "none: server and wrk share every CPU"),
            "load_generator": "wrk -t1 (one event-loop thread), keep-alive connections, closed loop, --timeout 5s, "
            "bench/pingme.lua; latency percentiles as wrk reports them, with its correction for coordinated omission",
        }
        data["servers"] = [
            {"key": s.key, "label": s.label, "config": s.config(), "build_s": s.builds, "size_bytes": s.size}
            for s in servers
        ]
        for s in data["servers"]:
            log(f"  {s['label']}: {s['config']}")
        data["runs"], data["instructions"] = [], {}
        for r in range(args.runs):
            for server in servers:
                log(f"run {r + 1}/{args.runs}: {server.label}")
                data["runs"].append(measure(server, r, levels, args, server_cpus, client_cpus, out))
        if args.callgrind:
            log("counting instructions per request under callgrind")
            for server in servers:
                if getattr(server, "approval", False):
                    continue  # instructions.py sends PingME
                port = free_port()
                n = 200 if server.key == "python" else 2000  # CPython under valgrind is slow
                with server.around(args.scratch, server_cpus):
                    # One process, so that callgrind sees every instruction (uvicorn's
                    # workers would be child processes).
                    command = server.command(port, workers=1) if isinstance(server, Python) else server.command(port)
                    per_request, dump = instructions.count(command, port, server.key, server.cwd(), n)
                data["instructions"][server.key] = {"per_request": per_request, "requests": n}
                log(f"  {server.label}: {per_request:,.0f} instructions per request")
        data["load_after"] = loadavg()
        log(f"load average after: {data['load_after']}")
    finally:
        shutil.rmtree(args.scratch, ignore_errors=True)

    table = build_report(data)
    (out / "results.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "table.md").write_text(table)
    (out / "setup.md").write_text(setup_markdown(data))
    chart = Path(args.chart) if args.chart else (
        out / "throughput.svg" if args.quick or args.out else ROOT / "book" / "src" / "appendix-benchmarks-throughput.svg")
    subprocess.run([sys.executable, str(BENCH / "chart.py"), str(out / "results.json"), str(chart)], check=True)
    print(describe(data))
    print(table)
    log(f"wrote {out / 'results.json'}, {out / 'table.md'} and {chart}")


def measure(server: Server, r: int, levels: list[int], args, server_cpus, client_cpus, out: Path) -> dict:
    with server.around(args.scratch, server_cpus):
        return measure_running(server, r, levels, args, server_cpus, client_cpus)


def measure_running(server: Server, r: int, levels: list[int], args, server_cpus, client_cpus) -> dict:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    command = server.command(port)
    if server_cpus:
        command = ["taskset", "-c", server_cpus, *command]
    log_path = Path(args.scratch) / f"{server.key}-{r}.log"
    running = Running(command, server.cwd(), url, log_path)
    try:
        running.wait_ready()
        time.sleep(1.0)  # let start-up settle before reading idle memory
        result = {"server": server.key, "run": r, "rss_idle": rss_bytes(running.process.pid), "load": {}}
        script = server.script(url, args.scratch)
        if args.warmup > 0:
            wrk(url, max(levels), args.warmup, client_cpus, script)
        peak = 0
        for level in levels:
            sampler = Sampler(running.process.pid)
            sampler.start()
            cpu_before = cpu_seconds(running.process.pid)
            store_before = server.store_cpu_seconds()
            switches_before = context_switches(running.process.pid)
            measured = wrk(url, level, args.duration, client_cpus, script)
            cpu_used = cpu_seconds(running.process.pid) - cpu_before
            store_used = server.store_cpu_seconds() - store_before if store_before is not None else None
            # Threads that ended during the load take their counts with them: a floor.
            switches = context_switches(running.process.pid) - switches_before
            peak = max(peak, sampler.finish())
            seconds = measured["duration_us"] / 1e6
            errors = sum(measured["errors"].values())
            measured.update({
                "rps": measured["requests"] / seconds,
                "server_cpu_s": cpu_used,
                "cpu_us_per_request": cpu_used / measured["requests"] * 1e6 if measured["requests"] else None,
                "error_count": errors,
                "switches_per_request": switches / measured["requests"] if measured["requests"] else None,
            })
            if store_used is not None and measured["requests"]:
                # Chapter 20's Redis, a process of its own: its CPU is not the server's.
                measured["store_cpu_us_per_request"] = store_used / measured["requests"] * 1e6
            log(f"  {level:>3} clients: {measured['rps']:>9,.0f} req/s  p50 {fmt_ms(measured['p50_us'])} ms  "
                f"p99 {fmt_ms(measured['p99_us'])} ms  switches/req {measured['switches_per_request']:.2f}  server CPU {cpu_used / seconds:.0%}  wrk CPU {measured['client_cpu_s'] / seconds:.0%}"
                + (f"  Redis CPU {store_used / seconds:.0%}" if store_used is not None else "")
                + (f"  ERRORS {measured['errors']}" if errors else ""))
            result["load"][str(level)] = measured
        result["rss_peak"] = peak
        if running.process.poll() is not None:
            raise RuntimeError(f"{server.label} died during the load; see its log")
        # Chapter 20 with Redis: a call Redis did not answer in time was counted by the
        # instance alone (rate_limit.rs says so on stderr); the figures are then not all
        # the store's. Counted, and said.
        fallbacks = log_path.read_text(errors="replace").count("counted by this instance alone")
        if fallbacks:
            result["store_fallbacks"] = fallbacks
            log(f"  the store did not answer {fallbacks} time(s): those calls were counted by the instance alone")
        return result
    finally:
        running.stop()


def setup_markdown(data: dict) -> str:
    """The run's machine, method and server settings, as a Markdown list for the book."""
    m, e = data["method"], data["environment"]
    load = lambda l: ", ".join(f"{x:.2f}" for x in l)
    lines = [
        f"- **When and where:** {e['date']}; {e['cpus']} CPUs ({e['cpu']}), Linux {e['kernel']}; "
        f"{e['rustc']}; harness at commit `{e['commit']}`, starter built from {e['starter_source']}.",
        f"- **Load on the machine** (load average over 1, 5, 15 minutes): {load(data['load_before'])} before the "
        f"run, {load(data['load_after'])} after it.",
        f"- **Load generator:** {m['load_generator']}; {m['runs']} run{'s' if m['runs'] != 1 else ''} of "
        f"{m['duration_s']} s per client count, after {m['warmup_s']} s of unmeasured warm-up; every run "
        "starts each server afresh, and the servers take turns within a run.",
        f"- **CPUs:** {m['pinning']}.",
        f"- **Cold builds:** {m['build_runs']} per Rust server, from an empty target directory with the "
        "sources already downloaded, `cargo build --release --locked` with cargo's default jobs.",
    ]
    for s in data["servers"]:
        lines.append(f"- **{s['label']}:** {s['config']}.")
    return "\n".join(lines) + "\n"


def describe(data: dict) -> str:
    m, e = data["method"], data["environment"]
    lines = [
        f"# {e['date']}, {e['cpus']} CPUs ({e['cpu']}), Linux {e['kernel']}, {e['rustc']}, {e['wrk']}, commit {e['commit']}",
        f"# load average (1, 5, 15 min) before: {data['load_before']}, after: {data.get('load_after')}",
        f"# {m['runs']} runs x {m['duration_s']} s per load after {m['warmup_s']} s warm-up; {m['load_generator']}",
        f"# pinning: {m['pinning']}; cold builds per Rust server: {m['build_runs']} (empty target dir, "
        "sources already downloaded, cargo's default jobs)",
    ]
    for s in data["servers"]:
        lines.append(f"# {s['label']}: {s['config']}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
