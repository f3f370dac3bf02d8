#!/usr/bin/python3
"""Ice 3.7 (Python) publisher for floe-storm's failover test.

failover_publisher.py MANAGER TOPIC COUNT [--Ice.X=Y ...]
  Gets TOPIC's publisher from the topic manager MANAGER and sends twoway events
  tick(int seq) for seq 0..COUNT-1, one after the other, through Ice's Dynamic Invocation
  (no Slice needed). After each call it prints one line: "SEQ PORT" when the call succeeded
  on the same connection before and after (PORT: the replica's publish port), "SEQ moved"
  when it succeeded but the connection changed around it, "SEQ failed EXCEPTION" when it
  failed. It never sends an event twice.
"""
import struct
import sys

import Ice
import IceStorm


def port_of(proxy):
    try:
        info = proxy.ice_getConnection().getInfo()
    except Ice.Exception:
        return None
    while info is not None and not hasattr(info, "remotePort"):
        info = info.underlying
    return None if info is None else info.remotePort


def main():
    argv = list(sys.argv)
    with Ice.initialize(argv) as communicator:  # takes the --Ice.* options out of argv
        manager_proxy, topic_name, count = argv[1], argv[2], int(argv[3])
        manager = IceStorm.TopicManagerPrx.checkedCast(communicator.stringToProxy(manager_proxy))
        publisher = manager.retrieve(topic_name).getPublisher().ice_twoway()
        for seq in range(count):
            # An encapsulation of encoding 1.1 holding one int.
            params = struct.pack("<iBBi", 10, 1, 1, seq)
            before = port_of(publisher)
            try:
                publisher.ice_invoke("tick", Ice.OperationMode.Normal, params)
            except Ice.Exception as e:
                print("%d failed %s" % (seq, type(e).__name__), flush=True)
                continue
            after = port_of(publisher)
            if before is not None and before == after:
                print("%d %d" % (seq, after), flush=True)
            else:
                print("%d moved" % seq, flush=True)


if __name__ == "__main__":
    main()
