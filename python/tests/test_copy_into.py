"""Pinned blocks written by a server on this host straight into a buffer mapped from a file (as an
engine's host buffer in /dev/shm is): the bytes land whole, with no copy in the client, and a block
damaged where the server keeps it never reads as copied."""
from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Iterator

import pytest

import kvcache
from conftest import KvServer, ram_only

SLOT = 1 << 20


@pytest.fixture
def shm_server(tmp_path):  # type: ignore[no-untyped-def]
    ram = tmp_path / "ram"
    ram.mkdir()
    s = KvServer(ram_only(**{"kvcache.cache.ram-bytes": "64MiB",
                             "kvcache.cache.ram-shared-memory-dir": str(ram)})).start()
    yield s
    s.stop()


@contextlib.contextmanager
def host_buffer(path, slots: int, unlink: bool = False) -> Iterator[memoryview]:  # type: ignore[no-untyped-def]
    """A view of a shared mapping of a file of ``slots`` slots, as vLLM's host tier maps its
    region; unmapped and closed on leaving (the caller lets go of every slice of it first)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.ftruncate(fd, slots * SLOT)
    m = mmap.mmap(fd, slots * SLOT)
    if unlink:
        os.unlink(path)  # the descriptor stays open, as vLLM's does
    view = memoryview(m)
    try:
        yield view
    finally:
        view.release()
        m.close()
        os.close(fd)


def test_the_server_writes_pinned_blocks_into_a_mapped_file(shm_server, unique_keys, tmp_path):
    keys = unique_keys(3)
    blocks = [os.urandom(n) for n in (SLOT, 300_000, SLOT)]
    with host_buffer(tmp_path / "host", 4) as view, kvcache.Client(shm_server.address) as c:
        c.put_many(list(zip(keys, blocks)))
        with c.pin_prefix(keys, ms=10_000) as pin:
            slots = [view[s * SLOT:(s + 1) * SLOT] for s in (2, 0, 3)]
            assert pin.copy_into([0, 1, 2], slots) == [len(b) for b in blocks]
            assert c._session.shared is not None
            assert not c._session.shared.mapped, "no copy out of the server's RAM in the client"
            assert [bytes(s[:len(b)]) for s, b in zip(slots, blocks)] == blocks
            assert pin.copy_into([0], [bytearray(SLOT)]) == [None], "anonymous memory"
        for s in slots:
            s.release()


def test_a_file_already_unlinked_is_written_through_its_descriptor(shm_server, unique_keys,
                                                                    tmp_path):
    key, = unique_keys(1)
    block = os.urandom(SLOT)
    with host_buffer(tmp_path / "host", 2, unlink=True) as view, \
            kvcache.Client(shm_server.address) as c:
        c.put(key, block)
        with c.pin_prefix([key], ms=10_000) as pin, view[SLOT:] as slot:
            assert pin.copy_into([0], [slot]) == [SLOT]
            assert slot == block


def test_a_block_damaged_in_the_servers_ram_is_not_copied(shm_server, unique_keys, tmp_path):
    keys = unique_keys(2)
    blocks = [os.urandom(SLOT), os.urandom(SLOT)]
    with host_buffer(tmp_path / "host", 2) as view, kvcache.Client(shm_server.address) as c:
        c.put_many(list(zip(keys, blocks)))
        with c.pin_prefix(keys, ms=10_000) as pin, view[:SLOT] as first, view[SLOT:] as second:
            file, offset, _, _ = pin._slices[1]  # type: ignore[index]
            with open(file, "r+b") as ram:
                ram.seek(offset + 1000)
                ram.write(bytes([blocks[1][1000] ^ 0xFF]))
            assert pin.copy_into([0, 1], [first, second]) == [SLOT, None]
            assert first == blocks[0]
            assert pin.get_into(1, second) is None, "read again, the block is a miss"


@pytest.mark.parametrize("length", [16, 17, 4096, 4112, 70_000, 2 << 20])
def test_a_place_is_marked_alike_with_and_without_numpy(length, monkeypatch):  # type: ignore[no-untyped-def]
    from kvcache._hostfile import mark_place
    token = bytes(range(1, 17))
    with_numpy = bytearray(length)
    mark_place(memoryview(with_numpy), token)
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy now fails
    without = bytearray(length)
    mark_place(memoryview(without), token)
    assert with_numpy == without
    marks = [at for at in range(0, length - 15) if with_numpy[at:at + 16] == token]
    assert marks == sorted({*range(0, length - 31, 4096), length - 16})
    assert with_numpy.count(0) == length - 16 * len(marks)
