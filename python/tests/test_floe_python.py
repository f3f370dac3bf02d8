"""floe for Python against itself and against ZeroC's Ice for Python (Debian's IcePy, on Ice for
C++), in both directions, with the code ZeroC's slice2py generates, unchanged."""

import os
import subprocess
import sys
import threading
import time

import pytest

from conftest import FLOE_PYTHON, ZEROC_PYTHON

PEERS = {"floe": FLOE_PYTHON, "zeroc": ZEROC_PYTHON}


def run_client(python, directory, proxy):
    r = subprocess.run(
        ["timeout", "120", python, "client.py", proxy, "shutdown"],
        cwd=directory,
        capture_output=True,
        text=True,
    )
    return r.returncode, r.stdout + r.stderr


def test_the_installed_ice_is_floes():
    import Ice
    import IcePy

    assert "site-packages" in Ice.__file__ or "dist-packages" in Ice.__file__
    assert hasattr(IcePy, "_native"), "IcePy is floe's (its native part is IcePy._native)"


@pytest.mark.parametrize(
    "client,server",
    [("floe", "floe"), ("floe", "zeroc"), ("zeroc", "floe"), ("zeroc", "zeroc")],
    ids=["floe-client-floe-server", "floe-client-zeroc-server", "zeroc-client-floe-server", "zeroc-reference"],
)
def test_every_operation_between(client, server, generated, server_on):
    s = server_on(PEERS[server])
    code, out = run_client(PEERS[client], generated, s.proxy)
    if not (code == 0 and out.strip().endswith("ok")):
        s.stop()
        raise AssertionError("client: %s\nserver (exit %s): %s" % (out, s.process.returncode, s.stderr()[-20000:]))
    s.process.wait(timeout=30)
    assert s.process.returncode == 0, s.stderr()[-20000:]


@pytest.fixture
def test_module(generated):
    sys.path.insert(0, generated)
    import Ice
    import Test

    yield Ice, Test
    sys.path.remove(generated)


def test_calls_release_the_gil(test_module, server_on):
    Ice, Test = test_module
    s = server_on(ZEROC_PYTHON)
    with Ice.initialize([]) as communicator:
        hello = Test.HelloPrx.uncheckedCast(communicator.stringToProxy(s.proxy))
        hello.ice_ping()
        ticks = [0]
        stop = threading.Event()

        def count():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.001)

        t = threading.Thread(target=count)
        t.start()
        before = ticks[0]
        hello.sleep(400)
        during = ticks[0] - before
        stop.set()
        t.join()
        # A thread that sleeps 1 ms at a time runs about 300 times in 400 ms; with the GIL held
        # during the call it would not run at all.
        assert during > 50, "another thread ran %d times during a 400 ms call" % during
        hello.shutdown()


def test_bad_input_gets_the_errors_ice_for_python_gives(test_module, server_on):
    Ice, Test = test_module
    s = server_on(FLOE_PYTHON)
    with Ice.initialize([]) as communicator:
        hello = Test.HelloPrx.uncheckedCast(communicator.stringToProxy(s.proxy))
        with pytest.raises(ValueError, match="invalid value for argument 1 in operation `sayHello'"):
            hello.sayHello(5)
        with pytest.raises(ValueError, match="::Test::Point member `x'"):
            hello.points([Test.Point(2**31, 0, "")], {}, Test.Color.Red)
        with pytest.raises(ValueError, match="element 0 of `::Test::PointSeq'"):
            hello.points([1], {}, Test.Color.Red)
        with pytest.raises(ValueError):
            hello.sayHello("\udcff")  # a lone surrogate: not encodable as UTF-8
        with pytest.raises(ValueError):
            hello.echoBytes([256])
        with pytest.raises(Ice.EndpointParseException):
            communicator.stringToProxy("hello:tcp -h 127.0.0.1 -p notaport")
        with pytest.raises(Ice.ProxyParseException):
            communicator.stringToProxy("hello -z")
        with pytest.raises(Ice.ProxyParseException):
            communicator.stringToProxy('"bad')
        with pytest.raises(Ice.EndpointParseException):
            communicator.createObjectAdapterWithEndpoints("Bad", "tcp -p notaport")
        # The server survived every one of them.
        assert hello.sayHello("still") == ("hello still", 5)
        hello.shutdown()


def test_communicator_options_and_properties():
    import Ice

    args = ["prog", "--Ice.Trace.Network=0", "--Test.Value=42", "rest"]
    props = Ice.createProperties(args)
    assert args == ["prog", "--Test.Value=42", "rest"]
    props.setProperty("Test.Value", "42")
    assert props.getPropertyAsInt("Test.Value") == 42
    data = Ice.InitializationData()
    data.properties = props
    with Ice.initialize(data) as communicator:
        assert communicator.getProperties().getProperty("Test.Value") == "42"
        p = communicator.stringToProxy("a/b -t:tcp -h 127.0.0.1 -p 10000")
        assert p.ice_getIdentity() == Ice.Identity("b", "a")
        assert Ice.identityToString(p.ice_getIdentity()) == "a/b"
        assert communicator.stringToProxy("") is None
        assert p.ice_oneway().ice_isOneway() and p.ice_batchOneway().ice_isBatchOneway()
        assert p.ice_facet("x").ice_getFacet() == "x"
        assert p.ice_adapterId("A").ice_getAdapterId() == "A"
        assert p.ice_context({"k": "v"}).ice_getContext() == {"k": "v"}
        assert p == communicator.stringToProxy(str(p))


def test_python_threads_keep_calling_one_server(test_module, server_on):
    Ice, Test = test_module
    s = server_on(FLOE_PYTHON)
    with Ice.initialize([]) as communicator:
        hello = Test.HelloPrx.uncheckedCast(communicator.stringToProxy(s.proxy))
        errors = []

        def calls(n):
            try:
                for i in range(200):
                    assert hello.sayHello("t%d" % n) == ("hello t%d" % n, len("t%d" % n))
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=calls, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors
        hello.shutdown()


def other_pythons():
    """The other CPython 3 interpreters (3.8 and later) of this machine's pyenv."""
    import glob
    import re

    found = []
    for path in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))):
        m = re.search(r"/3\.(\d+)\.", path)
        if m and int(m.group(1)) >= 8 and int(m.group(1)) != sys.version_info[1]:
            found.append((int(m.group(1)), path))
    return found


def test_one_abi3_wheel_serves_every_python_from_3_8(generated, server_on, tmp_path):
    pythons = other_pythons()
    minors = [m for m, _ in pythons]
    assert 8 in minors and max(minors) >= 12, "pyenv's CPython 3.8 and 3.12 or later are expected here: %s" % pythons
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), root], check=True)
    (wheel,) = [str(w) for w in wheels.iterdir() if w.name.endswith(".whl")]
    assert "-cp38-abi3-" in wheel, wheel
    s = server_on(FLOE_PYTHON)
    for minor, python in pythons:
        site = tmp_path / ("site-3.%d" % minor)
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-deps", "--disable-pip-version-check", "--target", str(site), wheel],
            check=True,
        )
        env = dict(os.environ, PYTHONPATH=str(site))
        r = subprocess.run(
            ["timeout", "120", python, "client.py", s.proxy], cwd=generated, env=env, capture_output=True, text=True
        )
        assert r.returncode == 0 and r.stdout.strip().endswith("ok"), "Python 3.%d: %s%s" % (minor, r.stdout, r.stderr)
