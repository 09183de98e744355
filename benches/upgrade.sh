#!/usr/bin/env bash
# Module upgrade benchmark: a platform team moves a fleet of Resources to a
# new module version under their existing state. On this machine, in one
# run: N Resources (default 100) created on version 1 of a schema, then
# version 2 (the module gains an optional input and an output), then each
# Resource upgraded in turn (request → job finished, the API's timestamp)
# interleaved with a bare `terraform init && terraform apply` of the same
# module change on a root module of its own (A B A B). Checks that every
# Resource is listed outdated before and none after, and that none was
# recreated (its object's id is the same); prints the time per Resource of
# each and their ratio, round by round.
# Usage: bash benches/upgrade.sh [RESOURCES]   (needs PostgreSQL at 127.0.0.1:5432)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
exec .venv/bin/python benches/upgrade_bench.py "${CARGO_TARGET_DIR}/release" "${1:-100}"
