#!/usr/bin/env bash
# Scale and faults (issue 17): several API replicas on one PostgreSQL
# database and several Agents, Resources created through random replicas
# and applied with real Terraform against the S3 protocol (moto), a random
# Agent killed with SIGKILL every few seconds (with its process group, or
# alone, when its Terraform guard must stop Terraform within 5 s) and
# started again, secrets read through the Agents all along, and (with
# --cut-postgres-every) every database connection cut now and then, as a
# PostgreSQL restart does. At the end, a
# history check over the API's tables and the bucket:
#   - no job completed twice, no attempt past its last (3/3);
#   - every Resource terminal (a failure only from Agents lost 3 times);
#   - every state lock released;
#   - per Agent, a gapless sequence of access records, none conflicting,
#     and no read served that left no record.
# Prints throughput (Resources per minute), pickup latency percentiles,
# attempts, kills and state lock takeovers; exits non-zero if a check fails.
# Usage: bash benches/scale.sh [--debug] [--replicas 3] [--agents 4]
#            [--resources 500] [--apply-seconds 1] [--kill-every 5] [--cut-postgres-every 0]
#            [--timeout 1800] [--seed N] [--keep]
# (--debug uses the debug binaries, as the test run builds them; the test
# run itself runs a small version: see scripts/test.sh.)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
profile=release
if [[ " $* " == *" --debug "* ]]; then
    profile=debug
    # As scripts/test.sh builds them (the same features, so nothing is rebuilt).
    cargo build --workspace --bins --locked >&2
else
    cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
fi
exec .venv/bin/python benches/scale_bench.py --bin "${CARGO_TARGET_DIR}/${profile}" "$@"
