"""Python on floe against ZeroC's Ice for Python: the seed tests from a Python client on each
against the same Ice C++ server, and from the same Ice C++ client against a Python server on
each (crates/floe-bench/peers/ice), on the same interpreter (Debian's /usr/bin/python3, which
has ZeroC's IcePy; floe's wheel goes first on its path), interleaved rounds, medians and ratios.

    python3 python/bench/run.py [--rounds 5] [--seconds 1]

Prints a Markdown table and ``RESULT python-<test> <floe/IcePy ratio>`` lines."""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SYSTEM_PYTHON = "/usr/bin/python3"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_client(work, env, proxy, seconds):
    out = subprocess.run(
        ["timeout", "600", SYSTEM_PYTHON, "client.py", proxy, str(seconds)],
        cwd=work, env=env, capture_output=True, text=True, check=True,
    ).stdout
    results = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            _, name, value = line.split()
            results[name] = float(value)
    return results


SERVER_TESTS = [
    ("twoway", 0), ("oneway", 0), ("ami", 0), ("bytes-send", 500000), ("bytes-recv", 500000),
    ("fixed-send", 50000), ("fixed-recv", 50000), ("strings-send", 50000), ("strings-recv", 50000),
]


def serve(work, env, client, seconds):
    """The Ice C++ client's rates against the Python server on `env`: ``server-<test>``."""
    port = free_port()
    server = subprocess.Popen(
        ["timeout", "600", SYSTEM_PYTHON, "server.py", str(port)], cwd=work, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout.readline().strip() == "ready"
        results = {}
        for test, param in SERVER_TESTS:
            out = subprocess.run(
                [client, str(port), test, str(int(seconds * 1000)), str(param)],
                capture_output=True, text=True, check=True, timeout=600,
            ).stdout.split()
            results["server-" + test] = float(out[0]) / float(out[1])
        return results
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="floe-python-bench-")
    try:
        wheels = os.path.join(work, "wheels")
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, os.path.join(ROOT, "python")], check=True)
        site = os.path.join(work, "floe-site")
        wheel = [os.path.join(wheels, w) for w in os.listdir(wheels) if w.endswith(".whl")][0]
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site, wheel], check=True)
        peer = os.path.join(work, "peer")
        subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "crates/floe-bench/peers/ice"), "OUT=" + peer], check=True)
        subprocess.run(["slice2py", "--output-dir", work, os.path.join(ROOT, "crates/floe-bench/slice/Bench.ice")], check=True)
        shutil.copy(os.path.join(HERE, "client.py"), work)
        shutil.copy(os.path.join(HERE, "server.py"), work)
        port = free_port()
        server = subprocess.Popen([os.path.join(peer, "ice-server"), str(port)], stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        proxy = "a:tcp -h 127.0.0.1 -p %d" % port
        zeroc_env = dict(os.environ)
        zeroc_env.pop("PYTHONPATH", None)
        floe_env = dict(zeroc_env, PYTHONPATH=site)
        runs = {"floe": [], "zeroc": []}
        try:
            for _ in range(args.rounds):
                runs["floe"].append(run_client(work, floe_env, proxy, args.seconds))
                runs["zeroc"].append(run_client(work, zeroc_env, proxy, args.seconds))
        finally:
            server.kill()
        client = os.path.join(peer, "ice-client")
        for i in range(args.rounds):
            for who, env in (("floe", floe_env), ("zeroc", zeroc_env)):
                runs[who][i].update(serve(work, env, client, args.seconds))
        print("| test (calls/s, median of %d) | floe for Python | ZeroC IcePy | floe/IcePy |" % args.rounds)
        print("|---|---|---|---|")
        ratios = []
        for name in runs["floe"][0]:
            f = statistics.median(r[name] for r in runs["floe"])
            z = statistics.median(r[name] for r in runs["zeroc"])
            ratios.append((name, f / z))
            print("| %s | %.0f | %.0f | %.2f |" % (name, f, z, f / z))
        for name, ratio in ratios:
            print("RESULT python-%s %.2f" % (name, ratio))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
