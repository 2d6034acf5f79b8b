#!/usr/bin/env python3
"""The checks of `tests/interop/run proxy` that no MCP client makes: what nginx in front
of the starter changes on the wire. Standard library only (and bench/crowd.py's crowd).

    proxy_checks.py stream URL          a long call's events arrive as the starter sends
                                        them, not all at once when it ends
    proxy_checks.py host URL            the starter's Host check still works behind the
                                        proxy: a name it does not answer as is refused 403
    proxy_checks.py crowd URL --pid P   300 slowloris connections sent to nginx, while a
                                        normal client calls PingME: at least 99% answered,
                                        and the starter (PID P) never sees the crowd
    proxy_checks.py spread LOG          reads nginx's access log (the format `mcp` that
                                        run writes: upstream, status, request, Mcp-Method,
                                        Mcp-Name, Mcp-Session-Id): the 2026-07-28 requests
                                        went to both instances, and every retry of an
                                        asking call to the instance the call did not go to
    proxy_checks.py affinity LOG --instance PREFIX=UPSTREAM...
                                        every request of a session went to one instance,
                                        the one its id's prefix names, and sessions were
                                        opened on each instance
    proxy_checks.py gone URL SESSION    a request in a session whose instance has stopped
                                        is answered 404 (by the other instance)
    proxy_checks.py drain URL --pid P --prefix PREFIX
                                        SIGTERM to the instance P (its sessions begin with
                                        PREFIX) while it runs calls and holds a listen:
                                        each call ends with its result or the drain's
                                        error, the listen with its result, P exits 0, and
                                        every request sent meanwhile is answered;
                                        with --keep FILE, what it saw, for `heard` and
                                        `drained` (--log: nginx's access log; --stderr:
                                        the instance's)

The fleet's (chapter 20, two instances with one --state-store behind nginx):

    proxy_checks.py listened LOG        the last `subscriptions/listen` in nginx's access
                                        log went to one instance, and the `run_payroll`
                                        it heard of (the first after the client's
                                        `resources/subscribe`) to the other
    proxy_checks.py heard FILE          from what `drain --keep FILE` saw: the stopped
                                        instance's run_payroll ended during its drain, and
                                        the listen on the other instance heard its change
                                        of payroll://last-run, once (the store relayed it)
    proxy_checks.py drained LOG FILE --stopped UPSTREAM --other UPSTREAM
                                        nginx's log since that signal: every tools/list
                                        sent during the drain and after it answered 200 by
                                        the other instance; the calls under way by the
                                        stopped one
    proxy_checks.py replay URL LOG --instance UPSTREAM=URL...
                                        an approval asked for and answered once through
                                        nginx runs; the same retry, word for word, sent
                                        straight to the instance that did not run it
                                        (from LOG), is refused: the state has been used
    proxy_checks.py unrecorded URL --keep FILE
                                        with the store down, an approval's retry is
                                        refused, -32603, within the store's deadlines;
                                        the retry is kept in FILE
    proxy_checks.py older URL FILE      that retry, once the store is back (empty): refused,
                                        older than the record of used states
    proxy_checks.py ping URL            PingME answered twice (both instances)
    proxy_checks.py rate URL LOG --limit N
                                        N calls of PingME through nginx answered, by both
                                        instances (LOG), and the next one 429 with
                                        Retry-After: the limit is the fleet's, not each one's

Exit code 0 when the check holds; 1, with what was seen, when it does not.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import re
import resource
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent.parent


def address_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname, parts.port


def post(url: str, body: dict, host: str = "localhost", accept: str = "application/json, text/event-stream"):
    """One POST on a new connection: the socket, after the request is sent."""
    data = json.dumps(body).encode()
    head = (
        f"POST {urlsplit(url).path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Accept: {accept}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    connection = socket.create_connection(address_of(url), timeout=30)
    connection.sendall(head.encode() + data)
    return connection


def stream(url: str) -> bool:
    """run_payroll with a progress token: each event must arrive when it is sent. The
    tool reads a timesheet every 100 ms; a buffering proxy would hand every event over
    at the end, together."""
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "run_payroll", "arguments": {}, "_meta": {"progressToken": "p"}},
    }
    started = time.monotonic()
    arrivals = []  # (seconds since the request, what came)
    with post(url, call) as connection:
        answer = b""
        while True:
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
            arrivals.append((time.monotonic() - started, chunk))
    head = answer.split(b"\r\n\r\n", 1)[0].decode(errors="replace")
    first_progress = next((t for t, chunk in arrivals if b"notifications/progress" in chunk), None)
    result = next((t for t, chunk in arrivals if b'"result"' in chunk), None)
    print(head)
    print(f"first progress after {first_progress} s, result after {result} s")
    if "text/event-stream" not in head or first_progress is None or result is None:
        print("FAIL expected an event stream with progress and a result")
        return False
    if result - first_progress < 0.15:
        print("FAIL the progress came with the result: the stream was buffered on the way")
        return False
    if "X-Accel-Buffering" in head:
        print("FAIL nginx passed on X-Accel-Buffering, which is meant for it")
        return False
    return True


def host(url: str) -> bool:
    """A ping sent through the proxy as `localhost` is answered; as `evil.example` (a
    DNS-rebinding page's name) it is refused by the starter, 403."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    fine = True
    for name, expected in (("localhost", b"200"), ("evil.example", b"403")):
        with post(url, ping, host=name) as connection:
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        status = answer[9:12]
        body = answer.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
        print(f"Host: {name} -> {status.decode()} {body}")
        fine &= status == expected and (expected == b"200" or "evil.example" in body)
    return fine


def gone(url: str, session: str) -> bool:
    """A request in SESSION, whose instance has stopped, is answered 404: the session is
    not found, and the client starts again with `initialize`."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    data = json.dumps(ping).encode()
    head = (
        f"POST {urlsplit(url).path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        f"Mcp-Session-Id: {session}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection(address_of(url), timeout=30) as connection:
        connection.sendall(head.encode() + data)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    print(f"session {session!r} -> {answer.decode(errors='replace')}")
    return bool(session) and answer[9:12] == b"404"


def send(url: str, body: dict, headers: dict[str, str]) -> socket.socket:
    """One POST with these headers on a new connection: the socket, the request sent."""
    data = json.dumps(body).encode()
    lines = [f"POST {urlsplit(url).path} HTTP/1.1", "Host: localhost", "Content-Type: application/json",
             "Accept: application/json, text/event-stream", f"Content-Length: {len(data)}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    connection = socket.create_connection(address_of(url), timeout=30)
    connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    return connection


def read_until(connection: socket.socket, answer: bytearray, needle: bytes, seconds: float) -> bool:
    """Read into `answer` until it holds `needle`, the connection ends, or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while needle not in answer and time.monotonic() < deadline:
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = connection.recv(65536)
        except (TimeoutError, socket.timeout):
            break
        if not chunk:
            break
        answer += chunk
    return needle in answer


def last_message(answer: bytes) -> dict:
    """The last JSON-RPC message of an event stream, or of a JSON answer."""
    body = answer.split(b"\r\n\r\n", 1)[-1].decode(errors="replace")
    found = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    return found[-1] if found else {}


MODERN = {"MCP-Protocol-Version": "2026-07-28"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def list_tools(url: str, first_id: int, count: int, pause: float = 0.0) -> list[str]:
    """`count` 2026-07-28 `tools/list` through the proxy, each on a new connection: their statuses."""
    statuses = []
    for number in range(count):
        listing = {"jsonrpc": "2.0", "id": first_id + number, "method": "tools/list", "params": {"_meta": META}}
        with send(url, listing, MODERN | {"Mcp-Method": "tools/list"}) as connection:
            answer = bytearray()
            read_until(connection, answer, b"\x00", 10)
        statuses.append(bytes(answer[9:12]).decode())
        time.sleep(pause)
    return statuses


def session_on(url: str, prefix: str, capabilities: dict) -> str:
    """A handshake-era session opened through the proxy on the instance whose ids begin
    with `prefix` (sessions are opened until one is): its id."""
    for _ in range(10):
        params = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "drain", "version": "1"}}
        with send(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, {}) as connection:
            answer = bytearray()
            read_until(connection, answer, b"\x00", 10)
        found = re.search(rb"(?im)^mcp-session-id: *(\S+)", bytes(answer))
        if found and found.group(1).decode().startswith(prefix):
            session = found.group(1).decode()
            headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
            with send(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers) as connection:
                read_until(connection, bytearray(), b"\x00", 10)
            return session
    raise SystemExit(f"FAIL no session opened on the instance {prefix}")


def exited(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


# The base's grace after the drain's deadline, for the last answers (src/http.rs,
# DRAIN_GRACE): the latest a drained server exits is --drain-secs and this.
DRAIN_GRACE = 3.0


def drain(url: str, pid: int, prefix: str, drain_secs: float,
          keep: str | None = None, log: str | None = None, stderr: str | None = None) -> bool:
    """SIGTERM to one of two instances behind the proxy, while it runs a long call that
    finishes (run_payroll), a call that waits for an answer that never comes
    (approve_payroll, asking in its session), and one of two listens (the proxy sends two
    in a row to each instance once): each call ends with its result or the drain's error,
    the listen on that instance ends with its result, the one on the other instance stays
    open, the instance exits within its drain, and every request sent through the proxy
    meanwhile, and after, is answered.

    The listens are open before the calls start, and run_payroll (300 ms, a timesheet
    every 100 ms) is the last to start: the signal goes at its first progress, so it
    finishes, and changes `payroll://last-run`, after the signal. With KEEP, what was
    seen is written there for `heard` and `drained` (the fleet's checks): each listen's
    bytes before and after the signal, and whether it ended; with LOG (nginx's access
    log) how many lines it had at the signal; with STDERR (the stopped instance's) whether
    it had said it was draining when run_payroll's result came."""
    fine = True
    paying = session_on(url, prefix, {})
    asking = session_on(url, prefix, {"elicitation": {}})
    in_session = lambda session: {"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    listens = []
    for number in (1, 2):
        params = {"_meta": META, "notifications": {"resourceSubscriptions": ["payroll://last-run"]}}
        listen = send(url, {"jsonrpc": "2.0", "id": f"listen-{number}", "method": "subscriptions/listen", "params": params},
                      MODERN | {"Mcp-Method": "subscriptions/listen"})
        listens.append((listen, bytearray()))
    for listen, answer in listens:
        fine &= read_until(listen, answer, b"acknowledged", 10)
    answers = {name: bytearray() for name in ("payroll", "approval")}
    approval = send(url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                          "params": {"name": "approve_payroll", "arguments": {}}}, in_session(asking))
    fine &= read_until(approval, answers["approval"], b"elicitation/create", 10)
    payroll = send(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "run_payroll", "arguments": {}, "_meta": {"progressToken": "p"}}},
                   in_session(paying))
    fine &= read_until(payroll, answers["payroll"], b'"progress":1', 10)
    if not fine:
        print("FAIL the calls and listens did not start:", answers, [bytes(a) for _, a in listens])
        return False

    os.kill(pid, signal.SIGTERM)
    signalled = time.monotonic()
    seen: dict = {"payrollResultBeforeSignal": b'"result"' in answers["payroll"]}
    if log:
        seen["logLinesAtSignal"] = len(Path(log).read_text().splitlines())
    before = [len(answer) for _, answer in listens]
    # run_payroll's result, and whether its instance had begun to drain by then.
    read_until(payroll, answers["payroll"], b'"result"', drain_secs + 5)
    if stderr:
        seen["drainingAtPayrollResult"] = "http: draining" in Path(stderr).read_text(errors="replace")
    # Requests sent while the instance drains, through the proxy: each is answered.
    statuses = list_tools(url, 10, 6, pause=0.1)
    for name, connection in (("payroll", payroll), ("approval", approval)):
        read_until(connection, answers[name], b"\x00", drain_secs + 5)
        connection.close()
    # The instance's exit, timed before the listens are read: the one on the other
    # instance is read for 3 s, for an end that does not come. At the latest the drain's
    # deadline and its grace for the last answers, and half a second to exit.
    gone = exited(pid, max(0.1, signalled + drain_secs + DRAIN_GRACE + 0.5 - time.monotonic()))
    took = time.monotonic() - signalled
    ended = [read_until(listen, answer, b'"resultType":"complete"', 3) for listen, answer in listens]
    for listen, _ in listens:
        listen.close()
    paid, refused = last_message(bytes(answers["payroll"])), last_message(bytes(answers["approval"]))
    print(f"tools/list through the proxy during the drain: {statuses}")
    print(f"run_payroll ended with: {json.dumps(paid)[:160]}")
    print(f"approve_payroll ended with: {json.dumps(refused)[:200]}")
    print(f"listens ended with their result: {ended}; the instance exited: {gone}, {took:.1f} s after the signal")
    fine = (
        statuses == ["200"] * 6
        and str(paid.get("result", {}).get("content", [{}])[0].get("text", "")).startswith("Payroll for 3")
        and refused.get("error", {}).get("message", "").endswith("the server is stopping, and the call did not end in time")
        and sorted(ended) == [False, True]
        and gone
        and took >= drain_secs - 0.5
    )
    # After it: the proxy sends everything to the instance that is left.
    after = list_tools(url, 20, 4)
    print(f"tools/list through the proxy after it exited: {after}")
    fine &= after == ["200"] * 4
    if not fine:
        print("FAIL expected every tools/list answered 200, run_payroll's result, approve_payroll's drain error, "
              "the one listen on the stopped instance ended with its result, and the instance gone at its drain's deadline (and grace), not before")
    if keep:
        seen["listens"] = [
            {"ended": end, "beforeSignal": bytes(answer[:cut]).decode(errors="replace"),
             "afterSignal": bytes(answer[cut:]).decode(errors="replace")}
            for (_, answer), cut, end in zip(listens, before, ended)
        ]
        seen["toolsListSent"] = len(statuses) + len(after)
        seen["exitedAfterSeconds"] = round(took, 2) if gone else None
        Path(keep).write_text(json.dumps(seen, indent=1))
    return fine


def load_crowd():
    """bench/crowd.py, the base's crowd and normal clients, as a module."""
    spec = importlib.util.spec_from_file_location("crowd", ROOT / "bench" / "crowd.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def threads_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def crowd(url: str, pid: int, seconds: float, count: int) -> bool:
    """`count` slowloris connections (a byte of head every 3 s, each reopened when closed)
    sent to nginx, and two normal clients calling PingME through it, one on a new
    connection per call, one on a kept-alive connection: at least 99% of their calls
    answered, while the starter's threads stay few (nginx holds the crowd)."""
    bench = load_crowd()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    address = address_of(url)
    peak = {"threads": threads_of(pid)}
    halt = threading.Event()

    def sample() -> None:
        while not halt.is_set():
            peak["threads"] = max(peak["threads"], threads_of(pid))
            halt.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    attack = bench.Crowd(address, "head", count, 3.0)
    attack.start()
    time.sleep(3)  # the crowd is in
    # 5 calls a second each: under the proxy's limit per client (every client here is
    # 127.0.0.1), so that a 429 from nginx is not taken for the crowd's doing.
    clients = [bench.NormalClient(address, keep_alive=alive, pause=0.2) for alive in (False, True)]
    for client in clients:
        client.start()
    time.sleep(seconds)
    for client in clients:
        client.halt.set()
    for client in clients:
        client.join()
    attack.stop()
    halt.set()
    sampler.join()
    calls = sum(c.answered + c.failed for c in clients)
    answered = sum(c.answered for c in clients)
    failures = [c.failures for c in clients if c.failures]
    print(
        f"{count} slowloris connections to nginx ({attack.opened} opened, {attack.closed_by_server} closed by nginx), "
        f"{seconds} s: {answered} of {calls} calls answered 200 {failures or ''}; "
        f"the starter's peak threads: {peak['threads']}"
    )
    return calls > 0 and answered >= 0.99 * calls and peak["threads"] < count / 2


# The access log's lines, as run writes them (log_format mcp):
# upstream status "request" "Mcp-Method" "Mcp-Name" "Mcp-Session-Id"
# The upstream is a list when nginx tried more than one ("127.0.0.1:1, 127.0.0.1:2": the
# first refused the connection, an instance that has stopped listening); the last answered.
LINE = re.compile(r'^(\S+(?:, \S+)*) (\d+) "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)"$')


def log_lines(path: str, skip: int = 0) -> list[dict[str, str]]:
    """The access log's lines, from line SKIP (0: all)."""
    lines = []
    for text in Path(path).read_text().splitlines()[skip:]:
        found = LINE.match(text)
        if found:
            upstream, status, request, method, name, session = found.groups()
            fields = {"upstream": upstream, "status": status, "request": request}
            lines.append(fields | {"method": method, "name": name, "session": session})
    return lines


def spread(path: str, asking: str) -> bool:
    """2026-07-28 requests (they carry Mcp-Method) went to both instances, and each call
    of the asking tool was retried on the instance it had not gone to."""
    modern = [line for line in log_lines(path) if line["method"] != "-"]
    upstreams = {line["upstream"] for line in modern}
    asks = [line for line in modern if line["name"] == asking]
    by_instance = {u: sum(line["upstream"] == u for line in modern) for u in sorted(upstreams)}
    print(f"2026-07-28 requests: {len(modern)}, by instance: {by_instance}")
    print(f"{asking}: " + ", ".join(f"{line['upstream']} {line['status']}" for line in asks))
    pairs = list(zip(asks[::2], asks[1::2]))
    moved = [first["upstream"] != retry["upstream"] for first, retry in pairs]
    fine = len(upstreams) == 2 and pairs and all(moved) and all(line["status"] == "200" for line in asks)
    if not fine:
        print("FAIL expected both instances used, and each retry on the other instance, answered 200")
    return bool(fine)


def affinity(path: str, prefixes: dict[str, str]) -> bool:
    """Every request of a session went to one instance, the one its prefix names; and
    sessions were opened on each instance."""
    sessions: dict[str, set[str]] = {}
    for line in log_lines(path):
        if line["session"] != "-":
            sessions.setdefault(line["session"], set()).add(line["upstream"])
    fine = bool(sessions)
    for session, upstreams in sessions.items():
        prefix = next((p for p in prefixes if session.startswith(p)), None)
        expected = {prefixes[prefix]} if prefix else None
        print(f"session {session}: {sorted(upstreams)} (its prefix names {expected})")
        fine &= upstreams == expected
    opened_on = {next((p for p in prefixes if s.startswith(p)), "?") for s in sessions}
    if opened_on != set(prefixes):
        print(f"FAIL sessions opened only on {sorted(opened_on)}, expected each of {sorted(prefixes)}")
        fine = False
    return fine


# --- the fleet (chapter 20) ---------------------------------------------------------------

# What chapter 20 answers (input_required.rs, store.rs), as tests/fleet.rs reads them.
RAN = "Payroll approved by the user and run for this week."
USED = "Invalid params: `requestState` has been used already; call the tool again without it"
OLDER = (
    "Invalid params: `requestState` is older than this server's record of used states; "
    "call the tool again without it"
)
NOT_RECORDED = "Internal error: the approval could not be recorded as used"
# The store's deadlines (store.rs: 500 ms to connect, 500 ms a command), with a margin
# for a slow, shared machine: an answer later than this is a hang.
ANSWERED_WITHIN = 4.0
YES = {"approval": {"action": "accept", "content": {"approve": True}}}


def call(url: str, tool: str, extra: dict | None = None) -> tuple[int, dict[str, str], dict]:
    """A 2026-07-28 `tools/call` of TOOL with EXTRA params, from a client that can answer
    a question (elicitation): the status, the headers, and the message."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "_meta": meta} | (extra or {})}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    host, port = address_of(url)
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request("POST", urlsplit(url).path, json.dumps(body), headers)
        answer = connection.getresponse()
        text = answer.read().decode(errors="replace")
        status, head = answer.status, dict(answer.getheaders())
    finally:
        connection.close()
    if head.get("Content-Type", "").startswith("text/event-stream"):
        # The message with the call's id is the last `data:` line of the stream.
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    try:
        return status, head, json.loads(text)
    except ValueError:
        return status, head, {"unparsed": text}


def said(message: dict) -> str:
    """The tool's text, or the error's message."""
    result = message.get("result", {})
    if result.get("content"):
        return result["content"][0].get("text", "")
    return message.get("error", {}).get("message", json.dumps(message))


def new_state(url: str) -> str | None:
    """The first call of approve_payroll: the server asks, and issues a state."""
    status, _, asked = call(url, "approve_payroll")
    state = asked.get("result", {}).get("requestState")
    print(f"approve_payroll -> {status} {asked.get('result', {}).get('resultType') or said(asked)}")
    return state


def lines_of(path: str, name: str) -> list[dict[str, str]]:
    return [line for line in log_lines(path) if line["name"] == name]


def listened(path: str) -> bool:
    """The Python SDK's listen (python_client.py check_listen: `resources/subscribe`,
    refused -32601, then `subscriptions/listen`, then `run_payroll`, whose change it
    waits to hear) went to one instance, and that run_payroll to the other. nginx logs
    a request when it ends: the listen after the run_payroll it heard, so the run is the
    first `run_payroll` logged after the client's last `resources/subscribe`."""
    lines = log_lines(path)
    subscribes = [i for i, line in enumerate(lines) if line["method"] == "resources/subscribe"]
    if not subscribes:
        print("FAIL no resources/subscribe in the log: the client did not come to its listen")
        return False
    after = lines[subscribes[-1] + 1 :]
    listen = next((line for line in after if line["method"] == "subscriptions/listen"), None)
    run = next((line for line in after if line["name"] == "run_payroll"), None)
    if listen is None or run is None:
        print(f"FAIL expected a subscriptions/listen and a run_payroll after the subscribe, found {after}")
        return False
    print(f"subscriptions/listen -> {listen['upstream']} {listen['status']}")
    print(f"run_payroll it heard of -> {run['upstream']} {run['status']}")
    fine = listen["upstream"] != run["upstream"] and listen["status"] == run["status"] == "200"
    if not fine:
        print("FAIL expected the listen and the run on different instances, both 200")
    return fine


def kept(path: str) -> dict | None:
    """What `drain --keep` saw, or None (and why) when it wrote nothing."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        print(f"FAIL nothing kept by the drain check in {path}: {error}")
        return None


def updates_of(stream: str, uri: str) -> int:
    """How many `notifications/resources/updated` for URI an event stream holds."""
    count = 0
    for line in stream.splitlines():
        if line.startswith("data: "):
            try:
                message = json.loads(line[6:])
            except ValueError:
                continue  # an event cut in two where the drain check cut the stream
            if message.get("method") == "notifications/resources/updated" and message.get("params", {}).get("uri") == uri:
                count += 1
    return count


def heard(keep: str, uri: str) -> bool:
    """From what `drain --keep ... --stderr` saw: the stopped instance's run_payroll ended
    during its drain (its result came after the signal, once the instance had said it
    was draining), and the listen that stayed open, on the other instance (the one on
    the stopped instance ended), heard that run's change of URI once, after the signal:
    published by an instance in its drain, relayed by the store. Without the store, the
    other instance hears nothing of it."""
    seen = kept(keep)
    if seen is None:
        return False
    before, in_drain = seen.get("payrollResultBeforeSignal"), seen.get("drainingAtPayrollResult")
    print(f"run_payroll's result before the signal: {before}; its instance draining when it came: {in_drain}")
    open_listens = [listen for listen in seen.get("listens", []) if not listen["ended"]]
    if len(open_listens) != 1:
        print(f"FAIL expected one listen left open (on the other instance), found {len(open_listens)}")
        return False
    listen = open_listens[0]
    whole = listen["beforeSignal"] + listen["afterSignal"]
    early, total = updates_of(listen["beforeSignal"], uri), updates_of(whole, uri)
    print(f"the listen on the other instance: {early} update(s) of {uri} before the signal, {total - early} after")
    print(f"what it heard after the signal: {listen['afterSignal'][:400]!r}")
    fine = before is False and in_drain is True and early == 0 and total == 1
    if not fine:
        print(f"FAIL expected run_payroll to end during the drain, and the listen on the other instance to hear "
              f"its change of {uri} once, after the signal")
    return fine


def drained(path: str, keep: str, stopped: str, other: str) -> bool:
    """nginx's access log (PATH) from the signal `drain --keep ... --log` saw: every
    `tools/list` sent during the drain and after it answered 200 by OTHER (the last
    upstream nginx tried: the stopped instance, which refuses connections, may come
    first, and was sent nothing); the calls under way at the signal (run_payroll and
    approve_payroll, each in a handshake-era session: the log's lines with a session id)
    answered by STOPPED, where they ran."""
    seen = kept(keep)
    if seen is None or "logLinesAtSignal" not in seen:
        print("FAIL the drain check kept no count of the log's lines (--log)")
        return False
    since = log_lines(path, seen["logLinesAtSignal"])
    listings = [line for line in since if line["method"] == "tools/list"]
    last = lambda line: line["upstream"].split(", ")[-1]
    tried_first = sum(line["upstream"].startswith(stopped + ",") for line in listings)
    by_instance: dict[str, int] = {}
    for line in listings:
        by_instance[f"{last(line)} {line['status']}"] = by_instance.get(f"{last(line)} {line['status']}", 0) + 1
    print(f"tools/list since the signal: {len(listings)} of {seen['toolsListSent']} sent; answered by: {by_instance}; "
          f"{tried_first} tried {stopped} first (refused)")
    calls = [line for line in since if line["session"] != "-"]
    for line in since:
        if line["method"] != "tools/list":
            print(f"  {line['method']} {line['name']} {line['session']} -> {line['upstream']} {line['status']}")
    fine = (
        len(listings) == seen["toolsListSent"]
        and all(last(line) == other and line["status"] == "200" for line in listings)
        and len(calls) == 2
        and all(line["upstream"] == stopped for line in calls)
    )
    if not fine:
        print(f"FAIL expected the {seen['toolsListSent']} tools/list answered 200 by {other}, "
              f"and the two calls in sessions (run_payroll, approve_payroll) by {stopped}")
    return fine


def replay(url: str, path: str, instances: dict[str, str]) -> bool:
    """approve_payroll through nginx: asked, answered yes once, run; then the same retry,
    word for word, straight to the instance that did not run it: refused, used already
    (mrtr.mdx: a state consumed at most once "MUST" be enforced server-side; a fleet
    without the store runs the payroll again there)."""
    before = len(lines_of(path, "approve_payroll"))
    state = new_state(url)
    if not state:
        print("FAIL no requestState")
        return False
    retry = {"requestState": state, "inputResponses": YES}
    status, _, answer = call(url, "approve_payroll", retry)
    print(f"the retry through nginx -> {status} {said(answer)}")
    # nginx writes its line once the answer is sent: wait for it.
    deadline = time.monotonic() + 5
    while len(lines := lines_of(path, "approve_payroll")) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    if len(lines) < before + 2:
        print(f"FAIL nginx's log has {len(lines) - before} approve_payroll line(s) of this check, expected 2")
        return False
    ran_on = lines[-1]["upstream"]
    others = [other for upstream, other in instances.items() if upstream != ran_on]
    if said(answer) != RAN or len(others) != 1:
        print(f"FAIL expected {RAN!r}, run by one of {sorted(instances)} (nginx: {ran_on})")
        return False
    status, _, again = call(others[0], "approve_payroll", retry)
    print(f"ran on {ran_on}; the same retry sent to {others[0]} -> {status} {said(again)}")
    fine = said(again) == USED and again.get("error", {}).get("code") == -32602
    if not fine:
        print(f"FAIL expected -32602 {USED!r}: the payroll ran twice")
    return fine


def unrecorded(url: str, keep: str) -> bool:
    """The store down: an approval's retry is refused, -32603 (it cannot be recorded as
    used, so it does not run), and answered within the store's deadlines, not hung."""
    state = new_state(url)
    if not state:
        print("FAIL no requestState")
        return False
    retry = {"requestState": state, "inputResponses": YES}
    Path(keep).write_text(json.dumps(retry))
    started = time.monotonic()
    status, _, answer = call(url, "approve_payroll", retry)
    took = time.monotonic() - started
    print(f"the retry -> {status} {said(answer)} after {took:.2f} s")
    fine = said(answer).startswith(NOT_RECORDED) and answer["error"]["code"] == -32603 and took < ANSWERED_WITHIN
    if not fine:
        print(f"FAIL expected -32603 {NOT_RECORDED!r}... within {ANSWERED_WITHIN} s")
    return fine


def older(url: str, keep: str) -> bool:
    """The retry `unrecorded` kept, sent again once the store is back, empty (no
    persistence): refused, as issued before the store's record of used states began (it
    may have been used where the record cannot see). While the store is not asked again
    yet (store.rs, PAUSE_AFTER_FAILURE), it is still -32603: sent again, up to 5 s."""
    retry = json.loads(Path(keep).read_text())
    deadline = time.monotonic() + 5
    while True:
        status, _, answer = call(url, "approve_payroll", retry)
        if not said(answer).startswith(NOT_RECORDED) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(f"the kept retry -> {status} {said(answer)}")
    fine = said(answer) == OLDER
    if not fine:
        print(f"FAIL expected {OLDER!r}")
    return fine


def ping(url: str) -> bool:
    """PingME, twice (nginx sends one to each instance): answered, store or no store."""
    fine = True
    for _ in range(2):
        started = time.monotonic()
        status, _, answer = call(url, "PingME")
        took = time.monotonic() - started
        print(f"PingME -> {status} {said(answer)} after {took:.2f} s")
        fine &= status == 200 and said(answer) == "BISMILLAH" and took < ANSWERED_WITHIN
    return fine


def rate(url: str, path: str, limit: int) -> bool:
    """LIMIT calls of PingME through nginx, which spreads them over both instances: all
    answered; the next one, on whichever instance, 429 with Retry-After (the tools page:
    servers "MUST" rate limit tool invocations): each instance alone has seen about half."""
    before = len(lines_of(path, "PingME"))
    statuses = [call(url, "PingME")[0] for _ in range(limit)]
    status, head, answer = call(url, "PingME")
    code = answer.get("error", {}).get("code")
    print(f"{limit} calls -> {statuses}; call {limit + 1} -> {status} Retry-After: {head.get('Retry-After')} {said(answer)}")
    deadline = time.monotonic() + 5
    while len(lines := lines_of(path, "PingME")) < before + limit + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    answered_by: dict[str, int] = {}
    for line in lines[before : before + limit]:
        answered_by[line["upstream"]] = answered_by.get(line["upstream"], 0) + 1
    print(f"the {limit} answered, by instance: {answered_by}")
    fine = (
        statuses == [200] * limit
        and len(answered_by) == 2
        and status == 429
        and code == -31429
        and head.get("Retry-After", "").isdigit()
    )
    if not fine:
        print(f"FAIL expected {limit} answered by both instances, then 429 with Retry-After and -31429")
    return fine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    sub.add_parser("stream").add_argument("url")
    sub.add_parser("host").add_argument("url")
    p = sub.add_parser("crowd")
    p.add_argument("url")
    p.add_argument("--pid", type=int, required=True, help="the starter's process, to count its threads")
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--count", type=int, default=300)
    p = sub.add_parser("gone")
    p.add_argument("url")
    p.add_argument("session")
    p = sub.add_parser("drain")
    p.add_argument("url")
    p.add_argument("--pid", type=int, required=True, help="the instance to stop")
    p.add_argument("--prefix", required=True, help="the start of its session ids (--session-prefix)")
    p.add_argument("--drain-secs", type=float, required=True, help="its --drain-secs")
    p.add_argument("--keep", metavar="FILE", help="where what was seen is kept, for `heard` and `drained`")
    p.add_argument("--log", metavar="LOG", help="nginx's access log: its length at the signal goes in FILE")
    p.add_argument("--stderr", metavar="LOG", help="the instance's stderr: whether it was draining when run_payroll ended")
    p = sub.add_parser("spread")
    p.add_argument("log")
    p.add_argument("--asking", default="approve_payroll")
    p = sub.add_parser("affinity")
    p.add_argument("log")
    p.add_argument("--instance", action="append", default=[], metavar="PREFIX=UPSTREAM", help="repeatable")
    sub.add_parser("listened").add_argument("log")
    p = sub.add_parser("heard")
    p.add_argument("keep", metavar="FILE", help="what `drain --keep FILE --stderr LOG` saw")
    p.add_argument("--uri", default="payroll://last-run")
    p = sub.add_parser("drained")
    p.add_argument("log")
    p.add_argument("keep", metavar="FILE", help="what `drain --keep FILE --log LOG` saw")
    p.add_argument("--stopped", required=True, metavar="UPSTREAM", help="the instance stopped, as nginx logs it")
    p.add_argument("--other", required=True, metavar="UPSTREAM", help="the instance left")
    p = sub.add_parser("replay")
    p.add_argument("url")
    p.add_argument("log")
    p.add_argument("--instance", action="append", default=[], metavar="UPSTREAM=URL", help="repeatable")
    p = sub.add_parser("unrecorded")
    p.add_argument("url")
    p.add_argument("--keep", required=True, metavar="FILE", help="where the refused retry is kept, for `older`")
    p = sub.add_parser("older")
    p.add_argument("url")
    p.add_argument("keep", metavar="FILE")
    sub.add_parser("ping").add_argument("url")
    p = sub.add_parser("rate")
    p.add_argument("url")
    p.add_argument("log")
    p.add_argument("--limit", type=int, required=True, help="the instances' --max-calls-per-minute")
    args = parser.parse_args()
    if args.check == "stream":
        fine = stream(args.url)
    elif args.check == "host":
        fine = host(args.url)
    elif args.check == "crowd":
        fine = crowd(args.url, args.pid, args.seconds, args.count)
    elif args.check == "gone":
        fine = gone(args.url, args.session)
    elif args.check == "drain":
        fine = drain(args.url, args.pid, args.prefix, args.drain_secs, args.keep, args.log, args.stderr)
    elif args.check == "spread":
        fine = spread(args.log, args.asking)
    elif args.check == "affinity":
        fine = affinity(args.log, dict(item.split("=", 1) for item in args.instance))
    elif args.check == "listened":
        fine = listened(args.log)
    elif args.check == "heard":
        fine = heard(args.keep, args.uri)
    elif args.check == "drained":
        fine = drained(args.log, args.keep, args.stopped, args.other)
    elif args.check == "replay":
        fine = replay(args.url, args.log, dict(item.split("=", 1) for item in args.instance))
    elif args.check == "unrecorded":
        fine = unrecorded(args.url, args.keep)
    elif args.check == "older":
        fine = older(args.url, args.keep)
    elif args.check == "ping":
        fine = ping(args.url)
    else:
        fine = rate(args.url, args.log, args.limit)
    sys.exit(0 if fine else 1)


if __name__ == "__main__":
    main()
