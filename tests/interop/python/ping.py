#!/usr/bin/env python3
"""Pings one proxy with ZeroC Ice for Python and says how it went: `ok`, or `error <type id>`.

Usage: ping.py --proxy "tester:ssl -h 127.0.0.1 -p 12011" [--Ice.X=Y ...] [--IceSSL.X=Y ...]
Exits 0 when the ping succeeded, 1 otherwise.
"""

import sys

import Ice


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
    init.properties = Ice.createProperties(rest)
    init.properties.setProperty("Ice.Warn.Connections", "0")
    with Ice.initialize(init) as communicator:
        try:
            communicator.stringToProxy(proxy).ice_timeout(10000).ice_ping()
        except Ice.Exception as e:
            print("error %s" % e.ice_id())
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
