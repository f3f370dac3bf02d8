#!/usr/bin/python3
"""Captures Ice 3.7 wire messages for every type and operation of tests/interop/Test.ice.

A real ZeroC Ice (Python, Debian python3-zeroc-ice) client calls the Ice server of
tests/interop/python/server.py through a TCP tap on loopback that records each message.
The result, ice37.txt, is read by crates/floe/tests/vectors.rs, which checks that floe
decodes each message to the values used here and encodes those values to the same bytes.

Regenerate with:  /usr/bin/python3 tests/vectors/capture.py > tests/vectors/ice37.txt
"""
import os
import socket
import subprocess
import tempfile
import sys
import threading
import time

import Ice

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop", "python"))
import server as iceserver  # noqa: E402  (loads Test.ice)
Interop = iceserver.Interop


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run_tap(listen_port, target_port, path):
    """The tap process: forwards connections and appends each message to `path` as a line."""
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", listen_port))
    lsock.listen(8)
    log = open(path, "a")
    lock = threading.Lock()

    def pump(src, dst, direction):
        buf = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            buf += data
            while len(buf) >= 14:
                size = int.from_bytes(buf[10:14], "little")
                if len(buf) < size:
                    break
                with lock:
                    log.write("%s %s\n" % (direction, buf[:size].hex()))
                    log.flush()
                buf = buf[size:]
            dst.sendall(data)

    while True:
        c, _ = lsock.accept()
        s = socket.create_connection(("127.0.0.1", target_port))
        threading.Thread(target=pump, args=(c, s, ">"), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, "<"), daemon=True).start()


class Tap:
    """Runs the tap in its own process (Ice for Python may hold the GIL while it connects)."""

    def __init__(self, target_port, workdir):
        self.port = free_port()
        self.path = os.path.join(workdir, "tap.log")
        open(self.path, "w").close()
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--tap",
                                      str(self.port), str(target_port), self.path])
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port)).close()
                break
            except OSError:
                time.sleep(0.05)

    def _lines(self):
        with open(self.path) as f:
            return [tuple(line.split()) for line in f if line.strip()]

    def count(self):
        return len(self._lines())

    def since(self, n):
        return self._lines()[n:]

    def stop(self):
        self.proc.kill()


def main():
    init = Ice.InitializationData()
    init.properties = Ice.createProperties([])
    init.properties.setProperty("Ice.ACM.Heartbeat", "0")
    init.properties.setProperty("Ice.Warn.Connections", "0")
    init.properties.setProperty("Ice.Default.Host", "127.0.0.1")
    port = free_port()
    server = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "interop", "python", "server.py"),
                               "--endpoints", "tcp -h 127.0.0.1 -p %d" % port], stdout=subprocess.PIPE)
    server.stdout.readline()  # "TestAdapter ready"
    workdir = tempfile.mkdtemp()
    tap = Tap(port, workdir)

    client_init = Ice.InitializationData()
    client_init.properties = init.properties.clone()
    # IceSSL lets the client parse ssl and wss endpoints; nothing here connects over TLS.
    client_init.properties.setProperty("Ice.Plugin.IceSSL", "IceSSL:createIceSSL")
    client = Ice.initialize(client_init)
    base = "tcp -h 127.0.0.1 -p %d" % tap.port
    t = Interop.TesterPrx.uncheckedCast(client.stringToProxy("tester:" + base))
    t10 = t.ice_encodingVersion(Ice.EncodingVersion(1, 0))
    out = sys.stdout
    out.write("# Ice %s wire messages, captured by tests/vectors/capture.py. '>' client to server, "
              "'<' server to client.\n" % Ice.stringVersion())

    def record(label, fn, expect_messages=None):
        n = tap.count()
        try:
            fn()
        except Ice.Exception:
            pass
        except RuntimeError:
            pass
        # Wait until the tap has forwarded everything this call produced.
        deadline = time.time() + 5
        while time.time() < deadline:
            got = tap.count() - n
            if expect_messages is not None and got >= expect_messages:
                break
            if expect_messages is None and got >= 1 and tap.since(n)[-1][0] == "<":
                break
            time.sleep(0.005)
        time.sleep(0.02)
        out.write("\n## %s\n" % label)
        for direction, msg in tap.since(n):
            out.write("%s %s\n" % (direction, msg))

    C = Interop.Color
    P = Interop.Point
    mixed1 = Interop.Mixed(True, 7, -3, 100000, -9000000000, 0.25, -1.5, "mixed", C.Blue, P(3, 4))
    mixed2 = Interop.Mixed(False, 255 - 256 + 256, 32767, -2147483648, 9223372036854775807, -0.0,
                           1e300, "", C.Red, P(-1, 0))

    record("connect", lambda: t.ice_getConnection(), expect_messages=1)
    record("ping", lambda: t.ping())
    record("opBool", lambda: t.opBool(True))
    record("opByte", lambda: t.opByte(200, 100))
    record("opShort", lambda: t.opShort(-12345))
    record("opInt", lambda: t.opInt(123456, -7))
    record("opLong", lambda: t.opLong(1234567890123))
    record("opFloat", lambda: t.opFloat(1.5))
    record("opDouble", lambda: t.opDouble(2.25, 0.5))
    record("opString", lambda: t.opString("héllo", "wörld"))
    record("opColor", lambda: t.opColor(C.Green))
    record("opPoint", lambda: t.opPoint(P(1, -2)))
    record("opMixed", lambda: t.opMixed(mixed1))
    record("opBoolSeq", lambda: t.opBoolSeq([True, False, True]))
    record("opByteSeq", lambda: t.opByteSeq(bytes([0, 1, 2, 255])))
    record("opShortSeq", lambda: t.opShortSeq([1, -1, 300]))
    record("opIntSeq", lambda: t.opIntSeq([1, 2, 3, -4]))
    record("opLongSeq", lambda: t.opLongSeq([1, -(2 ** 40)]))
    record("opFloatSeq", lambda: t.opFloatSeq([0.5, -2.0]))
    record("opDoubleSeq", lambda: t.opDoubleSeq([3.14, -0.0]))
    record("opStringSeq", lambda: t.opStringSeq(["a", "", "ünï"]))
    record("opColorSeq", lambda: t.opColorSeq([C.Red, C.Blue, C.Green]))
    record("opPointSeq", lambda: t.opPointSeq([P(1, 2), P(3, 4)]))
    record("opFixedSeq", lambda: t.opFixedSeq([Interop.Fixed(1, 2, 0.5), Interop.Fixed(-1, -2, -0.5)]))
    record("opStringDoubleSeq", lambda: t.opStringDoubleSeq(
        [Interop.StringDouble("x", 1.0), Interop.StringDouble("yz", 2.5)]))
    record("opMixedSeq", lambda: t.opMixedSeq([mixed1, mixed2]))
    record("opIntSeqSeq", lambda: t.opIntSeqSeq([[1, 2], [], [3]]))
    record("opStringIntDict", lambda: t.opStringIntDict({"a": 1, "b": 2}, {"b": 3, "c": 4}))
    record("opIntStringDict", lambda: t.opIntStringDict({1: "one", 2: "two"}))
    record("opStringPointDict", lambda: t.opStringPointDict({"p": P(1, 2)}))
    record("opPointStringDict", lambda: t.opPointStringDict({P(1, 2): "p"}))
    record("opStringStringSeqDict", lambda: t.opStringStringSeqDict({"k": ["v1", "v2"]}))
    record("opOptionalInt set", lambda: t.opOptionalInt(42))
    record("opOptionalInt unset", lambda: t.opOptionalInt(Ice.Unset))
    record("opOptionalString set", lambda: t.opOptionalString("opt"))
    record("opOptionalString unset", lambda: t.opOptionalString(Ice.Unset))
    record("opOptionalPoint", lambda: t.opOptionalPoint(P(5, 6)))
    record("opOptionalIntSeq", lambda: t.opOptionalIntSeq([7, 8, 9]))
    record("throwBase", lambda: t.throwBase("bad"))
    record("throwDerived", lambda: t.throwDerived("worse", 7))
    record("throwOther", lambda: t.throwOther([1, 2]))
    record("throwUndeclared", lambda: t.throwUndeclared("u"))
    record("throwNonSlice", lambda: t.throwNonSlice())
    record("getContext", lambda: t.getContext({"k": "v", "z": "w"}))
    record("getFacet", lambda: t.getFacet())
    record("getEcho", lambda: t.getEcho())
    record("getSelf", lambda: t.getSelf())
    for i, s in enumerate([
            "x:tcp -h 127.0.0.1 -p 4061 -t 5000",
            "x -f fac -o -s:udp -h 239.1.2.3 -p 5000 -z",
            "x:ws -h localhost -p 8080 -r /chat -t 5000",
            "x:ssl -h 127.0.0.1 -p 4064 -t infinite",
            "x:wss -h h -p 443 -r /x",
            "cat/x@MyAdapter",
            "x -D",
            "x:opaque -t 99 -e 1.0 -v abch",
            "x -e 1.0:tcp -h a -p 1:tcp -h b -p 2 -z"]):
        record("echoProxy %d %s" % (i, s), lambda s=s: t.echoProxy(
            Interop.EchoPrx.uncheckedCast(client.stringToProxy(s))))
    record("echoProxy null", lambda: t.echoProxy(None))
    record("callEcho", lambda: t.callEcho(Interop.EchoPrx.uncheckedCast(
        client.stringToProxy("echo:tcp -h 127.0.0.1 -p %d" % port)), "hi"))
    record("incCounter oneway", lambda: t.ice_oneway().incCounter(5), expect_messages=1)

    def batch():
        b = t.ice_batchOneway()
        b.incCounter(1)
        b.incCounter(2)
        b.ice_flushBatchRequests()
    record("incCounter batch", batch, expect_messages=1)
    record("sendByteSeq compressed", lambda: t.ice_compress(True).sendByteSeq(bytes(200)))
    record("recvByteSeq", lambda: t.recvByteSeq(10))
    record("recvFixedSeq", lambda: t.recvFixedSeq(3))
    record("recvStringDoubleSeq", lambda: t.recvStringDoubleSeq(2))
    record("opIdempotent", lambda: t.opIdempotent(41))
    record("ice_isA", lambda: t.ice_isA("::Interop::Tester"))
    record("ice_ids", lambda: t.ice_ids())
    record("ice_id", lambda: t.ice_id())
    record("named name", lambda: Interop.NamedPrx.uncheckedCast(
        client.stringToProxy("named/alice:" + base)).name())
    record("facet echoString", lambda: Interop.EchoPrx.uncheckedCast(t.ice_facet("echo")).echoString("f"))
    record("ObjectNotExist", lambda: client.stringToProxy("nobody:" + base).ice_ping())
    record("FacetNotExist", lambda: t.ice_facet("nofacet").ice_ping())
    record("OperationNotExist", lambda: t.ice_invoke("nope", Ice.OperationMode.Normal, b""))
    record("1.0 opColor", lambda: t10.opColor(C.Blue))
    record("1.0 opMixed", lambda: t10.opMixed(mixed1))
    record("1.0 opColorSeq", lambda: t10.opColorSeq([C.Red, C.Blue, C.Green]))
    record("1.0 throwDerived", lambda: t10.throwDerived("worse", 7))
    record("1.0 throwBase", lambda: t10.throwBase("bad"))
    record("1.0 getSelf", lambda: t10.getSelf())
    record("1.0 echoProxy udp", lambda: t10.echoProxy(
        Interop.EchoPrx.uncheckedCast(client.stringToProxy("x:udp -h 127.0.0.1 -p 5000 -z"))))
    record("1.0 opOptionalInt", lambda: t10.opOptionalInt(42))
    t.shutdown()
    client.destroy()
    server.wait(timeout=10)
    tap.stop()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--tap":
        run_tap(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    else:
        main()
