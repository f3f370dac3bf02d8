#!/usr/bin/env python3
"""Lists Ice 3.7's property names from its PropertyNames.xml.

usage: ice-property-names.py PropertyNames.xml table   # the sections, for src/properties/known.rs
       ice-property-names.py PropertyNames.xml names   # every name, classes expanded, `*` = any
       ice-property-names.py PropertyNames.xml unread  # the names floe does not read (run at the root)

`unread` is what docs/properties.md's list of the Ice 3.7 properties that floe does not read
was made from: a name is read when the sources of the runtime and the services (comments and
unit tests left out) spell it, or when it is one of the adapter properties the runtime reads
for every adapter (`{name}.Endpoints`...) of an adapter that floe creates, or one of the
`Ice.ACM.*` names the runtime builds.
"""
import glob
import re
import sys
import xml.etree.ElementTree as ET

root = ET.parse(sys.argv[1]).getroot()
classes = {c.get("name"): c for c in root.findall("class")}


def pat(name):
    return (name or "").replace("[any]", "*")


def expand(base, cls):
    """Names that a property `base` of class `cls` stands for."""
    c = classes[cls]
    out = [] if c.get("prefix-only") == "true" else [base]
    for s in c.findall("suffix"):
        name = f"{base}.{pat(s.get('name'))}"
        out += expand(name, s.get("class")) if s.get("class") else [name]
    return out


ADAPTERS = ["Ice.Admin", "IceGrid.Registry.Client", "IceGrid.Registry.Server", "IceGrid.Registry.Internal",
            "Glacier2.Client", "Glacier2.Server", "IceStorm.TopicManager", "IceStorm.Publish"]
ADAPTER_READS = ["AdapterId", "ReplicaGroupId", "Locator", "ACM.Timeout", "ACM.Heartbeat", "ACM.Close",
                 "MessageSizeMax", "Endpoints"]


def read_by_floe():
    names = set()
    for crate in ["floe", "floe-registry", "floe-storm", "floe-router"]:
        for f in glob.glob(f"crates/{crate}/src/**/*.rs", recursive=True):
            if f.endswith("properties/known.rs"):
                continue
            text = open(f).read().split("#[cfg(test)]\nmod tests")[0]
            text = "\n".join(l for l in text.splitlines() if not l.strip().startswith("//"))
            names.update(re.findall(r'"((?:Ice|IceSSL|IceGrid|IceStorm|Glacier2|IceMX|IceBox)\.[A-Za-z0-9_.]*[A-Za-z0-9])"', text))
    names.update(f"{a}.{r}" for a in ADAPTERS for r in ADAPTER_READS)
    names.update(f"Ice.ACM.{side}{k}" for side in ["", "Client.", "Server."] for k in ["Timeout", "Heartbeat", "Close"])
    return names


def main():
    mode = sys.argv[2]
    read = read_by_floe() if mode == "unread" else set()
    total = unread = 0
    if mode == "table":
        for c in classes.values():
            words = [pat(s.get("name")) + (":" + s.get("class") if s.get("class") else "") for s in c]
            print(c.get("name"), c.get("prefix-only"), " ".join(words))
    for sec in root.findall("section"):
        props = sec.findall("property")
        if mode == "table":
            words = [pat(p.get("name")) + (":" + p.get("class") if p.get("class") else "") for p in props]
            print(sec.get("name"), " ".join(words))
            continue
        for p in props:
            name = ".".join(filter(None, [sec.get("name"), pat(p.get("name"))]))
            names = expand(name, p.get("class")) if p.get("class") else [name]
            dep = " deprecated" if p.get("deprecated") == "true" or p.get("deprecatedBy") else ""
            for n in names:
                total += 1
                if mode == "names":
                    print(n + dep)
                elif n not in read:
                    unread += 1
                    print(n + dep)
    if mode == "unread":
        print(f"{unread} of {total} names not read", file=sys.stderr)


main()
