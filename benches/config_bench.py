"""Configuration as code over 500 objects; see benches/config.sh."""

import os
import shutil
import statistics
import subprocess
import sys
import time
import tomllib

from dev_bench import Dev

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])
HEIMDALL = os.path.join(BIN, "heimdall")
TERRAFORM = os.path.join(REPO, ".venv/bin/terraform")
VERSION = "0.1.0"

# 500 objects: 20 domains, 80 systems, 200 components (3 or 2 per system),
# 200 secrets (one per component).
DOMAINS, SYSTEMS_PER = 20, 4


def main_tf():
    out = ['terraform {\n  required_providers {\n    heimdall = { source = "heimdall.local/heimdall/heimdall" }\n  }\n}\n',
           'provider "heimdall" {}\n']
    for d in range(DOMAINS):
        out.append(f'resource "heimdall_domain" "d{d}" {{\n  name = "bench-d{d}"\n}}\n')
        for s in range(SYSTEMS_PER):
            out.append(f'resource "heimdall_system" "d{d}s{s}" {{\n  name = "bench-d{d}s{s}"\n'
                       f'  domain = heimdall_domain.d{d}.id\n}}\n')
    components = []
    for d in range(DOMAINS):
        for s in range(SYSTEMS_PER):
            for c in range(3 if (d * SYSTEMS_PER + s) % 2 == 0 else 2):
                name = f"d{d}s{s}c{c}"
                components.append(name)
                out.append(f'resource "heimdall_component" "{name}" {{\n  name = "bench-{name}"\n'
                           f'  system = heimdall_system.d{d}s{s}.id\n}}\n')
    for i, name in enumerate(components):
        out.append(f'resource "heimdall_secret" "s{i}" {{\n  name = "bench-secret-{i}"\n  type = "password"\n'
                   f'  tags = {{ team = "t{i % 7}" }}\n  components = [heimdall_component.{name}.name]\n}}\n')
    return "".join(out), 20 + 80 + len(components) * 2


def run(argv, env, cwd):
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.perf_counter() - started
    return done, took


def main():
    dev = Dev(HEIMDALL, REPO, "heimdall-config-bench-")
    work = os.path.join(dev.work, "tf")
    try:
        os.makedirs(os.path.join(work, f"mirror/heimdall.local/heimdall/heimdall/{VERSION}/linux_amd64"))
        shutil.copy(os.path.join(BIN, "terraform-provider-heimdall"),
                    os.path.join(work, f"mirror/heimdall.local/heimdall/heimdall/{VERSION}/linux_amd64",
                                 f"terraform-provider-heimdall_v{VERSION}"))
        with open(os.path.join(work, "terraformrc"), "w") as f:
            f.write(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{work}/mirror"\n  }}\n}}\n')
        profile = tomllib.load(open(os.path.join(dev.env["HEIMDALL_CONFIG_DIR"], "config.toml"), "rb"))
        profile = profile["profiles"]["dev"]
        with open(os.path.join(work, "ca.pem"), "w") as f:
            f.write(profile["ca"])
        env = dict(dev.env, TF_CLI_CONFIG_FILE=os.path.join(work, "terraformrc"), TF_IN_AUTOMATION="1",
                   HEIMDALL_API_URL=profile["api_url"], HEIMDALL_TOKEN=profile["token"],
                   HEIMDALL_CA_FILE=os.path.join(work, "ca.pem"), CHECKPOINT_DISABLE="1")
        text, objects = main_tf()
        with open(os.path.join(work, "main.tf"), "w") as f:
            f.write(text)
        for argv in ([TERRAFORM, "init", "-no-color"], [TERRAFORM, "apply", "-auto-approve", "-no-color",
                                                        "-parallelism=4"]):
            done, took = run(argv, env, work)
            assert done.returncode == 0, done.stdout + done.stderr
            print(f"{' '.join(os.path.basename(a) for a in argv[:2])}: {took:.1f} s", file=sys.stderr)
        exported = subprocess.run([HEIMDALL, "export-config"], env=env, check=True, text=True,
                                  stdout=subprocess.PIPE).stdout
        with open(os.path.join(work, "heimdall.config.yaml"), "w") as f:
            f.write(exported)
        times = {"heimdall": [], "terraform": []}
        for _ in range(ROUNDS):
            done, took = run([HEIMDALL, "plan", "-f", "heimdall.config.yaml", "--detailed-exitcode"], env, work)
            assert done.returncode == 0, done.stdout + done.stderr
            times["heimdall"].append(took)
            done, took = run([TERRAFORM, "plan", "-detailed-exitcode", "-no-color"], env, work)
            assert done.returncode == 0, done.stdout + done.stderr
            times["terraform"].append(took)
        print(f"{objects} objects made by Terraform, the same organization exported for heimdall plan")
        for key, label in (("heimdall", "heimdall plan -f (no change)"),
                           ("terraform", "peer: terraform plan (no change)")):
            xs = times[key]
            print(f"{label:36} median {statistics.median(xs) * 1000:8.0f} ms, "
                  f"min {min(xs) * 1000:8.0f} ms  ({len(xs)} rounds)")
        ratio = statistics.median(times["heimdall"]) / statistics.median(times["terraform"])
        print(f"ratio (heimdall plan / terraform plan), median: {ratio:.4f} "
              f"(terraform plan takes {1 / ratio:.0f} times as long)")
    finally:
        dev.stop()


if __name__ == "__main__":
    main()
