"""What the benches that run against `heimdall dev` share: three free
ports in a row, and a `heimdall dev` started in its own temp dirs and
stopped with the SIGINT a person's Ctrl-C sends."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile


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


class Dev:
    """`heimdall dev` (the given binary) with a fresh data and config dir,
    run from the repository; `env` is the environment for the CLI."""

    def __init__(self, heimdall, repo, prefix):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.env = dict(os.environ, HEIMDALL_CONFIG_DIR=os.path.join(self.work, "config"), HEIMDALL_LOG="warn",
                        NO_COLOR="1")
        for name in ("HEIMDALL_API_URL", "HEIMDALL_TOKEN", "HEIMDALL_PROFILE"):
            self.env.pop(name, None)
        port = free_ports()
        self.process = subprocess.Popen(
            [heimdall, "dev", "--data", os.path.join(self.work, "data"), "--listen", f"127.0.0.1:{port}",
             "--terraform", os.path.join(repo, ".venv/bin/terraform"), "--output", "json"],
            env=self.env, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        printed = ""
        for line in self.process.stdout:
            printed += line
            if line.rstrip() == "}":
                break
        self.started = json.loads(printed)
        assert self.started["agent"]["running"], self.started

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=45)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.work, ignore_errors=True)
