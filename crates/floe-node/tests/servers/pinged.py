# A minimal Ice for Python server, as an IceGrid node starts one: its configuration comes
# from --Ice.Config (written by the node), it serves one object, `<Pinged.Identity>`, on
# adapter `Pinged`, and runs until its communicator is shut down (through its Process
# object, by the node) or it is killed. PINGED_EXIT_AFTER=<s> makes it exit on its own.
import os
import sys
import threading

import Ice


class Pinged(Ice.Object):
    pass


args = sys.argv[1:]  # before Ice takes its own options out of sys.argv
with Ice.initialize(sys.argv) as communicator:
    props = communicator.getProperties()
    adapter = communicator.createObjectAdapter("Pinged")
    adapter.add(Pinged(), Ice.stringToIdentity(props.getProperty("Pinged.Identity")))
    adapter.activate()
    print("pinged server %d started, args %s" % (os.getpid(), args), flush=True)
    print("cwd %s, PINGED_SERVER=%s" % (os.getcwd(), os.environ.get("PINGED_SERVER")), flush=True)
    exit_after = os.environ.get("PINGED_EXIT_AFTER")
    if exit_after:
        threading.Timer(float(exit_after), lambda: os._exit(3)).start()
    communicator.waitForShutdown()
    print("pinged server %d shutting down" % os.getpid(), flush=True)
