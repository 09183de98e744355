"""`heimdall run` start-up benchmark; see benches/run.sh."""

import os
import shutil
import statistics
import subprocess
import sys
import time

from dev_bench import Dev

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])
SECRETS = 20
HEIMDALL = os.path.join(BIN, "heimdall")


def heimdall(env, *args, stdin=None):
    return subprocess.run([HEIMDALL, *args], env=env, input=stdin, text=True, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE).stdout


def timed(argv, env, cwd):
    began = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def main():
    dev = Dev(HEIMDALL, REPO, "heimdall-run-bench-")
    env, work = dev.env, dev.work
    try:
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
        dev.stop()


if __name__ == "__main__":
    main()
