#!/usr/bin/python3
"""Resolves an adapter id and a well-known object through a locator in a loop, as an Ice
client does, until a file appears; prints `ok N failed M` (and the first failures).

Usage: resolve_loop.py LOCATOR_PROXY ADAPTER_ID OBJECT_IDENTITY STOP_FILE
"""
import os
import sys
import time

import Ice

locator_proxy, adapter_id, object_id, stop_file = sys.argv[1:5]
ok, failed, errors = 0, 0, []
with Ice.initialize(["--Ice.Default.EncodingVersion=1.1", "--Ice.Default.InvocationTimeout=5000"]) as c:
    locator = Ice.LocatorPrx.uncheckedCast(c.stringToProxy(locator_proxy))
    identity = Ice.stringToIdentity(object_id)
    deadline = time.time() + 60
    print("started", flush=True)
    while not os.path.exists(stop_file) and time.time() < deadline:
        try:
            if locator.findAdapterById(adapter_id) is None or locator.findObjectById(identity) is None:
                raise RuntimeError("null proxy")
            ok += 1
        except Exception as e:  # noqa: BLE001 (every failure counts)
            failed += 1
            if len(errors) < 5:
                errors.append(repr(e))
print("ok %d failed %d %s" % (ok, failed, "; ".join(errors)), flush=True)
