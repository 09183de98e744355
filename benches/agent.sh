#!/usr/bin/env bash
# Infrastructure Manager benchmark (issue 4): on this machine, in one run,
#  1. the time from `POST /v1/resources` to the job's start on an idle Agent
#     (server timestamps queued_at → started_at; target: median < 100 ms);
#  2. Heimdall's end-to-end time for one Resource (create → provisioned,
#     its account federated with OIDC) divided by a bare `terraform init &&
#     terraform apply` of the same module and backend (target: ≤ 1.10),
#     round by round: against bare Terraform with static keys, and against
#     bare Terraform federating itself through the same STS
#     (`assume_role_with_web_identity`); with where the time went, per
#     phase (the Agent's `job phases` log line: job directory, init, lock,
#     apply, outputs, finish).
# Usage: bash benches/agent.sh [ROUNDS]   (needs PostgreSQL at 127.0.0.1:5432)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
exec .venv/bin/python benches/agent_bench.py "${CARGO_TARGET_DIR}/release" "${1:-15}"
