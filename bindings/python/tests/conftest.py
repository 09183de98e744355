"""One `heimdall dev` for the whole session, as a person would run it.

The fixture starts the workspace's own `heimdall` binary (built by
scripts/test-python.sh into $CARGO_TARGET_DIR/debug, or $HEIMDALL_BIN_DIR)
on three free ports, with a temp `--data` dir and a temp HOME and
HEIMDALL_CONFIG_DIR, so the user's own profile is never touched. Its Agent
runs the repository's real Terraform (.venv/bin/terraform) on the offline
module tests/fixtures/modules/bucket. Set-up that needs a value goes
through the CLI (`heimdall secret set`), since values never go through the
API; programs get their tokens from `heimdall-agent token create`.

Anything missing (a binary, Terraform) fails the session loudly: nothing
here is ever skipped.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

import heimdall

REPO = Path(__file__).resolve().parents[3]
BIN_DIR = Path(
    os.environ.get("HEIMDALL_BIN_DIR")
    or Path(os.environ.get("CARGO_TARGET_DIR", "/var/tmp/heimdall-target")) / "debug"
)
TERRAFORM = REPO / ".venv" / "bin" / "terraform"
#: Stored with the CLI and read back through the bindings: a newline inside
#: and a space at the end, so that nothing is trimmed or added.
DB_VALUE = "s3cret\nvalue "
#: The owner's and programs' tokens must never show; tests look for these.
SECRET_PREFIXES = ("hmd_", "hdp_")


def free_ports() -> int:
    """A port with the next two free too (API, Agent channel, Agent local API)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 2 > 65535:
            continue
        ok = True
        for p in (port, port + 1, port + 2):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return port


@dataclass
class Dev:
    """The running `heimdall dev` and how to reach it."""

    root: Path
    data: Path
    config_dir: Path
    env: dict[str, str]
    port: int
    process: subprocess.Popen[str]
    banner: str
    tokens: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        # pytest prints fixtures in failures: the URL, never a token.
        return f"Dev(url={self.url!r}, data={str(self.data)!r})"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def agent_url(self) -> str:
        return f"https://127.0.0.1:{self.port + 2}"

    @property
    def ca_file(self) -> Path:
        return self.data / "agent" / "ca.pem"

    @property
    def owner_token(self) -> str:
        return (self.data / "owner.token").read_text().strip()

    def cli(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`heimdall ARGS` as the dev profile (stdin: `input`)."""
        run = subprocess.run(
            [str(BIN_DIR / "heimdall"), *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root,
            timeout=120,
        )
        if check and run.returncode != 0:
            raise AssertionError(f"heimdall {' '.join(args)} exited {run.returncode}:\n{run.stdout}\n{run.stderr}")
        return run

    def cli_json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--output", "json").stdout)

    def program_token(self, name: str, *, secrets: str, verbs: tuple[str, ...] = ("read",)) -> str:
        """A program token from the dev Agent (`heimdall-agent token create`), shown once."""
        args = [str(BIN_DIR / "heimdall-agent"), "token", "create", "--config", str(self.data / "agent" / "agent.toml")]
        args += ["--name", name, "--environment", "dev", "--secret", secrets, "--json"]
        for verb in verbs:
            args += ["--verb", verb]
        run = subprocess.run(args, capture_output=True, text=True, env=self.env, timeout=60)
        assert run.returncode == 0, f"heimdall-agent token create: {run.stderr}"
        token = json.loads(run.stdout)["token"]
        assert token.startswith("hdp_")
        self.tokens[name] = token
        return token

    def client(self) -> heimdall.Client:
        return heimdall.Client.from_profile(config_dir=self.config_dir)

    def logs(self) -> str:
        out = []
        for name in ("api.log", "agent.log"):
            path = self.data / name
            if path.exists():
                out.append(f"--- {name} ---\n" + path.read_text()[-4000:])
        return "\n".join(out)


def _require_tools() -> None:
    missing = [str(BIN_DIR / b) for b in ("heimdall", "heimdall-api", "heimdall-agent") if not (BIN_DIR / b).exists()]
    if missing:
        pytest.fail(
            f"not built: {', '.join(missing)}: run `cargo build --workspace --bins` "
            "(bash scripts/test-python.sh does)",
            pytrace=False,
        )
    if not TERRAFORM.exists():
        pytest.fail(f"{TERRAFORM} is missing: run `bash scripts/install-test-tools.sh`", pytrace=False)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    _require_tools()
    root = tmp_path_factory.mktemp("heimdall-dev")
    data, config_dir, home = root / "data", root / "config", root / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEIMDALL_") and k not in ("TF_CLI_CONFIG_FILE",)}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), HEIMDALL_CONFIG_DIR=str(config_dir))
    port = free_ports()
    stderr = open(root / "dev.stderr", "w")
    process = subprocess.Popen(
        [str(BIN_DIR / "heimdall"), "dev", "--data", str(data), "--listen", f"127.0.0.1:{port}"],
        cwd=REPO,  # the default module allowlist is the directory it runs in
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    banner = ""
    deadline = time.monotonic() + 120
    ready = False
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        banner += line
        if line.startswith("Press Ctrl-C"):
            ready = True
            break
    if not ready:
        process.kill()
        process.wait()
        stderr.close()
        pytest.fail(
            f"heimdall dev did not come up:\n{banner}\n{(root / 'dev.stderr').read_text()}", pytrace=False
        )
    assert 'Agent "dev" enrolled and running' in banner, banner
    running = Dev(root, data, config_dir, env, port, process, banner)
    try:
        yield running
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=45)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stderr.close()


@dataclass
class World:
    dev: Dev
    reader_token: str = field(repr=False)
    writer_token: str = field(repr=False)


@pytest.fixture(scope="session")
def world(dev: Dev) -> World:
    """The tour of `heimdall dev`'s banner: the catalog through the bindings,
    the rest (an Agent for `dev`, a cloud account whose keys are a value, the
    bucket schema, a secret's value) through the CLI."""
    client = dev.client()
    payments = client.create_domain("payments", description="money")
    checkout = client.create_system("checkout", domain="payments")
    assert checkout.parent_id == payments.id
    api = client.create_component("receipts", system=checkout.id)
    assert api.parent_id == checkout.id
    client.create_environment("dev")

    dev.cli("environment", "assign-agent", "dev", "dev")
    client.create_secret("aws-dev", secret_type="aws-keys")
    dev.cli("secret", "set", "aws-dev", "--environment", "dev", input='{"access_key_id":"dev","secret_access_key":"dev"}')
    dev.cli(
        "cloud-account", "create", "local", "--provider", "aws", "--region", "us-east-1",
        "--state-bucket", "local-state", "--auth", "static", "--secret", "aws-dev",
    )  # fmt: skip
    dev.cli("cloud-account", "link", "local", "--scope", "organization", "--environment", "dev")
    dev.cli(
        "schema", "create", "--type", "bucket",
        "--input-schema", str(REPO / "examples/schemas/bucket.json"),
        "--module-source", str(REPO / "tests/fixtures/modules/bucket"), "--module-version", "1.0.0",
    )  # fmt: skip

    client.create_secret("db-password", secret_type="password", tags={"team": "payments"}, components=["receipts"])
    stored = dev.cli("secret", "set", "db-password", "--environment", "dev", input=DB_VALUE)
    assert "db-password version 1 stored in dev" in stored.stdout, stored.stdout
    reader = dev.program_token("ci-job", secrets="db-*")
    # A token that writes needs an owner's allowance for the Agent's programs.
    dev.cli("agent", "allow-programs", "dev", "--environment", "dev", "--secret", "py-*", "--verb", "write")
    writer = dev.program_token("py-writer", secrets="py-*", verbs=("read", "write"))
    return World(dev, reader, writer)
