#!/usr/bin/python3
"""A ZeroC Ice 3.7 (Python) client that reaches the tester through a Glacier2 router.

Creates a session on the router of Ice.Default.Router, calls the tester through it, and has the
tester call back an object of an adapter routed through the router.
Usage: glacier2_client.py --proxy "tester:tcp -h 127.0.0.1 -p 12010" --Ice.Default.Router=...
Prints one line per check and ends with "N passed, M failed"; exits 0 only when M is 0.
"""
import os
import sys
import time

import Ice

HERE = os.path.dirname(os.path.abspath(__file__))
Ice.loadSlice("-I" + os.path.join(HERE, "..") + " " + os.path.join(HERE, "..", "Test.ice"))
Ice.loadSlice("-I" + Ice.getSliceDir() + " --all " + os.path.join(Ice.getSliceDir(), "Glacier2", "Router.ice"))
import Glacier2  # noqa: E402
import Interop  # noqa: E402


class CallbackEcho(Interop.Echo):
    def echoString(self, s, current):
        return "callback " + s


def main(argv):
    proxy = None
    rest = []
    i = 1
    while i < len(argv):
        if argv[i] == "--proxy" and i + 1 < len(argv):
            proxy = argv[i + 1]
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    init = Ice.InitializationData()
    init.properties = Ice.createProperties([argv[0]] + rest)
    init.properties.parseCommandLineOptions("", rest)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("ok   " + name, flush=True)
        else:
            failed += 1
            print("FAIL " + name + ": " + detail, flush=True)

    with Ice.initialize(init) as communicator:
        router = Glacier2.RouterPrx.checkedCast(communicator.getDefaultRouter())
        check("router checkedCast", router is not None)
        try:
            router.createSession("user", "wrong-password-is-fine-with-null-verifier")
            check("createSession", True)
        except Exception as e:  # noqa: BLE001
            check("createSession", False, str(e))
        try:
            router.createSession("user", "again")
            check("second createSession refused", False, "no exception")
        except Glacier2.CannotCreateSessionException:
            check("second createSession refused", True)
        category = router.getCategoryForClient()
        check("category", len(category) > 0, repr(category))
        tester = Interop.TesterPrx.uncheckedCast(communicator.stringToProxy(proxy))
        try:
            tester.ping()
            r, rev = tester.opString("through ", "the router")
            check("opString", r == "through the router" and rev == " hguorht", repr((r, rev)))
        except Exception as e:  # noqa: BLE001
            check("opString", False, str(e))
        oneway = Interop.TesterPrx.uncheckedCast(tester.ice_oneway())
        tester.resetCounter()
        for _ in range(1000):
            oneway.incCounter(1)
        # The server's thread pool may still be running the last ones when getCounter arrives.
        deadline = time.time() + 5
        while tester.getCounter() != 1000 and time.time() < deadline:
            time.sleep(0.01)
        check("oneways through the router", tester.getCounter() == 1000, str(tester.getCounter()))
        adapter = communicator.createObjectAdapterWithRouter("Callbacks", router)
        echo = Interop.EchoPrx.uncheckedCast(
            adapter.add(CallbackEcho(), Ice.Identity("echo", category)))
        adapter.activate()
        try:
            got = tester.callEcho(echo, "hi")
            check("callback through the router", got == "callback hi", repr(got))
        except Exception as e:  # noqa: BLE001
            check("callback through the router", False, str(e))
        try:
            tester.ice_identity(Ice.stringToIdentity("nobody")).ice_ping()
            check("unknown object", False, "no exception")
        except Ice.ObjectNotExistException:
            check("unknown object", True)
        router.destroySession()
        check("destroySession", True)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
