#!/usr/bin/env python3
"""What chapter 18's token check costs a request: the same release binary, the same
`tools/call` of `PingME` on one keep-alive connection, run open and with
`--authorization-server` and an ES256 access token from `tests/keys/`. One worker,
requests one after another, so the difference is the check itself. Prints the median
microseconds per request of five runs of 3,000 requests each.

    cargo build --release --features authorization --bin ch18-authorization --example mint-token
    python3 bench/token_cost.py

The chapter's page quotes its numbers (*The crates*). For RS256, point `--jwks` at a JWK
Set of an RSA key and `--token` at a token it signed.
"""
import argparse
import http.client
import json
import statistics
import subprocess
import time

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--binary", default="target/release/ch18-authorization")
parser.add_argument("--jwks", default="tests/keys/jwks.json")
parser.add_argument("--token", help="an access token (default: one minted by target/release/examples/mint-token)")
parser.add_argument("--requests", type=int, default=3000)
args = parser.parse_args()
token = args.token or subprocess.run(["target/release/examples/mint-token", "--sub", "alice"],
                                     capture_output=True, text=True, check=True).stdout.strip()

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "PingME"}})
PLAIN = {"Content-Type": "application/json", "Accept": "application/json"}
AUTHORIZATION = ["--authorization-server", "https://auth.example.com", "--resource", "http://127.0.0.1:8080/mcp",
                 "--jwks-file", args.jwks]


def start(flags):
    server = subprocess.Popen([args.binary, "--bind", "127.0.0.1:0", "--workers", "1",
                               "--max-calls-per-minute", "100000000", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(server.stdout.readline().rsplit(":", 1)[1].split("/")[0])  # "listening on http://127.0.0.1:PORT/mcp"
    return server, port


def microseconds_per_request(port, headers, count):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    started = time.perf_counter()
    for _ in range(count):
        connection.request("POST", "/mcp", BODY, headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
    return (time.perf_counter() - started) / count * 1e6


runs = {"open": [], "with a token": []}
for _ in range(5):
    for name, flags, headers in (("open", [], PLAIN),
                                 ("with a token", AUTHORIZATION, dict(PLAIN, Authorization=f"Bearer {token}"))):
        server, port = start(flags)
        try:
            microseconds_per_request(port, headers, 300)  # warm up
            runs[name].append(microseconds_per_request(port, headers, args.requests))
        finally:
            server.terminate()
            server.wait()
for name, values in runs.items():
    print(f"{name}: median {statistics.median(values):.0f} us/request ({', '.join(f'{v:.0f}' for v in values)})")
