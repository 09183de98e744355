"""Audited secret reads, Heimdall Agent vs OpenBao; see benches/secrets.sh.

Both targets serve HTTPS on 127.0.0.1 with an ECDSA P-256 certificate, are
read over HTTP/1.1 keep-alive by the same load generator (the `read_load`
bench of heimdall-agent) at the same concurrency for the same time, and
must answer every read 200 with the secret's value in the body. Every read
must also leave its trail: for OpenBao a `response` entry in its file audit
device, for Heimdall an access record in the Agent's store.
"""

import argparse
import datetime
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(REPO, ".venv")
BAO = os.path.join(VENV, "bin", "bao")
PG_ADMIN = os.environ.get("HEIMDALL_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
SECRET = "bench-db-password"


def log(msg):
    print(f"secrets-bench: {msg}", file=sys.stderr, flush=True)


def fail(msg):
    log(f"FAILED: {msg}")
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """What this run started: each in its own process group, stopped (SIGTERM,
    then SIGKILL after 10 s) in reverse order, by id."""

    def __init__(self):
        self.procs = []

    def start(self, name, argv, log_path, **kw):
        out = open(log_path, "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **kw)
        out.close()
        self.procs.append((name, proc))
        return proc

    def stop(self, proc):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop_all(self):
        for _, proc in reversed(self.procs):
            self.stop(proc)
        self.procs.clear()

    def check_alive(self):
        for name, proc in self.procs:
            if proc.poll() is not None:
                fail(f"{name} exited early with {proc.returncode}")


# ---- TLS -------------------------------------------------------------------------


def make_tls(directory):
    """A CA and a server certificate for 127.0.0.1 / localhost, ECDSA P-256
    (what Heimdall's installation CA issues), with the cryptography package
    of the test tools' virtualenv."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secrets-bench CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                        x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, f"{name}.pem") for name in ("ca", "server", "server-key")}
    with open(paths["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["server"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(os.open(paths["server-key"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


def https(method, url, ca, token=None, body=None, headers=None, cert=None):
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(*cert)
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("x-vault-token", token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            text = resp.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        e.msg = f"{e.msg}: {e.read()[:500].decode(errors='replace')} ({method} {url.split('?')[0]})"
        raise


def cpu_seconds(pid):
    """User + system CPU time of a process (and its waited-for children)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def machine_idle():
    """(idle + iowait, total) jiffies of the whole machine so far."""
    values = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return values[3] + values[4], sum(values)


def oha_run(opts, url, ca, seconds, headers, cert):
    """One `oha` run of `seconds`: its JSON summary."""
    argv = [opts.oha, "-c", str(opts.concurrency), "-z", f"{seconds:g}s", "-w", "--no-tui", "--output-format", "json",
            "--cacert", ca, url]
    for h in headers:
        argv += ["-H", h]
    if cert:
        argv += ["--cert", cert[0], "--key", cert[1]]
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail(f"oha exited {proc.returncode}")
    return json.loads(proc.stdout)


def run_load(load, target, url, opts, ca, value, server_pid, headers=(), cert=None):
    if opts.oha:
        log(f"{target}: oha, {opts.concurrency} connections for {opts.warmup} s warm-up + {opts.duration} s")
        cpu0, (idle0, total0) = cpu_seconds(server_pid), machine_idle()
        runs = [oha_run(opts, url, ca, opts.warmup, headers, cert), oha_run(opts, url, ca, opts.duration, headers, cert)]
        cpu1, (idle1, total1) = cpu_seconds(server_pid), machine_idle()
        ok = []
        for out in runs:
            codes = out.get("statusCodeDistribution", {})
            bad = sum(out.get("errorDistribution", {}).values()) + sum(n for c, n in codes.items() if c != "200")
            if bad:
                fail(f"{target}: oha saw errors: {out.get('errorDistribution')} {codes}")
            ok.append(codes.get("200", 0))
        measured = runs[1]
        result = {"target": target, "reads": ok[1], "errors": 0,
                  "reads_per_sec": round(ok[1] / opts.duration, 1),
                  "p50_ms": round(measured["latencyPercentiles"]["p50"] * 1000, 3),
                  "p99_ms": round(measured["latencyPercentiles"]["p99"] * 1000, 3),
                  "ok_total": sum(ok), "generator": "oha"}
        result["server_cpu_us_per_read"] = round((cpu1 - cpu0) * 1e6 / max(result["ok_total"], 1), 1)
        result["machine_idle_pct"] = round(100.0 * (idle1 - idle0) / max(total1 - total0, 1), 1)
        return result
    argv = [load, "--target", target, "--url", url, "--ca", ca, "--expect-substring", value,
            "--concurrency", str(opts.concurrency), "--duration-secs", str(opts.duration),
            "--warmup-secs", str(opts.warmup)]
    for h in headers:
        argv += ["--header", h]
    if cert:
        argv += ["--cert", cert[0], "--key", cert[1]]
    log(f"{target}: {opts.concurrency} readers for {opts.warmup} s warm-up + {opts.duration} s")
    cpu0, (idle0, total0) = cpu_seconds(server_pid), machine_idle()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True)
    cpu1, (idle1, total1) = cpu_seconds(server_pid), machine_idle()
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1]) if lines else None
    if proc.returncode != 0 or result is None or result["errors"] != 0:
        fail(f"{target}: the load generator reported errors (exit {proc.returncode}): {result}")
    # Where the time went (warm-up included): the server's CPU per read, and
    # how idle the machine stayed (the load generator shares it).
    result["server_cpu_us_per_read"] = round((cpu1 - cpu0) * 1e6 / max(result["ok_total"], 1), 1)
    result["machine_idle_pct"] = round(100.0 * (idle1 - idle0) / max(total1 - total0, 1), 1)
    return result


# ---- OpenBao -----------------------------------------------------------------------


def openbao_setup(work, procs, tls, load, opts, value):
    """A real (not dev-mode) OpenBao server: integrated (raft) storage,
    initialized with one unseal key, TLS on the listener, KV v2 at
    `secret/`, a `file` audit device, and a token whose only policy reads
    the one secret (so every read pays token lookup and ACL, as a person's
    would)."""
    d = os.path.join(work, "openbao")
    os.makedirs(os.path.join(d, "raft"))
    port, cluster_port = free_port(), free_port()
    addr = f"https://127.0.0.1:{port}"
    config = os.path.join(d, "config.hcl")
    audit_log = os.path.join(d, "audit.log")
    with open(config, "w") as f:
        f.write(f'''storage "raft" {{
  path    = "{d}/raft"
  node_id = "bench"
}}
listener "tcp" {{
  address         = "127.0.0.1:{port}"
  cluster_address = "127.0.0.1:{cluster_port}"
  tls_cert_file   = "{tls["server"]}"
  tls_key_file    = "{tls["server-key"]}"
  tls_min_version = "tls12"
}}
api_addr      = "{addr}"
cluster_addr  = "https://127.0.0.1:{cluster_port}"
disable_mlock = true
ui            = false
log_level     = "warn"
# OpenBao 2.4+ creates audit devices only from its configuration (the API
# refuses `sys/audit`): on becoming active, before it serves anything.
audit "file" "file" {{
  options {{
    file_path = "{audit_log}"
  }}
}}
''')
    env = dict(os.environ, BAO_ADDR=addr, BAO_CACERT=tls["ca"])
    server = procs.start("bao server", [BAO, "server", f"-config={config}"], os.path.join(d, "server.log"), env=env)
    ca = tls["ca"]
    for _ in range(200):
        procs.check_alive()
        try:
            https("GET", addr + "/v1/sys/seal-status", ca)
            break
        except (OSError, urllib.error.URLError):
            time.sleep(0.05)
    else:
        fail("bao server did not answer in 10 s; see " + os.path.join(d, "server.log"))
    init = https("PUT", addr + "/v1/sys/init", ca, body={"secret_shares": 1, "secret_threshold": 1})
    https("PUT", addr + "/v1/sys/unseal", ca, body={"key": init["keys_base64"][0]})
    root = init["root_token"]
    deadline = time.monotonic() + 30
    while True:  # raft elects itself leader shortly after unseal
        try:
            https("GET", addr + "/v1/sys/health", ca)
            break
        except urllib.error.HTTPError:
            if time.monotonic() > deadline:
                fail("OpenBao did not become active in 30 s")
            time.sleep(0.1)
    https("POST", addr + "/v1/sys/mounts/secret", ca, root, {"type": "kv", "options": {"version": "2"}})
    devices = https("GET", addr + "/v1/sys/audit", ca, root)
    if devices.get("file/", {}).get("type") != "file":
        fail(f"OpenBao has no file audit device: {devices}")
    https("PUT", addr + "/v1/sys/policies/acl/bench-read", ca, root,
          {"policy": f'path "secret/data/{SECRET}" {{ capabilities = ["read"] }}'})
    token = https("POST", addr + "/v1/auth/token/create", ca, root,
                  {"policies": ["bench-read"], "no_default_policy": True, "ttl": "1h"})["auth"]["client_token"]
    deadline = time.monotonic() + 30
    while True:  # a new KV v2 mount refuses writes until it has set itself up
        try:
            https("POST", f"{addr}/v1/secret/data/{SECRET}", ca, root, {"data": {"value": value}})
            break
        except urllib.error.HTTPError as e:
            if time.monotonic() > deadline:
                fail(f"cannot write the secret to OpenBao: {e}")
            time.sleep(0.1)
    read = https("GET", f"{addr}/v1/secret/data/{SECRET}", ca, token)
    assert read["data"]["data"]["value"] == value

    def measure():
        before = count_audit_reads(audit_log)
        result = run_load(load, "openbao", f"{addr}/v1/secret/data/{SECRET}", opts, ca, value, server.pid,
                          headers=[f"X-Vault-Token: {token}"])
        procs.check_alive()
        audited = count_audit_reads(audit_log) - before
        log(f"openbao: {audited} read responses in its audit log for {result['ok_total']} successful reads")
        if audited < result["ok_total"]:
            fail(f"OpenBao's audit log has {audited} read responses, fewer than {result['ok_total']} reads")
        result["trail"] = audited
        result["trail_what"] = "audit log responses (written, not fsynced)"
        return result

    return measure


def count_audit_reads(path):
    """Response entries for reads of the secret in OpenBao's audit log (the
    file device writes a request and a response line per request)."""
    if not os.path.exists(path):
        return 0
    needle_path = f'"path":"secret/data/{SECRET}"'.encode()
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if b'"type":"response"' in line[:80] and needle_path in line and b'"operation":"read"' in line:
                n += 1
    return n


# ---- Heimdall ----------------------------------------------------------------------
#
# >>> HEIMDALL SETUP: docs/secrets.md's commands (`heimdall login`, `secret
# >>> create`, `secret set`, `secret get`) and the Agent's `[values]` and
# >>> `[local_api]` configuration.


def heimdall_setup(work, procs, bin_dir, opts, value):
    """The API (SQLite) and an enrolled Agent holding `dev`'s values in
    SQLite or, with --postgres, in a fresh PostgreSQL database, its local
    API on 127.0.0.1; a person logged in (client certificate); the secret
    created and its value written and read back with the CLI. Returns the
    read URL, the person's TLS files and a function counting the Agent's
    access records."""
    d = os.path.join(work, "heimdall")
    os.makedirs(d)
    cli_dir = os.path.join(d, "cli")
    env = {k: v for k, v in os.environ.items() if k not in ("HEIMDALL_API_URL", "HEIMDALL_TOKEN")}
    env.update(HEIMDALL_CONFIG_DIR=cli_dir, HEIMDALL_PROFILE="bench", HEIMDALL_LOG="warn")
    api_bin, agent_bin, cli = (os.path.join(bin_dir, b) for b in ("heimdall-api", "heimdall-agent", "heimdall"))

    def heimdall(*args, stdin=None):
        out = subprocess.run([cli, *args], env=env, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        if out.returncode != 0:
            fail(f"heimdall {' '.join(args[:2])} exited {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    db_url = "sqlite://" + os.path.join(d, "api.db")
    boot = json.loads(subprocess.check_output(
        [api_bin, "bootstrap", "--database-url", db_url, "--org", "bench", "--owner", "bench@example.com",
         "--output", "json"], env=env))
    port, channel_port, local_port = free_port(), free_port(), free_port()
    api = f"http://127.0.0.1:{port}"
    procs.start("heimdall-api", [api_bin, "serve", "--database-url", db_url, "--listen", f"127.0.0.1:{port}",
                                 "--agent-listen", f"127.0.0.1:{channel_port}", "--ca-dir", os.path.join(d, "ca"),
                                 # Plain HTTP on loopback for the set-up calls; what is measured is
                                 # the Agent's local API, over HTTPS.
                                 "--insecure-http"],
                os.path.join(d, "api.log"), env=env)
    wait_http(procs, api + "/v1/health")

    # The token on standard input, never in argv.
    heimdall("login", "--api-url", api, stdin=boot["token"])
    heimdall("environment", "create", "dev")
    registration = json.loads(heimdall("agent", "token", "create", "--name", "bench", "--output", "json"))
    agent_dir = os.path.join(d, "agent")
    # The registration token on standard input, never in argv.
    subprocess.run([agent_bin, "enroll", "--api", api, "--data", agent_dir,
                    "--terraform", os.path.join(VENV, "bin", "terraform")],
                   env=env, check=True, stdout=subprocess.DEVNULL, input=registration["token"], text=True)
    heimdall("environment", "assign-agent", "dev", "bench")
    heimdall("secret", "create", SECRET)

    key_file = os.path.join(agent_dir, "master.key")
    with open(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(secrets.token_hex(32))
    if opts.postgres:
        db = "heimdall_secrets_bench_" + secrets.token_hex(6)
        subprocess.check_call(["psql", PG_ADMIN, "-qc", f"CREATE DATABASE {db}"])
        opts.cleanup.append(lambda: subprocess.call(
            ["psql", PG_ADMIN, "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        store_url = PG_ADMIN.rsplit("/", 1)[0] + "/" + db
        store_line = f"postgres_url = {json.dumps(store_url)}"
    else:
        store_path = os.path.join(agent_dir, "values.db")
        store_line = f"sqlite_path = {json.dumps(store_path)}"
    # The product's defaults otherwise (sync every 60 s: the first sync, at
    # start, brings the assignment, the secret and the person's certificate).
    with open(os.path.join(agent_dir, "agent.toml"), "a") as f:
        f.write(f"\n[values]\n{store_line}\nmaster_key_file = {json.dumps(key_file)}\n"
                f"\n[local_api]\nlisten = \"127.0.0.1:{local_port}\"\nnames = [\"127.0.0.1\"]\n")
    agent = procs.start("heimdall-agent", [agent_bin, "run", "--config", os.path.join(agent_dir, "agent.toml")],
                        os.path.join(d, "agent.log"), env=env)

    deadline = time.monotonic() + 30
    while True:  # until the Agent has synced once and listens
        out = subprocess.run([cli, "secret", "set", SECRET, "--environment", "dev"], env=env, input=value,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if out.returncode == 0:
            break
        procs.check_alive()
        if time.monotonic() > deadline:
            fail(f"heimdall secret set exited {out.returncode}: {out.stderr.strip()}")
        time.sleep(0.25)
    if heimdall("secret", "get", SECRET, "--environment", "dev") != value:
        fail("heimdall secret get did not print the value just set")

    tls = {name: os.path.join(cli_dir, "profiles", "bench", f) for name, f in
           (("ca", "ca.pem"), ("cert", "client.pem"), ("key", "client.key"))}
    url = f"https://127.0.0.1:{local_port}/v1/secrets/{SECRET}/value?environment=dev"

    def count_records():
        if opts.postgres:
            out = subprocess.check_output(["psql", store_url, "-Atc", "SELECT count(*) FROM access_records"],
                                          text=True)
            return int(out.strip())
        import sqlite3
        conn = sqlite3.connect(f"file:{store_path}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT count(*) FROM access_records").fetchone()[0]
        finally:
            conn.close()

    return url, tls, count_records, agent


# <<< HEIMDALL SETUP


def wait_http(procs, url):
    for _ in range(200):
        procs.check_alive()
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            time.sleep(0.05)
    fail(f"{url} did not answer in 10 s")


def heimdall_bench_setup(work, procs, bin_dir, load, opts, value):
    url, tls, count_records, agent = heimdall_setup(work, procs, bin_dir, opts, value)

    def measure():
        before = count_records()
        result = run_load(load, "heimdall", url, opts, tls["ca"], value, agent.pid,
                          cert=(tls["cert"], tls["key"]))
        procs.check_alive()
        recorded = count_records() - before
        log(f"heimdall: {recorded} access records stored for {result['ok_total']} successful reads")
        if recorded < result["ok_total"]:
            fail(f"the Agent stored {recorded} access records, fewer than {result['ok_total']} reads")
        result["trail"] = recorded
        result["trail_what"] = "access records ({} before serving)".format(
            "committed" if opts.postgres else "fsynced")
        return result

    return measure


# ---- Report ------------------------------------------------------------------------


def report(rounds, opts):
    """`rounds`: one dict per round, target → result, measured in turn."""
    print(f"concurrency {opts.concurrency}, {len(rounds)} rounds of {opts.duration} s per target, each after "
          f"{opts.warmup} s warm-up, interleaved (A B A B), one client ({'oha' if opts.oha else 'read_load'}), HTTPS on 127.0.0.1, "
          f"HTTP/1.1 keep-alive")
    print(f"{'ROUND':<6} {'TARGET':<10} {'READS/S':>10} {'P50 MS':>8} {'P99 MS':>8} {'READS':>8} {'ERRORS':>6} "
          f"{'CPU US/READ':>11} {'IDLE %':>6}  TRAIL")
    for i, results in enumerate(rounds, 1):
        for name in ("openbao", "heimdall"):
            r = results.get(name)
            if r:
                print(f"{i:<6} {name:<10} {r['reads_per_sec']:>10.1f} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
                      f"{r['reads']:>8} {r['errors']:>6} {r['server_cpu_us_per_read']:>11.1f} "
                      f"{r['machine_idle_pct']:>6.1f}  {r['trail']} {r['trail_what']}")
    both = [r for r in rounds if "heimdall" in r and "openbao" in r]
    if both:
        # One ratio per round, from two runs next to each other in time.
        rps = [r["heimdall"]["reads_per_sec"] / r["openbao"]["reads_per_sec"] for r in both]
        p99 = [r["heimdall"]["p99_ms"] / r["openbao"]["p99_ms"] for r in both if r["openbao"]["p99_ms"]]
        spread = lambda xs: f"median {statistics.median(xs):.2f}x, spread {min(xs):.2f}-{max(xs):.2f}"
        print(f"Heimdall/OpenBao reads per second: {spread(rps)} (target >= 3)")
        if p99:
            print(f"Heimdall/OpenBao p99 latency:      {spread(p99)} (target < 1)")
    for results in rounds:
        for r in results.values():
            print(json.dumps({k: v for k, v in r.items() if k != "trail_what"}))


def main():
    p = argparse.ArgumentParser(prog="benches/secrets.sh", description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True, help="directory of the release binaries")
    p.add_argument("--load", required=True, help="the read_load bench executable")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--duration", type=float, default=10.0, help="seconds measured, per target and round")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each measuring every target in turn")
    p.add_argument("--warmup", type=float, default=2.0, help="seconds of load before measuring")
    p.add_argument("--postgres", action="store_true", help="the Agent keeps values in PostgreSQL (default SQLite)")
    p.add_argument("--only", choices=("openbao", "heimdall"), help="run one target")
    p.add_argument("--oha", metavar="PATH", help="load with this oha executable (`cargo install oha`) instead of read_load")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, audit trail)")
    opts = p.parse_args()
    opts.cleanup = []

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)

    work = tempfile.mkdtemp(prefix="heimdall-secrets-bench-")
    procs = Processes()
    value = "s3cr3t-" + secrets.token_hex(16)
    try:
        tls = make_tls(work)
        # Both servers up at once, each idle while the other is measured.
        targets = []
        if opts.only in (None, "openbao"):
            targets.append(("openbao", openbao_setup(work, procs, tls, opts.load, opts, value)))
        if opts.only in (None, "heimdall"):
            targets.append(("heimdall", heimdall_bench_setup(work, procs, opts.bin, opts.load, opts, value)))
        rounds = []
        for i in range(opts.rounds):
            log(f"round {i + 1} of {opts.rounds}")
            rounds.append({name: measure() for name, measure in targets})
        report(rounds, opts)
    finally:
        procs.stop_all()
        for f in opts.cleanup:
            f()
        if opts.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
