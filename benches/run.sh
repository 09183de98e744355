#!/usr/bin/env bash
# `heimdall run` start-up benchmark (issue 14): the time `heimdall run`
# adds before a program starts, with 20 secrets, against a bare exec of the
# same program, interleaved (A B A B) on this machine, with `heimdall dev`
# (release build: API on SQLite, the dev Agent) holding the values. Each
# `heimdall run` asks the API for the holders (one request) and the Agent
# for all 20 values (one request, every read recorded in one commit).
# Prints the medians, the added time in ms and the ratio (target: < 30 ms
# added). No timing is asserted.
# Usage: bash benches/run.sh [ROUNDS]   (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
exec .venv/bin/python benches/run_bench.py "${CARGO_TARGET_DIR}/release" "${1:-30}"
