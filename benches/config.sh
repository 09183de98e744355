#!/usr/bin/env bash
# Configuration as code over 500 objects: a no-change `heimdall plan -f`
# (the SDK's config layer: read the organization, diff) against a
# no-change `terraform plan` of the same objects through
# terraform-provider-heimdall (refresh: one read per resource), measured
# in turn, round after round, against one `heimdall dev` (release build,
# API on SQLite). Prints each one's median and the ratio. No timing is
# asserted; it fails if either plan finds a change.
# Usage: bash benches/config.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent -p heimdall-terraform --bins >&2
exec .venv/bin/python benches/config_bench.py "${CARGO_TARGET_DIR}/release" "${1:-5}"
