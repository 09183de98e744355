#!/usr/bin/env bash
# Debian packages from what scripts/package.sh laid out, then checked:
#
#   heimdall        the CLI, its manual pages and completions
#   heimdall-api    the API server, a systemd unit running as user heimdall-api,
#                   settings in /etc/heimdall-api/heimdall-api.env (a conffile),
#                   state in /var/lib/heimdall-api
#   heimdall-agent  the Agent and its Terraform guard, a systemd unit running as
#                   user heimdall-agent, state (agent.toml, keys, store) in
#                   /var/lib/heimdall-agent
#
# Checked here: each package's control data and file list, the maintainer
# scripts parse, the binaries run from a throwaway root the packages were
# unpacked into, and systemd-analyze verifies the units there; then dpkg
# installs, reinstalls and purges them in a copy-on-write overlay of this
# machine's root (needs root).
#
# Usage: bash scripts/package-deb.sh DIST OUT    (DIST: package.sh's output)
# HEIMDALL_DEB_COMPRESS: dpkg-deb's compressor (default xz; the test run,
# which packages debug builds only to check them, uses none).
set -euo pipefail
cd "$(dirname "$0")/.."
dist="${1:?usage: package-deb.sh DIST OUT}"
out="${2:?usage: package-deb.sh DIST OUT}"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
arch="$(dpkg --print-architecture)"
work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
mkdir -p "${out}"

# stage PACKAGE DESCRIPTION DEPENDS: an empty package tree with its control file.
stage() {
    local package="$1" description="$2" depends="$3" root="${work}/$1"
    mkdir -p "${root}/DEBIAN" "${root}/usr/bin" "${root}/usr/share/doc/${package}"
    cat > "${root}/DEBIAN/control" <<CONTROL
Package: ${package}
Version: ${version}
Architecture: ${arch}
Maintainer: Heimdall maintainers <heimdall@localhost>
Section: admin
Priority: optional
Depends: ${depends}
Homepage: https://github.com/heimdall
Description: ${description}
 Heimdall is a self-hosted control plane: an Infrastructure Manager that runs
 pinned Terraform through Agents in your network, and a Secret Manager whose
 values live only in those Agents, sealed under your master key.
CONTROL
    install -m 0644 README.md "${root}/usr/share/doc/${package}/README.md"
    install -D -m 0644 -t "${root}/usr/share/doc/${package}/docs" docs/*.md
    printf 'Heimdall\nLicense: Apache-2.0\n' > "${root}/usr/share/doc/${package}/copyright"
}

# service PACKAGE: the unit, the settings file (a conffile) and the maintainer scripts.
service() {
    local package="$1" root="${work}/$1"
    install -D -m 0644 "packaging/debian/${package}.service" "${root}/lib/systemd/system/${package}.service"
    install -D -m 0640 "packaging/debian/${package}.env" "${root}/etc/${package}/${package}.env"
    echo "/etc/${package}/${package}.env" > "${root}/DEBIAN/conffiles"
    for script in postinst postrm; do
        sed "s/@PACKAGE@/${package}/g" "packaging/debian/${script}" > "${root}/DEBIAN/${script}"
        chmod 0755 "${root}/DEBIAN/${script}"
    done
}

stage heimdall "Heimdall command line" "libc6"
install -m 0755 "${dist}/bin/heimdall" "${work}/heimdall/usr/bin/"
mkdir -p "${work}/heimdall/usr/share/man/man1" "${work}/heimdall/usr/share/bash-completion/completions" \
    "${work}/heimdall/usr/share/zsh/vendor-completions" "${work}/heimdall/usr/share/fish/vendor_completions.d"
for page in "${dist}"/share/man/man1/*.1; do
    gzip -9n -c "${page}" > "${work}/heimdall/usr/share/man/man1/$(basename "${page}").gz"
done
install -m 0644 "${dist}/share/bash-completion/completions/heimdall" "${work}/heimdall/usr/share/bash-completion/completions/"
install -m 0644 "${dist}/share/zsh/site-functions/_heimdall" "${work}/heimdall/usr/share/zsh/vendor-completions/"
install -m 0644 "${dist}/share/fish/vendor_completions.d/heimdall.fish" "${work}/heimdall/usr/share/fish/vendor_completions.d/"

stage heimdall-api "Heimdall API server" "libc6, passwd"
install -m 0755 "${dist}/bin/heimdall-api" "${work}/heimdall-api/usr/bin/"
install -D -m 0644 -t "${work}/heimdall-api/usr/share/heimdall/openapi" \
    "${dist}/share/heimdall/openapi/people.json" "${dist}/share/heimdall/openapi/agent-channel.json"
service heimdall-api

stage heimdall-agent "Heimdall Agent" "libc6, passwd"
# The guard goes next to the Agent, where the Agent looks for it.
install -m 0755 "${dist}/bin/heimdall-agent" "${dist}/bin/heimdall-terraform-guard" "${work}/heimdall-agent/usr/bin/"
install -D -m 0644 -t "${work}/heimdall-agent/usr/share/heimdall/openapi" "${dist}/share/heimdall/openapi/agent-local.json"
service heimdall-agent

for package in heimdall heimdall-api heimdall-agent; do
    dpkg-deb --root-owner-group -Z"${HEIMDALL_DEB_COMPRESS:-xz}" --build "${work}/${package}" "${out}/${package}_${version}_${arch}.deb" >/dev/null
done

# ---- checks ----
fail() { echo "package-deb.sh: $*" >&2; exit 1; }
root="${work}/installed"
for package in heimdall heimdall-api heimdall-agent; do
    deb="${out}/${package}_${version}_${arch}.deb"
    [[ "$(dpkg-deb --field "${deb}" Package)" == "${package}" ]] || fail "${deb}: wrong Package"
    [[ "$(dpkg-deb --field "${deb}" Version)" == "${version}" ]] || fail "${deb}: wrong Version"
    contents="$(dpkg-deb --contents "${deb}")"
    grep -q " ./usr/bin/${package}\$" <<<"${contents}" || fail "${deb} lacks /usr/bin/${package}"
    grep -q "^-rw-r--r-- root/root .* ./usr/share/doc/${package}/docs/operations.md\$" <<<"${contents}" \
        || fail "${deb} lacks the guides in /usr/share/doc/${package}/docs"
    if [[ "${package}" != heimdall ]]; then
        for path in "./lib/systemd/system/${package}.service" "./etc/${package}/${package}.env"; do
            grep -q " ${path}\$" <<<"${contents}" || fail "${deb} lacks ${path}"
        done
        grep -q "^-rw-r----- root/root .* ./etc/${package}/${package}.env\$" <<<"${contents}" \
            || fail "${deb}: the settings file must not be world-readable"
        dpkg-deb --ctrl-tarfile "${deb}" | tar -xO ./conffiles | grep -qx "/etc/${package}/${package}.env" \
            || fail "${deb}: the settings file is not a conffile"
        for script in postinst postrm; do
            dpkg-deb --ctrl-tarfile "${deb}" | tar -xO "./${script}" | sh -n || fail "${deb}: ${script} does not parse"
        done
    fi
    dpkg-deb -x "${deb}" "${root}"
done
grep -q " ./usr/bin/heimdall-terraform-guard\$" <<<"$(dpkg-deb --contents "${out}/heimdall-agent_${version}_${arch}.deb")" \
    || fail "heimdall-agent lacks the Terraform guard"
for binary in heimdall heimdall-api heimdall-agent; do
    "${root}/usr/bin/${binary}" --version | grep -q "${version}" || fail "${binary} --version does not say ${version}"
done
# systemd-analyze verify in the unpacked root: the units parse, name known
# settings only, and their ExecStart binaries exist there. The root gets
# the machine's own units for the targets they order against.
mkdir -p "${root}/usr/lib/systemd"
cp -a /usr/lib/systemd/system "${root}/usr/lib/systemd/"
for unit in heimdall-api heimdall-agent; do
    messages="$(systemd-analyze verify --root="${root}" "${unit}.service" 2>&1)" \
        || fail "${unit}.service does not verify: ${messages}"
    [[ -z "${messages}" ]] || fail "${unit}.service: ${messages}"
done

# Installed by dpkg, configured, reinstalled over an edited setting, and
# purged, in a throwaway root: a copy-on-write overlay of this machine's
# own root (its dpkg database, libc, passwd and man-db), in a mount
# namespace of its own, so every maintainer script runs as on a host while
# nothing outside the overlay changes. Needs root, as dpkg does.
[[ "$(id -u)" == 0 ]] || fail "installing the packages in a throwaway root needs root (unshare, mount, chroot)"
unshare --mount --propagation private bash -s "${out}" "${version}" "${arch}" "${work}/overlay" <<'INSTALL' \
    || fail "dpkg -i / --purge in the throwaway root failed (above)"
set -euo pipefail
out="$1" version="$2" arch="$3" overlay="$4"
fail() { echo "package-deb.sh: installed: $*" >&2; exit 1; }
mkdir -p "${overlay}/layers" "${overlay}/root"
# The upper layer on a tmpfs: an upper directory inside the lower root
# would overlap it.
mount -t tmpfs tmpfs "${overlay}/layers"
mkdir -p "${overlay}/layers/upper" "${overlay}/layers/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=${overlay}/layers/upper,workdir=${overlay}/layers/work" \
    "${overlay}/root"
for fs in proc sys dev; do
    mount --rbind "/${fs}" "${overlay}/root/${fs}"
done
mkdir -p "${overlay}/root/tmp/debs"
cp "${out}"/*.deb "${overlay}/root/tmp/debs/"
in_root() { chroot "${overlay}/root" "$@" </dev/null; }
debs=()
for package in heimdall heimdall-api heimdall-agent; do
    debs+=("/tmp/debs/${package}_${version}_${arch}.deb")
done
in_root dpkg -i "${debs[@]}" >/dev/null
for package in heimdall heimdall-api heimdall-agent; do
    [[ "$(in_root dpkg-query -W -f='${Status}' "${package}")" == "install ok installed" ]] \
        || fail "${package} is not installed"
    in_root "/usr/bin/${package}" --version | grep -q "${version}" || fail "${package} --version"
done
for server in heimdall-api heimdall-agent; do
    shell="$(in_root getent passwd "${server}" | cut -d: -f7)"
    [[ "${shell}" == /usr/sbin/nologin ]] || fail "the system user ${server} (shell ${shell:-none})"
    [[ "$(in_root stat -c '%U:%G %a' "/etc/${server}/${server}.env")" == "root:${server} 640" ]] \
        || fail "/etc/${server}/${server}.env is not root:${server} 0640"
    [[ "$(in_root stat -c '%U:%G %a' "/var/lib/${server}")" == "${server}:${server} 750" ]] \
        || fail "/var/lib/${server} is not ${server}:${server} 0750"
    # The server runs as its own user, as its unit says.
    in_root setpriv --reuid "${server}" --regid "${server}" --clear-groups "/usr/bin/${server}" --version \
        >/dev/null || fail "${server} does not run as its user"
done
# An edited setting survives the package installed again (a conffile).
in_root sh -c 'echo "HEIMDALL_LISTEN=127.0.0.1:9480" >> /etc/heimdall-api/heimdall-api.env'
in_root dpkg -i "/tmp/debs/heimdall-api_${version}_${arch}.deb" >/dev/null
in_root grep -qx 'HEIMDALL_LISTEN=127.0.0.1:9480' /etc/heimdall-api/heimdall-api.env \
    || fail "reinstalling heimdall-api replaced its edited settings"
# Purged: binaries and settings go; state in /var/lib stays for the operator.
in_root dpkg --purge heimdall heimdall-api heimdall-agent >/dev/null
for server in heimdall-api heimdall-agent; do
    ! in_root test -e "/usr/bin/${server}" || fail "/usr/bin/${server} is left after purge"
    ! in_root test -e "/etc/${server}/${server}.env" || fail "/etc/${server}/${server}.env is left after purge"
    in_root test -d "/var/lib/${server}" || fail "purge removed /var/lib/${server} (the state stays)"
done
INSTALL
echo "package-deb.sh: ${out}: heimdall, heimdall-api, heimdall-agent ${version} (${arch}); units verified;" \
    "installed, reinstalled and purged by dpkg in a throwaway root"
