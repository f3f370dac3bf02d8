# An Ice for Python client: pings the proxy given as its last argument (through
# Ice.Default.Locator) and prints `ok`, or the name of the exception it got.
import sys

import Ice

with Ice.initialize(sys.argv) as communicator:
    try:
        communicator.stringToProxy(sys.argv[-1]).ice_ping()
        print("ok")
    except Ice.Exception as e:
        print(type(e).__name__)
