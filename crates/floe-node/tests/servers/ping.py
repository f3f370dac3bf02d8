# An Ice for Python client: pings each proxy given on its command line (through the locator
# of its --Ice.Default.Locator), prints "pinged <proxy>" for each.
import sys

import Ice

with Ice.initialize(sys.argv) as communicator:
    for proxy in sys.argv[1:]:
        communicator.stringToProxy(proxy).ice_ping()
        print("pinged " + proxy, flush=True)
