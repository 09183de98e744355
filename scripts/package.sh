#!/usr/bin/env bash
# Builds the binaries and lays out what a package ships, the manual
# pages and shell completions generated at build time from the same clap
# definition the CLI parses with (as ripgrep does since 14: the binary
# writes them, so they can never drift from its flags):
#
#   OUT/bin/{heimdall,heimdall-api,heimdall-agent,heimdall-terraform-guard}
#   OUT/share/man/man1/heimdall*.1          one page per command and subcommand
#   OUT/share/bash-completion/completions/heimdall
#   OUT/share/zsh/site-functions/_heimdall
#   OUT/share/fish/vendor_completions.d/heimdall.fish
#   OUT/share/heimdall/openapi/{people,agent-channel,agent-local}.json
#   OUT/python/heimdall-VERSION-*.whl       the Python SDK (maturin), for `pip install`
#   OUT/terraform/heimdall.local/heimdall/heimdall/VERSION/OS_ARCH/terraform-provider-heimdall_vVERSION
#                                           the Terraform provider, as a filesystem mirror
#
# Usage: bash scripts/package.sh [--debug] [OUT]   (default OUT: dist/, release build)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
profile=release
if [[ "${1:-}" == "--debug" ]]; then
    profile=debug
    shift
fi
out="${1:-dist}"

if [[ "${profile}" == release ]]; then
    cargo build --release --locked -p heimdall-cli -p heimdall-api -p heimdall-agent -p heimdall-terraform --bins
else
    cargo build --locked -p heimdall-cli -p heimdall-api -p heimdall-agent -p heimdall-terraform --bins
fi
bin="${CARGO_TARGET_DIR}/${profile}"

rm -rf "${out}"
mkdir -p "${out}/bin" "${out}/share/man/man1" "${out}/share/bash-completion/completions" \
    "${out}/share/zsh/site-functions" "${out}/share/fish/vendor_completions.d" "${out}/share/heimdall/openapi"
# The guard goes next to the Agent, where the Agent looks for it.
install -m 0755 "${bin}/heimdall" "${bin}/heimdall-api" "${bin}/heimdall-agent" "${bin}/heimdall-terraform-guard" \
    "${out}/bin/"

# The provider where Terraform's filesystem_mirror looks for it:
# <host>/<namespace>/<type>/<version>/<os>_<arch>/ (README: "Configuration as code").
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)"
case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) arch="$(uname -m)" ;;
esac
mirror="${out}/terraform/heimdall.local/heimdall/heimdall/${version}/linux_${arch}"
mkdir -p "${mirror}"
install -m 0755 "${bin}/terraform-provider-heimdall" "${mirror}/terraform-provider-heimdall_v${version}"

"${out}/bin/heimdall" man --out-dir "${out}/share/man/man1" >/dev/null
"${out}/bin/heimdall" completion bash > "${out}/share/bash-completion/completions/heimdall"
"${out}/bin/heimdall" completion zsh > "${out}/share/zsh/site-functions/_heimdall"
"${out}/bin/heimdall" completion fish > "${out}/share/fish/vendor_completions.d/heimdall.fish"
"${out}/bin/heimdall-api" openapi > "${out}/share/heimdall/openapi/people.json"
"${out}/bin/heimdall-api" openapi --document agent-channel > "${out}/share/heimdall/openapi/agent-channel.json"
"${out}/bin/heimdall-agent" openapi > "${out}/share/heimdall/openapi/agent-local.json"

# Check what was written: every page renders with man(1) when it is here,
# the completions name the binary, the documents parse.
pages=("${out}"/share/man/man1/*.1)
[[ "${#pages[@]}" -gt 50 ]] || { echo "package.sh: only ${#pages[@]} manual pages" >&2; exit 1; }
for page in "${pages[@]}"; do
    head -c 200 "${page}" | grep -q '^\.TH' || { echo "package.sh: ${page} is not a manual page" >&2; exit 1; }
done
grep -q 'heimdall' "${out}/share/bash-completion/completions/heimdall"
grep -q '#compdef heimdall' "${out}/share/zsh/site-functions/_heimdall"
grep -q 'complete -c heimdall' "${out}/share/fish/vendor_completions.d/heimdall.fish"
for doc in "${out}"/share/heimdall/openapi/*.json; do
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["openapi"].startswith("3.") and d["paths"], sys.argv[1]' "${doc}"
done

# The Python SDK as a wheel, with the pinned maturin (from .venv when the
# test tools are there, else a virtualenv of its own beside the build).
maturin_pin="$(grep -E '^maturin==' scripts/test-tools-requirements.txt)"
maturin="$(pwd)/.venv/bin/maturin"
if [[ ! -x "${maturin}" ]]; then
    tools="${CARGO_TARGET_DIR}/package-tools"
    [[ -x "${tools}/bin/python" ]] || python3 -m venv "${tools}"
    [[ -x "${tools}/bin/maturin" ]] || PIP_DISABLE_PIP_VERSION_CHECK=1 "${tools}/bin/python" -m pip install \
        --quiet --no-input --only-binary=:all: "${maturin_pin}"
    maturin="${tools}/bin/maturin"
fi
maturin_profile=()
[[ "${profile}" == release ]] && maturin_profile=(--release)
"${maturin}" build --locked "${maturin_profile[@]}" --manifest-path bindings/python/Cargo.toml \
    --interpreter python3 --out "${out}/python" --quiet
wheels=("${out}"/python/heimdall-*.whl)
[[ "${#wheels[@]}" -eq 1 ]] || { echo "package.sh: expected one wheel, found ${#wheels[@]}" >&2; exit 1; }
# It installs and imports in a clean virtualenv, as a user's would.
check_venv="$(mktemp -d)"
python3 -m venv "${check_venv}"
PIP_DISABLE_PIP_VERSION_CHECK=1 "${check_venv}/bin/python" -m pip install --quiet --no-input --no-index \
    "${wheels[0]}"
"${check_venv}/bin/python" -c 'import heimdall; assert heimdall.Client and heimdall.AgentClient'
rm -rf "${check_venv}"

echo "package.sh: ${out} (${profile}): 4 binaries, the Terraform provider ${version}, ${#pages[@]} manual pages, 3 completions, 3 OpenAPI documents, $(basename "${wheels[0]}")"
