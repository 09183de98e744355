"""Infrastructure Manager benchmark; see benches/agent.sh."""

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])
TF = os.path.join(REPO, ".venv/bin/terraform")
MODULE = os.path.join(REPO, "tests/fixtures/modules/bucket")
PG_ADMIN = os.environ.get("HEIMDALL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
ENV = dict(os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
           AWS_EC2_METADATA_DISABLED="true", CHECKPOINT_DISABLE="1",
           TF_CLI_CONFIG_FILE=os.path.join(REPO, ".venv/terraformrc"), HEIMDALL_LOG="warn")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def moto(*args):
    # The bench's own moto (its state under the bench's directory): started
    # here and stopped on exit, never one the tests share.
    return subprocess.check_output(["bash", os.path.join(REPO, "scripts/moto.sh"), *args], text=True,
                                   env=dict(os.environ, HEIMDALL_MOTO_DIR=MOTO_DIR)).strip()


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


MOTO_DIR = tempfile.mkdtemp(prefix="heimdall-bench-moto-")


def main():
    # Killed or hung up, the bench still stops what it started (the
    # `finally` below): a signal becomes an exit.
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    work = tempfile.mkdtemp(prefix="heimdall-bench-")
    db = "heimdall_bench_" + uuid.uuid4().hex[:12]
    subprocess.check_call(["psql", PG_ADMIN, "-qc", f"CREATE DATABASE {db}"])
    db_url = PG_ADMIN.rsplit("/", 1)[0] + "/" + db
    procs = []
    try:
        moto_url = moto("start")
        bucket = "bench-" + uuid.uuid4().hex[:10]
        moto("bucket", bucket)
        boot = json.loads(subprocess.check_output(
            [f"{BIN}/heimdall-api", "bootstrap", "--database-url", db_url, "--org", "bench", "--owner", "b@example.com",
             "--output", "json"], env=ENV))
        token = boot["token"]
        port, agent_port = free_port(), free_port()
        api = f"http://127.0.0.1:{port}"
        procs.append(subprocess.Popen(
            [f"{BIN}/heimdall-api", "serve", "--database-url", db_url, "--listen", f"127.0.0.1:{port}",
             "--agent-listen", f"127.0.0.1:{agent_port}", "--ca-dir", os.path.join(work, "ca"),
             # People's requests in plain HTTP on loopback: the bench times the queue, not TLS.
             "--insecure-http", "--sts-endpoint-url", moto_url], env=ENV))
        for _ in range(100):
            try:
                http("GET", api + "/v1/health")
                break
            except OSError:
                time.sleep(0.05)
        d = http("POST", api + "/v1/domains", token, {"name": "d"})
        s = http("POST", api + "/v1/systems", token, {"name": "s", "parent_id": d["id"]})
        http("POST", api + "/v1/components", token, {"name": "c", "parent_id": s["id"]})
        http("POST", api + "/v1/environments", token, {"name": "dev"})
        http("POST", api + "/v1/schemas", token, {"type": "bucket", "input_schema": {"type": "object"},
                                                   "module": {"source": MODULE, "version": "1"}})
        http("POST", api + "/v1/cloud-accounts", token, {
            "name": "aws", "provider": "aws", "region": "us-east-1", "state_bucket": bucket,
            "auth": {"kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall"}})
        http("POST", api + "/v1/cloud-accounts/aws/links", token, {"scope": "organization", "environment": "dev"})
        reg = http("POST", api + "/v1/agents/registrations", token, {"name": "bench"})
        agent_dir = os.path.join(work, "agent")
        # The token in the environment, never on the command line; the CA pinned by its fingerprint.
        subprocess.check_call(
            [f"{BIN}/heimdall-agent", "enroll", "--api", api, "--ca-sha256", reg["ca_sha256"], "--data", agent_dir,
             "--terraform", TF, "--allow-module", MODULE, "--s3-endpoint", moto_url, "--concurrency", "1"],
            env=dict(ENV, HEIMDALL_REGISTRATION_TOKEN=reg["token"]), stdout=subprocess.DEVNULL)
        # Its `job phases` lines (JSON) say where each run's time went.
        agent_log = os.path.join(work, "agent.log")
        procs.append(subprocess.Popen(
            [f"{BIN}/heimdall-agent", "run", "--config", f"{agent_dir}/agent.toml"],
            env=dict(ENV, HEIMDALL_LOG="warn,heimdall_agent::worker=info", HEIMDALL_LOG_FORMAT="json"),
            stderr=open(agent_log, "w")))
        time.sleep(1.0)

        def heimdall_round(i):
            time.sleep(0.3)  # the Agent is idle, waiting in its long poll
            # The wall clock before the request, and the job's finish as
            # the API recorded it (the moment the Resource became
            # provisioned, same machine, same clock), so how often the
            # bench polls changes nothing measured; polling often would
            # steal CPU from Terraform on a 2-core machine and bias the
            # ratio against Heimdall, so it polls twice a second.
            t0 = time.time()
            r = http("POST", api + "/v1/resources", token, {
                "component": "c", "schema": "bucket", "environment": "dev", "name": f"r{i}",
                "input": {"bucket": f"bench-{i}"}})
            while True:
                time.sleep(0.5)
                res = http("GET", f"{api}/v1/resources/{r['id']}", token)["resource"]
                if res["status"] in ("provisioned", "failed"):
                    break
            assert res["status"] == "provisioned", res
            job = http("GET", f"{api}/v1/jobs?resource={r['id']}", token)[0]
            started, finished = parse_time(job["started_at"]), parse_time(job["finished_at"])
            elapsed = finished - t0
            # Where the time went: before the claim, and from the claim to
            # the finish (the claim's STS federation, the Agent's work,
            # Terraform and the report).
            runs.append(finished - started)
            requests.append(parse_time(job["queued_at"]) - t0)
            return elapsed, started - parse_time(job["queued_at"])

        # The federated peer's identity token: moto's STS takes any JWT.
        token_file = os.path.join(work, "web-identity-token")
        with open(token_file, "w") as f:
            f.write("eyJhbGciOiJub25lIn0.eyJzdWIiOiJiZW5jaCJ9.")

        # The peer's root module declares the module's outputs, as
        # Heimdall's does (they become the Resource's outputs): the same
        # job, done by hand.
        outputs = "\n".join(
            f'output "{name}" {{\n  value = module.resource.{name}\n' + ("  sensitive = true\n" if name == "secret" else "") + "}"
            for name in ("arn", "bucket", "id", "secret", "tags"))

        def bare_round(i, federated=False):
            # Static keys from the environment; or, federated, the role
            # Heimdall's account names, assumed by Terraform itself with a
            # web identity token through the same STS (what a bare
            # Terraform does to get what Heimdall's OIDC gives its runs).
            d = os.path.join(work, f"bare{i}{'-federated' if federated else ''}")
            os.makedirs(d)
            federation = f'''
    assume_role_with_web_identity = {{
      role_arn = "arn:aws:iam::123456789012:role/heimdall"
      web_identity_token_file = "{token_file}"
    }}''' if federated else ""
            with open(os.path.join(d, "main.tf"), "w") as f:
                f.write(f'''terraform {{
  backend "s3" {{
    bucket = "{bucket}"
    key = "bare/{os.path.basename(d)}.tfstate"
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
module "resource" {{
  source = "{MODULE}"
  bucket = "bare-{i}"
}}
{outputs}
''')
            t0 = time.monotonic()
            subprocess.check_call([TF, "init", "-input=false", "-no-color"], cwd=d, env=ENV, stdout=subprocess.DEVNULL)
            subprocess.check_call([TF, "apply", "-input=false", "-no-color", "-auto-approve"], cwd=d, env=ENV,
                                  stdout=subprocess.DEVNULL)
            return time.monotonic() - t0

        # Interleaved (A B C A B C …), so that a noisy moment of the
        # machine lands on every side alike.
        starts, heimdall_e2e, bare, federated, runs, requests = [], [], [], [], [], []
        for i in range(ROUNDS):
            elapsed, start = heimdall_round(i)
            heimdall_e2e.append(elapsed)
            starts.append(start)
            bare.append(bare_round(i))
            federated.append(bare_round(i, federated=True))

        ms = lambda xs: statistics.median(xs) * 1000
        print(f"rounds: {ROUNDS}")
        print(f"create → job start on an idle Agent: median {ms(starts):.1f} ms, "
              f"p90 {sorted(starts)[int(0.9 * (len(starts) - 1))] * 1000:.1f} ms (target < 100 ms)")
        print(f"Heimdall end to end (create → provisioned): median {ms(heimdall_e2e):.0f} ms")
        print(f"  of which claim → finish on the Agent:     median {ms(runs):.0f} ms")
        print(f"bare terraform init && apply, static keys:  median {ms(bare):.0f} ms")
        print(f"  the same, federating through STS itself:   median {ms(federated):.0f} ms")

        def ratios(peer):
            # Round by round (each Heimdall run against the peer run next
            # to it), the median and the middle half of the spread.
            paired = sorted(h / b for h, b in zip(heimdall_e2e, peer))
            q = lambda f: paired[min(len(paired) - 1, int(f * len(paired)))]
            return f"{statistics.median(paired):.2f} (rounds' middle half {q(0.25):.2f}–{q(0.75):.2f})"

        print(f"ratio Heimdall / bare with static keys: {ratios(bare)} (target ≤ 1.10)")
        print(f"ratio Heimdall / bare federating:       {ratios(federated)}")
        # Where Heimdall's time went, per phase (median over the rounds):
        # the queue (API timestamps), then the Agent's own account.
        phases = []
        with open(agent_log) as f:
            for line in f:
                try:
                    fields = json.loads(line).get("fields", {})
                except ValueError:
                    continue
                if fields.get("message") == "job phases":
                    phases.append(fields)
        if phases:
            print("per phase (median ms):")
            print(f"  {'create request → queued':<34} {ms(requests):8.1f}")
            print(f"  {'queued → claimed':<34} {ms(starts):8.1f}")
            named = [("prepare_ms", "claim → job directory (credentials)"), ("files_ms", "environment and root module"),
                     ("init_ms", "terraform init"), ("takeover_ms", "dead attempt's lock (none here)"),
                     ("apply_ms", "terraform apply (plan + apply)"), ("outputs_ms", "outputs"),
                     ("finish_ms", "finish (report, log tail, commit)")]
            for key, label in named:
                print(f"  {label:<34} {statistics.median(p[key] for p in phases):8.1f}")
            total = statistics.median(p["total_ms"] for p in phases)
            inside = statistics.median(p["init_ms"] + p["apply_ms"] for p in phases)
            print(f"  {'claim → finished, all of it':<34} {total:8.1f} (Terraform's two runs: {inside:.1f})")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        subprocess.call(["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"])
        moto("stop")
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(MOTO_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
