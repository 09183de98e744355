"""Scale and faults run with a history check; see benches/scale.sh."""

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TF = os.path.join(REPO, ".venv/bin/terraform")
MODULE = os.path.join(REPO, "tests/fixtures/modules/bucket")
SECRET = "scale-secret"
VALUE = "scale-" + secrets.token_hex(12)
PG_ADMIN = os.environ.get("HEIMDALL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
ENV = {k: v for k, v in os.environ.items() if k not in ("HEIMDALL_API_URL", "HEIMDALL_TOKEN")}
ENV.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
           AWS_EC2_METADATA_DISABLED="true", CHECKPOINT_DISABLE="1",
           TF_CLI_CONFIG_FILE=os.path.join(REPO, ".venv/terraformrc"), HEIMDALL_LOG="warn")


def log(msg):
    print(f"scale: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, token=None, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read()
        return json.loads(text) if text else None


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


class Run:
    """Everything the run starts, so that all of it stops on exit."""

    def __init__(self, opts):
        self.opts = opts
        self.work = tempfile.mkdtemp(prefix="heimdall-scale-")
        self.moto_dir = os.path.join(self.work, "moto")
        self.db = "heimdall_scale_" + uuid.uuid4().hex[:12]
        self.db_url = PG_ADMIN.rsplit("/", 1)[0] + "/" + self.db
        self.procs = []
        self.agents = []  # dicts: name, config, local_url, proc, lock
        self.outlived = []  # Terraform still working 5 s after its Agent was killed alone
        self.stop = threading.Event()
        self.last_read_error = ""

    def bin(self, name):
        return os.path.join(self.opts.bin, name)

    def moto(self, *args):
        # The run's own moto (its state under the run's directory), never
        # the one the tests share.
        return subprocess.check_output(["bash", os.path.join(REPO, "scripts/moto.sh"), *args], text=True,
                                       env=dict(ENV, HEIMDALL_MOTO_DIR=self.moto_dir)).strip()

    def psql(self, sql):
        out = subprocess.check_output(["psql", self.db_url, "-AtXqc", sql], text=True)
        return [line.split("|") for line in out.splitlines() if line]

    def cli(self, *args, stdin=None, check=True):
        env = dict(ENV, HEIMDALL_CONFIG_DIR=os.path.join(self.work, "cli"), HEIMDALL_PROFILE="scale")
        out = subprocess.run([self.bin("heimdall"), *args], env=env, input=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"heimdall {' '.join(args[:2])} exited {out.returncode}: {out.stderr.strip()}")
        return out

    def start(self, argv, log_name, **kw):
        logf = open(os.path.join(self.work, log_name), "ab")
        # Its own process group: a kill takes its Terraform too, as a
        # container's end does.
        p = subprocess.Popen(argv, stdout=logf, stderr=logf, env=ENV, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def close(self):
        self.stop.set()
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        subprocess.call(["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {self.db} WITH (FORCE)"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.moto("stop")
        except subprocess.CalledProcessError:
            pass
        if self.opts.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def wait_http(url, within=30):
    deadline = time.monotonic() + within
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except (OSError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer in {within} s")
            time.sleep(0.1)


def set_up(run):
    opts = run.opts
    subprocess.check_call(["psql", PG_ADMIN, "-qc", f"CREATE DATABASE {run.db}"])
    run.moto_url = run.moto("start")
    run.bucket = "scale-" + uuid.uuid4().hex[:10]
    run.moto("bucket", run.bucket)
    boot = json.loads(subprocess.check_output(
        [run.bin("heimdall-api"), "bootstrap", "--database-url", run.db_url, "--org", "scale",
         "--owner", "scale@example.com", "--output", "json"], env=ENV))
    run.token = boot["token"]
    run.apis = []
    ca_dir = os.path.join(run.work, "ca")
    for i in range(opts.replicas):
        port, agent_port = free_port(), free_port()
        # One after the other: the first makes the installation's CA, the
        # others load it (the replicas share its directory).
        run.start([run.bin("heimdall-api"), "serve", "--database-url", run.db_url,
                   "--listen", f"127.0.0.1:{port}", "--agent-listen", f"127.0.0.1:{agent_port}",
                   "--ca-dir", ca_dir, "--insecure-http", "--sts-endpoint-url", run.moto_url], f"api-{i}.log")
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/v1/health")
        run.apis.append(url)
    api = run.apis[0]
    d = http("POST", api + "/v1/domains", run.token, {"name": "d"})
    s = http("POST", api + "/v1/systems", run.token, {"name": "s", "parent_id": d["id"]})
    http("POST", api + "/v1/components", run.token, {"name": "c", "parent_id": s["id"]})
    http("POST", api + "/v1/environments", run.token, {"name": "dev"})
    http("POST", api + "/v1/schemas", run.token, {"type": "bucket", "input_schema": {"type": "object"},
                                                   "module": {"source": MODULE, "version": "1"}})
    http("POST", api + "/v1/cloud-accounts", run.token, {
        "name": "aws", "provider": "aws", "region": "us-east-1", "state_bucket": run.bucket,
        "auth": {"kind": "oidc", "role_arn": "arn:aws:iam::123456789012:role/heimdall"}})
    http("POST", api + "/v1/cloud-accounts/aws/links", run.token, {"scope": "organization", "environment": "dev"})
    run.cli("login", "--api-url", api, stdin=run.token)  # the token on standard input, never in argv

    for i in range(opts.agents):
        name = f"agent-{i}"
        via = run.apis[i % len(run.apis)]
        reg = http("POST", via + "/v1/agents/registrations", run.token, {"name": name})
        agent_dir = os.path.join(run.work, name)
        subprocess.check_call(
            [run.bin("heimdall-agent"), "enroll", "--api", via, "--ca-sha256", reg["ca_sha256"], "--data", agent_dir,
             "--terraform", TF, "--allow-module", MODULE, "--s3-endpoint", run.moto_url, "--concurrency", "1"],
            env=dict(ENV, HEIMDALL_REGISTRATION_TOKEN=reg["token"]), stdout=subprocess.DEVNULL)
        key_file = os.path.join(agent_dir, "master.key")
        with open(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(secrets.token_hex(32))
        local_port = free_port()
        config = os.path.join(agent_dir, "agent.toml")
        with open(config, "a") as f:
            f.write(f"\n[values]\nsqlite_path = {json.dumps(os.path.join(agent_dir, 'values.db'))}\n"
                    f"master_key_file = {json.dumps(key_file)}\nsync_seconds = 2\n"
                    f"\n[local_api]\nlisten = \"127.0.0.1:{local_port}\"\nnames = [\"127.0.0.1\"]\n")
        run.cli("environment", "assign-agent", "dev", name)
        agent = {"name": name, "config": config, "local_url": f"https://127.0.0.1:{local_port}",
                 "lock": threading.Lock(), "proc": None, "served": 0, "kills": 0}
        start_agent(run, agent)
        run.agents.append(agent)
    # One secret, its value written to every Agent that holds dev.
    run.cli("secret", "create", SECRET)
    deadline = time.monotonic() + 60
    while True:  # until every Agent has synced once and listens
        out = run.cli("secret", "set", SECRET, "--environment", "dev", stdin=VALUE, check=False)
        if out.returncode == 0:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"secret set: {out.stderr.strip()}")
        time.sleep(0.5)


def start_agent(run, agent):
    agent["proc"] = run.start([run.bin("heimdall-agent"), "run", "--config", agent["config"]],
                              f"{agent['name']}.log")


def running_in(directory):
    """The command lines of the processes working in `directory` or below."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd == directory or cwd.startswith(directory + "/"):
            found.append(cmdline)
    return found


def chaos(run, kills):
    """Every few seconds, a random Agent killed with SIGKILL and started
    again a moment later: every other time with its process group (its
    Terraform included), else alone, as the OOM killer would, when its
    Terraform guard must stop Terraform (checked: nothing may keep working
    in the Agent's work directory)."""
    rng = random.Random(run.opts.seed)
    while not run.stop.wait(run.opts.kill_every * rng.uniform(0.5, 1.5)):
        agent = rng.choice(run.agents)
        alone = rng.random() < 0.5
        with agent["lock"]:
            try:
                if alone:
                    os.kill(agent["proc"].pid, signal.SIGKILL)
                else:
                    os.killpg(agent["proc"].pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            agent["proc"].wait()
            agent["kills"] += 1
            kills.append((time.time(), agent["name"], alone))
            if alone:
                work = os.path.realpath(os.path.join(os.path.dirname(agent["config"]), "work"))
                deadline = time.monotonic() + 5
                while running_in(work) and time.monotonic() < deadline:
                    time.sleep(0.05)
                left = running_in(work)
                if left:
                    run.outlived.append(f"{agent['name']}: {left}")
        if run.stop.wait(rng.uniform(0.5, 2.0)):
            break
        with agent["lock"]:
            start_agent(run, agent)


def cut_postgres(run, cuts):
    """Every --cut-postgres-every seconds, every connection to the run's
    database cut (`pg_terminate_backend`), as a PostgreSQL restart does to
    its clients: the replicas must recover on their own."""
    while not run.stop.wait(run.opts.cut_postgres_every):
        out = subprocess.run(["psql", PG_ADMIN, "-AtXqc",
                              f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                              f"WHERE datname = '{run.db}' AND pid <> pg_backend_pid()"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if out.returncode == 0:
            cuts.append(int(out.stdout.strip() or 0))


def reader(run, reads):
    """Reads the secret through a random Agent's local API, all along, as
    the person logged in (her client certificate); a read that returned
    the value was served, so it must have a record."""
    import ssl
    profile = os.path.join(run.work, "cli", "profiles", "scale")
    tls = ssl.create_default_context(cafile=os.path.join(profile, "ca.pem"))
    tls.load_cert_chain(os.path.join(profile, "client.pem"), os.path.join(profile, "client.key"))
    rng = random.Random(run.opts.seed + 1)
    while not run.stop.wait(0.05):
        agent = rng.choice(run.agents)
        url = f"{agent['local_url']}/v1/secrets/{SECRET}/value?environment=dev"
        try:
            with urllib.request.urlopen(url, context=tls, timeout=10) as resp:
                served = json.loads(resp.read()).get("value") == VALUE
        except (OSError, urllib.error.URLError) as e:
            served, run.last_read_error = False, str(e)
        if served:
            agent["served"] += 1
        reads.append(served)


def create_resources(run, created):
    rng = random.Random(run.opts.seed + 2)

    def one(i):
        api = rng.choice(run.apis)
        body = {"component": "c", "schema": "bucket", "environment": "dev", "name": f"r{i}",
                "input": {"bucket": f"scale-{i}", "sleep_seconds": run.opts.apply_seconds}}
        for attempt in range(5):
            try:
                created.append(http("POST", api + "/v1/resources", run.token, body)["id"])
                return
            except (OSError, urllib.error.URLError) as e:
                if attempt == 4:
                    raise RuntimeError(f"create r{i}: {e}")
                time.sleep(0.5)

    # Four writers, spread over the replicas.
    threads = [threading.Thread(target=lambda k=k: [one(i) for i in range(k, run.opts.resources, 4)])
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def rng_api(run):
    return random.choice(run.apis)


def history_check(run, served_by):
    problems = []

    def expect_none(what, sql):
        rows = run.psql(sql)
        if rows:
            problems.append(f"{what}: {rows[:5]}")

    expect_none("jobs completed twice",
                "SELECT job_id, count(*) FROM job_attempts WHERE outcome = 'completed' GROUP BY job_id HAVING count(*) > 1")
    expect_none("attempts past the last",
                "SELECT id, attempts, max_attempts FROM jobs WHERE attempts > max_attempts")
    expect_none("attempts numbered past the last",
                "SELECT a.job_id, a.attempt FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.attempt > j.max_attempts")
    expect_none("a completed job whose attempts say otherwise",
                "SELECT id FROM jobs j WHERE status = 'completed' AND NOT EXISTS "
                "(SELECT 1 FROM job_attempts a WHERE a.job_id = j.id AND a.outcome = 'completed')")
    expect_none("attempts still open on a finished job",
                "SELECT a.job_id, a.attempt FROM job_attempts a JOIN jobs j ON j.id = a.job_id "
                "WHERE a.ended_at IS NULL AND j.status IN ('completed', 'failed', 'cancelled')")
    expect_none("Resources not terminal",
                "SELECT id, status FROM resources WHERE status NOT IN ('provisioned', 'failed')")
    expect_none("Resources failed (those lost three times were retried)",
                "SELECT id, reason FROM resources WHERE status = 'failed'")
    locks = [k for k in run.moto("ls", run.bucket, "heimdall/").split() if k.endswith(".tflock")]
    if locks:
        problems.append(f"state locks left in the bucket: {locks[:5]}")
    # Per Agent and numbering: 1..n without a gap, and no read reported
    # missing or conflicting.
    for agent_id, epoch, low, high, count in run.psql(
            "SELECT agent_id, epoch, min(seq), max(seq), count(*) FROM access_records GROUP BY agent_id, epoch"):
        if (int(low), int(high)) != (1, int(count)):
            problems.append(f"access records of {agent_id} ({epoch}) run {low}..{high} with {count} records")
    expect_none("access trail events", "SELECT action, detail FROM audit_events WHERE action IN "
                "('secret.read_not_reported', 'secret.record_conflict', 'secret.sequence_restarted')")
    recorded = dict(run.psql(
        "SELECT a.name, count(*) FROM access_records r JOIN agents a ON a.id = r.agent_id GROUP BY a.name"))
    for name, served in served_by.items():
        if int(recorded.get(name, 0)) < served:
            problems.append(f"{name} served {served} reads and the API holds {recorded.get(name, 0)} records")
    return problems, recorded


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--debug", action="store_true")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--resources", type=int, default=500)
    ap.add_argument("--kill-every", type=float, default=5.0)
    ap.add_argument("--apply-seconds", type=int, default=1,
                    help="how long each apply takes (the module sleeps), so that kills land inside applies")
    ap.add_argument("--cut-postgres-every", type=float, default=0,
                    help="seconds between cuts of every database connection (0: never)")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", action="store_true")
    opts = ap.parse_args()
    run = Run(opts)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    try:
        log(f"{opts.replicas} API replicas, {opts.agents} Agents, {opts.resources} Resources, "
            f"a kill every ~{opts.kill_every} s, seed {opts.seed}"
            + (f", every connection cut every {opts.cut_postgres_every} s" if opts.cut_postgres_every else ""))
        set_up(run)
        kills, reads, created, cuts = [], [], [], []
        background = [threading.Thread(target=chaos, args=(run, kills), daemon=True),
                      threading.Thread(target=reader, args=(run, reads), daemon=True)]
        if opts.cut_postgres_every > 0:
            background.append(threading.Thread(target=cut_postgres, args=(run, cuts), daemon=True))
        began = time.time()
        for t in background:
            t.start()
        create_resources(run, created)
        log(f"{len(created)} Resources created in {time.time() - began:.1f} s")
        deadline = time.monotonic() + opts.timeout
        while True:
            pending = run.psql("SELECT count(*) FROM resources WHERE status NOT IN ('provisioned', 'failed')")
            if pending[0][0] == "0":
                break
            if time.monotonic() > deadline:
                log(f"timed out with {pending[0][0]} Resources not terminal")
                break
            time.sleep(1)
        finished = max(float(x[0]) for x in run.psql("SELECT max(finished_at) FROM jobs")) / 1e6
        run.stop.set()
        for t in background:
            t.join()
        # Every Agent up again, and synced: the reads they served reach the API.
        for agent in run.agents:
            if agent["proc"].poll() is not None:
                start_agent(run, agent)
        # A Resource whose job lost its Agent three times is retried, as
        # its owner would: the new job must take over the lock left behind.
        lost = [r[0] for r in run.psql(
            "SELECT id FROM resources WHERE status = 'failed' AND reason LIKE '%lost its Agent%'")]
        for rid in lost:
            http("POST", f"{rng_api(run)}/v1/resources/{rid}/retry", run.token)
        retry_deadline = time.monotonic() + 300
        while lost and run.psql(
                "SELECT count(*) FROM resources WHERE status NOT IN ('provisioned', 'failed')")[0][0] != "0":
            if time.monotonic() > retry_deadline:
                break
            time.sleep(1)
        served_by = {a["name"]: a["served"] for a in run.agents}
        sync_deadline = time.monotonic() + 60
        while True:
            problems, recorded = history_check(run, served_by)
            if not problems or time.monotonic() > sync_deadline:
                break
            time.sleep(2)

        pickups = [(int(s) - int(q)) / 1000 for q, s in run.psql(
            "SELECT queued_at, started_at FROM jobs WHERE started_at IS NOT NULL")]
        attempts = dict(run.psql("SELECT attempts, count(*) FROM jobs GROUP BY attempts ORDER BY attempts"))
        takeovers = run.psql("SELECT count(*) FROM job_logs WHERE content LIKE '%Taking over the state lock%'")[0][0]
        left = run.psql("SELECT count(*) FROM job_logs WHERE content LIKE '%Leaving the state lock%'")[0][0]
        statuses = dict(run.psql("SELECT status, count(*) FROM resources GROUP BY status"))
        minutes = (finished - began) / 60
        print(f"replicas {opts.replicas}, Agents {opts.agents}, Resources {len(created)}, seed {opts.seed}")
        print(f"Resources: {statuses}; throughput {len(created) / minutes:.1f} Resources per minute "
              f"({minutes * 60:.0f} s from the first create to the last finish)")
        print(f"pickup latency (queued → first claim): p50 {percentile(pickups, 50):.0f} ms, "
              f"p90 {percentile(pickups, 90):.0f} ms, p99 {percentile(pickups, 99):.0f} ms")
        print(f"jobs by attempts: {attempts}")
        print(f"Resources retried after losing their Agent three times: {len(lost)}")
        alone = sum(1 for k in kills if k[2])
        print(f"Agents killed: {len(kills)} ({alone} alone, their Terraform stopped by its guard); "
              f"state lock takeovers: {takeovers}; locks left for their holder: {left}")
        problems += [f"Terraform outlived its Agent by 5 s: {o}" for o in run.outlived]
        if opts.cut_postgres_every > 0:
            print(f"PostgreSQL cuts: {len(cuts)} ({sum(cuts)} connections terminated)")
        print(f"reads served through the Agents: {sum(reads)} of {len(reads)} tried; records held by the API: "
              f"{ {k: int(v) for k, v in recorded.items()} }")
        if sum(reads) < len(reads):
            print(f"  the last refused read (an Agent down, or restarting): {run.last_read_error[:300]}")
        if problems:
            print("history check FAILED:")
            for p in problems:
                print(f"  - {p}")
            sys.exit(1)
        print("history check: clean")
    finally:
        run.close()


if __name__ == "__main__":
    main()
