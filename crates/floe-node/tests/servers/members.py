# An Ice for Python server with one object adapter per name in `Members.Adapters` (comma
# separated), each serving `<Members.Identity>`: a member of several replica groups at once,
# as an IceGrid node starts it (its configuration from --Ice.Config).
import sys

import Ice


class Member(Ice.Object):
    pass


with Ice.initialize(sys.argv) as communicator:
    props = communicator.getProperties()
    identity = Ice.stringToIdentity(props.getProperty("Members.Identity"))
    for name in props.getProperty("Members.Adapters").split(","):
        adapter = communicator.createObjectAdapter(name)
        adapter.add(Member(), identity)
        adapter.activate()
    communicator.waitForShutdown()
