#!/usr/bin/env bash
# `--wait` lag: how long after a job's `finished_at` (the API's own
# timestamp) `heimdall resource create --wait` returns, against the peer a
# client polling as the SDK did before long polls (first look after 500 ms,
# then 1.5 times longer, at most 2 s), interleaved (A B A B) against one
# `heimdall dev` (release build: API on SQLite, the dev Agent, real
# Terraform on the repository's offline module). Prints the median and
# p90 lag of each and their ratio (target: --wait within 100 ms of
# finished_at). No timing is asserted.
# Usage: bash benches/wait.sh [ROUNDS]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
exec .venv/bin/python benches/wait_bench.py "${CARGO_TARGET_DIR}/release" "${1:-10}"
