#!/usr/bin/env bash
# Secret Manager V: Agents converging on the current version. A real API
# (SQLite) and three Agents (SQLite stores, `sync_seconds` 2) holding `dev`:
#   - each round, one Agent is stopped, a new version is written with
#     `heimdall secret set` (stored on the two that are up, which it says),
#     and the stopped one is started again; the round's time runs from the
#     write's end until all three serve the new version as the latest (the
#     restarted Agent's first sync and its fetch from another holder);
#   - then a fourth Agent is assigned `dev` with --backfill secrets written
#     before: the time until it holds every current version.
# Prints the median and p99 convergence time, also in sync periods (the
# target: within two), and the backfill's values per second. No timing is
# asserted; it fails if an Agent never converges.
# Usage: bash benches/converge.sh [--rounds 100] [--backfill 10000] [--sync-seconds 2] [--debug] [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
profile=release
args=()
for a in "$@"; do
    if [[ "$a" == "--debug" ]]; then profile=debug; else args+=("$a"); fi
done
if [[ "$profile" == debug ]]; then
    cargo build --workspace --bins --locked >&2
else
    cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
fi
exec .venv/bin/python benches/converge_bench.py --bin "${CARGO_TARGET_DIR}/${profile}" "${args[@]}"
