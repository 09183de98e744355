#!/usr/bin/env bash
# Rebuilds tests/fixtures/upgrade/: what an older Heimdall wrote, for the
# upgrade test (tests/upgrade.rs) to open with today's binaries.
#
#   bash scripts/upgrade-fixture.sh [COMMIT]     (default: the commit in
#                                                 tests/fixtures/upgrade/COMMIT)
#
# It builds COMMIT's binaries (in a target directory of their own under
# /var/tmp) and runs that release twice, each time driven through its real
# routes by the same scenario: its README tour (catalog, environments, a
# member, a policy, a cloud account and its credential, a schema, a
# Resource applied by real Terraform, an import), then two more versions of
# a secret, reads of them, and a wait until the reads reached the access log.
#
#   sqlite/     `heimdall dev`: the API on SQLite, the Agent's store on SQLite
#   postgres/   `heimdall-api serve` on PostgreSQL and an Agent enrolled by
#               hand (`heimdall-agent enroll`) with its store on PostgreSQL;
#               then a database service user on this machine's PostgreSQL
#               (database heimdall_upgrade_orders, roles heimdall_upgrade_app*)
#               and a rotation asked for while the Agent is stopped
#
# Each holds the API's database and the Agent's store as text
# (`sqlite3 .dump` / `pg_dump`), `data/` (the installation CA, the owner's
# token, the Agent's key, certificate and agent.toml, the master key, the
# Terraform state), `config/` (the CLI's profile) and `expected.json` (what
# the old release listed, for the test to compare with what today's lists).
# Absolute paths, ports and database URLs become placeholders (@DATA@,
# @CONFIG@, @REPO@, @TERRAFORM@, @TERRAFORM_SHA256@, @API_URL@, @AGENT_URL@,
# @LOCAL_API@, @STORE_URL@); the test puts its own back. Every key here is a
# test key made for the fixture, valid for nothing else. The Agents'
# certificates are valid for a year from the day the fixture was made
# (`agent_certificate_until`): rebuild it before then.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${repo}/tests/fixtures/upgrade"
commit="${1:-$(cat "${out}/COMMIT" 2>/dev/null || true)}"
[[ -n "${commit}" ]] || { echo "usage: $0 COMMIT" >&2; exit 2; }
commit="$(git -C "${repo}" rev-parse --verify "${commit}^{commit}")"

log() { printf 'upgrade-fixture: %s\n' "$*" >&2; }
for tool in sqlite3 openssl pg_dump psql curl; do
    command -v "${tool}" >/dev/null || { log "${tool} is missing"; exit 1; }
done
python="${repo}/.venv/bin/python"
pg_admin="${HEIMDALL_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
pg_base="${pg_admin%/*}"
suffix="$(date +%s)_$$"
api_db="heimdall_upgrade_api_${suffix}" store_db="heimdall_upgrade_store_${suffix}"

work="$(mktemp -d /var/tmp/heimdall-upgrade-fixture.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill -INT "${pid}" 2>/dev/null || true
        wait "${pid}" 2>/dev/null || true
    done
    psql -q "${pg_admin}" -c "DROP DATABASE IF EXISTS ${api_db} WITH (FORCE)" \
        -c "DROP DATABASE IF EXISTS ${store_db} WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "${work}"
}
trap cleanup EXIT

src="${work}/src"
mkdir -p "${src}"
git -C "${repo}" archive "${commit}" | tar -x -C "${src}"

log "building ${commit:0:12}'s binaries"
bash "${repo}/scripts/install-test-tools.sh" --terraform-only >/dev/null
export CARGO_TARGET_DIR="${HEIMDALL_UPGRADE_TARGET_DIR:-/var/tmp/heimdall-upgrade-target}"
(cd "${src}" && cargo build --locked -q -p heimdall-cli -p heimdall-api -p heimdall-agent)
bin="${CARGO_TARGET_DIR}/debug"
terraform="${repo}/.venv/bin/terraform"
export PATH="${bin}:${PATH}"
unset HEIMDALL_API_URL HEIMDALL_TOKEN HEIMDALL_PROFILE
cd "${src}"

# A free port whose next two are free too.
free_ports() {
    "${python}" -c '
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
'
}

# scenario: the old README's tour, then versions 2 and 3 of db-password
# and reads of them, until the reads are in the access log.
scenario() {
    log "running ${commit:0:12}'s README tour"
    sed -n '/<!-- tour:start/,/<!-- tour:end/p' README.md | grep -E '^heimdall |\| heimdall ' | while IFS= read -r line; do
        printf '+ %s\n' "${line}" >&2
        bash -c "${line}" >/dev/null
    done
    printf 'second-value' | heimdall secret set db-password --environment dev >/dev/null
    printf 'third-value' | heimdall secret set db-password --environment dev >/dev/null
    heimdall secret get db-password --environment dev >/dev/null
    heimdall secret get db-password --environment dev --version 2 >/dev/null
    local reads=0
    for _ in $(seq 1 120); do
        reads="$(heimdall secret access-log db-password --output json | "${python}" -c '
import json, sys
print(sum(e.get("reads", 0) for e in json.load(sys.stdin) if e.get("accessor") == "dev@localhost"))')"
        [[ "${reads}" -ge 3 ]] && break
        sleep 0.5
    done
    [[ "${reads}" -ge 3 ]] || { log "the reads never reached the access log"; exit 1; }
}

# record DATA FILE: what the old release lists, as JSON.
record() {
    local data="$1" list not_after
    list() { heimdall "$@" --output json; }
    not_after="$(openssl x509 -enddate -noout -in "${data}/agent/agent.pem" | cut -d= -f2)"
    {
        printf '{"commit":"%s",\n' "${commit}"
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
    } | "${python}" -m json.tool >"$2"
}

# stop PID: as Ctrl-C (or systemd's stop) does, and wait for it.
stop() {
    kill -INT "$1"
    wait "$1" || true
    local kept=()
    for pid in "${pids[@]}"; do
        [[ "${pid}" == "$1" ]] || kept+=("${pid}")
    done
    pids=("${kept[@]}")
}

# keep DATA CONFIG DEST PORT [STORE_URL]: the data and config directories
# into DEST with placeholders for what is this run's own.
keep() {
    local data="$1" config="$2" dest="$3" port="$4" store_url="${5:-}" sha
    rm -f "${data}"/*.db "${data}"/*.db-wal "${data}"/*.db-shm "${data}"/*.log
    cp -a "${data}" "${dest}/data"
    cp -a "${config}" "${dest}/config"
    sha="$(sha256sum "${terraform}" | cut -d' ' -f1)"
    local expr=(-e "s|${data}|@DATA@|g" -e "s|${config}|@CONFIG@|g" -e "s|${src}|@REPO@|g"
        -e "s|${terraform}|@TERRAFORM@|g" -e "s|${sha}|@TERRAFORM_SHA256@|g" -e "s|${repo}|@REPO@|g"
        -e "s|https://127\.0\.0\.1:${port}\b|@API_URL@|g"
        -e "s|https://127\.0\.0\.1:$((port + 1))\b|@AGENT_URL@|g"
        -e "s|127\.0\.0\.1:$((port + 2))\b|@LOCAL_API@|g")
    [[ -z "${store_url}" ]] || expr=(-e "s|${store_url}|@STORE_URL@|g" "${expr[@]}")
    grep -rlI -e "${work}" -e "${repo}" -e "${sha}" -e "127.0.0.1:" -e "${store_url:-${work}}" "${dest}" \
        | while IFS= read -r file; do sed -i "${expr[@]}" "${file}"; done
    if grep -rnI -e "${work}" -e "${repo}" -e "127\.0\.0\.1:${port}\b" "${dest}"; then
        log "an absolute path or this run's port is left in the lines above"
        exit 1
    fi
}

rm -rf "${out}.new"
mkdir -p "${out}.new/sqlite" "${out}.new/postgres"
echo "${commit}" >"${out}.new/COMMIT"

# 1. `heimdall dev`: SQLite everywhere.
data="${work}/sqlite/data" config="${work}/sqlite/config"
port="$(free_ports)"
export HEIMDALL_CONFIG_DIR="${config}"
heimdall dev --data "${data}" --listen "127.0.0.1:${port}" --terraform "${terraform}" \
    >"${work}/banner" 2>"${work}/dev.err" &
pids+=($!)
for _ in $(seq 1 900); do
    grep -q '^Press Ctrl-C' "${work}/banner" && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "${work}/dev.err" >&2; exit 1; }
    sleep 0.1
done
grep -q '^Press Ctrl-C' "${work}/banner" || { log "dev did not start"; cat "${work}/dev.err" >&2; exit 1; }
scenario
record "${data}" "${out}.new/sqlite/expected.json"
log "stopping dev"
stop "${pids[-1]}"
sqlite3 "${data}/heimdall.db" .dump >"${out}.new/sqlite/heimdall.sql"
sqlite3 "${data}/agent-values.db" .dump >"${out}.new/sqlite/agent-values.sql"
keep "${data}" "${config}" "${out}.new/sqlite" "${port}"

# 2. The API and the Agent's store on PostgreSQL, set up as an operator does.
log "the same on PostgreSQL"
data="${work}/postgres/data" config="${work}/postgres/config"
mkdir -p "${data}"
chmod 0700 "${data}"
export HEIMDALL_CONFIG_DIR="${config}"
psql -q "${pg_admin}" -c "CREATE DATABASE ${api_db}" -c "CREATE DATABASE ${store_db}"
api_url="${pg_base}/${api_db}" store_url="${pg_base}/${store_db}"
heimdall-api bootstrap --database-url "${api_url}" --org dev --owner dev@localhost \
    --token-file "${data}/owner.token" >/dev/null
port="$(free_ports)"
heimdall-api serve --database-url "${api_url}" --listen "127.0.0.1:${port}" \
    --agent-listen "127.0.0.1:$((port + 1))" --agent-public-url "https://127.0.0.1:$((port + 1))" \
    --ca-dir "${data}/ca" >"${work}/api.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
    [[ -f "${data}/ca/ca.pem" ]] && curl -fsS --cacert "${data}/ca/ca.pem" \
        "https://127.0.0.1:${port}/v1/health" >/dev/null 2>&1 && break
    sleep 0.1
done
ca_sha="$(openssl x509 -in "${data}/ca/ca.pem" -outform der | sha256sum | cut -d' ' -f1)"
heimdall login --api-url "https://127.0.0.1:${port}" --ca-sha256 "${ca_sha}" <"${data}/owner.token" >/dev/null
registration="$(heimdall agent token create --name dev --output json | "${python}" -c 'import json, sys; print(json.load(sys.stdin)["token"])')"
HEIMDALL_REGISTRATION_TOKEN="${registration}" heimdall-agent enroll --api "https://127.0.0.1:${port}" \
    --ca-sha256 "${ca_sha}" --data "${data}/agent" --terraform "${terraform}" --allow-module "${src}/**" \
    --local-state "${data}/state" >/dev/null
openssl rand -hex 32 >"${data}/master.key"
chmod 0600 "${data}/master.key"
cat >>"${data}/agent/agent.toml" <<TOML

[values]
postgres_url = "${store_url}"
master_key_file = "${data}/master.key"
sync_seconds = 2
TOML
heimdall-agent configure --config "${data}/agent/agent.toml" --local-api-listen "127.0.0.1:$((port + 2))" \
    --local-api-url "https://127.0.0.1:$((port + 2))" --terraform-cli-config "${repo}/.venv/terraformrc" \
    --database-poll-seconds 2 >/dev/null
heimdall-agent run --config "${data}/agent/agent.toml" >"${work}/agent.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
    heimdall agent show dev --output json 2>/dev/null | grep -q "https://127.0.0.1:$((port + 2))" && break
    sleep 0.1
done
scenario
# A database service user (on this machine's PostgreSQL, which the test
# has too: the database and roles have fixed names it makes again), and a
# rotation asked for while the Agent is stopped: in flight at the upgrade.
log "a service user, and a rotation in flight"
psql -q "${pg_admin}" -c "DROP DATABASE IF EXISTS heimdall_upgrade_orders WITH (FORCE)" \
    -c "CREATE DATABASE heimdall_upgrade_orders"
for role in heimdall_upgrade_app_a heimdall_upgrade_app_b heimdall_upgrade_app; do
    psql -q "${pg_admin}" -c "DROP ROLE IF EXISTS ${role}"
done
heimdall secret create orders-admin >/dev/null
printf '{"username":"postgres","password":"trust-auth"}' | heimdall secret set orders-admin --environment dev >/dev/null
heimdall database create orders --engine postgres --host 127.0.0.1 --port 5432 \
    --database heimdall_upgrade_orders --environment dev --admin-secret orders-admin --tls disable >/dev/null
heimdall database user create heimdall_upgrade_app --database orders --rotate-every 30d --grace 1h \
    --grant "SELECT ON ALL TABLES IN SCHEMA public" >/dev/null
for _ in $(seq 1 120); do
    heimdall database user show heimdall_upgrade_app --database orders --output json \
        | "${python}" -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("current_version") == 1 else 1)' \
        && break
    sleep 0.5
done
heimdall database user show heimdall_upgrade_app --database orders --output json \
    | "${python}" -c 'import json, sys; sys.exit(0 if json.load(sys.stdin).get("current_version") == 1 else 1)' \
    || { log "the service user was never made"; exit 1; }
record "${data}" "${out}.new/postgres/expected.json"
log "stopping the Agent, asking for a rotation, stopping the API"
stop "${pids[-1]}"
heimdall database user rotate heimdall_upgrade_app --database orders >/dev/null
"${python}" - "${out}.new/postgres/expected.json" <<'PY'
import json, subprocess, sys
path = sys.argv[1]
expected = json.load(open(path))
shown = subprocess.run(["heimdall", "database", "user", "show", "heimdall_upgrade_app", "--database", "orders",
                        "--output", "json"], check=True, capture_output=True, text=True).stdout
expected["service_user"] = json.loads(shown)
json.dump(expected, open(path, "w"), indent=4)
PY
stop "${pids[-1]}"
pg_dump --no-owner --no-privileges "${api_url}" >"${out}.new/postgres/heimdall.sql"
pg_dump --no-owner --no-privileges "${store_url}" >"${out}.new/postgres/agent-values.sql"
keep "${data}" "${config}" "${out}.new/postgres" "${port}" "${store_url}"

rm -rf "${out}"
mv "${out}.new" "${out}"
log "done: ${out} ($(du -sh "${out}" | cut -f1))"
