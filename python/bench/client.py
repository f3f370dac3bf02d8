"""The Python client of the seed tests, run unchanged on floe for Python and on ZeroC's Ice for
Python: calls the benchmark server (`Bench::Perf`, crates/floe-bench/slice/Bench.ice) at the
proxy given as argument 1 for about `seconds` per test (argument 2) and prints one line per test:
``RESULT <test> <calls per second>``."""

import sys
import time

import Ice

import Bench

BYTES = 500_000
STRUCTS = 50_000


def rate(seconds, call, per=1):
    """Calls `call` for about `seconds` (after a short warm-up); returns calls per second."""
    end = time.perf_counter() + min(0.2, seconds / 5)
    while time.perf_counter() < end:
        call()
    n = 0
    start = time.perf_counter()
    end = start + seconds
    while True:
        call()
        n += per
        now = time.perf_counter()
        if now >= end:
            return n / (now - start)


def main():
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    tests = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    with Ice.initialize(sys.argv[:1]) as communicator:
        perf = Bench.PerfPrx.uncheckedCast(communicator.stringToProxy(sys.argv[1]))
        perf.ice_ping()
        oneway = perf.ice_oneway()
        batch = perf.ice_batchOneway()
        data = bytes(BYTES)
        fixed = [Bench.Fixed(i, i, 1.5) for i in range(STRUCTS)]
        sd = [Bench.StringDouble("hello", 1.5) for _ in range(STRUCTS)]

        def oneways():
            for _ in range(100):
                oneway.o()
            perf.o()

        def batched():
            for _ in range(1000):
                batch.o()
            batch.ice_flushBatchRequests()

        def ami():
            futures = [perf.oAsync() for _ in range(100)]
            for f in futures:
                f.result()

        cases = [
            ("twoway", lambda: perf.o(), 1),
            ("oneway", oneways, 101),
            ("batch-oneway", batched, 1000),
            ("ami", ami, 100),
            ("bytes-send", lambda: perf.sendByteSeq(data), 1),
            ("bytes-recv", lambda: perf.recvByteSeq(BYTES), 1),
            ("fixed-send", lambda: perf.sendFixedSeq(fixed), 1),
            ("fixed-recv", lambda: perf.recvFixedSeq(STRUCTS), 1),
            ("string-double-send", lambda: perf.sendStringDoubleSeq(sd), 1),
            ("string-double-recv", lambda: perf.recvStringDoubleSeq(STRUCTS), 1),
        ]
        for name, call, per in cases:
            if tests and name not in tests:
                continue
            print("RESULT %s %.1f" % (name, rate(seconds, call, per)), flush=True)


if __name__ == "__main__":
    main()
