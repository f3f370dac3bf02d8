#!/usr/bin/env python3
"""Lists Ice 3.7's property names from its PropertyNames.xml.

usage: ice-property-names.py PropertyNames.xml table   # the sections, for src/properties/known.rs
       ice-property-names.py PropertyNames.xml names   # every name, classes expanded, `*` = any

The `names` output is what docs/properties.md's list of the Ice 3.7 properties that floe
does not read was checked against (with grep over crates/*/src).
"""
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


def main():
    mode = sys.argv[2]
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
                print(n + dep)


main()
