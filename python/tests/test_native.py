"""Loads without the interpreter's lock: the compiled module is installed where the project ships
it, computes the same CRC32C as the ``crc32c`` package, copies exactly, and a load split across
connections reads every block whole, through it and through the pure-Python fallback."""
from __future__ import annotations

import ctypes
import mmap
import os
import platform
import sys

import crc32c
import pytest

import kvcache
from kvcache import _native_io

SUPPORTED = sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64")
# lengths around the three 4 KiB lanes of the hardware path and the 128 KiB checked slices
LENGTHS = [0, 1, 7, 8, 9, 4095, 4096, 12287, 12288, 12289, 131071, 131072, 131073,
           (1 << 20) + 13, 5 * (1 << 20) + 4099]


def native():  # type: ignore[no-untyped-def]
    if _native_io._native is None:
        pytest.fail(f"loads run through pure Python here: {_native_io.native_transfers()}")
    return _native_io._native


@pytest.mark.skipif(not SUPPORTED, reason="the compiled module is built for Linux x86-64 and "
                                          "arm64 only; elsewhere loads run through pure Python")
def test_the_compiled_module_is_installed_and_uses_the_cpus_crc_instruction():
    assert kvcache.native_transfers() is None
    assert native().hardware_crc()


@pytest.mark.parametrize("length", LENGTHS)
def test_crc32c_is_the_crc32c_packages(length):
    data = os.urandom(length)
    assert native().crc32c(data) == crc32c.crc32c(data)
    cut = length // 3
    assert native().crc32c(data[cut:], native().crc32c(data[:cut])) == crc32c.crc32c(data)
    assert native().crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 8])
def test_a_copy_on_several_threads_is_exact_and_checksummed_whole(threads):
    data = os.urandom(LENGTHS[-1])
    source = mmap.mmap(-1, len(data))
    source[:] = data
    anchor = ctypes.c_char.from_buffer(source)
    try:
        address = ctypes.addressof(anchor)
        for length in LENGTHS:
            out = bytearray(length + 5)
            got = native().copy(memoryview(out)[:length], address, threads, True)
            assert got == crc32c.crc32c(data[:length])
            assert out[:length] == data[:length] and out[length:] == bytes(5)
        assert native().copy(memoryview(out)[:100], address, threads, False) is None
    finally:
        del anchor
        source.close()


def test_a_read_only_buffer_is_refused_before_anything_is_read():
    with pytest.raises(TypeError, match="read-write"):
        native().copy(b"immutable", 0, 1, True)
    r, w = os.pipe()
    try:
        os.write(w, b"abc")
        with pytest.raises(BufferError):
            native().receive(r, 100, b"", [bytearray(1), b"immutable"], True)
        assert os.read(r, 3) == b"abc"
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("size", [1 << 20, 3 * (1 << 20) + 11])
def test_a_load_split_across_connections_reads_every_block_whole(client, unique_keys, size,
                                                                 transfers):
    keys = unique_keys(40)  # 40 MiB or more: several connections
    blocks = [os.urandom(size) for _ in keys]
    assert client.put_many(list(zip(keys, blocks))) == [kvcache.PutStatus.STORED] * len(keys)
    missing = unique_keys(1)[0]
    bufs = [bytearray(size + 100) for _ in range(len(keys) + 1)]
    got = client.get_many_into(keys[:20] + [missing] + keys[20:], bufs)
    assert got == [size] * 20 + [None] + [size] * 20
    assert [bytes(b[:size]) for b in bufs[:20] + bufs[21:]] == blocks
    assert all(b[size:] == bytes(100) for b in bufs)
