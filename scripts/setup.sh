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

# The upgrade test (tests/upgrade.rs) loads its fixture's `sqlite3 .dump`s
# with the sqlite3 shell, as an operator restores one.
if ! command -v sqlite3 >/dev/null 2>&1; then
    echo "setup: installing Debian's sqlite3 (apt)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq sqlite3 >/dev/null
    command -v sqlite3 >/dev/null || { echo "setup: sqlite3 is missing after apt-get install" >&2; exit 1; }
fi
