#!/usr/bin/env bash
# Installs what a fresh machine lacks for building and testing Heimdall.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# rustfmt and clippy come with the toolchain here; add them if a minimal
# toolchain lacks them.
if command -v rustup >/dev/null 2>&1; then
    for component in rustfmt clippy; do
        rustup component list --installed 2>/dev/null | grep -q "^${component}" \
            || rustup component add "${component}"
    done
fi
