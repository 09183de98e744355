#!/usr/bin/env bash
# The Python bindings' test suite (bindings/python/tests), against a real
# `heimdall dev` that a pytest session fixture starts on free ports with a
# temp data dir and a temp HOME / HEIMDALL_CONFIG_DIR:
#   1. .venv with the pinned tools (maturin, pytest, Terraform: install-test-tools.sh);
#   2. the workspace's binaries (heimdall, heimdall-api, heimdall-agent) and
#      the `heimdall` wheel (maturin, debug profile), installed into .venv;
#   3. pytest. Extra arguments go to pytest (`-k access_log`, `-x`, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
venv="$(pwd)/.venv"

bash scripts/install-test-tools.sh >/dev/null

# The tests drive the CLI and `heimdall dev` (a no-op when scripts/test.sh built them).
cargo build --workspace --bins --locked

wheels="${CARGO_TARGET_DIR}/wheels"
rm -f "${wheels}"/heimdall-*.whl
VIRTUAL_ENV="${venv}" "${venv}/bin/maturin" build --locked \
    --manifest-path bindings/python/Cargo.toml --interpreter "${venv}/bin/python" \
    --out "${wheels}" --quiet
PIP_DISABLE_PIP_VERSION_CHECK=1 "${venv}/bin/python" -m pip install --quiet --no-input \
    --no-index --no-deps --force-reinstall "${wheels}"/heimdall-*.whl

export HEIMDALL_BIN_DIR="${CARGO_TARGET_DIR}/debug"
exec "${venv}/bin/python" -m pytest bindings/python/tests -p no:cacheprovider "$@"
