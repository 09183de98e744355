"""The README's ten-line script, run as a user would: a separate Python,
the dev profile from $HEIMDALL_CONFIG_DIR."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import DB_VALUE, World


def test_the_readme_script_runs(world: World) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md has a python block"
    script = blocks[0]
    assert len(script.strip().splitlines()) <= 13, script
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=world.dev.env, timeout=300
    )
    assert run.returncode == 0, f"{run.stdout}\n{run.stderr}\n{world.dev.logs()}"
    lines = run.stdout.splitlines()
    assert lines[0] == "signed in as dev@localhost", run.stdout
    assert lines[1] == "invoices provisioned arn:aws:s3:::acme-invoices", run.stdout
    assert lines[2] == "no billing domain: NOT_FOUND", run.stdout
    assert lines[3] == f'SecretValue(name="db-password", environment="dev", version=1, value=<redacted>) {len(DB_VALUE)}'
    assert "s3cret" not in run.stdout + run.stderr
