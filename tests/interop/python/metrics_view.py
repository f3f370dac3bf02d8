# Reads a floe server's IceMX metrics view with ZeroC's Python IceMX mapping, after making
# calls it must count. Usage: metrics_view.py <server port> <admin port>
import sys

import Ice
import IceMX

port, admin = sys.argv[1], sys.argv[2]
with Ice.initialize(sys.argv[3:]) as c:
    tester = c.stringToProxy("tester:tcp -h 127.0.0.1 -p %s" % port)
    for _ in range(5):
        tester.ice_ping()
    try:
        c.stringToProxy("nobody:tcp -h 127.0.0.1 -p %s" % port).ice_ping()
        raise SystemExit("nobody answered")
    except Ice.ObjectNotExistException:
        pass
    metrics = IceMX.MetricsAdminPrx.checkedCast(
        c.stringToProxy("server/admin -f Metrics:tcp -h 127.0.0.1 -p %s" % admin))
    enabled, disabled = metrics.getMetricsViewNames()
    print("views %s / %s" % (",".join(enabled), ",".join(disabled)))
    view, _ = metrics.getMetricsView("ByOp")
    for e in sorted(view["Dispatch"], key=lambda e: e.id):
        print("dispatch %s total %d failures %d %s" % (e.id, e.total, e.failures, type(e).__name__))
    for f in metrics.getMapMetricsFailures("ByOp", "Dispatch"):
        print("failure %s %s" % (f.id, sorted(f.failures.items())))
    try:
        metrics.getMetricsView("Nope")
        raise SystemExit("an unknown view answered")
    except IceMX.UnknownMetricsView:
        print("unknown view refused")
    metrics.disableMetricsView("ByOp")
    print("after disable %s / %s" % tuple(",".join(n) for n in metrics.getMetricsViewNames()))
