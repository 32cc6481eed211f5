#!/usr/bin/env python3
"""Writes the rendezvous-hashing vectors that the Java client's RendezvousVectorsTest and the
Python client's tests both check: server ids, scores, the owner and the whole order of servers for
keys over several server lists.

    python3 docs/tools/rendezvous_vectors.py > kvcache-client/src/test/resources/rendezvous-vectors.json
"""
import hashlib
import importlib.util
import json
import os

# The Python client's module, loaded from its file so that the package's dependencies are not needed.
_spec = importlib.util.spec_from_file_location("rendezvous", os.path.join(
    os.path.dirname(__file__), "..", "..", "python", "src", "kvcache", "_rendezvous.py"))
r = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(r)

SERVER_LISTS = [
    ["127.0.0.1:7070"],
    ["kv-0.kv:7070", "kv-1.kv:7070", "kv-2.kv:7070"],
    ["10.0.0.1:7070", "10.0.0.2:7070", "10.0.0.3:7070", "10.0.0.4:7070", "10.0.0.5:7070"],
    ["0:0:0:0:0:0:0:1:7070", "fe80:0:0:0:0:0:0:2:7071"],
    ["kv-ü.example:7070", "kv-ä.example:7070", "kv-€.example:7070", "kv-0.kv:7070"],
]


def main():
    keys = [hashlib.sha256(b"rendezvous key %d" % i).digest()[:16] for i in range(12)]
    vectors = []
    for servers in SERVER_LISTS:
        ids = [r.server_id(s) for s in servers]
        cases = []
        for key in keys:
            scores = [r.score(key, sid) for sid in ids]
            order = sorted(range(len(servers)), key=lambda i: (-scores[i], i))
            assert order[0] == r.pick(key, ids)
            cases.append({"key": key.hex(), "scores": [format(s & (2**64 - 1), "016x") for s in scores],
                          "owner": order[0], "order": order})
        vectors.append({"servers": servers, "serverIds": [format(i, "016x") for i in ids],
                        "keys": cases})
    print(json.dumps({"scheme": "kvcache rendezvous v1", "vectors": vectors}, indent=1,
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
