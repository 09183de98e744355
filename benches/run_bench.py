"""`heimdall run` start-up benchmark; see benches/run.sh."""

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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])
SECRETS = 20
HEIMDALL = os.path.join(BIN, "heimdall")


def free_ports():
    """Three free ports in a row: the API's, the Agent channel's, its local API's."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 65533 and all(_free(port + i) for i in (1, 2)):
            return port


def _free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def heimdall(env, *args, stdin=None):
    return subprocess.run([HEIMDALL, *args], env=env, input=stdin, text=True, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def timed(argv, env, cwd):
    began = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def main():
    work = tempfile.mkdtemp(prefix="heimdall-run-bench-")
    env = dict(os.environ, HEIMDALL_CONFIG_DIR=os.path.join(work, "config"), HEIMDALL_LOG="warn",
               NO_COLOR="1")
    for name in ("HEIMDALL_API_URL", "HEIMDALL_TOKEN", "HEIMDALL_PROFILE"):
        env.pop(name, None)
    port = free_ports()
    dev = subprocess.Popen(
        [HEIMDALL, "dev", "--data", os.path.join(work, "data"), "--listen", f"127.0.0.1:{port}",
         "--terraform", os.path.join(REPO, ".venv/bin/terraform"), "--output", "json"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        printed = ""
        for line in dev.stdout:
            printed += line
            if line.rstrip() == "}":
                break
        started = json.loads(printed)
        assert started["agent"]["running"], started
        heimdall(env, "environment", "create", "bench")
        heimdall(env, "environment", "assign-agent", "bench", "dev")
        names = [f"bench-secret-{i:02}" for i in range(SECRETS)]
        for name in names:
            heimdall(env, "secret", "create", name)
        # The Agent learns of new secrets at its next sync (2 s in dev).
        time.sleep(3)
        for name in names:
            heimdall(env, "secret", "set", name, "--environment", "bench", stdin=f"value-of-{name}")
        project = os.path.join(work, "project")
        os.makedirs(project)
        with open(os.path.join(project, "heimdall.yaml"), "w") as f:
            f.write("environment: bench\nsecrets:\n" + "".join(f"  - {n}\n" for n in names))
        program = [shutil.which("true") or "/bin/true"]
        run = [HEIMDALL, "run", "--", *program]
        # Warm up both, and check the program really gets the values.
        check = subprocess.run([HEIMDALL, "run", "--", "sh", "-c", 'printf %s "$BENCH_SECRET_07"'],
                               env=env, cwd=project, check=True, stdout=subprocess.PIPE, text=True)
        assert check.stdout == "value-of-bench-secret-07", check.stdout
        for _ in range(3):
            timed(program, env, project)
            timed(run, env, project)
        bare, with_run = [], []
        for _ in range(ROUNDS):
            bare.append(timed(program, env, project))
            with_run.append(timed(run, env, project))
        b, r = statistics.median(bare), statistics.median(with_run)
        print(f"rounds: {ROUNDS} (interleaved), secrets per run: {SECRETS}")
        print(f"bare exec of {program[0]}: median {b * 1000:.1f} ms")
        print(f"heimdall run -- {program[0]}: median {r * 1000:.1f} ms "
              f"(p90 {sorted(with_run)[int(0.9 * (ROUNDS - 1))] * 1000:.1f} ms)")
        print(f"added by heimdall run: {(r - b) * 1000:.1f} ms (target < 30 ms); ratio {r / b:.1f}x")
    finally:
        dev.send_signal(signal.SIGINT)
        try:
            dev.wait(timeout=45)
        except subprocess.TimeoutExpired:
            dev.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
