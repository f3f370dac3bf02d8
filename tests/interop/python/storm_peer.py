#!/usr/bin/python3
"""Ice 3.7 (Python) publisher and subscriber for the floe-storm interop tests.

storm_peer.py subscribe --manager PROXY --topic NAME --mode MODE --expect N [--endpoints E]
    [--qos k=v ...] [--Ice.X=Y ...]
  Subscribes a StormEvents::Ticker servant (MODE: oneway, twoway, ordered, batch, datagram)
  to NAME (created if missing), prints "subscriber ready", then waits (up to 60 s) for N
  ticks and a little longer for extra ones; prints "received N in order" when it got ticks
  0..N-1 exactly once and in order, or "BAD ..." otherwise; unsubscribes and exits.
storm_peer.py publish --manager PROXY --topic NAME --count N [--size S] [--mode MODE]
    [--pace-ms MS]
  Sends ticks 0..N-1 with S-byte payloads through the topic's publisher: MODE oneway,
  twoway, batch, or mixed (a third of each, in that order); prints "published N".
"""
import os
import sys
import threading
import time

import Ice

HERE = os.path.dirname(os.path.abspath(__file__))
Ice.loadSlice(os.path.join(HERE, "..", "StormEvents.ice"))
import IceStorm  # noqa: E402
import StormEvents  # noqa: E402


def option(args, name, default=None):
    if name in args:
        return args[args.index(name) + 1]
    return default


class TickerI(StormEvents.Ticker):
    def __init__(self):
        self.lock = threading.Condition()
        self.seqs = []

    def tick(self, seq, payload, current):
        with self.lock:
            self.seqs.append((seq, len(payload)))
            self.lock.notify_all()


def topic_of(communicator, args, create):
    manager = IceStorm.TopicManagerPrx.checkedCast(communicator.stringToProxy(option(args, "--manager")))
    name = option(args, "--topic")
    try:
        return manager.retrieve(name)
    except IceStorm.NoSuchTopic:
        if not create:
            raise
        try:
            return manager.create(name)
        except IceStorm.TopicExists:
            return manager.retrieve(name)


def subscribe(communicator, args):
    mode = option(args, "--mode", "oneway")
    expect = int(option(args, "--expect", "0"))
    size = option(args, "--size")
    endpoints = option(args, "--endpoints", "udp -h 127.0.0.1" if mode == "datagram" else "tcp -h 127.0.0.1")
    adapter = communicator.createObjectAdapterWithEndpoints("Subscriber", endpoints)
    servant = TickerI()
    proxy = adapter.addWithUUID(servant)
    adapter.activate()
    qos = {}
    for i, a in enumerate(args):
        if a == "--qos":
            k, v = args[i + 1].split("=", 1)
            qos[k] = v
    if mode == "oneway":
        proxy = proxy.ice_oneway()
    elif mode == "batch":
        proxy = proxy.ice_batchOneway()
    elif mode == "datagram":
        proxy = proxy.ice_datagram()
    elif mode == "ordered":
        qos["reliability"] = "ordered"
    topic = topic_of(communicator, args, True)
    topic.subscribeAndGetPublisher(qos, proxy)
    print("subscriber ready", flush=True)
    deadline = time.time() + 60
    with servant.lock:
        while len(servant.seqs) < expect and time.time() < deadline:
            servant.lock.wait(0.5)
    time.sleep(0.3)  # extra (duplicate) ticks would arrive now
    with servant.lock:
        seqs = list(servant.seqs)
    topic.unsubscribe(proxy)
    got = [s for s, _ in seqs]
    if got == list(range(expect)) and (size is None or all(n == int(size) for _, n in seqs)):
        print("received %d in order" % expect, flush=True)
    else:
        missing = sorted(set(range(expect)) - set(got))
        print("BAD got %d ticks, missing %d (first %s), first ticks %s" % (len(got), len(missing), missing[:5], got[:10]),
              flush=True)


def publish(communicator, args):
    count = int(option(args, "--count", "0"))
    size = int(option(args, "--size", "8"))
    mode = option(args, "--mode", "oneway")
    pace = float(option(args, "--pace-ms", "0")) / 1000.0
    topic = topic_of(communicator, args, True)
    publisher = topic.getPublisher()
    twoway = StormEvents.TickerPrx.uncheckedCast(publisher.ice_twoway())
    oneway = StormEvents.TickerPrx.uncheckedCast(publisher.ice_oneway())
    batch = StormEvents.TickerPrx.uncheckedCast(publisher.ice_batchOneway())
    payload = bytes(size)
    for seq in range(count):
        if mode == "mixed":
            which = ("oneway", "batch", "twoway")[min(2, seq * 3 // count)]
        else:
            which = mode
        if which == "oneway":
            oneway.tick(seq, payload)
        elif which == "twoway":
            twoway.tick(seq, payload)
        else:
            batch.tick(seq, payload)
            if mode == "mixed" and (seq + 1) * 3 // count != seq * 3 // count:
                batch.ice_flushBatchRequests()
            elif seq % 100 == 99:
                batch.ice_flushBatchRequests()
        if pace:
            time.sleep(pace)
    batch.ice_flushBatchRequests()
    print("published %d" % count, flush=True)


def main():
    argv = list(sys.argv)
    with Ice.initialize(argv) as communicator:  # takes the --Ice.* options out of argv
        args = argv[1:]
        role = args[0]
        if role == "subscribe":
            subscribe(communicator, args[1:])
        elif role == "publish":
            publish(communicator, args[1:])
        else:
            sys.exit("unknown role " + role)


if __name__ == "__main__":
    main()
