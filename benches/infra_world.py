"""What the Infrastructure Manager benches share: a release API on its own
PostgreSQL database, moto's S3 and STS, an `oidc` AWS account linked for
`dev`, and one enrolled Agent with concurrency 1. See benches/agent.sh and
benches/upgrade.sh."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TF = os.path.join(REPO, ".venv/bin/terraform")
MODULE = os.path.join(REPO, "tests/fixtures/modules/bucket")
PG_ADMIN = os.environ.get("HEIMDALL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
           AWS_EC2_METADATA_DISABLED="true", CHECKPOINT_DISABLE="1",
           TF_CLI_CONFIG_FILE=os.path.join(REPO, ".venv/terraformrc"), HEIMDALL_LOG="warn")
# The role Heimdall's account names; bare Terraform federating assumes it too.
ROLE_ARN = "arn:aws:iam::123456789012:role/heimdall"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, token=None, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(req) as resp:
        text = resp.read()
        return json.loads(text) if text else None


def parse_time(s):
    # RFC 3339 with up to nanoseconds → seconds since the epoch.
    from datetime import datetime
    head, _, frac = s.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head + "+00:00").timestamp()
    return base + (float("0." + frac) if frac else 0.0)


def bare_backend(bucket, moto_url, key, federation=""):
    """The `terraform { backend "s3" }` block of a bare peer, on the same
    bucket and endpoints as Heimdall's jobs."""
    return f'''terraform {{
  backend "s3" {{
    bucket = "{bucket}"
    key = "{key}"
    region = "us-east-1"
    use_lockfile = true
    endpoints = {{ s3 = "{moto_url}", sts = "{moto_url}" }}
    use_path_style = true
    skip_credentials_validation = true
    skip_requesting_account_id = true
    skip_metadata_api_check = true
    skip_region_validation = true{federation}
  }}
}}
'''


def module_outputs(names):
    """The root module's outputs, declared as Heimdall's root module does
    (they become the Resource's outputs)."""
    return "\n".join(
        f'output "{name}" {{\n  value = module.resource.{name}\n' + ("  sensitive = true\n" if name == "secret" else "")
        + "}" for name in names)


class World:
    """Started by `with World(bin_dir, modules) as w:`; everything it
    started is stopped on exit, also when the bench is killed."""

    def __init__(self, bin_dir, modules=(MODULE,)):
        self.bin = bin_dir
        self.modules = list(modules)
        self.work = tempfile.mkdtemp(prefix="heimdall-bench-")
        self.moto_dir = tempfile.mkdtemp(prefix="heimdall-bench-moto-")
        self.db = "heimdall_bench_" + uuid.uuid4().hex[:12]
        self.procs = []

    def moto(self, *args):
        # The bench's own moto (its state under the bench's directory):
        # started here and stopped on exit, never one the tests share.
        return subprocess.check_output(["bash", os.path.join(REPO, "scripts/moto.sh"), *args], text=True,
                                       env=dict(os.environ, HEIMDALL_MOTO_DIR=self.moto_dir)).strip()

    def __enter__(self):
        def on_signal(signum, _frame):
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, on_signal)
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        subprocess.check_call(["psql", PG_ADMIN, "-qc", f"CREATE DATABASE {self.db}"])
        db_url = PG_ADMIN.rsplit("/", 1)[0] + "/" + self.db
        self.moto_url = self.moto("start")
        self.bucket = "bench-" + uuid.uuid4().hex[:10]
        self.moto("bucket", self.bucket)
        boot = json.loads(subprocess.check_output(
            [f"{self.bin}/heimdall-api", "bootstrap", "--database-url", db_url, "--org", "bench", "--owner",
             "b@example.com", "--output", "json"], env=ENV))
        self.token = boot["token"]
        port, agent_port = free_port(), free_port()
        self.api = f"http://127.0.0.1:{port}"
        self.procs.append(subprocess.Popen(
            [f"{self.bin}/heimdall-api", "serve", "--database-url", db_url, "--listen", f"127.0.0.1:{port}",
             "--agent-listen", f"127.0.0.1:{agent_port}", "--ca-dir", os.path.join(self.work, "ca"),
             # People's requests in plain HTTP on loopback: the benches time jobs, not TLS.
             "--insecure-http", "--sts-endpoint-url", self.moto_url], env=ENV))
        for _ in range(100):
            try:
                self.call("GET", "/v1/health")
                break
            except OSError:
                time.sleep(0.05)
        d = self.call("POST", "/v1/domains", {"name": "d"})
        s = self.call("POST", "/v1/systems", {"name": "s", "parent_id": d["id"]})
        self.call("POST", "/v1/components", {"name": "c", "parent_id": s["id"]})
        self.call("POST", "/v1/environments", {"name": "dev"})
        self.call("POST", "/v1/cloud-accounts", {
            "name": "aws", "provider": "aws", "region": "us-east-1", "state_bucket": self.bucket,
            "auth": {"kind": "oidc", "role_arn": ROLE_ARN}})
        self.call("POST", "/v1/cloud-accounts/aws/links", {"scope": "organization", "environment": "dev"})
        reg = self.call("POST", "/v1/agents/registrations", {"name": "bench"})
        agent_dir = os.path.join(self.work, "agent")
        allow = [arg for m in self.modules for arg in ("--allow-module", m)]
        # The token in the environment, never on the command line; the CA pinned by its fingerprint.
        subprocess.check_call(
            [f"{self.bin}/heimdall-agent", "enroll", "--api", self.api, "--ca-sha256", reg["ca_sha256"], "--data",
             agent_dir, "--terraform", TF, *allow, "--s3-endpoint", self.moto_url, "--concurrency", "1"],
            env=dict(ENV, HEIMDALL_REGISTRATION_TOKEN=reg["token"]), stdout=subprocess.DEVNULL)
        # Its `job phases` lines (JSON) say where each run's time went.
        self.agent_log = os.path.join(self.work, "agent.log")
        self.procs.append(subprocess.Popen(
            [f"{self.bin}/heimdall-agent", "run", "--config", f"{agent_dir}/agent.toml"],
            env=dict(ENV, HEIMDALL_LOG="warn,heimdall_agent::jobs::worker=info", HEIMDALL_LOG_FORMAT="json"),
            stderr=open(self.agent_log, "w")))
        time.sleep(1.0)

    def call(self, method, path, body=None):
        return http(method, self.api + path, self.token, body)

    def settled(self, resource_id, poll=0.5):
        """The Resource once its job is done (provisioned or failed). Polls
        twice a second: polling often would steal CPU from Terraform on a
        2-core machine; what the benches time comes from the API's own
        timestamps, so the polling changes nothing measured."""
        while True:
            time.sleep(poll)
            res = self.call("GET", f"/v1/resources/{resource_id}")["resource"]
            if res["status"] in ("provisioned", "failed"):
                return res

    def phases(self):
        """The Agent's `job phases` log lines, in order."""
        found = []
        with open(self.agent_log) as f:
            for line in f:
                try:
                    fields = json.loads(line).get("fields", {})
                except ValueError:
                    continue
                if fields.get("message") == "job phases":
                    found.append(fields)
        return found

    def __exit__(self, *_exc):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.call(["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)"])
        try:
            self.moto("stop")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.moto_dir, ignore_errors=True)
        return False
