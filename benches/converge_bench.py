"""Agents converging on the current version; see benches/converge.sh.

Three Agents (SQLite stores) hold `dev`. Each round one of them is stopped,
a new version is written with `heimdall secret set` (it reaches the two
that are up, and says so), the stopped one is started again, and the
round's time is from the end of the write to the moment every Agent serves
the new version as the latest: the restarted Agent's first sync and its
fetch from another holder. Then a fourth Agent is assigned `dev` holding
many secrets it never saw, and the time until it holds them all gives the
backfill's throughput.
"""

import argparse
import concurrent.futures
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {k: v for k, v in os.environ.items() if k not in ("HEIMDALL_API_URL", "HEIMDALL_TOKEN")}
ENV.update(HEIMDALL_LOG="warn")
SECRET = "converge-secret"


def log(msg):
    print(f"converge-bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def http(method, url, token=None, body=None, context=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30, context=context) as resp:
        text = resp.read()
        return json.loads(text) if text else None


class Run:
    """Everything the run starts, stopped on exit."""

    def __init__(self, opts):
        self.opts = opts
        self.work = tempfile.mkdtemp(prefix="heimdall-converge-")
        self.procs = []
        self.agents = []

    def bin(self, name):
        return os.path.join(self.opts.bin, name)

    def cli(self, *args, stdin=None, check=True):
        env = dict(ENV, HEIMDALL_CONFIG_DIR=os.path.join(self.work, "cli"), HEIMDALL_PROFILE="converge")
        out = subprocess.run([self.bin("heimdall"), *args], env=env, input=stdin, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if check and out.returncode != 0:
            raise RuntimeError(f"heimdall {' '.join(args[:2])} exited {out.returncode}: {out.stderr.strip()}")
        return out

    def start(self, argv, log_name):
        logf = open(os.path.join(self.work, log_name), "ab")
        p = subprocess.Popen(argv, stdout=logf, stderr=logf, env=ENV, start_new_session=True)
        logf.close()
        self.procs.append(p)
        return p

    def stop(self, p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def close(self):
        for p in self.procs:
            self.stop(p)
        if self.opts.keep:
            log(f"kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    def tls(self):
        profile = os.path.join(self.work, "cli", "profiles", "converge")
        ctx = ssl.create_default_context(cafile=os.path.join(profile, "ca.pem"))
        ctx.load_cert_chain(os.path.join(profile, "client.pem"), os.path.join(profile, "client.key"))
        return ctx


def wait_for(what, check, within=120, every=0.02):
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(every)


def set_up(run):
    opts = run.opts
    db = os.path.join(run.work, "api.db")
    url = f"sqlite://{db}"
    boot = json.loads(subprocess.check_output(
        [run.bin("heimdall-api"), "bootstrap", "--database-url", url, "--org", "converge",
         "--owner", "converge@example.com", "--output", "json"], env=ENV))
    run.token = boot["token"]
    port, agent_port = free_port(), free_port()
    run.start([run.bin("heimdall-api"), "serve", "--database-url", url, "--listen", f"127.0.0.1:{port}",
               "--agent-listen", f"127.0.0.1:{agent_port}", "--ca-dir", os.path.join(run.work, "ca"),
               "--insecure-http"], "api.log")
    run.api = f"http://127.0.0.1:{port}"
    wait_for("the API", lambda: _answers(run.api + "/v1/health"), within=30)
    http("POST", run.api + "/v1/environments", run.token, {"name": "dev"})
    run.cli("login", "--api-url", run.api, stdin=run.token)  # on standard input, never in argv
    for i in range(4):
        run.agents.append(enroll(run, f"edge-{i}"))
    for agent in run.agents[:3]:
        run.cli("environment", "assign-agent", "dev", agent["name"])
        start_agent(run, agent)
    run.cli("secret", "create", SECRET)
    run.ctx = run.tls()
    holders = f"{run.api}/v1/secrets/{SECRET}/holders?environment=dev"
    wait_for("every Agent's local API", lambda: sum(
        1 for h in http("GET", holders, run.token) if h.get("url")) == 3, every=0.5)
    wait_for("every Agent serving", lambda: all(_answers_tls(run, a) for a in run.agents[:3]), every=0.2)
    run.cli("secret", "set", SECRET, "--environment", "dev", stdin="v1")


def _answers_tls(run, agent):
    try:
        http("GET", f"{agent['url']}/v1/health", context=run.ctx)
        return True
    except urllib.error.HTTPError:
        return True
    except (OSError, urllib.error.URLError):
        return False


def _answers(url):
    try:
        urllib.request.urlopen(url, timeout=5).read()
        return True
    except (OSError, urllib.error.URLError):
        return False


def enroll(run, name):
    reg = http("POST", run.api + "/v1/agents/registrations", run.token, {"name": name})
    agent_dir = os.path.join(run.work, name)
    subprocess.check_call(
        [run.bin("heimdall-agent"), "enroll", "--api", run.api, "--ca-sha256", reg["ca_sha256"], "--data",
         agent_dir], env=dict(ENV, HEIMDALL_REGISTRATION_TOKEN=reg["token"]), stdout=subprocess.DEVNULL)
    key_file = os.path.join(agent_dir, "master.key")
    with open(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    local_port = free_port()
    config = os.path.join(agent_dir, "agent.toml")
    with open(config, "a") as f:
        f.write(f"\n[values]\nsqlite_path = {json.dumps(os.path.join(agent_dir, 'values.db'))}\n"
                f"master_key_file = {json.dumps(key_file)}\nsync_seconds = {run.opts.sync_seconds}\n"
                f"\n[local_api]\nlisten = \"127.0.0.1:{local_port}\"\nnames = [\"127.0.0.1\"]\n")
    return {"name": name, "config": config, "url": f"https://127.0.0.1:{local_port}", "proc": None}


def start_agent(run, agent):
    agent["proc"] = run.start([run.bin("heimdall-agent"), "run", "--config", agent["config"]],
                              f"{agent['name']}.log")


def latest(run, agent, secret=SECRET):
    """The version `agent` serves as the latest, or None."""
    try:
        url = f"{agent['url']}/v1/secrets/{secret}/value?environment=dev"
        return http("GET", url, context=run.ctx).get("version")
    except (OSError, urllib.error.URLError, ValueError):
        return None


def converge_rounds(run):
    """Each round: one Agent down during a write, then started again; the
    time from the write's end until all three serve it as the latest."""
    times = []
    for n in range(run.opts.rounds):
        down = run.agents[n % 3]
        run.stop(down["proc"])
        value = f"v{n + 2}-" + secrets.token_hex(8)
        out = run.cli("secret", "set", SECRET, "--environment", "dev", stdin=value, check=False)
        missed = re.search(r"version (\d+) was stored on 2 of 3 ", out.stderr)
        if not missed:
            raise RuntimeError(f"round {n}: the write did not miss exactly the stopped Agent: {out.stderr.strip()}")
        written = time.monotonic()
        version = int(missed.group(1))
        start_agent(run, down)
        wait_for(f"round {n}: every Agent serving version {version}",
                 lambda: all(latest(run, a) == version for a in run.agents[:3]))
        times.append(time.monotonic() - written)
        if (n + 1) % 10 == 0:
            log(f"{n + 1} rounds, median {statistics.median(times):.2f} s")
    return times


def backfill(run):
    """`--backfill` secrets written to the three Agents, then a fourth
    assigned: the time until it holds every current version."""
    count = run.opts.backfill
    log(f"writing {count} secrets to the three Agents")

    def create(i):
        http("POST", run.api + "/v1/secrets", run.token, {"name": f"bulk-{i:05d}"})

    def write(i):
        name = f"bulk-{i:05d}"
        made = http("POST", f"{run.api}/v1/secrets/{name}/versions", run.token, {"environment": "dev"})
        for holder in made["holders"]:
            http("PUT", f"{holder['url']}/v1/secrets/{name}/value",
                 body={"environment": "dev", "version": made["version"], "grant": holder["grant"],
                       "value": f"value-{i}"}, context=run.ctx)

    # Every secret first: an Agent told of a new one at a write waits for a sync.
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(count)))
    time.sleep(run.opts.sync_seconds * 2)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(count)))
    log("written")
    newcomer = run.agents[3]
    start_agent(run, newcomer)
    time.sleep(run.opts.sync_seconds * 2)  # enrolled, synced, its local API serving
    began = time.monotonic()
    run.cli("environment", "assign-agent", "dev", newcomer["name"])

    def caught_up():
        shown = http("GET", f"{run.api}/v1/agents/{newcomer['name']}", run.token)
        held = sum(1 for h in shown.get("holdings", []) if h["environment"] == "dev")
        return held >= count + 1 and not shown.get("behind")

    wait_for(f"{newcomer['name']} holding all {count + 1}", caught_up, within=3600, every=0.2)
    took = time.monotonic() - began
    if latest(run, newcomer, f"bulk-{count - 1:05d}") != 1:
        raise RuntimeError("the new Agent does not serve what it reported holding")
    return took


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--backfill", type=int, default=10000)
    p.add_argument("--sync-seconds", type=int, default=2)
    p.add_argument("--keep", action="store_true")
    opts = p.parse_args()
    run = Run(opts)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        set_up(run)
        times = converge_rounds(run)
        took = backfill(run) if opts.backfill else None
    finally:
        run.close()
    period = opts.sync_seconds
    med, p99 = statistics.median(times), percentile(times, 99)
    print(f"convergence, {len(times)} writes with one of three Agents down (sync every {period} s):")
    print(f"  median {med:.2f} s ({med / period:.2f} sync periods), p99 {p99:.2f} s ({p99 / period:.2f} periods),"
          f" max {max(times):.2f} s")
    result = {"rounds": len(times), "sync_seconds": period, "median_s": round(med, 3), "p99_s": round(p99, 3),
              "median_periods": round(med / period, 2), "p99_periods": round(p99 / period, 2)}
    if took is not None:
        rate = opts.backfill / took
        print(f"backfill: {opts.backfill} secrets to a newly assigned Agent in {took:.1f} s ({rate:.0f} values/s,"
              f" {took / period:.1f} sync periods)")
        result.update(backfill=opts.backfill, backfill_s=round(took, 1), backfill_per_s=round(rate, 1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
