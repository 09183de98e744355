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

# Debian tools the build and tests run: protoc (the Terraform provider's
# plugin protocol is compiled from its .proto at build time), the sqlite3
# shell (tests/upgrade.rs loads its fixture's `.dump`s with it, the restore
# test uses `.backup`/`.restore`), and umoci, skopeo, podman and runc
# (scripts/package-oci.sh builds the images without a daemon and runs them).
missing=()
for tool in protoc sqlite3 umoci skopeo podman runc; do
    command -v "${tool}" >/dev/null 2>&1 || missing+=("${tool}")
done
if ((${#missing[@]})); then
    echo "setup: installing Debian's tools for ${missing[*]} (apt)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    packages=("${missing[@]/#protoc/protobuf-compiler}")
    apt-get install -y -qq "${packages[@]}" >/dev/null
    for tool in "${missing[@]}"; do
        command -v "${tool}" >/dev/null || { echo "setup: ${tool} is missing after apt-get install" >&2; exit 1; }
    done
fi
