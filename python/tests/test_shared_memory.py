"""Pinned reads from a server on this host whose RAM is in shared memory: the client copies each
block straight out of the server's RAM files, and never returns bytes the pin no longer holds."""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.request

import pytest

import kvcache
from conftest import KvServer, ram_only


@pytest.fixture
def shm_server(tmp_path):  # type: ignore[no-untyped-def]
    s = KvServer(ram_only(**{"kvcache.cache.ram-bytes": "64MiB",
                             "kvcache.cache.ram-shared-memory-dir": str(tmp_path)})).start()
    yield s
    s.stop()


def test_pinned_blocks_are_copied_out_of_shared_memory(shm_server, unique_keys, tmp_path):
    keys = unique_keys(3)
    blocks = [os.urandom(n) for n in (4096, 300_000, 2 << 20)]
    with kvcache.Client(shm_server.address) as c:
        assert c.put_many(list(zip(keys, blocks))) == [kvcache.PutStatus.STORED] * 3
        with c.pin_prefix(keys, ms=10_000) as pin:
            assert pin.present == 3
            c.delete(keys[1])  # the pin still holds its bytes
            bufs = [bytearray(len(b)) for b in blocks]
            assert pin.read_into(bufs) == [len(b) for b in blocks]
            assert bufs == [bytearray(b) for b in blocks]
            assert c._session.shared is not None
            mapped = {os.path.dirname(f) for f in c._session.shared.mapped}
            assert mapped == {str(tmp_path)}, "read through the server's RAM files"
            small = bytearray(100)
            with pytest.raises(kvcache.BufferTooSmallError):
                pin.get_into(2, small)
        assert pin.get_into(0, bytearray(4096)) is None, "released on exit"


def test_a_client_without_shared_memory_reads_through_the_socket(shm_server, unique_keys):
    key, = unique_keys(1)
    block = os.urandom(100_000)
    with kvcache.Client(shm_server.address, shared_memory=False) as c:
        c.put(key, block)
        with c.pin_prefix([key]) as pin:
            out = bytearray(len(block))
            assert pin.get_into(0, out) == len(block) and out == block
        assert c._session.shared is None


def test_a_pin_past_its_time_reads_nothing_from_shared_memory(shm_server, unique_keys):
    key, = unique_keys(1)
    with kvcache.Client(shm_server.address) as c:
        c.put(key, b"x" * 8192)
        pin = c.pin_prefix([key], ms=300)
        assert pin.present == 1
        time.sleep(0.8)
        assert pin.get_into(0, bytearray(8192)) is None
        pin.release()


def test_a_release_waits_for_a_copy_under_way(shm_server, unique_keys):
    key, = unique_keys(1)
    block = os.urandom(65536)
    with kvcache.Client(shm_server.address) as c:
        c.put(key, block)
        pin = c.pin_prefix([key], ms=10_000)
        assert pin.in_shared_memory == 1
        shared = c._session.shared
        assert shared is not None
        copying, go_on = threading.Event(), threading.Event()
        real_copy = shared.copy

        def slow_copy(*args):  # type: ignore[no-untyped-def]
            copying.set()
            go_on.wait(10)
            return real_copy(*args)
        shared.copy = slow_copy  # type: ignore[method-assign]
        out = bytearray(len(block))
        reader = threading.Thread(target=lambda: pin.get_into(0, out))
        reader.start()
        assert copying.wait(10)
        releaser = threading.Thread(target=pin.release)
        releaser.start()
        releaser.join(0.3)
        assert releaser.is_alive(), "the release waits while the block is copied"
        go_on.set()
        reader.join(10)
        releaser.join(10)
        assert not releaser.is_alive() and out == block
        assert pin.get_into(0, out) is None


def test_blocks_stored_after_the_file_was_mapped_read_back_whole(shm_server, unique_keys):
    """The client maps each RAM file once: blocks the server writes into it later, over the places
    of deleted ones, read back as they were put."""
    with kvcache.Client(shm_server.address) as c:
        for round_ in range(4):
            keys = unique_keys(6)
            blocks = [os.urandom(4 << 20) for _ in keys]  # 24 MiB of the server's 64 MiB
            assert c.put_many(list(zip(keys, blocks))) == [kvcache.PutStatus.STORED] * 6
            with c.pin_prefix(keys, ms=10_000) as pin:
                assert pin.in_shared_memory == 6
                bufs = [bytearray(len(b)) for b in blocks]
                assert pin.read_into(bufs) == [len(b) for b in blocks]
                assert bufs == [bytearray(b) for b in blocks], f"round {round_}"
            for k in keys:
                c.delete(k)
        assert c._session.shared is not None and len(c._session.shared.mapped) >= 1


def test_get_many_into_copies_the_leading_ram_blocks_and_reads_the_rest(shm_server, unique_keys):
    keys = unique_keys(5)
    blocks = [os.urandom(n) for n in (100_000, 2 << 20, 0, 300_000, 5000)]
    with kvcache.Client(shm_server.address) as c:
        stored = [keys[i] for i in (0, 1, 3, 4)]
        c.put_many([(k, blocks[keys.index(k)]) for k in stored])
        shared = c._session.shared
        assert shared is not None
        copied: list[int] = []
        real_copy = shared.copy

        def counting_copy(file, offset, length, out, deadline, crc):  # type: ignore[no-untyped-def]
            copied.append(length)
            return real_copy(file, offset, length, out, deadline, crc)
        shared.copy = counting_copy  # type: ignore[method-assign]
        bufs = [bytearray(max(len(b), 1)) for b in blocks]
        got = c.get_many_into(keys, bufs)
        assert got == [100_000, 2 << 20, None, 300_000, 5000]
        assert all(bufs[i][:len(blocks[i])] == blocks[i] for i in (0, 1, 3, 4))
        assert copied == [100_000, 2 << 20], "the prefix up to the miss came from shared memory"
        one = bytearray(300_000)
        assert c.get_into(keys[3], one) == 300_000 and one == blocks[3]
        assert copied[-1] == 300_000
        assert c.get_into(keys[2], one) is None
        with pytest.raises(kvcache.BufferTooSmallError):
            c.get_many_into(keys[:2], [bytearray(100_000), bytearray(10)])
        with c.pin_prefix(keys[:2]) as pin:
            assert pin.present == 2, "the reads let their pins go"


def hits(server: KvServer) -> float:
    text = urllib.request.urlopen(f"http://{server.address}/prometheus", timeout=5).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("kvcache_hits_total"))


def test_a_client_learns_that_a_local_server_has_no_shared_memory(server, unique_keys):
    keys = unique_keys(2)
    with kvcache.Client(server.address) as c:
        c.put_many([(k, b"z" * 1000) for k in keys])
        link = c._session.route(keys[0])[1]
        assert link.shared_memory is None
        bufs = [bytearray(1000), bytearray(1000)]
        assert c.get_many_into(keys, bufs) == [1000, 1000] and bufs[1] == b"z" * 1000
        assert link.shared_memory is False
        assert not c._session.offers_shared_memory(link), "it reads with batch GETs alone from then on"
    with kvcache.Client(server.address) as c:
        with c.pin_prefix(keys) as pin:  # as an engine's lookup comes before its load
            assert pin.present == 2
        assert c._session.route(keys[0])[1].shared_memory is False, "learnt from the pin"
        before = hits(server)
        assert c.get_many_into(keys, bufs) == [1000, 1000]
        assert hits(server) - before == 2, "one batch GET, no pinned lookup first"


def damage(server: KvServer, key: kvcache.BlockKey, at: int) -> None:
    """Flips a byte of ``key``'s block where the server keeps it: its RAM file, as any process
    allowed to write the file could."""
    request = urllib.request.Request(
        f"http://{server.address}/v1/namespaces/default/lookup", method="POST",
        headers={"Content-Type": "application/json"},
        data=json.dumps({"keys": [key.hex()], "pin_ms": 1000, "shared_memory": True}).encode())
    where = json.loads(urllib.request.urlopen(request, timeout=5).read())["shared_memory"][0]
    with open(where["file"], "r+b") as f:
        f.seek(where["offset"] + at)
        byte = f.read(1)[0]
        f.seek(where["offset"] + at)
        f.write(bytes([byte ^ 0x40]))


def test_a_block_damaged_in_shared_memory_is_never_reported_read(shm_server, unique_keys, caplog,
                                                                 transfers):
    """The copy out of shared memory is checked against the block's CRC32C, then read once more
    through the socket (which sends the same damaged bytes with the same checksum): a miss, on
    every path that reads it."""
    keys = unique_keys(3)
    blocks = [os.urandom(1 << 20) for _ in keys]
    with kvcache.Client(shm_server.address) as c:
        assert c.put_many(list(zip(keys, blocks))) == [kvcache.PutStatus.STORED] * 3
        damage(shm_server, keys[1], 700_000)
        bufs = [bytearray(1 << 20) for _ in keys]
        assert c.get_many_into(keys, bufs) == [1 << 20, None, 1 << 20]
        assert bufs[0] == blocks[0] and bufs[2] == blocks[2]
        assert c.damaged_blocks == 1
        assert c.get_into(keys[1], bufs[1]) is None
        assert c.get(keys[1]) is None
        with c.pin_prefix(keys) as pin:
            assert pin.in_shared_memory == 3
            assert pin.get_into(1, bufs[1]) is None
            assert pin.get_into(2, bufs[2]) == 1 << 20 and bufs[2] == blocks[2]
        assert c.damaged_blocks == 4
        with kvcache.Client(shm_server.address, checksums=False) as unchecked:
            assert unchecked.get_into(keys[1], bufs[1]) == 1 << 20, "unchecked, damaged bytes"
            assert bufs[1] != blocks[1]
        # stored again, it reads whole
        assert c.put(keys[1], blocks[1]) is kvcache.PutStatus.STORED
        assert c.get_many_into(keys, bufs) == [1 << 20] * 3 and bufs[1] == blocks[1]
    assert sum("twice: a miss" in r.getMessage() for r in caplog.records) == 4


def test_a_restarted_server_is_read_from_its_own_file(tmp_path, unique_keys):
    """A client that read a server's RAM files reads a server restarted on the same port and
    directory from the new server's file (checksums off, so that the mapping alone decides what
    is read)."""
    settings = ram_only(**{"kvcache.cache.ram-bytes": "64MiB",
                           "kvcache.cache.ram-shared-memory-dir": str(tmp_path)})
    key, = unique_keys(1)
    old, new = os.urandom(300_000), os.urandom(300_000)
    first = KvServer(settings).start()
    second = None
    try:
        with kvcache.Client(first.address, checksums=False) as c:
            c.put(key, old)
            with c.pin_prefix([key]) as pin:
                out = bytearray(len(old))
                assert pin.in_shared_memory == 1 and pin.get_into(0, out) == len(old)
                assert out == old
            first.stop()
            second = KvServer(settings, port=first.port).start()
            deadline = time.monotonic() + 10
            while c.put(key, new) is not kvcache.PutStatus.STORED and time.monotonic() < deadline:
                time.sleep(0.1)  # the client finds the server back
            with c.pin_prefix([key]) as pin:
                out = bytearray(len(new))
                assert pin.in_shared_memory == 1 and pin.get_into(0, out) == len(new)
                assert out == new
    finally:
        first.stop()
        if second is not None:
            second.stop()
