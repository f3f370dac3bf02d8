# An Ice for Python server that a node starts: one adapter, `Hello`, with the objects
# `hello` and `greeter` (the replica group's); it runs until the node stops it (through its Ice.Admin process facet) or it is
# killed.
import sys

import Ice


class Hello(Ice.Object):
    pass


with Ice.initialize(sys.argv) as communicator:
    adapter = communicator.createObjectAdapter("Hello")
    adapter.add(Hello(), Ice.stringToIdentity("hello"))
    adapter.add(Hello(), Ice.stringToIdentity("greeter"))
    adapter.activate()
    communicator.waitForShutdown()
