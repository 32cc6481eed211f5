"""Three servers, one stopped in the middle of reads: its keys turn into misses (never wrong bytes,
never exceptions), and are served again once it is back."""
import logging
import os
import random
import socket
import threading
import time

import kvcache
from conftest import KvServer, wait_until


def test_a_stopped_server_makes_misses_and_comes_back(tmp_path, unique_keys, caplog):
    caplog.set_level(logging.WARNING, "kvcache")
    servers = [KvServer({"kvcache.cache.ram-bytes": "64MiB", "kvcache.cache.disk-dir": str(tmp_path / f"s{i}"),
                         "kvcache.cache.disk-capacity": "256MiB", "kvcache.cache.max-block-bytes": "8MiB",
                         "kvcache.cache.durability": "write_through"}).start()
               for i in range(3)]
    try:
        with kvcache.Client([s.address for s in servers], backoff=(0.2, 1.0), timeout=5) as c:
            keys = unique_keys(60)
            blocks = {k: os.urandom(100_000 + i) for i, k in enumerate(keys)}
            assert c.put_many(blocks.items()) == [kvcache.PutStatus.STORED] * len(keys)
            owner = {k: c.server_for(k) for k in keys}
            assert len(set(owner.values())) == 3, "keys spread over all three"
            stopped = servers[1].address
            theirs = [k for k in keys if owner[k] == stopped]
            ours = [k for k in keys if owner[k] != stopped]

            wrong, errors, hits, misses = [], [], [0], [0]
            done = threading.Event()

            def read() -> None:
                buf = bytearray(200_000)
                rnd = random.Random()
                while not done.is_set():
                    k = rnd.choice(keys)
                    try:
                        n = c.get_into(k, buf)
                    except Exception as e:  # noqa: BLE001 - any exception fails the test
                        errors.append(e)
                        return
                    if n is None:
                        misses[0] += 1
                    elif buf[:n] != blocks[k]:
                        wrong.append(k)
                    else:
                        hits[0] += 1
            readers = [threading.Thread(target=read) for _ in range(3)]
            for t in readers:
                t.start()
            time.sleep(0.5)
            servers[1].stop()
            time.sleep(1.0)
            # while it is down: its keys miss, its puts are not stored, the others are served
            got = c.get_many_into(keys, [bytearray(200_000) for _ in keys])
            assert [got[i] is None for i, k in enumerate(keys)] == [k in theirs for k in keys]
            assert c.put(theirs[0], b"lost") is kvcache.PutStatus.NOT_ADMITTED
            assert c.lookup_prefix(ours) == len(ours)
            assert c.lookup_prefix(theirs) == 0
            # a miss of its keys says nothing of their blocks; the others' misses are answers
            assert not c.answering(theirs[0]) and c.answering(ours[0])
            start = time.monotonic()
            for k in theirs * 5:
                assert c.get_into(k, bytearray(200_000)) is None
            assert time.monotonic() - start < 2.0, "misses of a down server are answered at once"

            servers[1].start()
            assert wait_until(lambda: c.get_into(theirs[0], bytearray(200_000)) is not None, 15)
            assert c.answering(theirs[0])
            time.sleep(0.5)
            done.set()
            for t in readers:
                t.join()
            assert not errors and not wrong
            assert hits[0] > 0 and misses[0] > 0
            for k in keys:
                out = bytearray(200_000)
                n = c.get_into(k, out)
                assert n == len(blocks[k]) and out[:n] == blocks[k]
        down = [r for r in caplog.records if "is down" in r.getMessage()]
        assert 1 <= len(down) <= 3, [r.getMessage() for r in down]
        assert any("is back" in r.getMessage() for r in caplog.records)
    finally:
        for s in servers:
            s.stop()


def test_a_dns_name_is_looked_up_again(monkeypatch, unique_keys):
    a = KvServer({"kvcache.cache.ram-bytes": "64MiB", "kvcache.cache.disk-dir": ""}).start()
    b = KvServer({"kvcache.cache.ram-bytes": "64MiB", "kvcache.cache.disk-dir": "",
                  "micronaut.server.host": "127.0.0.2"}, port=a.port).start()
    answers = [["127.0.0.1"]]
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host == "kv.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[-1]]
        return real(host, port, *args, **kwargs)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    try:
        with kvcache.Client(dns=f"kv.test:{a.port}", resolve_interval=0.2) as c:
            assert c.servers == [f"127.0.0.1:{a.port}"]
            keys = unique_keys(40)
            for k in keys:
                assert c.put(k, k * 2) is kvcache.PutStatus.STORED
            answers.append(["127.0.0.1", "127.0.0.2"])
            assert wait_until(lambda: len(c.servers) == 2, 5)
            assert c.servers == [f"127.0.0.1:{a.port}", f"127.0.0.2:{a.port}"]
            moved = [k for k in keys if c.server_for(k).startswith("127.0.0.2")]
            assert 0 < len(moved) < len(keys)
            for k in keys:  # the moved keys now live on a server that never had them
                assert c.get(k) == (None if k in moved else k * 2)
                c.put(k, k * 2)
            assert all(c.get(k) == k * 2 for k in keys)
            answers.append([])  # a failed lookup keeps the servers it had
            time.sleep(0.3)
            assert len(c.servers) == 2
    finally:
        a.stop()
        b.stop()
