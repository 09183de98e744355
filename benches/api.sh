#!/usr/bin/env bash
# The API's hot paths with data against the same calls on an empty
# database (issue 17): an authorized GET with 200 policies against none,
# secret list pages with 10,000 secrets, Resource list pages with 100,000
# Resources and access log pages of a secret read 10,000,000 times, each
# against the same call on a database without them, and the sync answer of
# an Agent holding 10,000 secrets against an empty organization's. Release APIs on
# PostgreSQL (127.0.0.1:5432), interleaved; ratios, no assertion.
# Usage: bash benches/api.sh [--rounds 4] [--duration 4] [--concurrency 8]
#                            [--policies 200] [--secrets 10000]
#                            [--resources 100000] [--access-records 10000000]
# Both servers and their databases are gone on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
# The same packages as the other benches build, so that one release build
# (one set of features) serves them all.
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
# The load generator benches/secrets.sh uses too (Python threads would add
# their own queueing on two cores).
load="$(cargo bench --locked -p heimdall-agent --bench read_load --no-run --message-format=json \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "read_load" and m.get("executable"):
        print(m["executable"])')"
[[ -x "${load}" ]] || { echo "api.sh: the read_load bench did not build" >&2; exit 1; }
python3 benches/api_bench.py --bin "${CARGO_TARGET_DIR}/release" --load "${load}" "$@"
# The sync answer of an Agent holding --secrets (default 10,000) values
# against an empty organization's (heimdall-api's sync_answer bench).
secrets=10000
while [[ $# -gt 0 ]]; do
    case "$1" in --secrets) secrets="$2"; shift ;; esac
    shift
done
cargo bench --locked -p heimdall-api --features testing --bench sync_answer -- --secrets "${secrets}"
