#!/usr/bin/python3
"""A ZeroC Ice 3.7 (Python) client that ends its Glacier2 session and opens a new one on the
same communicator, then calls a proxy it used in the first session.

The router's new session has an empty routing table, so the router answers the first call on
that proxy with ObjectNotExistException for operation `ice_add_proxy`; Ice's client runtime then
adds the proxy to the router again and retries, and the call goes through.
Usage: glacier2_resession.py --proxy "tester:tcp -h 127.0.0.1 -p 12010" --Ice.Default.Router=...
Prints one line per check and ends with "N passed, M failed"; exits 0 only when M is 0.
"""
import os
import sys

import Ice

HERE = os.path.dirname(os.path.abspath(__file__))
Ice.loadSlice("-I" + os.path.join(HERE, "..") + " " + os.path.join(HERE, "..", "Test.ice"))
Ice.loadSlice("-I" + Ice.getSliceDir() + " --all " + os.path.join(Ice.getSliceDir(), "Glacier2", "Router.ice"))
import Glacier2  # noqa: E402
import Interop  # noqa: E402


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

    def attempt(name, call):
        try:
            call()
            check(name, True)
        except Exception as e:  # noqa: BLE001
            check(name, False, type(e).__name__ + ": " + str(e))

    with Ice.initialize(init) as communicator:
        router = Glacier2.RouterPrx.checkedCast(communicator.getDefaultRouter())
        tester = Interop.TesterPrx.uncheckedCast(communicator.stringToProxy(proxy))
        attempt("first createSession", lambda: router.createSession("first", "any"))
        attempt("call in the first session", tester.ping)
        attempt("destroySession", router.destroySession)
        attempt("second createSession", lambda: router.createSession("second", "any"))
        attempt("the same proxy in the second session", tester.ping)
        attempt("a twoway with results in the second session", lambda: tester.opString("a", "b"))
        attempt("destroySession again", router.destroySession)
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
