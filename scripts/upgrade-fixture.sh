#!/usr/bin/env bash
# Rebuilds tests/fixtures/upgrade/: what an older Heimdall wrote, for the
# upgrade test (tests/upgrade.rs) to open with today's binaries.
#
#   bash scripts/upgrade-fixture.sh [COMMIT]     (default: the commit in
#                                                 tests/fixtures/upgrade/COMMIT)
#
# It builds COMMIT's binaries (in a target directory of their own under
# /var/tmp), runs that release's `heimdall dev` and drives it through its
# real routes: its README tour (catalog, environments, a member, a policy,
# a cloud account and its credential, a schema, a Resource applied by real
# Terraform, an import), then two more versions of a secret, reads of each,
# and a wait until the reads reached the access log. Then it stops dev as
# Ctrl-C does and keeps:
#   heimdall.sql, agent-values.sql   the API's database and the Agent's value
#                                    store, as `sqlite3 .dump` text;
#   data/                            the rest of the data directory (the
#                                    installation CA, the owner's token, the
#                                    Agent's key, certificate and agent.toml,
#                                    the master key, the Terraform state);
#   config/                          the CLI's configuration (profile `dev`);
#   expected.json                    what the old release listed, for the
#                                    test to compare with what today's lists.
# Absolute paths become @DATA@, @CONFIG@, @REPO@ (the old source tree, whose
# fixture modules the Resource uses, and this checkout, whose .venv holds
# Terraform's CLI configuration), @TERRAFORM@ and @TERRAFORM_SHA256@; the
# test puts its own back. Every key here is a test key made for the
# fixture, valid for nothing else. The Agent's certificate is valid for a
# year from the day the fixture was made: rebuild it before then.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${repo}/tests/fixtures/upgrade"
commit="${1:-$(cat "${out}/COMMIT" 2>/dev/null || true)}"
[[ -n "${commit}" ]] || { echo "usage: $0 COMMIT" >&2; exit 2; }
commit="$(git -C "${repo}" rev-parse --verify "${commit}^{commit}")"

log() { printf 'upgrade-fixture: %s\n' "$*" >&2; }
for tool in sqlite3 openssl; do
    command -v "${tool}" >/dev/null || { log "${tool} is missing (apt-get install ${tool})"; exit 1; }
done

work="$(mktemp -d /var/tmp/heimdall-upgrade-fixture.XXXXXX)"
dev_pid=""
cleanup() {
    if [[ -n "${dev_pid}" ]] && kill -0 "${dev_pid}" 2>/dev/null; then
        kill -INT "${dev_pid}" 2>/dev/null || true
        wait "${dev_pid}" 2>/dev/null || true
    fi
    rm -rf "${work}"
}
trap cleanup EXIT

src="${work}/src" data="${work}/data" config="${work}/config"
mkdir -p "${src}"
git -C "${repo}" archive "${commit}" | tar -x -C "${src}"

log "building ${commit:0:12}'s binaries"
bash "${repo}/scripts/install-test-tools.sh" --terraform-only >/dev/null
export CARGO_TARGET_DIR="${HEIMDALL_UPGRADE_TARGET_DIR:-/var/tmp/heimdall-upgrade-target}"
(cd "${src}" && cargo build --locked -q -p heimdall-cli -p heimdall-api -p heimdall-agent)
bin="${CARGO_TARGET_DIR}/debug"
terraform="${repo}/.venv/bin/terraform"

port="$("${repo}/.venv/bin/python" -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    ok = True
    for n in (1, 2):
        t = socket.socket()
        try: t.bind(("127.0.0.1", p + n))
        except OSError: ok = False
        t.close()
    s.close()
    if ok: print(p); break
')"

export HEIMDALL_CONFIG_DIR="${config}" PATH="${bin}:${PATH}"
unset HEIMDALL_API_URL HEIMDALL_TOKEN HEIMDALL_PROFILE
cd "${src}"
heimdall dev --data "${data}" --listen "127.0.0.1:${port}" --terraform "${terraform}" >"${work}/banner" 2>"${work}/dev.err" &
dev_pid=$!
for _ in $(seq 1 900); do
    grep -q '^Press Ctrl-C' "${work}/banner" && break
    kill -0 "${dev_pid}" 2>/dev/null || { cat "${work}/dev.err" >&2; exit 1; }
    sleep 0.1
done
grep -q '^Press Ctrl-C' "${work}/banner" || { log "dev did not start"; cat "${work}/dev.err" >&2; exit 1; }

log "running ${commit:0:12}'s README tour"
sed -n '/<!-- tour:start/,/<!-- tour:end/p' README.md | grep -E '^heimdall |\| heimdall ' | while IFS= read -r line; do
    printf '+ %s\n' "${line}" >&2
    bash -c "${line}" >/dev/null
done
printf 'second-value' | heimdall secret set db-password --environment dev >/dev/null
printf 'third-value' | heimdall secret set db-password --environment dev >/dev/null
heimdall secret get db-password --environment dev >/dev/null
heimdall secret get db-password --environment dev --version 2 >/dev/null
# Every read reported: six of db-password's (one in the tour, two here,
# by the owner) reach the API within a few syncs.
for _ in $(seq 1 120); do
    reads="$(heimdall secret access-log db-password --output json | "${repo}/.venv/bin/python" -c '
import json, sys
print(sum(e.get("reads", 0) for e in json.load(sys.stdin) if e.get("accessor") == "dev@localhost"))')"
    [[ "${reads}" -ge 3 ]] && break
    sleep 0.5
done
[[ "${reads}" -ge 3 ]] || { log "the reads never reached the access log"; exit 1; }

log "recording what ${commit:0:12} lists"
list() { heimdall "$@" --output json; }
{
    printf '{"commit":"%s",\n' "${commit}"
    not_after="$(openssl x509 -enddate -noout -in "${data}/agent/agent.pem" | cut -d= -f2)"
    printf '"agent_certificate_until":%s,\n' "$(date -d "${not_after}" +%s)"
    printf '"whoami":%s,\n' "$(list whoami)"
    printf '"domains":%s,\n' "$(list domain list)"
    printf '"systems":%s,\n' "$(list system list)"
    printf '"components":%s,\n' "$(list component list)"
    printf '"environments":%s,\n' "$(list environment list)"
    printf '"agents":%s,\n' "$(list agent list)"
    printf '"members":%s,\n' "$(list member list)"
    printf '"policies":%s,\n' "$(list policy list)"
    printf '"secrets":%s,\n' "$(list secret list)"
    printf '"db_password":%s,\n' "$(list secret show db-password)"
    printf '"access_log":%s,\n' "$(list secret access-log db-password)"
    printf '"cloud_accounts":%s,\n' "$(list cloud-account list)"
    printf '"schemas":%s,\n' "$(list schema list)"
    printf '"resources":%s,\n' "$(list resource list)"
    printf '"recibos":%s,\n' "$(list resource show recibos)"
    printf '"jobs":%s,\n' "$(list job list --component receipts)"
    printf '"events":%s}\n' "$(list event list --limit 500)"
} >"${work}/expected.json"

log "stopping dev"
kill -INT "${dev_pid}"
wait "${dev_pid}"
dev_pid=""

log "writing ${out}"
rm -rf "${out}"
mkdir -p "${out}"
echo "${commit}" >"${out}/COMMIT"
sqlite3 "${data}/heimdall.db" .dump >"${out}/heimdall.sql"
sqlite3 "${data}/agent-values.db" .dump >"${out}/agent-values.sql"
rm -f "${data}"/*.db "${data}"/*.db-wal "${data}"/*.db-shm "${data}"/*.log
cp -a "${data}" "${out}/data"
cp -a "${config}" "${out}/config"
"${repo}/.venv/bin/python" -m json.tool "${work}/expected.json" >"${out}/expected.json"
sha="$(sha256sum "${terraform}" | cut -d' ' -f1)"
# Longest first: the data and config directories are under ${work}, as is ${src}.
grep -rlI -e "${work}" -e "${repo}" -e "${sha}" "${out}" | while IFS= read -r file; do
    sed -i -e "s|${data}|@DATA@|g" -e "s|${config}|@CONFIG@|g" -e "s|${src}|@REPO@|g" \
        -e "s|${terraform}|@TERRAFORM@|g" -e "s|${sha}|@TERRAFORM_SHA256@|g" -e "s|${repo}|@REPO@|g" "${file}"
done
if grep -rlI -e "${work}" -e "${repo}" "${out}"; then
    log "an absolute path is left in the files above"
    exit 1
fi
log "done: ${out} ($(du -sh "${out}" | cut -f1))"
