#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/ from the captured Ice 3.7 messages, Slice files
and proxy strings of the test suite. Run from the repository root: python3 fuzz/seed.py"""
import hashlib
import os

root = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(root)


def put(target, data):
    d = os.path.join(root, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)


msgs = []
for line in open(os.path.join(repo, "tests", "vectors", "ice37.txt")):
    if line[:2] in ("> ", "< "):
        msgs.append(bytes.fromhex(line[2:].strip()))
stream = b""
for m in msgs:
    put("frame", m)
    stream += m
    body = m[14:]
    if m[8] == 0 and m[9] != 2:
        put("request", body)
        # Parameters as a types input, both encodings.
        put("types", b"\x01" + body[-min(len(body), 64):])
        put("types", b"\x00" + body[-min(len(body), 64):])
    if m[8] == 1:
        put("request", body)
    if m[8] == 2:
        put("reply", body)
    if m[9] == 2:
        put("decompress", m)
put("frame", stream[:4000])
for s in ["tester:tcp -h 127.0.0.1 -p 12010", "x -f fac -o -s:udp -h 239.1.2.3 -p 5000 -z",
          "cat/x@MyAdapter", "x:opaque -t 99 -e 1.0 -v abch", "\"a b\" -e 1.0:tcp -h \"::1\" -p 1 -t infinite",
          "x:ws -h localhost -p 8080 -r /chat -t 5000:wss -h h -p 443", "x -D", "tcp -h host -p 9 -z"]:
    put("proxy_string", s.encode())
for path in [os.path.join(repo, "tests", "interop", "Test.ice"),
             os.path.join(repo, "crates", "floe-slice", "tests", "golden", "Golden.ice"),
             os.path.join(repo, "crates", "floe-bench", "slice", "Bench.ice")]:
    put("slice", open(path, "rb").read())
print("seeded", sum(len(fs) for _, _, fs in os.walk(os.path.join(root, "corpus"))), "files")
