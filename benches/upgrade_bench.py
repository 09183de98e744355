"""Module upgrade benchmark; see benches/upgrade.sh."""

import os
import shutil
import statistics
import subprocess
import sys
import time

from infra_world import ENV, MODULE, TF, World, bare_backend, module_outputs, parse_time

BIN = sys.argv[1]
RESOURCES = int(sys.argv[2])
OUTPUTS = ("arn", "bucket", "id", "secret", "tags")
# Version 2 of the module: an optional input and an output that shows it,
# as a module's minor release adds them. The resource is untouched, so
# Terraform updates in place (outputs only): nothing is recreated.
V2_ADDS = '''
variable "tier" {
  type    = string
  default = "standard"
}

output "tier" {
  value = var.tier
}
'''


def main():
    world = World(BIN)
    # Version 2 lives in the bench's directory; the Agent allows both.
    v2 = os.path.join(world.work, "bucket-v2")
    v2_module(v2)
    world.modules.append(v2)
    with world as w:
        run(w, v2)


def run(w, v2):
    w.call("POST", "/v1/schemas", {"type": "bucket", "input_schema": {"type": "object"},
                                   "module": {"source": MODULE, "version": "1.0.0"}})
    # The fleet on version 1, and a bare Terraform root module per Resource
    # applied with version 1 too (neither timed).
    print(f"creating {RESOURCES} Resources on version 1, and {RESOURCES} bare root modules ...", flush=True)
    ids, bare_dirs = [], []
    for i in range(RESOURCES):
        r = w.call("POST", "/v1/resources", {"component": "c", "schema": "bucket", "environment": "dev",
                                             "name": f"r{i}", "input": {"bucket": f"bench-{i}"}})
        ids.append(r["id"])
    for i in range(RESOURCES):
        d = os.path.join(w.work, f"bare{i}")
        os.makedirs(d)
        write_bare(w, d, i, MODULE, OUTPUTS)
        subprocess.check_call([TF, "init", "-input=false", "-no-color"], cwd=d, env=ENV, stdout=subprocess.DEVNULL)
        subprocess.check_call([TF, "apply", "-input=false", "-no-color", "-auto-approve"], cwd=d, env=ENV,
                              stdout=subprocess.DEVNULL)
        bare_dirs.append(d)
    before = {}
    for rid in ids:
        res = w.settled(rid)
        assert res["status"] == "provisioned", res
        before[rid] = res["outputs"]["id"]
    w.call("POST", "/v1/schemas", {"type": "bucket", "input_schema": {"type": "object"},
                                   "module": {"source": v2, "version": "1.1.0"}})
    outdated = w.call("GET", "/v1/resources?outdated=true&limit=1000")
    assert len(outdated) == RESOURCES, f"{len(outdated)} of {RESOURCES} listed as outdated"

    # Interleaved (A B A B …): each Resource's upgrade, then the same
    # module change done by hand on its bare peer (`init`, since the
    # module's source changed, then `apply`).
    heimdall, bare = [], []
    print(f"upgrading {RESOURCES} Resources, interleaved with bare Terraform ...", flush=True)
    for i, rid in enumerate(ids):
        time.sleep(0.3)  # the Agent is idle, waiting in its long poll
        t0 = time.time()
        w.call("POST", f"/v1/resources/{rid}/upgrade", {"schema_version": 2})
        res = w.settled(rid)
        assert res["status"] == "provisioned", res
        assert res["outputs"]["id"] == before[rid], f"{rid} was recreated: {before[rid]} → {res['outputs']['id']}"
        assert res["outputs"].get("tier") == "standard", res["outputs"]
        job = w.call("GET", f"/v1/jobs?resource={rid}&order=newest")[0]
        heimdall.append(parse_time(job["finished_at"]) - t0)

        d = bare_dirs[i]
        write_bare(w, d, i, v2, OUTPUTS + ("tier",))
        t0 = time.monotonic()
        subprocess.check_call([TF, "init", "-input=false", "-no-color"], cwd=d, env=ENV, stdout=subprocess.DEVNULL)
        subprocess.check_call([TF, "apply", "-input=false", "-no-color", "-auto-approve"], cwd=d, env=ENV,
                              stdout=subprocess.DEVNULL)
        bare.append(time.monotonic() - t0)
    assert w.call("GET", "/v1/resources?outdated=true") == [], "every Resource is on version 2"

    ms = lambda xs: statistics.median(xs) * 1000
    paired = sorted(h / b for h, b in zip(heimdall, bare))
    q = lambda f: paired[min(len(paired) - 1, int(f * len(paired)))]
    print(f"Resources upgraded: {RESOURCES}, none recreated (each kept its object's id)")
    print(f"Heimdall upgrade (request → finished), per Resource: median {ms(heimdall):.0f} ms, "
          f"total {sum(heimdall):.1f} s")
    print(f"bare terraform init && apply of the same change:     median {ms(bare):.0f} ms, total {sum(bare):.1f} s")
    print(f"ratio Heimdall / bare, round by round: {statistics.median(paired):.2f} "
          f"(middle half {q(0.25):.2f}–{q(0.75):.2f})")
    phases = w.phases()[-RESOURCES:]  # the last jobs are the upgrades
    if phases:
        print("the upgrades' phases on the Agent (median ms): "
              + ", ".join(f"{k[:-3]} {statistics.median(p[k] for p in phases):.1f}"
                          for k in ("init_ms", "apply_ms", "finish_ms", "total_ms")))


def write_bare(w, d, i, module, outputs):
    with open(os.path.join(d, "main.tf"), "w") as f:
        f.write(bare_backend(w.bucket, w.moto_url, f"bare/{i}.tfstate") + f'''module "resource" {{
  source = "{module}"
  bucket = "bench-bare-{i}"
}}
{module_outputs(outputs)}
''')


def v2_module(path):
    shutil.copytree(MODULE, path)
    with open(os.path.join(path, "main.tf"), "a") as f:
        f.write(V2_ADDS)


if __name__ == "__main__":
    main()
