#!/usr/bin/env bash
# The benchmark in one command (README, "Benchmarks"): installs what is missing
# (wrk from Debian's packages, the Python SDK in bench/.venv), then runs
# bench/bench.py, which builds the servers, measures them and writes the table.
#
#   bench/run.sh            the full run: 3 runs x 10 s per load, cold builds (~15 min)
#   bench/run.sh --quick    try the harness: 1 run x 2 s, warm builds (~1 min)
#   bench/run.sh --help     every flag
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v wrk >/dev/null; then
  echo "bench: installing wrk (Debian package)" >&2
  as_root apt-get update -qq
  as_root apt-get install -y -qq wrk >/dev/null
fi

# The Python peer's own venv (gitignored), remade when its requirements change.
venv=bench/.venv
if [ ! -x "$venv/bin/uvicorn" ] || ! cmp -s bench/python/requirements.txt "$venv/requirements.txt"; then
  echo "bench: installing the Python SDK into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r bench/python/requirements.txt
  cp bench/python/requirements.txt "$venv/requirements.txt"
fi

exec python3 bench/bench.py "$@"
