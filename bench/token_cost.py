#!/usr/bin/env python3
"""What chapter 18's token check costs a request: the same release binary, the same
`tools/call` of `PingME` on one keep-alive connection, run open and with
`--authorization-server` and an ES256 access token from `tests/keys/`. One worker,
requests one after another, so the difference is the check itself. Prints the median
microseconds per request of five runs of 3,000 requests each.

    cargo build --release --features authorization --bin ch18-authorization --example mint-token
    python3 bench/token_cost.py

The chapter's page quotes its numbers (*The crates*). `--alg RS256` makes a throwaway RSA
key, its JWK Set and a token it signed (with the `cryptography` package); or point `--jwks`
at a JWK Set and `--token` at a token it signed. Every request sends the same token, as a
client does until its token expires: since the server remembers tokens it has verified,
this measures a token's second and later requests; `--fresh` sends each request a token
of its own (minted beforehand), the cost of a token's first request.
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
parser.add_argument("--mint", default="target/release/examples/mint-token")
parser.add_argument("--alg", choices=["ES256", "RS256"], default="ES256")
parser.add_argument("--fresh", action="store_true", help="a new token for every request")
args = parser.parse_args()


def rsa_key():
    """A throwaway RSA key: its JWK Set, in a temporary file, and a function that signs claims."""
    import base64, tempfile
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    b64 = lambda data: base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    number = lambda n: b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))
    public = key.public_key().public_numbers()
    jwks = {"keys": [{"kty": "RSA", "kid": "bench-rsa", "alg": "RS256", "use": "sig", "n": number(public.n), "e": number(public.e)}]}
    jwks_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(jwks, jwks_file)
    jwks_file.close()
    header = b64(json.dumps({"alg": "RS256", "typ": "at+jwt", "kid": "bench-rsa"}).encode())

    def sign(claims):
        signing_input = f"{header}.{b64(json.dumps(claims).encode())}"
        return f"{signing_input}.{b64(key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))}"
    return jwks_file.name, sign


def claims(sub):
    return {"iss": "https://auth.example.com", "sub": sub, "aud": "http://127.0.0.1:8080/mcp", "exp": 4102444800,
            "nbf": 1767225600, "scope": "mcp:read"}


count = args.requests + 300 if args.fresh else 1  # with the warm-up's
if args.alg == "RS256" and not args.token:
    args.jwks, sign = rsa_key()
    tokens = [sign(claims(f"user-{n}")) for n in range(count)]
else:
    tokens = [args.token] if args.token else [
        subprocess.run([args.mint, "--sub", f"user-{n}"],
                       capture_output=True, text=True, check=True).stdout.strip() for n in range(count)]

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "PingME"}})
PLAIN = {"Content-Type": "application/json", "Accept": "application/json"}
AUTHORIZATION = ["--authorization-server", "https://auth.example.com", "--resource", "http://127.0.0.1:8080/mcp",
                 "--jwks-file", args.jwks]
print(f"{args.alg}, {'a new token for every request' if args.fresh else 'the same token for every request'}:")


def start(flags):
    server = subprocess.Popen([args.binary, "--bind", "127.0.0.1:0", "--workers", "1",
                               "--max-calls-per-minute", "100000000", *flags],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(server.stdout.readline().rsplit(":", 1)[1].split("/")[0])  # "listening on http://127.0.0.1:PORT/mcp"
    return server, port


def microseconds_per_request(port, headers, count, offset=0):
    connection = http.client.HTTPConnection("127.0.0.1", port)
    started = time.perf_counter()
    for n in range(count):
        if "Authorization" in headers and args.fresh:
            headers = dict(headers, Authorization=f"Bearer {tokens[offset + n]}")
        connection.request("POST", "/mcp", BODY, headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200, response.status
    return (time.perf_counter() - started) / count * 1e6


runs = {"open": [], "with a token": []}
for _ in range(5):
    for name, flags, headers in (("open", [], PLAIN),
                                 ("with a token", AUTHORIZATION, dict(PLAIN, Authorization=f"Bearer {tokens[0]}"))):
        server, port = start(flags)
        try:
            microseconds_per_request(port, headers, 300, offset=len(tokens) - 300 if args.fresh else 0)  # warm up
            runs[name].append(microseconds_per_request(port, headers, args.requests))
        finally:
            server.terminate()
            server.wait()
for name, values in runs.items():
    print(f"{name}: median {statistics.median(values):.0f} us/request ({', '.join(f'{v:.0f}' for v in values)})")
