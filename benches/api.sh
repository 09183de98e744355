#!/usr/bin/env bash
# The API's hot paths with data against the same calls on an empty
# database (issue 17): an authorized GET with 200 policies against none,
# and secret list pages with 10,000 secrets against none. Two release
# APIs on PostgreSQL (127.0.0.1:5432), interleaved; ratios, no assertion.
# Usage: bash benches/api.sh [--rounds 4] [--duration 4] [--concurrency 8]
#                            [--policies 200] [--secrets 10000]
# Both servers and their databases are gone on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
cargo build --release --locked -p heimdall-api --bin heimdall-api >&2
exec python3 benches/api_bench.py --bin "${CARGO_TARGET_DIR}/release" "$@"
