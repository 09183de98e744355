"""`--wait` lag benchmark; see benches/wait.sh."""

import datetime
import json
import os
import statistics
import subprocess
import sys
import time

from dev_bench import Dev

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])
HEIMDALL = os.path.join(BIN, "heimdall")


def sh(env, line):
    path = BIN + os.pathsep + env.get("PATH", "")
    return subprocess.run(["sh", "-c", line], env=dict(env, PATH=path), cwd=REPO, check=True, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def heimdall_json(env, *args):
    out = subprocess.run([HEIMDALL, *args, "--output", "json"], env=env, cwd=REPO, check=True, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout
    return json.loads(out)


def tour_set_up():
    """The README tour's lines up to its first Resource: the catalog, the dev
    Agent for `dev`, a cloud account and the bucket schema."""
    readme = open(os.path.join(REPO, "README.md")).read()
    block = readme[readme.index("<!-- tour:start"):readme.index("<!-- tour:end -->")]
    lines = [l.strip() for l in block.splitlines() if l.strip().startswith("heimdall ") or "| heimdall " in l]
    return [l for l in lines[:[i for i, l in enumerate(lines) if l.startswith("heimdall resource create")][0]]]


def finished_at(env, name):
    jobs = heimdall_json(env, "job", "list", "--component", "receipts", "--resource", name)
    ends = [j["finished_at"] for j in jobs if j.get("finished_at")]
    assert ends, jobs
    return datetime.datetime.fromisoformat(max(ends).replace("Z", "+00:00")).timestamp()


def create(env, name, wait):
    argv = [HEIMDALL, "resource", "create", "--component", "receipts", "--schema", "bucket", "--environment", "dev",
            "--name", name, "--input", json.dumps({"bucket": name})]
    if wait:
        argv += ["--wait", "--timeout", "120s"]
    subprocess.run(argv, env=env, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def with_wait(env, name):
    """A: `resource create --wait` (long polls)."""
    create(env, name, wait=True)
    returned = time.time()
    return returned - finished_at(env, name)


def polling_peer(env, name):
    """B: create, then look as the SDK did before long polls."""
    create(env, name, wait=False)
    pause = 0.5
    while True:
        time.sleep(pause)
        pause = min(pause * 1.5, 2.0)
        shown = heimdall_json(env, "resource", "show", name)
        if shown["resource"]["status"] not in ("queued", "applying"):
            seen = time.time()
            assert shown["resource"]["status"] == "provisioned", shown
            return seen - finished_at(env, name)


def main():
    dev = Dev(HEIMDALL, REPO, "heimdall-wait-bench-")
    env = dev.env
    try:
        for line in tour_set_up():
            sh(env, line)
        # One Resource first, so that both sides meet a warm Agent.
        with_wait(env, "bench-warm-up")
        lags = {"wait": [], "poll": []}
        for i in range(ROUNDS):
            lags["wait"].append(with_wait(env, f"bench-wait-{i}"))
            lags["poll"].append(polling_peer(env, f"bench-poll-{i}"))
        def p90(xs):
            return sorted(xs)[max(0, int(round(0.9 * len(xs))) - 1)]
        for key, label in (("wait", "resource create --wait (long poll)"), ("poll", "peer: polling 0.5 s x1.5 to 2 s")):
            xs = lags[key]
            print(f"{label:40} lag after finished_at: median {statistics.median(xs) * 1000:7.1f} ms, "
                  f"p90 {p90(xs) * 1000:7.1f} ms  ({len(xs)} jobs)")
        ratio = statistics.median(lags["wait"]) / statistics.median(lags["poll"])
        print(f"ratio (long poll / polling peer), median lag: {ratio:.2f}")
    finally:
        dev.stop()


if __name__ == "__main__":
    main()
