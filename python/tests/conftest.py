"""Fixtures of floe for Python's tests: the code slice2py generates for Test.ice, free ports,
and the test server run by either Python (floe's, or ZeroC's Ice for Python from Debian)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# ZeroC's Ice for Python (Debian's python3-zeroc-ice) lives in the system interpreter; floe's is
# installed (`pip install ./python`) in the interpreter that runs these tests.
ZEROC_PYTHON = "/usr/bin/python3"
FLOE_PYTHON = sys.executable


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """A directory with Test.ice's generated code and the client and server scripts."""
    slice2py = shutil.which("slice2py")
    assert slice2py, "slice2py (Debian's zeroc-ice-compilers) is needed: run scripts/install-deps"
    out = tmp_path_factory.mktemp("generated")
    subprocess.run(
        [slice2py, "-I/usr/share/ice/slice", "--output-dir", str(out), os.path.join(HERE, "Test.ice")], check=True
    )
    for name in ("client.py", "server.py"):
        shutil.copy(os.path.join(HERE, name), str(out))
    return str(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The test server on `python`, started and waited for (`ready`), killed at the end."""

    def __init__(self, python, directory):
        # The server's stderr goes to a file (a pipe nobody reads could fill up and stop it).
        self.log = tempfile.TemporaryFile(mode="w+")
        self.port = free_port()
        self.endpoint = "tcp -h 127.0.0.1 -p %d" % self.port
        self.process = subprocess.Popen(
            ["timeout", "120", python, "server.py", self.endpoint],
            env=dict(os.environ, RUST_LOG=os.environ.get("FLOE_TEST_LOG", "floe=warn")),
            cwd=directory,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        line = self.process.stdout.readline().strip()
        assert line == "ready", "the server did not start: %r %s" % (line, self.stderr())
        self.proxy = "hello:" + self.endpoint

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def server_on(generated):
    servers = []

    def start(python):
        s = Server(python, generated)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def wait_until(condition, seconds=10.0):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False
