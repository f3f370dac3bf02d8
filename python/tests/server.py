"""The test server: serves ``Test::Hello`` on the endpoint given as argument 1 and prints
``ready``. It runs unchanged on floe for Python and on ZeroC's Ice for Python."""

import sys
import threading
import time

import Ice

import Test


class HelloI(Test.Hello):
    def __init__(self):
        self.oneways = 0

    def sayHello(self, who, current):
        if who == "":
            raise Test.Base("empty name")
        return ("hello " + who, len(who))

    def points(self, p, s, c, current):
        out = [Test.Point(q.x + 1, q.y * 2, q.label.upper()) for q in p]
        out.extend(Test.Point(int(v), 0, k) for k, v in sorted(s.items()))
        return (out, c)

    def echoFixed(self, f, current):
        return list(reversed(f))

    def echoBytes(self, b, current):
        return bytes(reversed(b))

    def nested(self, s, t, current):
        return [list(x) + [len(t)] for x in s]

    def echoMap(self, m, current):
        return {k * 2: v for k, v in m.items()}

    def optionals(self, s, p, q, current):
        if s is Ice.Unset:
            return (Ice.Unset, Ice.Unset)
        return (len(s) + (p.x if p is not Ice.Unset else 0) + (sum(q) if q is not Ice.Unset else 0), {s: 1.5})

    def echoProxy(self, other, current):
        return other

    def fail(self, kind, current):
        if kind == 0:
            raise Test.Base("base")
        if kind == 1:
            raise Test.Derived("derived", 42, "more")
        if kind == 2:
            raise Test.Undeclared(7)
        if kind == 3:
            raise Ice.ObjectNotExistException()
        if kind == 4:
            raise ZeroDivisionError("division by zero")
        raise Test.Derived("derived", kind)

    def later(self, s, current):
        future = Ice.Future()

        def complete():
            if s == "fail":
                future.set_exception(Test.Derived("later", 1))
            else:
                future.set_result(s + " later")

        threading.Timer(0.01, complete).start()
        return future

    def oneway(self, s, current):
        self.oneways += 1

    def onewayCount(self, current):
        return self.oneways

    def sleep(self, ms, current):
        time.sleep(ms / 1000.0)

    def callBack(self, id, s, current):
        # A bidirectional call: back over the connection the request came on.
        callback = Test.CallbackPrx.uncheckedCast(current.con.createProxy(id))
        return callback.ping(s)

    def implicitContext(self, key, current):
        return current.ctx.get(key, "")

    def echoShape(self, s, current):
        return (s, s)

    def echoShapes(self, s, current):
        return s

    def reverse(self, node, current):
        previous = None
        while node is not None:
            node.next, previous, node = previous, node, node.next
        return previous

    def echoDrawing(self, d, current):
        return d

    def shutdown(self, current):
        current.adapter.getCommunicator().shutdown()


def main():
    data = Ice.InitializationData()
    data.properties = Ice.createProperties(sys.argv)
    # callBack calls the client back while it dispatches: a second dispatch thread reads the
    # reply (Ice's thread pools have one thread by default).
    data.properties.setProperty("Ice.ThreadPool.Server.Size", "2")
    with Ice.initialize(data) as communicator:
        adapter = communicator.createObjectAdapterWithEndpoints("Hello", sys.argv[1])
        adapter.add(HelloI(), Ice.stringToIdentity("hello"))
        adapter.activate()
        print("ready", flush=True)
        communicator.waitForShutdown()


if __name__ == "__main__":
    main()
