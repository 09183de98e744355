"""Runs moto's server (the AWS wire protocols: S3, STS, KMS, DynamoDB, ...) for
Heimdall's tests. Called through scripts/moto.sh, with the virtualenv's python.

    moto.sh start            start on a free loopback port (or reuse the running
                             one); prints http://127.0.0.1:PORT
    moto.sh url              prints the running server's URL (exit 1 if none)
    moto.sh stop             stops it (no error if it is not running)
    moto.sh bucket NAME...   creates buckets (no error if they exist)
    moto.sh ls BUCKET [PREFIX]   lists keys, one "KEY SIZE" a line
    moto.sh cat BUCKET KEY   writes an object to stdout (exit 3 if missing)
    moto.sh put BUCKET KEY   writes stdin to an object
    moto.sh reset            forgets everything (moto's /moto-api/reset)
    moto.sh env              prints `export` lines: credentials, region, URL

State lives in $HEIMDALL_MOTO_DIR (default <repo>/.venv/moto): moto.pid,
moto.url, moto.log. Several servers can run at once with different
directories. Credentials: any static values; the defaults are `testing`.
"""

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(REPO, ".venv")
DIR = os.path.abspath(os.environ.get("HEIMDALL_MOTO_DIR") or os.path.join(VENV, "moto"))
PID_FILE = os.path.join(DIR, "moto.pid")
URL_FILE = os.path.join(DIR, "moto.url")
LOG_FILE = os.path.join(DIR, "moto.log")
LOCK_FILE = os.path.join(DIR, "moto.lock")

DEFAULT_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    # Never ask the EC2 metadata service (169.254.169.254) for credentials.
    "AWS_EC2_METADATA_DISABLED": "true",
}


def fail(message, code=1):
    sys.stderr.write("moto: %s\n" % message)
    sys.exit(code)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, path)


def answers(url, timeout=5.0):
    # A cheap request: /moto-api/data.json serializes every resource moto
    # holds, which grows with each test run and ends up timing out.
    try:
        with urllib.request.urlopen(url + "/moto-api/", timeout=timeout) as r:
            return r.status == 200
    except urllib.error.HTTPError:
        return True  # it answered
    except (urllib.error.URLError, OSError):
        return False


def is_our_moto(pid):
    """True when pid is alive and is a moto_server (not a recycled pid)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"moto_server" in f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False


def running_url():
    pid, url = read(PID_FILE), read(URL_FILE)
    if pid and url and is_our_moto(int(pid)) and answers(url):
        return url
    return None


class Locked:
    """Serializes start/stop for one directory across processes."""

    def __enter__(self):
        os.makedirs(DIR, exist_ok=True)
        self.f = open(LOCK_FILE, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start():
    server = os.path.join(VENV, "bin", "moto_server")
    if not os.access(server, os.X_OK):
        fail("%s is missing: run scripts/install-test-tools.sh" % server)
    # moto_server with requests serialized (see that file for why).
    serialized = os.path.join(os.path.dirname(os.path.abspath(__file__)), "moto_server_serialized.py")
    python = os.path.join(VENV, "bin", "python")
    with Locked():
        url = running_url()
        if url:
            print(url)
            return
        env = dict(os.environ)
        for key, value in DEFAULT_ENV.items():
            env.setdefault(key, value)
        for attempt in range(3):
            port = free_port()
            url = "http://127.0.0.1:%d" % port
            with open(LOG_FILE, "ab") as log:
                proc = subprocess.Popen(
                    [python, serialized, "-H", "127.0.0.1", "-p", str(port)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=env,
                    cwd=DIR,
                    start_new_session=True,  # survives the caller's Ctrl-C / process group
                )
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if answers(url, timeout=0.5):
                    write_atomic(PID_FILE, str(proc.pid))
                    write_atomic(URL_FILE, url)
                    print(url)
                    return
                time.sleep(0.1)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
                fail("moto_server did not answer on %s within 60 s; see %s" % (url, LOG_FILE))
            # Exited at once: most likely the port was taken meanwhile; try another.
        fail("moto_server would not start; see %s" % LOG_FILE)


def stop():
    with Locked():
        pid = read(PID_FILE)
        if pid and is_our_moto(int(pid)):
            pid = int(pid)
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and is_our_moto(pid):
                time.sleep(0.05)
                try:
                    os.waitpid(pid, os.WNOHANG)  # in case it is our child
                except ChildProcessError:
                    pass
            if is_our_moto(pid):
                os.kill(pid, signal.SIGKILL)
        for path in (PID_FILE, URL_FILE):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def url_or_fail():
    url = running_url()
    if not url:
        fail("not running (HEIMDALL_MOTO_DIR=%s); run: scripts/moto.sh start" % DIR)
    return url


def s3_client():
    import boto3  # moto's own dependency, in the virtualenv

    for key, value in DEFAULT_ENV.items():
        os.environ.setdefault(key, value)
    return boto3.client("s3", endpoint_url=url_or_fail(), region_name=os.environ["AWS_DEFAULT_REGION"])


def bucket(names):
    if not names:
        fail("usage: moto.sh bucket NAME...", 2)
    s3 = s3_client()
    for name in names:
        try:
            s3.create_bucket(Bucket=name)
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
        print(name)


def ls(args):
    if len(args) not in (1, 2):
        fail("usage: moto.sh ls BUCKET [PREFIX]", 2)
    s3 = s3_client()
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=args[0], Prefix=args[1] if len(args) == 2 else ""
    )
    for page in pages:
        for obj in page.get("Contents", []):
            print("%s %d" % (obj["Key"], obj["Size"]))


def cat(args):
    if len(args) != 2:
        fail("usage: moto.sh cat BUCKET KEY", 2)
    s3 = s3_client()
    try:
        body = s3.get_object(Bucket=args[0], Key=args[1])["Body"].read()
    except s3.exceptions.NoSuchKey:
        fail("no object s3://%s/%s" % (args[0], args[1]), 3)
    sys.stdout.buffer.write(body)


def put(args):
    if len(args) != 2:
        fail("usage: moto.sh put BUCKET KEY < BODY", 2)
    s3_client().put_object(Bucket=args[0], Key=args[1], Body=sys.stdin.buffer.read())


def reset():
    request = urllib.request.Request(url_or_fail() + "/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10) as r:
        if r.status != 200:
            fail("reset answered %d" % r.status)


def env():
    url = url_or_fail()
    values = dict(DEFAULT_ENV)
    values.update({k: os.environ[k] for k in DEFAULT_ENV if k in os.environ})
    values["HEIMDALL_MOTO_URL"] = url
    for key, value in values.items():
        print("export %s=%s" % (key, json.dumps(value)))


def main(argv):
    try:
        dispatch(argv)
    except Exception as err:  # botocore's errors: one line, not a traceback
        if type(err).__module__.startswith("botocore"):
            fail(str(err))
        raise


def dispatch(argv):
    if not argv:
        fail(__doc__.strip(), 2)
    command, args = argv[0], argv[1:]
    if command == "start":
        start()
    elif command == "stop":
        stop()
    elif command == "url":
        print(url_or_fail())
    elif command == "bucket":
        bucket(args)
    elif command == "ls":
        ls(args)
    elif command == "cat":
        cat(args)
    elif command == "put":
        put(args)
    elif command == "reset":
        reset()
    elif command == "env":
        env()
    else:
        fail("unknown command %r\n\n%s" % (command, __doc__.strip()), 2)


if __name__ == "__main__":
    main(sys.argv[1:])
