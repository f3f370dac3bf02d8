# An IceGrid admin client as the IceGrid GUI is one: finds the locator through
# Ice/LocatorFinder, opens an admin session, registers observers over a bidirectional
# connection, and prints what they are told while an application is added, updated and
# removed. Usage: observers.py <port> <instance name> <application.xml is added by the test>
import sys
import threading
import time

import Ice
import IceGrid

port, instance = sys.argv[1], sys.argv[2]
events = []
cond = threading.Condition()


def note(text):
    with cond:
        events.append(text)
        cond.notify_all()


class ApplicationObserver(IceGrid.ApplicationObserver):
    def applicationInit(self, serial, apps, current):
        note("init %s" % ",".join(sorted(a.descriptor.name for a in apps)))

    def applicationAdded(self, serial, info, current):
        note("added %s revision %d" % (info.descriptor.name, info.revision))

    def applicationRemoved(self, serial, name, current):
        note("removed %s" % name)

    def applicationUpdated(self, serial, info, current):
        note("updated %s revision %d" % (info.descriptor.name, info.revision))


class RegistryObserver(IceGrid.RegistryObserver):
    def registryInit(self, registries, current):
        note("registries %s" % ",".join(r.name for r in registries))

    def registryUp(self, info, current):
        pass

    def registryDown(self, name, current):
        pass


def wait_for(prefix):
    deadline = time.time() + 20
    with cond:
        while not any(e.startswith(prefix) for e in events):
            left = deadline - time.time()
            if left <= 0:
                raise SystemExit("no `%s' event; got %s" % (prefix, events))
            cond.wait(left)


with Ice.initialize(sys.argv) as c:
    finder = Ice.LocatorFinderPrx.uncheckedCast(c.stringToProxy("Ice/LocatorFinder:tcp -h 127.0.0.1 -p %s" % port))
    locator = finder.getLocator()
    print("locator %s" % Ice.identityToString(locator.ice_getIdentity()))
    registry = IceGrid.RegistryPrx.checkedCast(c.stringToProxy("%s/Registry" % instance).ice_locator(locator))
    session = registry.createAdminSession("admin", "admin")
    adapter = c.createObjectAdapter("")
    app_id = Ice.Identity("app-observer", "observers")
    reg_id = Ice.Identity("registry-observer", "observers")
    adapter.add(ApplicationObserver(), app_id)
    adapter.add(RegistryObserver(), reg_id)
    adapter.activate()
    session.ice_getConnection().setAdapter(adapter)
    empty = Ice.Identity("", "")
    session.setObserversByIdentity(reg_id, empty, app_id, empty, empty)
    wait_for("registries")
    wait_for("init")
    print("ready", flush=True)
    # The test adds, updates and removes the application now.
    wait_for("added")
    wait_for("updated")
    wait_for("removed")
    session.destroy()
    # The observers' init calls come from the registry in no defined order: print those
    # sorted, then the application events in the order they came.
    inits = sorted(e for e in events if e.startswith(("registries", "init")))
    for e in inits + [e for e in events if not e.startswith(("registries", "init"))]:
        print(e)
