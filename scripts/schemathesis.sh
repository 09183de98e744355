#!/usr/bin/env bash
# Property-based tests of the people-facing API against its own OpenAPI
# document (GET /v1/openapi.json), with schemathesis (PyPI, pinned in
# scripts/schemathesis/requirements.txt, installed into .venv/schemathesis).
#
#   bash scripts/schemathesis.sh            # the short run CI makes (a few examples per operation)
#   bash scripts/schemathesis.sh 200        # a longer one: up to 200 examples per operation
#
# It serves a fresh API on SQLite (debug build of heimdall-api, built if
# missing) with an owner token, seeds a little data through the API so
# that the generated requests meet real rows, and asserts on every
# response:
#   - no 500 (not_a_server_error);
#   - the status, content type, headers and body are those the document
#     lists for the operation (every error body is {"error":{"code","message"}});
#   - no error response echoes a string the request carried
#     (scripts/schemathesis/hooks.py);
#   - every error code is one the document lists for that status and
#     operation (error_code_is_documented, the same file).
# `DELETE /v1/tokens/{id}` is left out: the fuzzer learns ids from answers
# and would revoke the very token it runs with (it did).
# Exits non-zero on any failure; the report is under $OUT (default
# target dir's schemathesis/).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
examples="${1:-6}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/var/tmp/heimdall-target}"
python="${PYTHON:-python3}"
venv="${repo}/.venv/schemathesis"
requirements="${repo}/scripts/schemathesis/requirements.txt"
out="${OUT:-${CARGO_TARGET_DIR}/schemathesis}"

log() { printf 'schemathesis: %s\n' "$*" >&2; }

want="$(sha256sum < "${requirements}" | cut -d' ' -f1)"
if [[ "$(cat "${venv}/.heimdall-pins" 2>/dev/null || true)" != "${want}" ]]; then
    log "installing $(grep -m1 '^schemathesis==' "${requirements}") into ${venv}"
    rm -rf "${venv}"
    "${python}" -m venv "${venv}"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "${venv}/bin/python" -m pip install \
        --quiet --no-input --only-binary=:all: --requirement "${requirements}"
    echo "${want}" > "${venv}/.heimdall-pins"
fi

api="${CARGO_TARGET_DIR}/debug/heimdall-api"
[[ -x "${api}" ]] || cargo build --locked -p heimdall-api --bin heimdall-api

work="$(mktemp -d)"
pid=""
cleanup() {
    [[ -n "${pid}" ]] && kill "${pid}" 2>/dev/null && wait "${pid}" 2>/dev/null
    rm -rf "${work}"
}
trap cleanup EXIT

db="sqlite://${work}/heimdall.db"
port="$("${python}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:${port}"
"${api}" bootstrap --database-url "${db}" --org fuzz --owner owner@fuzz.test \
    --token-file "${work}/token" >/dev/null
token="$(cat "${work}/token")"
"${api}" serve --database-url "${db}" --insecure-http --listen "127.0.0.1:${port}" \
    >"${work}/api.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    curl -fsS "${url}/v1/health" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "${url}/v1/health" >/dev/null || { log "the API did not start"; cat "${work}/api.log" >&2; exit 1; }

# A little of everything, so that generated requests meet real rows.
post() { curl -fsS -X POST "${url}$1" -H "authorization: Bearer ${token}" -H 'content-type: application/json' -d "$2" >/dev/null; }
post /v1/domains '{"name":"payments"}'
post /v1/environments '{"name":"dev"}'
post /v1/secrets '{"name":"db-password"}'
post /v1/policies '{"name":"no-prod","text":"forbid(principal, action, resource) when { context.environment == \"prod\" };"}' || true

mkdir -p "${out}"
log "running against ${url} (${examples} examples per operation)"
status=0
# From the scratch directory: schemathesis keeps a cache where it runs.
(cd "${work}" && SCHEMATHESIS_HOOKS=hooks PYTHONPATH="${repo}/scripts/schemathesis" \
    "${venv}/bin/schemathesis" run "${url}/v1/openapi.json" \
    --header "Authorization: Bearer ${token}" \
    --exclude-operation-id revoke_token \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,error_echoes_no_input,error_code_is_documented \
    --phases examples,coverage,fuzzing \
    --max-examples "${examples}" \
    --workers 1 \
    --seed 1 \
    --report junit,har --report-dir "${out}" \
    --no-color) || status=$?
if [[ "${status}" -ne 0 ]]; then
    log "failed; the API's log:"
    grep -iE 'error|panick' "${work}/api.log" | tail -20 >&2 || true
fi
exit "${status}"
