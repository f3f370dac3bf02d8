#!/usr/bin/env python3
"""Fails if any crate in the dependency graph is licensed only under a GPL-family licence,
or declares no licence at all. Mirrors the allow-list of deny.toml."""
import json
import re
import subprocess
import sys

ALLOWED = {
    "MIT", "Apache-2.0", "Apache-2.0 WITH LLVM-exception", "BSD-2-Clause", "BSD-3-Clause", "ISC",
    "Unicode-3.0", "Unicode-DFS-2016", "Zlib", "bzip2-1.0.6", "CC0-1.0", "MPL-2.0",
}


def acceptable(expr):
    # An SPDX expression is acceptable when one of its OR-alternatives is made only of allowed terms.
    expr = expr.replace("/", " OR ")
    for alternative in re.split(r"\s+OR\s+", expr.replace("(", "").replace(")", "")):
        terms = [t.strip() for t in re.split(r"\s+AND\s+", alternative)]
        if all(t in ALLOWED for t in terms):
            return True
    return False


# An optional argument names another Cargo.toml to check (python/Cargo.toml is a workspace of
# its own).
manifest = ["--manifest-path", sys.argv[1]] if len(sys.argv) > 1 else []
meta = json.loads(
    subprocess.check_output(["cargo", "metadata", "--format-version", "1", "--locked", "--all-features"] + manifest)
)
bad = []
for pkg in meta["packages"]:
    lic = pkg.get("license")
    if not lic or not acceptable(lic):
        bad.append("%s %s: %s" % (pkg["name"], pkg["version"], lic))
if bad:
    print("licences outside deny.toml's allow-list:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("licences: %d crates, all within deny.toml's allow-list" % len(meta["packages"]))
