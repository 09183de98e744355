"""The API's hot paths with data against the same calls on an empty
database (issue 17), two release `heimdall-api serve` on PostgreSQL side by
side, measured interleaved (empty, loaded, empty, loaded, ...):

  - an authorized `GET /v1/domains` with --policies Cedar policies in the
    organization against none (compiled once per policy version: the
    target is the same speed);
  - the first page of `GET /v1/secrets` (100 entries) with --secrets
    secrets against an empty list, and a page from the middle (`after=`),
    on a database with the secrets alone and on one with the policies too
    (each listed secret is decided: the policies' cost shows here);
  - the first and the 51st page of `GET /v1/resources` with --resources
    Resources, and of a secret's access log with --access-records reads
    of it (written straight into PostgreSQL), against a database with the
    same catalog and secret and no rows; and a page of Resources each in
    a Component of its own that a policy names (every one decided on its
    own, the worst case for a page: see `seed_bulk`).

Load: --concurrency closed-loop connections, HTTP/1.1 keep-alive, for
--duration seconds per measurement, from --load (heimdall-agent's
`read_load` bench, which benches/api.sh builds and passes) or else from
Python threads. The generator shares the two cores, so its own ceiling is
printed too (`GET /v1/health`), and so is the API's CPU per request (from
/proc), which does not depend on it. Ratios, not absolute figures, are
what this reports. Nothing is asserted; it fails only if a request fails.
"""

import argparse
import base64
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

PG = "postgres://postgres@127.0.0.1:5432"
# Components the newer half of the bulk Resources take turns over.
SPREAD = 100


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def psql(sql):
    subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-qAt", "-c", sql], check=True,
                   stdout=subprocess.DEVNULL)


class Api:
    def __init__(self, bin_dir, name, work):
        self.db = f"heimdall_bench_{name}_{os.getpid()}"
        psql(f"DROP DATABASE IF EXISTS {self.db}")
        psql(f"CREATE DATABASE {self.db}")
        url = f"{PG}/{self.db}"
        token_file = os.path.join(work, f"{name}.token")
        subprocess.run([f"{bin_dir}/heimdall-api", "bootstrap", "--database-url", url, "--org", "bench",
                        "--owner", "owner@bench.test", "--token-file", token_file], check=True,
                       stdout=subprocess.DEVNULL)
        self.token = open(token_file).read().strip()
        self.port = free_port()
        self.log = open(os.path.join(work, f"{name}.log"), "w")
        env = dict(os.environ, HEIMDALL_LOG="warn")
        self.process = subprocess.Popen(
            [f"{bin_dir}/heimdall-api", "serve", "--database-url", url, "--insecure-http",
             "--listen", f"127.0.0.1:{self.port}"], stdout=self.log, stderr=self.log, env=env)
        for _ in range(200):
            try:
                self.call("GET", "/v1/health", token=None)
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"the {name} API did not start; see {self.log.name}")

    def call(self, method, path, body=None, token="owner"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {self.token}"
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        conn.close()
        if resp.status >= 300:
            raise SystemExit(f"{method} {path}: {resp.status} {data[:200]!r}")
        return resp, data

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        psql(f"DROP DATABASE IF EXISTS {self.db}")


def seed(api, policies, secrets, concurrency):
    for i in range(policies):
        text = (f'forbid (principal, action == Heimdall::Action::"secret.write", resource) '
                f'when {{ context.environment == "bench-{i}" }};')
        api.call("POST", "/v1/policies", {"name": f"p{i:04}", "text": text})
    names = iter(range(secrets))
    lock = threading.Lock()

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=30)
        while True:
            with lock:
                i = next(names, None)
            if i is None:
                return
            conn.request("POST", "/v1/secrets", body=json.dumps({"name": f"s{i:06}"}),
                         headers={"authorization": f"Bearer {api.token}", "content-type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 201:
                raise SystemExit(f"creating a secret: {resp.status}")

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def psql_at(db, sql):
    """One value from `sql` in database `db`."""
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", db, "-qAtX", "-c", sql], check=True,
                         stdout=subprocess.PIPE, text=True)
    return out.stdout.strip()


def seed_bulk(api, resources, records):
    """`resources` Resources and `records` access records of one secret,
    written straight into PostgreSQL (through the API it would take hours);
    the catalog, schema and secret through the API. Both APIs get the
    catalog and the secret, so that they answer the same calls.

    The older half of the Resources are in one Component, as a team's
    are: a page of them is one decision. The newer half take turns over
    SPREAD other Components, each named by a policy (a `forbid` in an
    environment none of them is in), so that each Resource of a page
    there is decided on its own: the worst case for a page. Returns the
    cursor (`Heimdall-Next-After`) of the first page of the newer half."""
    ids = {}
    for target in api:
        d = json.loads(target.call("POST", "/v1/domains", {"name": "bulk"})[1])
        s = json.loads(target.call("POST", "/v1/systems", {"name": "bulk", "parent_id": d["id"]})[1])
        c = json.loads(target.call("POST", "/v1/components", {"name": "bulk", "parent_id": s["id"]})[1])
        e = json.loads(target.call("POST", "/v1/environments", {"name": "dev"})[1])
        sc = json.loads(target.call("POST", "/v1/schemas", {"type": "bulk", "input_schema": {"type": "object"},
                                                             "module": {"source": "./bulk", "version": "1"}})[1])
        target.call("POST", "/v1/secrets", {"name": "hot"})
        ids[target] = (c["id"], e["id"], sc["id"])
    bulk = api[-1]
    component, environment, schema = ids[bulk]
    system = json.loads(bulk.call("GET", f"/v1/components/{component}")[1])["parent_id"]
    spread = [json.loads(bulk.call("POST", "/v1/components", {"name": f"spread-{k:03}", "parent_id": system})[1])["id"]
              for k in range(SPREAD)]
    names = ", ".join(f'Heimdall::Component::"{c}"' for c in spread)
    bulk.call("POST", "/v1/policies", {"name": "spread", "text": (
        'forbid (principal, action == Heimdall::Action::"resource.read", resource) '
        f'when {{ context.environment == "frozen" && resource in [{names}] }};')})
    half = resources // 2
    choose = "CASE i % {n} {whens} END".format(
        n=SPREAD, whens=" ".join(f"WHEN {k} THEN '{c}'" for k, c in enumerate(spread)))
    org = psql_at(bulk.db, "SELECT id FROM organizations LIMIT 1")
    member = psql_at(bulk.db, "SELECT id FROM members LIMIT 1")
    t0 = int(time.time() * 1e6) - resources * 1000
    psql_at(bulk.db, f"""
        INSERT INTO resources (id, org_id, name, component_id, environment_id, schema_id, region, status, revision,
                               reason, outputs, created_at, created_by, updated_at)
        SELECT md5('r' || i)::uuid::text, '{org}', 'bulk-' || i,
               CASE WHEN i <= {half} THEN '{component}' ELSE {choose} END, '{environment}', '{schema}', NULL,
               'provisioned', 1, NULL, '{{}}', {t0} + i::bigint * 1000, '{member}', {t0} + i::bigint * 1000
        FROM generate_series(1, {resources}) i;
        INSERT INTO resource_revisions (resource_id, number, hash, input, effective_input, region, state,
                                        requested_by, requested_at)
        SELECT id, 1, 'h', '{{}}', '{{}}', NULL, 'approved', '{member}', created_at FROM resources
        WHERE name LIKE 'bulk-%';""")
    # One Agent's reads of the one secret, ten a second, by 20 people from
    # 20 addresses: `records` of them, the newest now.
    agent = "00000000-0000-4000-8000-00000000b01c"
    r0 = int(time.time() * 1e6) - records * 100_000
    psql_at(bulk.db, f"""
        INSERT INTO agents (id, org_id, name, cert_sha256, created_at, created_by)
        VALUES ('{agent}', '{org}', 'bulk', repeat('0', 64), {r0}, 'bench');
        INSERT INTO agent_access_epochs (agent_id, epoch, last_seq, first_seen_at)
        VALUES ('{agent}', 'bulk', {records}, {r0});
        INSERT INTO access_records (agent_id, epoch, seq, digest, org_id, accessor, accessed_at, secret_name,
                                    environment, version, source, received_at)
        SELECT '{agent}', 'bulk', i, md5(i::text), '{org}', 'reader' || (i % 20) || '@bench.test',
               {r0} + i::bigint * 100000, 'hot', 'dev', 1, '10.0.0.' || (i % 20), {r0} + i::bigint * 100000
        FROM generate_series(1, {records}) i;
        INSERT INTO access_log_environments (org_id, secret_name, environment) VALUES ('{org}', 'hot', 'dev');
        ANALYZE;""")
    # The page after the older half starts after Resource `half`: the
    # cursor the API would give there (heimdall_wire::page::encode).
    at, rid = psql_at(bulk.db, f"SELECT created_at || ' ' || id FROM resources WHERE name = 'bulk-{half}'").split()
    cursor = json.dumps({"created_at": int(at), "id": rid}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(cursor).decode().rstrip("=")


def cpu_seconds(pid):
    """User + system CPU seconds a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(api, path, concurrency, duration, authed=True, generator=None):
    """Closed-loop GETs of `path`: requests/s, p50 and p99 in ms, and the
    API's CPU milliseconds per request. With `generator` (heimdall-agent's
    `read_load` bench executable) the load comes from it; otherwise from
    Python threads, whose GIL on two cores adds its own queueing to every
    percentile."""
    cpu0 = cpu_seconds(api.process.pid)
    if generator:
        argv = [generator, "--url", f"http://127.0.0.1:{api.port}{path}", "--concurrency", str(concurrency),
                "--duration-secs", str(duration), "--warmup-secs", "0.5"]
        if authed:
            argv += ["--header", f"Authorization: Bearer {api.token}"]
        proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else None
        if proc.returncode != 0 or result is None or result["errors"] != 0:
            raise SystemExit(f"GET {path}: the load generator reported errors (exit {proc.returncode}): {result}")
        cpu = cpu_seconds(api.process.pid) - cpu0
        return (result["reads_per_sec"], result["p50_ms"], result["p99_ms"],
                cpu * 1000 / max(result["ok_total"], 1))
    latencies, errors = [], []
    deadline = time.perf_counter() + duration
    headers = {"authorization": f"Bearer {api.token}"} if authed else {}

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=30)
        mine = []
        while True:
            start = time.perf_counter()
            if start >= deadline:
                break
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                errors.append(resp.status)
                break
            mine.append(time.perf_counter() - start)
        latencies.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    began = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    if errors:
        raise SystemExit(f"GET {path}: answered {errors[0]}")
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    cpu = cpu_seconds(api.process.pid) - cpu0
    return len(latencies) / elapsed, pct(0.50), pct(0.99), cpu * 1000 / max(len(latencies), 1)


def main():
    # Killed or hung up, the bench still stops what it started (the
    # `finally` below): a signal becomes an exit.
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--duration", type=float, default=4.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--policies", type=int, default=200)
    p.add_argument("--secrets", type=int, default=10000)
    p.add_argument("--resources", type=int, default=100_000)
    p.add_argument("--access-records", type=int, default=10_000_000)
    p.add_argument("--load", metavar="PATH",
                   help="heimdall-agent's read_load bench executable as the load generator (else Python threads)")
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as work:
        empty = Api(args.bin, "empty", work)
        loaded = Api(args.bin, "loaded", work)
        secrets_only = Api(args.bin, "secrets", work)
        bulk = Api(args.bin, "bulk", work)
        bare = Api(args.bin, "bare", work)  # bulk's peer: the same catalog and secret, no rows
        try:
            began = time.perf_counter()
            seed(loaded, args.policies, args.secrets, args.concurrency)
            seed(secrets_only, 0, args.secrets, args.concurrency)
            spread_after = seed_bulk([bare, bulk], args.resources, args.access_records)
            print(f"seeded {args.policies} policies and {args.secrets} secrets, {args.secrets} secrets, and "
                  f"{args.resources} Resources and {args.access_records} access records, in "
                  f"{time.perf_counter() - began:.1f} s", file=sys.stderr)

            def middle_of(api, path, pages):
                """The cursor `pages` pages into `path`."""
                after = None
                for _ in range(pages):
                    resp, _ = api.call("GET", path + (f"&after={after}" if after else ""))
                    after = resp.getheader("heimdall-next-after")
                    if after is None:
                        raise SystemExit(f"{path}: no page {pages + 1}")
                return after

            resource_page = "/v1/resources?limit=100"
            resource_middle = middle_of(bulk, resource_page, 50)
            log_page = "/v1/secrets/hot/access-log?limit=100"
            log_middle = middle_of(bulk, log_page, 50)
            resp, _ = loaded.call("GET", "/v1/secrets?limit=100")
            middle = resp.getheader("heimdall-next-after")
            for _ in range(args.secrets // 200):
                resp, _ = loaded.call("GET", f"/v1/secrets?limit=100&after={middle}")
                middle = resp.getheader("heimdall-next-after")
            page = "/v1/secrets?limit=100"
            cases = [
                ("generator ceiling: GET /v1/health", empty, loaded, "/v1/health", "/v1/health", False),
                (f"authorized GET /v1/domains, {args.policies} policies vs none", empty, loaded, "/v1/domains",
                 "/v1/domains", True),
                (f"GET /v1/secrets first page, {args.secrets} secrets vs none", empty, secrets_only, page, page, True),
                (f"GET /v1/secrets page from the middle of {args.secrets} vs none", empty, secrets_only, page,
                 f"{page}&after={middle}", True),
                (f"GET /v1/secrets first page, {args.secrets} secrets and {args.policies} policies vs none",
                 empty, loaded, page, page, True),
                (f"GET /v1/resources first page, {args.resources} Resources vs none", bare, bulk, resource_page,
                 resource_page, True),
                (f"GET /v1/resources 51st page of {args.resources} vs none", bare, bulk, resource_page,
                 f"{resource_page}&after={resource_middle}", True),
                (f"GET /v1/resources page of {args.resources}, each Resource in a Component a policy names, vs none",
                 bare, bulk, resource_page, f"{resource_page}&after={spread_after}", True),
                (f"access log of a secret with {args.access_records} reads, first page, vs none", bare, bulk, log_page,
                 log_page, True),
                (f"access log of a secret with {args.access_records} reads, 51st page, vs none", bare, bulk, log_page,
                 f"{log_page}&after={log_middle}", True),
            ]
            print(f"{args.rounds} interleaved rounds of {args.duration:.0f} s, {args.concurrency} connections, "
                  f"load from {'read_load' if args.load else 'Python threads'}\n")
            for title, baseline, target, empty_path, loaded_path, authed in cases:
                rounds = []
                for _ in range(args.rounds):
                    a = load(baseline, empty_path, args.concurrency, args.duration, authed, args.load)
                    b = load(target, loaded_path, args.concurrency, args.duration, authed, args.load)
                    rounds.append((a, b))
                ratios = [b[0] / a[0] for a, b in rounds]
                med = lambda xs: statistics.median(xs)
                print(title)
                for label, side in (("empty ", 0), ("loaded", 1)):
                    col = lambda i: med([r[side][i] for r in rounds])
                    print(f"  {label}: {col(0):8.0f} req/s  p50 {col(1):6.2f} ms  p99 {col(2):6.2f} ms"
                          f"  API CPU {col(3):6.2f} ms/request")
                print(f"  loaded/empty throughput: median {med(ratios):.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)})\n")
        finally:
            for api in (empty, loaded, secrets_only, bulk, bare):
                api.stop()


if __name__ == "__main__":
    main()
