#!/usr/bin/env bash
# OCI images of the two servers from what scripts/package.sh laid out,
# built without a registry or a daemon (umoci), then checked:
#
#   OUT/heimdall-api     an OCI image layout, tag VERSION: /usr/bin/heimdall-api,
#                        `serve` by default, user 10001, state in the volume
#                        /var/lib/heimdall-api (SQLite database and CA by
#                        default), ports 7480 (people) and 7481 (Agents)
#   OUT/heimdall-agent   tag VERSION: /usr/bin/heimdall-agent and its Terraform
#                        guard, `run --config /var/lib/heimdall-agent/agent.toml`,
#                        user 10001, volume /var/lib/heimdall-agent. Terraform is
#                        not in it: build FROM it with yours (the Agent pins its
#                        SHA-256), or mount it.
#
# Each image holds the binary, the shared libraries it links (ldd), the
# system's CA roots, /etc/passwd and /etc/group naming user 10001, and
# nothing else: no shell, no package manager.
#
# Checked here: `skopeo inspect` reads each image's configuration back;
# with `--run`, podman runs them: `--version` from each, then the API
# image bootstraps and serves on a volume and answers /v1/health over
# HTTPS from its own CA.
#
# Usage: bash scripts/package-oci.sh [--run] DIST OUT   (DIST: package.sh's output)
# Load one into podman: `skopeo copy oci:OUT/heimdall-api:VERSION
# containers-storage:heimdall-api:VERSION`; into a registry: `skopeo copy
# oci:… docker://REGISTRY/heimdall-api:VERSION`.
set -euo pipefail
cd "$(dirname "$0")/.."
run=""
if [[ "${1:-}" == "--run" ]]; then
    run=1
    shift
fi
dist="${1:?usage: package-oci.sh [--run] DIST OUT}"
out="${2:?usage: package-oci.sh [--run] DIST OUT}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
work="$(mktemp -d)"
cleanup() {
    if [[ -n "${run}" ]]; then
        podman rm -f heimdall-oci-check >/dev/null 2>&1 || true
        podman rmi -f "localhost/heimdall-api:${version}" "localhost/heimdall-agent:${version}" >/dev/null 2>&1 || true
    fi
    rm -rf "${work}"
}
trap cleanup EXIT

log() { printf 'package-oci: %s\n' "$*" >&2; }
for tool in umoci skopeo ldd ${run:+podman}; do
    command -v "${tool}" >/dev/null || { log "${tool} is missing (scripts/setup.sh installs it)"; exit 1; }
done

# rootfs NAME BINARY...: a root with the binaries, what they link, CA roots
# and user 10001 (heimdall), its state directory owned by that user.
rootfs() {
    local name="$1" root="${work}/$1/rootfs"
    shift
    mkdir -p "${root}/usr/bin" "${root}/etc/ssl/certs" "${root}/tmp" "${root}/var/lib/${name}"
    chmod 1777 "${root}/tmp"
    chmod 0750 "${root}/var/lib/${name}"
    for binary in "$@"; do
        install -m 0755 "${dist}/bin/${binary}" "${root}/usr/bin/"
        # Every library the binary links, at the path the loader looks for it.
        ldd "${dist}/bin/${binary}" | grep -o '/[^ ]*' | while IFS= read -r lib; do
            mkdir -p "${root}$(dirname "${lib}")"
            cp -L "${lib}" "${root}${lib}"
        done
    done
    cp -L /etc/ssl/certs/ca-certificates.crt "${root}/etc/ssl/certs/"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nheimdall:x:10001:10001:heimdall:/var/lib/%s:/sbin/nologin\n' \
        "${name}" >"${root}/etc/passwd"
    printf 'root:x:0:\nheimdall:x:10001:\n' >"${root}/etc/group"
    chown -R 10001:10001 "${root}/var/lib/${name}"
}

# image NAME CONFIG...: the layout OUT/NAME, tag VERSION, from its rootfs.
image() {
    local name="$1" layout="${out}/$1"
    shift
    rm -rf "${layout}"
    umoci init --layout "${layout}"
    umoci new --image "${layout}:${version}"
    umoci insert --image "${layout}:${version}" "${work}/${name}/rootfs" /
    umoci config --image "${layout}:${version}" --author "Heimdall maintainers" \
        --config.user 10001:10001 --config.workingdir "/var/lib/${name}" \
        --config.volume "/var/lib/${name}" \
        --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
        --config.label "org.opencontainers.image.title=${name}" \
        --config.label "org.opencontainers.image.version=${version}" \
        --config.label "org.opencontainers.image.source=README.md" \
        "$@"
    umoci gc --layout "${layout}"
}

mkdir -p "${out}"
rootfs heimdall-api heimdall-api
image heimdall-api --config.entrypoint /usr/bin/heimdall-api --config.cmd serve \
    --config.env HEIMDALL_DATABASE_URL=sqlite:///var/lib/heimdall-api/heimdall.db \
    --config.env HEIMDALL_LISTEN=0.0.0.0:7480 --config.env HEIMDALL_AGENT_LISTEN=0.0.0.0:7481 \
    --config.env HEIMDALL_CA_DIR=/var/lib/heimdall-api/ca \
    --config.exposedports 7480/tcp --config.exposedports 7481/tcp
rootfs heimdall-agent heimdall-agent heimdall-terraform-guard
image heimdall-agent --config.entrypoint /usr/bin/heimdall-agent \
    --config.cmd run --config.cmd --config --config.cmd /var/lib/heimdall-agent/agent.toml

# What a registry or a runtime reads back.
for name in heimdall-api heimdall-agent; do
    inspected="$(skopeo inspect --config "oci:${out}/${name}:${version}")"
    python3 - "${name}" "${inspected}" <<'PY'
import json, sys
name, config = sys.argv[1], json.loads(sys.argv[2])["config"]
want_entry = ["/usr/bin/" + name]
problems = []
if config.get("Entrypoint") != want_entry:
    problems.append(f"entrypoint {config.get('Entrypoint')}, not {want_entry}")
if config.get("User") != "10001:10001":
    problems.append(f"user {config.get('User')!r}, not 10001:10001")
if f"/var/lib/{name}" not in (config.get("Volumes") or {}):
    problems.append(f"no volume /var/lib/{name}")
if name == "heimdall-api" and set(config.get("ExposedPorts") or {}) != {"7480/tcp", "7481/tcp"}:
    problems.append(f"ports {config.get('ExposedPorts')}")
if problems:
    sys.exit(f"package-oci: {name}: " + "; ".join(problems))
PY
done
log "images in ${out}: $(du -sh "${out}" | cut -f1) ($(ls "${out}" | tr '\n' ' '))"

[[ -n "${run}" ]] || exit 0
# runc and modest limits: on the VMs this runs on (cgroup v1 with a hybrid
# v2 mount) crun refuses to start anything, and podman's default limits
# are above what the host lets a container set.
podman_run=(podman run --rm --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
for name in heimdall-api heimdall-agent; do
    skopeo copy -q "oci:${out}/${name}:${version}" "containers-storage:localhost/${name}:${version}"
    "${podman_run[@]}" --network none "localhost/${name}:${version}" --version | grep -qx "${name} ${version}" \
        || { log "${name}: --version from the image is not '${name} ${version}'"; exit 1; }
done
# The API as an operator starts it: bootstrap on the volume, then serve
# (host network, loopback ports: nothing is published beyond this machine).
volume="${work}/api-state"
mkdir -p "${volume}"
chown 10001:10001 "${volume}"
"${podman_run[@]}" --network none -v "${volume}:/var/lib/heimdall-api" "localhost/heimdall-api:${version}" \
    bootstrap --org acme --owner owner@example.com --token-file /var/lib/heimdall-api/owner.token >/dev/null
ports="$(python3 -c '
import socket
s, t = socket.socket(), socket.socket()
s.bind(("127.0.0.1", 0)); t.bind(("127.0.0.1", 0))
print(s.getsockname()[1], t.getsockname()[1])')"
read -r port agent_port <<<"${ports}"
"${podman_run[@]/--rm/-d}" --name heimdall-oci-check --network host -v "${volume}:/var/lib/heimdall-api" \
    -e "HEIMDALL_LISTEN=127.0.0.1:${port}" -e "HEIMDALL_AGENT_LISTEN=127.0.0.1:${agent_port}" \
    "localhost/heimdall-api:${version}" >/dev/null
health() { curl -fsS --cacert "${volume}/ca/ca.pem" "https://127.0.0.1:${port}/v1/health" >/dev/null 2>&1; }
for _ in $(seq 1 100); do
    health && break
    sleep 0.2
done
health || {
    log "the API image did not answer /v1/health"
    podman logs heimdall-oci-check >&2 || true
    exit 1
}
log "podman ran both images; the API image bootstrapped and served /v1/health over HTTPS"
