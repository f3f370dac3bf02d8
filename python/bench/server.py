"""The Python server of the seed tests (`Bench::Perf`, identity `a`) on port argument 1, run
unchanged on floe for Python and on ZeroC's Ice for Python; prints ``ready``."""

import sys

import Ice

import Bench


class PerfI(Bench.Perf):
    def __init__(self):
        self.calls = 0
        self.fixed = {}
        self.strings = {}

    def o(self, current):
        pass

    def sendByteSeq(self, b, current):
        pass

    def recvByteSeq(self, size, current):
        return bytes(size)

    def sendFixedSeq(self, s, current):
        pass

    def recvFixedSeq(self, count, current):
        if count not in self.fixed:
            self.fixed[count] = [Bench.Fixed(1, 2, 3.0) for _ in range(count)]
        return self.fixed[count]

    def sendStringDoubleSeq(self, s, current):
        pass

    def recvStringDoubleSeq(self, count, current):
        if count not in self.strings:
            self.strings[count] = [Bench.StringDouble("hello", 3.14) for _ in range(count)]
        return self.strings[count]

    def work(self, micros, current):
        pass

    def incr(self, current):
        self.calls += 1

    def count(self, current):
        return self.calls

    def reset(self, current):
        self.calls = 0

    def shutdown(self, current):
        current.adapter.getCommunicator().shutdown()


def main():
    data = Ice.InitializationData()
    data.properties = Ice.createProperties(sys.argv)
    data.properties.setProperty("Ice.MessageSizeMax", "100000")
    data.properties.setProperty("Ice.ACM.Timeout", "0")
    with Ice.initialize(data) as communicator:
        adapter = communicator.createObjectAdapterWithEndpoints("Bench", "tcp -h 127.0.0.1 -p " + sys.argv[1])
        adapter.add(PerfI(), Ice.stringToIdentity("a"))
        adapter.activate()
        print("ready", flush=True)
        communicator.waitForShutdown()


if __name__ == "__main__":
    main()
