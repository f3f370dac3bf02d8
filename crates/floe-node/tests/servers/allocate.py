# Client sessions allocating the objects of allocation.xml, with Ice for Python 3.7: prints
# one line per step (what each call returned or raised), for the test to compare between
# ZeroC's registry and floe-registry. Arguments: Ice's (--Ice.Default.Locator=...), then the
# names of two sessions (accounts that exist, since a node run as root runs a `session`
# server as its session's user).
import pwd
import sys
import time

import Ice
import IceGrid


def main(communicator, first, second):
    registry = IceGrid.RegistryPrx.checkedCast(communicator.stringToProxy("NodeGrid/Registry"))
    admin = registry.createAdminSession("admin", "x").getAdmin()
    ident = Ice.stringToIdentity

    def show(label, call):
        try:
            value = call()
            if isinstance(value, Ice.ObjectPrx):
                value = "%s @ %s" % (Ice.identityToString(value.ice_getIdentity()), value.ice_getAdapterId())
            text = "ok" if value is None else "ok %s" % (value,)
        except Ice.UserException as e:
            reason = getattr(e, "reason", "")
            text = e.ice_id() + (": " + reason if reason else "")
        except Ice.LocalException as e:
            text = e.ice_id()
        print("%s: %s" % (label, text), flush=True)

    def owner():
        props = Ice.PropertiesAdminPrx.uncheckedCast(admin.getServerAdmin("Sessioned"), "Properties")
        return props.getProperty("Session.Owner")

    def runs_as():
        pid = admin.getServerPid("Sessioned")
        with open("/proc/%d/status" % pid) as f:
            uid = next(int(l.split()[1]) for l in f if l.startswith("Uid:"))
        return pwd.getpwuid(uid).pw_name

    def wait_state(server, state):
        deadline = time.time() + 20
        while admin.getServerState(server) != state and time.time() < deadline:
            time.sleep(0.1)
        return admin.getServerState(server)

    a = registry.createSession(first, "x")
    b = registry.createSession(second, "x")
    show("allocatable object through the locator", lambda: communicator.stringToProxy("sessioned").ice_ping())
    show("well-known object through the locator", lambda: communicator.stringToProxy("known").ice_ping())
    show("session server before allocation", lambda: admin.getServerState("Sessioned"))
    show("start the session server by hand", lambda: admin.startServer("Sessioned"))

    # `Sessioned`: the first session holds it; its server starts for that session.
    proxy = [None]

    def allocate_first():
        proxy[0] = a.allocateObjectById(ident("sessioned"))
        return proxy[0]

    show("first allocates sessioned", allocate_first)
    show("ping the allocated object", lambda: proxy[0].ice_ping())
    show("session server owner", owner)
    show("session server runs as", runs_as)
    show("first allocates sessioned again", lambda: a.allocateObjectById(ident("sessioned")))
    b.setAllocationTimeout(300)
    show("second allocates sessioned (300 ms)", lambda: b.allocateObjectById(ident("sessioned")))
    show("second releases sessioned", lambda: b.releaseObject(ident("sessioned")))
    show("second releases an unknown object", lambda: b.releaseObject(ident("nothing")))
    show("second allocates an unknown object", lambda: b.allocateObjectById(ident("nothing")))
    show("second allocates a well-known object", lambda: b.allocateObjectById(ident("known")))
    show("second allocates an unknown type", lambda: b.allocateObjectByType("::Test::None"))

    # The second session waits (no timeout) until the first releases it.
    b.setAllocationTimeout(-1)
    waiting = b.allocateObjectByIdAsync(ident("sessioned"))
    time.sleep(0.5)
    show("second still waiting", lambda: not waiting.done())
    show("first releases sessioned", lambda: a.releaseObject(ident("sessioned")))
    show("second got sessioned", lambda: waiting.result(20))
    show("ping it again", lambda: waiting.result().ice_ping())
    show("session server owner now", owner)
    show("session server runs as now", runs_as)

    # `Locked`: an allocatable server; its objects go to one session at a time.
    got = []

    def by_type():
        p = a.allocateObjectByType("::Test::Locked")
        got.append(Ice.identityToString(p.ice_getIdentity()))
        return p.ice_getAdapterId()

    show("first allocates a Locked object", by_type)
    show("first allocates another Locked object", by_type)
    show("first got both", lambda: sorted(got))
    b.setAllocationTimeout(300)
    show("second allocates a Locked object (300 ms)", lambda: b.allocateObjectByType("::Test::Locked").ice_getAdapterId())
    show("first releases one", lambda: a.releaseObject(ident(got[0])))
    show("second allocates the released one (300 ms)", lambda: b.allocateObjectById(ident(got[0])))
    show("first allocates the type once more", lambda: a.allocateObjectByType("::Test::Locked").ice_getAdapterId())
    show("first session destroyed", lambda: a.destroy())
    show("second allocates a Locked object now", lambda: b.allocateObjectByType("::Test::Locked").ice_getAdapterId())
    show("second session destroyed", lambda: b.destroy())
    show("session server after the sessions", lambda: wait_state("Sessioned", IceGrid.ServerState.Inactive))


with Ice.initialize(sys.argv) as communicator:
    args = sys.argv[1:]
    main(communicator, args[0], args[1])
