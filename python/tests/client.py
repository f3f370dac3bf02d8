"""The test client: calls every operation of ``Test::Hello`` at the proxy given as argument 1,
checks the results, and prints ``ok``. It runs unchanged on floe for Python and on ZeroC's Ice
for Python."""

import sys
import time

import Ice

import Test


def check(condition, what):
    if not condition:
        raise SystemExit("failed: %s" % what)


def main():
    data = Ice.InitializationData()
    data.properties = Ice.createProperties(sys.argv)
    data.properties.setProperty("Ice.ImplicitContext", "Shared")
    with Ice.initialize(data) as communicator:
        base = communicator.stringToProxy(sys.argv[1])
        hello = Test.HelloPrx.checkedCast(base)
        check(hello is not None, "checkedCast")
        check(isinstance(hello, Test.HelloPrx), "typed proxy")
        check(Test.HelloPrx.checkedCast(base, "nofacet") is None, "checkedCast to a missing facet")
        check(hello.ice_id() == "::Test::Hello", "ice_id")
        check(hello.ice_isA("::Test::Hello") and not hello.ice_isA("::Test::Other"), "ice_isA")
        check(list(hello.ice_ids()) == ["::Ice::Object", "::Test::Hello"], "ice_ids %s" % (hello.ice_ids(),))
        hello.ice_ping()

        check(hello.sayHello("floe") == ("hello floe", 4), "sayHello")
        check(hello.sayHello("ünïcødé") == ("hello ünïcødé", 7), "sayHello unicode")
        try:
            hello.sayHello("")
            check(False, "sayHello('') raises")
        except Test.Base as e:
            check(e.reason == "empty name", "Base.reason")

        pts, back = hello.points([Test.Point(1, 2, "a"), Test.Point(-5, 7, "bc")], {"z": 3.0, "y": 2.0}, Test.Color.Green)
        check(back == Test.Color.Green, "enum out parameter")
        check([(p.x, p.y, p.label) for p in pts] == [(2, 4, "A"), (-4, 14, "BC"), (2, 0, "y"), (3, 0, "z")], "points %s" % pts)
        check(hello.points([], {}, Test.Color.Blue) == ([], Test.Color.Blue), "empty sequences")

        fixed = [Test.Fixed(i, 2**40 + i, i / 3.0, i % 2 == 0, i % 256, 1.5) for i in range(300)]
        got = hello.echoFixed(fixed)
        check(len(got) == 300 and got[0].s == 299 and got[0].l == 2**40 + 299 and got[-1].b is True, "fixedSeq")
        check(abs(got[0].d - 299 / 3.0) < 1e-12 and got[0].f == 1.5, "fixedSeq doubles and floats")

        payload = bytes(range(256)) * 2000
        check(hello.echoBytes(payload) == payload[::-1], "500 kB of bytes")
        check(hello.echoBytes(b"") == b"", "empty bytes")
        check(hello.nested([[1, 2], [], [3]], ["a", "b"]) == [[1, 2, 2], [2], [3, 2]], "nested sequences")
        m = hello.echoMap({1: Test.Point(1, 1, "one"), 2: Test.Point(2, 2, "two")})
        check(sorted(m) == [2, 4] and m[4].label == "two", "dictionary of structs")

        check(hello.optionals() == (Ice.Unset, Ice.Unset), "absent optionals")
        check(hello.optionals("abc", Test.Point(10, 0, ""), [1, 2]) == (16, {"abc": 1.5}), "present optionals")
        check(hello.optionals("ab") == (2, {"ab": 1.5}), "some optionals")

        other = hello.echoProxy(hello)
        check(other == hello and isinstance(other, Test.HelloPrx), "proxy parameter and result")
        check(hello.echoProxy(None) is None, "null proxy")

        try:
            hello.fail(0)
            check(False, "fail(0) raises")
        except Test.Derived:
            check(False, "Base is not Derived")
        except Test.Base as e:
            check(e.reason == "base", "Base")
        try:
            hello.fail(1)
            check(False, "fail(1) raises")
        except Test.Derived as e:
            check((e.reason, e.code, e.detail) == ("derived", 42, "more"), "Derived members %s" % ((e.reason, e.code, e.detail),))
        try:
            hello.fail(5)
        except Test.Derived as e:
            check(e.detail is Ice.Unset, "unset optional member")
        try:
            hello.fail(2)
            check(False, "fail(2) raises")
        except Ice.UnknownUserException:
            pass
        try:
            hello.fail(3)
            check(False, "fail(3) raises")
        except Ice.ObjectNotExistException:
            pass
        try:
            hello.fail(4)
            check(False, "fail(4) raises")
        except Ice.UnknownException as e:
            check("division by zero" in e.unknown, "UnknownException text: %r" % e.unknown)

        check(hello.later("x") == "x later", "AMD")
        try:
            hello.later("fail")
            check(False, "AMD raises")
        except Test.Derived as e:
            check(e.reason == "later", "AMD exception")
        check(hello.sayHelloAsync("async").result() == ("hello async", 5), "AMI")

        before = hello.onewayCount()
        oneway = hello.ice_oneway()
        check(oneway.ice_isOneway() and isinstance(oneway, Test.HelloPrx), "ice_oneway")
        for i in range(10):
            oneway.oneway("x")
        batch = hello.ice_batchOneway()
        for i in range(5):
            batch.oneway("y")
        batch.ice_flushBatchRequests()
        # With more than one dispatch thread, the oneways may still be dispatching.
        deadline = time.time() + 10
        while hello.onewayCount() < before + 15 and time.time() < deadline:
            time.sleep(0.01)
        check(hello.onewayCount() == before + 15, "oneway and batched calls arrived: %d" % (hello.onewayCount() - before))
        try:
            oneway.sayHello("x")
            check(False, "a oneway call of a twoway operation raises")
        except Ice.TwowayOnlyException:
            pass

        for bad in [lambda: hello.sayHello(5), lambda: hello.points([Test.Point(2**40, 0, "")], {}, Test.Color.Red),
                    lambda: hello.points(["x"], {}, Test.Color.Red), lambda: hello.points([], {}, 3)]:
            try:
                bad()
                check(False, "a bad argument raises")
            except ValueError:
                pass

        check(str(hello.ice_getIdentity().name) == "hello", "ice_getIdentity")
        check(hello.ice_timeout(5000).ice_getTimeout() == 5000, "ice_timeout")
        check(hello.ice_facet("f").ice_getFacet() == "f", "ice_facet")
        missing = communicator.stringToProxy("missing:" + sys.argv[1].split(":", 1)[1])
        try:
            missing.ice_ping()
            check(False, "ObjectNotExist")
        except Ice.ObjectNotExistException as e:
            check(e.id.name == "missing", "ObjectNotExistException.id")
        try:
            communicator.stringToProxy("h:tcp -h 127.0.0.1 -p 1").ice_ping()
            check(False, "connection refused")
        except Ice.ConnectionRefusedException:
            pass
        except Ice.ConnectFailedException:
            pass
        # Class instances: members, optional members, derived classes, shared instances.
        circle = Test.Circle("c", Ice.Unset, 2.5, Test.Point(1, 2, "centre"))
        shape, copy = hello.echoShape(circle)
        check(isinstance(shape, Test.Circle) and shape.radius == 2.5 and shape.center.label == "centre", "class echo")
        check(shape is copy, "one instance sent once comes back as one instance")
        check(shape.sides is Ice.Unset and hello.echoShape(Test.Shape("s", 4))[0].sides == 4, "optional class member")
        check(hello.echoShape(None) == (None, None), "null instance")
        square = Test.Shape("square", 4)
        shapes = hello.echoShapes([square, circle, square, None])
        check([type(x).__name__ if x else None for x in shapes] == ["Shape", "Circle", "Shape", None], "class sequence")
        check(shapes[0] is shapes[2] and shapes[0] is not shapes[1], "shared instances in a sequence")
        chain = None
        for v in range(50):
            chain = Test.Node(v, chain)
        back = hello.reverse(chain)
        values = []
        while back is not None:
            values.append(back.value)
            back = back.next
        check(values == list(range(50)), "a list of 50 instances")
        drawing = hello.echoDrawing(Test.Drawing("d", circle))
        check(drawing.title == "d" and drawing.main.name == "c", "a class inside a struct")

        # Callbacks over the client's own connection (no endpoints on the client's adapter).
        class CallbackI(Test.Callback):
            def ping(self, s, current):
                return ",".join(s) + " via " + ("incoming" if current.con.getInfo().incoming else "outgoing")

        adapter = communicator.createObjectAdapter("")
        adapter.add(CallbackI(), Ice.Identity("cb", "client"))
        connection = hello.ice_getConnection()
        check(not connection.getInfo().incoming and connection.getInfo().remotePort > 0, "connection info")
        connection.setAdapter(adapter)
        check(hello.callBack(Ice.Identity("cb", "client"), ["a", "b"]) == "a,b via outgoing", "bidirectional callback")

        implicit = communicator.getImplicitContext()
        if implicit is not None:
            implicit.put("who", "implicit")
            check(hello.implicitContext("who") == "implicit", "implicit context")
        check(hello.ice_context({"who": "explicit"}).implicitContext("who") == "explicit", "proxy context")
        check(hello.implicitContext("who", {"who": "call"}) == "call", "call context")

        if len(sys.argv) > 2 and sys.argv[2] == "shutdown":
            hello.shutdown()
        print("ok", flush=True)


if __name__ == "__main__":
    main()
