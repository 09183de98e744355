#!/usr/bin/env bash
# moto (the AWS wire protocols) for Heimdall's tests; installed by
# scripts/install-test-tools.sh. Usage:
#   scripts/moto.sh start            # prints http://127.0.0.1:PORT (reuses a running one)
#   scripts/moto.sh url | stop | reset | env
#   scripts/moto.sh bucket NAME...   # create buckets (idempotent)
#   scripts/moto.sh ls BUCKET [PREFIX] | cat BUCKET KEY
# State (pid, url, log) in $HEIMDALL_MOTO_DIR, default <repo>/.venv/moto.
# Credentials: any static values (default AWS_ACCESS_KEY_ID=testing,
# AWS_SECRET_ACCESS_KEY=testing, AWS_DEFAULT_REGION=us-east-1).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${repo}/.venv/bin/python"
if [[ ! -x "${python}" ]]; then
    echo "moto: ${repo}/.venv is missing: run scripts/install-test-tools.sh" >&2
    exit 1
fi
exec "${python}" -I "${repo}/scripts/moto_ctl.py" "$@"
