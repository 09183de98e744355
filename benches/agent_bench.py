"""Infrastructure Manager benchmark; see benches/agent.sh."""

import os
import statistics
import subprocess
import sys
import time

from infra_world import ENV, MODULE, ROLE_ARN, TF, World, bare_backend, module_outputs, parse_time

BIN = sys.argv[1]
ROUNDS = int(sys.argv[2])


def main():
    with World(BIN) as w:
        w.call("POST", "/v1/schemas", {"type": "bucket", "input_schema": {"type": "object"},
                                       "module": {"source": MODULE, "version": "1"}})
        work = w.work

        def heimdall_round(i):
            time.sleep(0.3)  # the Agent is idle, waiting in its long poll
            # The wall clock before the request, and the job's finish as
            # the API recorded it (the moment the Resource became
            # provisioned, same machine, same clock), so how often the
            # bench polls changes nothing measured; polling often would
            # steal CPU from Terraform on a 2-core machine and bias the
            # ratio against Heimdall, so it polls twice a second.
            t0 = time.time()
            r = w.call("POST", "/v1/resources", {
                "component": "c", "schema": "bucket", "environment": "dev", "name": f"r{i}",
                "input": {"bucket": f"bench-{i}"}})
            res = w.settled(r["id"])
            assert res["status"] == "provisioned", res
            job = w.call("GET", f"/v1/jobs?resource={r['id']}")[0]
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
        outputs = module_outputs(("arn", "bucket", "id", "secret", "tags"))

        def bare_round(i, federated=False):
            # Static keys from the environment; or, federated, the role
            # Heimdall's account names, assumed by Terraform itself with a
            # web identity token through the same STS (what a bare
            # Terraform does to get what Heimdall's OIDC gives its runs).
            d = os.path.join(work, f"bare{i}{'-federated' if federated else ''}")
            os.makedirs(d)
            federation = f'''
    assume_role_with_web_identity = {{
      role_arn = "{ROLE_ARN}"
      web_identity_token_file = "{token_file}"
    }}''' if federated else ""
            backend = bare_backend(w.bucket, w.moto_url, f"bare/{os.path.basename(d)}.tfstate", federation)
            with open(os.path.join(d, "main.tf"), "w") as f:
                f.write(backend + f'''module "resource" {{
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
        phases = w.phases()
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


if __name__ == "__main__":
    main()
