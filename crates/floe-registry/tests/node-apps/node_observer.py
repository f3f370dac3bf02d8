# An admin client with a node observer, as the IceGrid GUI has: opens an admin session,
# registers the observer over a bidirectional connection and prints what it is told until
# the node named on the command line goes down. Usage:
# node_observer.py <port> <instance name> <node name>
import sys
import threading
import time

import Ice
import IceGrid

port, instance, node = sys.argv[1], sys.argv[2], sys.argv[3]
events = []
cond = threading.Condition()


def note(text):
    with cond:
        events.append(text)
        cond.notify_all()


class NodeObserver(IceGrid.NodeObserver):
    def nodeInit(self, nodes, current):
        note("init %s" % ",".join(sorted(n.info.name for n in nodes)))

    def nodeUp(self, info, current):
        note("up %s" % info.info.name)

    def nodeDown(self, name, current):
        note("down %s" % name)

    def updateServer(self, name, info, current):
        note("server %s %s %s" % (name, info.id, info.state))

    def updateAdapter(self, name, info, current):
        note("adapter %s %s %s" % (name, info.id, "active" if info.proxy else "inactive"))


with Ice.initialize(sys.argv) as c:
    locator = Ice.LocatorPrx.uncheckedCast(c.stringToProxy("%s/Locator:tcp -h 127.0.0.1 -p %s" % (instance, port)))
    registry = IceGrid.RegistryPrx.checkedCast(c.stringToProxy("%s/Registry" % instance).ice_locator(locator))
    session = registry.createAdminSession("admin", "admin")
    adapter = c.createObjectAdapter("")
    node_id = Ice.Identity("node-observer", "observers")
    adapter.add(NodeObserver(), node_id)
    adapter.activate()
    session.ice_getConnection().setAdapter(adapter)
    empty = Ice.Identity("", "")
    session.setObserversByIdentity(empty, node_id, empty, empty, empty)
    with cond:
        cond.wait_for(lambda: events, 20)
    print("ready", flush=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        session.keepAlive()
        with cond:
            if ("down %s" % node) in events:
                break
            cond.wait(1)
    session.destroy()
    for e in events:
        print(e)
