#!/usr/bin/python3
"""A ZeroC Ice 3.7 (Python) client that checks a server implementing tests/interop/Test.ice.

Usage: client.py [--proxy "tester:tcp -h 127.0.0.1 -p 12010"] [--no-shutdown] [--Ice.X=Y ...]
Prints one line per check and ends with "N passed, M failed"; exits 0 only when M is 0.
"""
import os
import sys
import threading
import time
import traceback

import Ice

HERE = os.path.dirname(os.path.abspath(__file__))
Ice.loadSlice("-I" + os.path.join(HERE, "..") + " " + os.path.join(HERE, "..", "Test.ice"))
import Interop  # noqa: E402

results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        results["passed"] += 1
        print("ok   %s" % name, flush=True)
    except Exception:  # noqa: BLE001 - every failure is reported, never raised
        results["failed"] += 1
        print("FAIL %s\n%s" % (name, traceback.format_exc()), flush=True)


def eq(a, b):
    if a != b:
        raise AssertionError("%r != %r" % (a, b))


def expect(exc_type, fn, test=None):
    try:
        fn()
    except exc_type as e:
        if test:
            test(e)
        return
    raise AssertionError("expected %s" % exc_type.__name__)


def run(communicator, t, encoding_10=False):
    C, P = Interop.Color, Interop.Point
    sfx = " (1.0)" if encoding_10 else ""
    mixed = Interop.Mixed(True, 7, -3, 100000, -9000000000, 0.25, -1.5, "mïxed", C.Blue, P(3, 4))
    check("ping" + sfx, lambda: t.ping())
    check("ice_isA" + sfx, lambda: eq(t.ice_isA("::Interop::Tester"), True))
    check("ice_ids" + sfx, lambda: eq(t.ice_ids(), ["::Ice::Object", "::Interop::Tester"]))
    check("ice_id" + sfx, lambda: eq(t.ice_id(), "::Interop::Tester"))
    check("opBool" + sfx, lambda: eq(t.opBool(True), (False, True)))
    check("opByte" + sfx, lambda: eq(t.opByte(200, 100), (200, 44)))
    check("opShort" + sfx, lambda: eq(t.opShort(-32768), (-32768, -32768)))
    check("opInt" + sfx, lambda: eq(t.opInt(123456, -7), (123456, -864192)))
    check("opInt wraps" + sfx, lambda: eq(t.opInt(2147483647, 2), (2147483647, -2)))
    check("opLong" + sfx, lambda: eq(t.opLong(1234567890123), (1234567890123, 2469135780246)))
    check("opFloat" + sfx, lambda: eq(t.opFloat(1.5), (1.5, 0.75)))
    check("opDouble" + sfx, lambda: eq(t.opDouble(2.25, 0.5), (2.25, 2.75)))
    check("opString" + sfx, lambda: eq(t.opString("héllo", "wörld"), ("héllowörld", "olléh")))
    check("opColor" + sfx, lambda: eq(t.opColor(C.Blue), (C.Blue, C.Red)))
    check("opPoint" + sfx, lambda: eq(t.opPoint(P(1, -2)), (P(1, -2), P(-2, 1))))
    check("opMixed" + sfx, lambda: eq(t.opMixed(mixed), mixed))
    check("opBoolSeq" + sfx, lambda: eq(t.opBoolSeq([True, False, False]), ([True, False, False], [False, False, True])))
    check("opByteSeq" + sfx, lambda: eq(t.opByteSeq(bytes([0, 1, 255])), (bytes([0, 1, 255]), bytes([255, 1, 0]))))
    check("opShortSeq" + sfx, lambda: eq(t.opShortSeq([1, -1, 300]), ([1, -1, 300], [300, -1, 1])))
    check("opIntSeq" + sfx, lambda: eq(t.opIntSeq(list(range(1000))), (list(range(1000)), list(range(999, -1, -1)))))
    check("opLongSeq" + sfx, lambda: eq(t.opLongSeq([1, -(2 ** 40)]), ([1, -(2 ** 40)], [-(2 ** 40), 1])))
    check("opFloatSeq" + sfx, lambda: eq(t.opFloatSeq([0.5, -2.0]), ([0.5, -2.0], [-2.0, 0.5])))
    check("opDoubleSeq" + sfx, lambda: eq(t.opDoubleSeq([3.5, -0.25]), ([3.5, -0.25], [-0.25, 3.5])))
    check("opStringSeq" + sfx, lambda: eq(t.opStringSeq(["a", "", "ü"]), (["a", "", "ü"], ["ü", "", "a"])))
    check("opColorSeq" + sfx, lambda: eq(t.opColorSeq([C.Red, C.Blue]), ([C.Red, C.Blue], [C.Blue, C.Red])))
    check("opPointSeq" + sfx, lambda: eq(t.opPointSeq([P(1, 2), P(3, 4)]), ([P(1, 2), P(3, 4)], [P(3, 4), P(1, 2)])))
    fx = [Interop.Fixed(k, -k, k * 0.5) for k in range(300)]
    check("opFixedSeq" + sfx, lambda: eq(t.opFixedSeq(fx), (fx, fx[::-1])))
    sd = [Interop.StringDouble("x", 1.0), Interop.StringDouble("yz", 2.5)]
    check("opStringDoubleSeq" + sfx, lambda: eq(t.opStringDoubleSeq(sd), (sd, sd[::-1])))
    check("opMixedSeq" + sfx, lambda: eq(t.opMixedSeq([mixed, mixed]), ([mixed, mixed], [mixed, mixed])))
    check("opIntSeqSeq" + sfx, lambda: eq(t.opIntSeqSeq([[1, 2], [], [3]]), ([[1, 2], [], [3]], [[3], [], [1, 2]])))
    check("opStringIntDict" + sfx, lambda: eq(t.opStringIntDict({"a": 1, "b": 2}, {"b": 3, "c": 4}),
                                              ({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 4})))
    check("opIntStringDict" + sfx, lambda: eq(t.opIntStringDict({1: "one", -2: "two"}), {1: "one", -2: "two"}))
    check("opStringPointDict" + sfx, lambda: eq(t.opStringPointDict({"p": P(1, 2)}), {"p": P(1, 2)}))
    check("opPointStringDict" + sfx, lambda: eq(t.opPointStringDict({P(1, 2): "p", P(3, 4): "q"}),
                                                {P(1, 2): "p", P(3, 4): "q"}))
    check("opStringStringSeqDict" + sfx, lambda: eq(t.opStringStringSeqDict({"k": ["v1", "v2"], "e": []}),
                                                    {"k": ["v1", "v2"], "e": []}))
    if encoding_10:
        # Encoding 1.0 has no optionals: they are dropped on the way.
        check("optionals dropped (1.0)", lambda: eq(t.opOptionalInt(42), (Ice.Unset, Ice.Unset)))
    else:
        check("opOptionalInt set", lambda: eq(t.opOptionalInt(42), (42, 42)))
        check("opOptionalInt unset", lambda: eq(t.opOptionalInt(Ice.Unset), (Ice.Unset, Ice.Unset)))
        check("opOptionalString set", lambda: eq(t.opOptionalString("opt"), ("opt", "opt")))
        check("opOptionalString unset", lambda: eq(t.opOptionalString(Ice.Unset), (Ice.Unset, Ice.Unset)))
        check("opOptionalPoint", lambda: eq(t.opOptionalPoint(P(5, 6)), P(5, 6)))
        check("opOptionalPoint unset", lambda: eq(t.opOptionalPoint(Ice.Unset), Ice.Unset))
        check("opOptionalIntSeq", lambda: eq(t.opOptionalIntSeq([7, 8, 9]), [7, 8, 9]))
    check("throwBase" + sfx, lambda: expect(Interop.BaseError, lambda: t.throwBase("bad"),
                                            lambda e: (eq(type(e), Interop.BaseError), eq(e.reason, "bad"))))
    check("throwDerived" + sfx, lambda: expect(Interop.DerivedError, lambda: t.throwDerived("worse", 7),
                                               lambda e: (eq(e.reason, "worse"), eq(e.code, 7))))
    check("throwOther" + sfx, lambda: expect(Interop.OtherError, lambda: t.throwOther([1, 2]),
                                             lambda e: eq(e.values, [1, 2])))
    check("throwUndeclared" + sfx, lambda: expect(Ice.UnknownUserException, lambda: t.throwUndeclared("u")))
    check("throwNonSlice" + sfx, lambda: expect(Ice.UnknownException, lambda: t.throwNonSlice()))
    check("getContext" + sfx, lambda: eq(t.getContext({"k": "v", "z": "w"}), {"k": "v", "z": "w"}))
    check("getFacet" + sfx, lambda: eq(t.getFacet(), ""))
    check("getEcho" + sfx, lambda: eq(t.getEcho().echoString("via getEcho"), "via getEcho"))
    check("getSelf" + sfx, lambda: eq(t.getSelf().ice_getIdentity(), Ice.stringToIdentity("tester")))
    for s in ["x:tcp -h 127.0.0.1 -p 4061 -t 5000", "x -f fac -o -s:udp -h 239.1.2.3 -p 5000 -z",
              "cat/x@MyAdapter", "x:opaque -t 99 -e 1.0 -v abch", "x -e 1.0:tcp -h a -p 1:tcp -h b -p 2 -z"]:
        p = Interop.EchoPrx.uncheckedCast(communicator.stringToProxy(s))
        # Encoding 1.0 does not carry a proxy's encoding: it comes back as 1.0.
        want = p.ice_encodingVersion(Ice.EncodingVersion(1, 0)) if encoding_10 else p
        check("echoProxy %s%s" % (s, sfx), lambda p=p, want=want: eq(t.echoProxy(p), want))
    check("echoProxy null" + sfx, lambda: eq(t.echoProxy(None), None))
    check("callEcho" + sfx, lambda: eq(t.callEcho(t.getEcho(), "hi"), "hi"))
    check("facet echo" + sfx, lambda: eq(Interop.EchoPrx.uncheckedCast(t.ice_facet("echo")).echoString("f"), "f"))
    check("echo object" + sfx, lambda: eq(Interop.EchoPrx.uncheckedCast(
        t.ice_identity(Ice.stringToIdentity("echo"))).echoString("e"), "e"))
    check("named default servant" + sfx, lambda: eq(Interop.NamedPrx.uncheckedCast(
        t.ice_identity(Ice.stringToIdentity("named/alice"))).name(), "alice"))
    check("ObjectNotExist" + sfx, lambda: expect(Ice.ObjectNotExistException,
                                                 lambda: t.ice_identity(Ice.stringToIdentity("nobody")).ice_ping()))
    check("FacetNotExist" + sfx, lambda: expect(Ice.FacetNotExistException, lambda: t.ice_facet("nofacet").ice_ping()))
    check("OperationNotExist" + sfx, lambda: expect(Ice.OperationNotExistException,
                                                    lambda: Interop.EchoPrx.uncheckedCast(t).echoString("x")))
    check("checkedCast facet missing" + sfx, lambda: eq(Interop.TesterPrx.checkedCast(t, "nofacet"), None))

    def oneway():
        t.resetCounter()
        o = t.ice_oneway()
        for _ in range(10):
            o.incCounter(2)
        wait_counter(t, 20)
    check("oneway" + sfx, oneway)

    def batch():
        t.resetCounter()
        b = t.ice_batchOneway()
        for _ in range(100):
            b.incCounter(1)
        b.ice_flushBatchRequests()
        wait_counter(t, 100)
    check("batch oneway" + sfx, batch)

    def compressed():
        z = t.ice_compress(True)
        data = bytes(k % 256 for k in range(20000))
        z.sendByteSeq(data)
        eq(z.recvByteSeq(20000), data)
    check("compression" + sfx, compressed)
    check("recvByteSeq 500000" + sfx, lambda: eq(t.recvByteSeq(500000), bytes(k % 256 for k in range(500000))))
    check("recvFixedSeq 50000" + sfx, lambda: eq(t.recvFixedSeq(50000)[49999], Interop.Fixed(49999, -49999, 24999.5)))
    check("sendFixedSeq" + sfx, lambda: t.sendFixedSeq([Interop.Fixed(k, k, 0.0) for k in range(50000)]))
    check("recvStringDoubleSeq" + sfx, lambda: eq(t.recvStringDoubleSeq(3), [Interop.StringDouble("hello", 3.14)] * 3))
    check("sendStringDoubleSeq" + sfx, lambda: t.sendStringDoubleSeq([Interop.StringDouble("hello", 3.14)] * 1000))
    check("opIdempotent" + sfx, lambda: eq(t.opIdempotent(41), 42))

    def amd():
        futures = [t.sleepThenReturnAsync(300, k) for k in range(5)]
        start = time.time()
        t.ping()  # served while the sleeps are pending, on the same connection
        ping_time = time.time() - start
        eq([f.result() for f in futures], list(range(5)))
        elapsed = time.time() - start
        if ping_time > 0.25 or elapsed > 1.5:
            raise AssertionError("dispatch was not asynchronous: ping %.3fs, all %.3fs" % (ping_time, elapsed))
    check("asynchronous dispatch" + sfx, amd)
    check("invocation timeout" + sfx, lambda: expect(Ice.InvocationTimeoutException,
                                                     lambda: t.ice_invocationTimeout(100).sleepThenReturn(1000, 1)))


def wait_counter(t, expected):
    deadline = time.time() + 5
    while time.time() < deadline:
        got = t.getCounter()
        if got == expected:
            return
        time.sleep(0.01)
    raise AssertionError("counter is %d, expected %d" % (t.getCounter(), expected))


def main(argv):
    proxy = "tester:tcp -h 127.0.0.1 -p 12010"
    shutdown = True
    rest = []
    i = 1
    while i < len(argv):
        if argv[i] == "--proxy" and i + 1 < len(argv):
            proxy = argv[i + 1]
            i += 2
            continue
        if argv[i] == "--no-shutdown":
            shutdown = False
        else:
            rest.append(argv[i])
        i += 1
    init = Ice.InitializationData()
    # createProperties takes the first element as the program name and reads Ice's own
    # prefixes only; parseCommandLineOptions("") reads every other --Name=value.
    init.properties = Ice.createProperties([argv[0]] + rest)
    init.properties.parseCommandLineOptions("", rest)
    init.properties.setProperty("Ice.Warn.Connections", "0")
    with Ice.initialize(init) as communicator:
        t = Interop.TesterPrx.checkedCast(communicator.stringToProxy(proxy))
        run(communicator, t)
        run(communicator, t.ice_encodingVersion(Ice.EncodingVersion(1, 0)), encoding_10=True)
        if shutdown:
            t.shutdown()
    print("%d passed, %d failed" % (results["passed"], results["failed"]))
    return 0 if results["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
