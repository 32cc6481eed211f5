"""Single-block operations against a real server: round trips into caller buffers, misses,
head, delete, the put statuses, and what the client refuses."""
import os
import tracemalloc

import numpy as np
import pytest

import kvcache
from conftest import KvServer, ram_only
from kvcache import PutStatus

SIZES = [1, 4095, (64 << 10) + 3, 256 << 10, 2 << 20, (32 << 20) + 1, 64 << 20]


@pytest.mark.parametrize("size", SIZES)
def test_round_trip_into_caller_buffers(client, unique_keys, size):
    key, = unique_keys(1)
    data = np.frombuffer(os.urandom(size), np.uint8)
    assert client.put(key, data) is PutStatus.STORED
    out = np.zeros(size + 7, np.uint8)  # larger than the block: only its start is written
    assert client.get_into(key, out) == size
    assert np.array_equal(out[:size], data)
    assert not out[size:].any()
    assert client.head(key) == size
    if size <= 2 << 20:
        assert client.get(key) == data.tobytes()


def test_get_into_allocates_far_less_than_the_block(client, unique_keys):
    key, = unique_keys(1)
    size = 32 << 20
    client.put(key, os.urandom(size))
    out = bytearray(size)
    client.get_into(key, out)  # warm the connection
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(5):
            assert client.get_into(key, out) == size
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 256 << 10, f"get_into of 32 MiB allocated {peak} bytes at its peak"


def test_put_takes_any_buffer_without_copying_it_first(client, unique_keys):
    k1, k2, k3 = unique_keys(3)
    tensor = np.arange(4 * 1024, dtype=np.float16).reshape(4, 1024)  # 2-d, 2-byte elements
    assert client.put(k1, tensor) is PutStatus.STORED
    assert client.get(k1) == tensor.tobytes()
    assert client.put(k2, memoryview(b"0123456789abcdef")[4:12]) is PutStatus.STORED
    assert client.get(k2) == b"456789ab"
    back = np.empty_like(tensor)
    assert client.put(k3, bytearray(tensor.tobytes())) is PutStatus.STORED
    assert client.get_into(k3, back) == tensor.nbytes and np.array_equal(back, tensor)
    size = 16 << 20
    big = os.urandom(size)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        assert client.put(k1, big) is PutStatus.STORED
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < 256 << 10, f"put of 16 MiB allocated {peak} bytes at its peak"


def test_miss_head_delete(client, unique_keys):
    key, other = unique_keys(2)
    buf = bytearray(100)
    assert client.get_into(key, buf) is None
    assert client.get(key) is None
    assert client.head(key) is None
    assert client.delete(key) is False
    client.put(key, b"x" * 100)
    assert client.head(key) == 100
    assert client.delete(key) is True
    assert client.get_into(key, buf) is None
    assert client.head(other) is None


def test_a_block_longer_than_the_buffer_raises_and_the_connection_goes_on(client, unique_keys):
    key, = unique_keys(1)
    client.put(key, os.urandom(4 << 20))
    with pytest.raises(kvcache.BufferTooSmallError) as e:
        client.get_into(key, bytearray(1 << 20))
    assert e.value.length == 4 << 20 and e.value.capacity == 1 << 20
    assert isinstance(e.value, kvcache.TooLargeError)
    assert client.get_into(key, bytearray(4 << 20)) == 4 << 20


def test_a_full_server_answers_no_space(unique_keys):
    """A RAM-only server whose RAM is all held by a pin has no room for a put: ``507 no-space``,
    the Java client's ``REJECTED_NO_SPACE``. The server is not taken for down."""
    small = KvServer(ram_only(**{"kvcache.cache.ram-bytes": "8MiB",
                                 "kvcache.cache.max-block-bytes": "4MiB"})).start()
    try:
        with kvcache.Client(small.address, shared_memory=False) as c:
            keys = unique_keys(32)
            c.put_many([(k, os.urandom(512 << 10)) for k in keys])  # more than the RAM holds
            held = [k for k in keys if c.head(k) is not None]
            more, later = unique_keys(2)
            with c.pin_prefix(held, ms=30_000) as pin:
                assert pin.present == len(held) > 0
                assert c.put(more, os.urandom(2 << 20)) is PutStatus.NO_SPACE
                assert c.get(more) is None
                assert pin.get_into(0, bytearray(512 << 10)) == 512 << 10, "still served"
            assert c.put(later, os.urandom(2 << 20)) is PutStatus.STORED, "room once released"
    finally:
        small.stop()


def test_a_stopped_server_does_not_admit_puts(unique_keys):
    """A put to a server that is down stores nothing and raises nothing: ``NOT_ADMITTED``, as the
    Java client answers it (``NOT_STORED`` is its former name), never ``NO_SPACE``."""
    key, = unique_keys(1)
    s = KvServer(ram_only()).start()
    try:
        with kvcache.Client(s.address, backoff=(5, 5)) as c:
            assert c.put(key, b"before") is PutStatus.STORED
            s.stop()
            assert c.put(key, b"while down") is PutStatus.NOT_ADMITTED
            assert c.put(key, b"left alone") is PutStatus.NOT_STORED
    finally:
        s.stop()


def test_a_block_past_the_servers_largest_is_too_large(client, unique_keys):
    key, after = unique_keys(2)
    assert client.put(key, bytes((64 << 20) + 1)) is PutStatus.TOO_LARGE
    assert client.get(key) is None
    assert client.put(after, b"still served") is PutStatus.STORED  # the server is not "down"
    assert client.get(after) == b"still served"


def test_bad_arguments_get_specific_errors(client):
    with pytest.raises(ValueError, match="32 hex digits"):
        client.get("not-a-key")
    with pytest.raises(ValueError, match="16 bytes"):
        client.put(b"short", b"x")
    with pytest.raises(TypeError, match="read-only"):
        client.get_into(os.urandom(16), b"immutable bytes")
    with pytest.raises(ValueError, match="C-contiguous"):
        client.put(os.urandom(16), np.zeros((4, 4))[:, 1])
    with pytest.raises(TypeError, match="buffer protocol"):
        client.put(os.urandom(16), "a str")
    with pytest.raises(ValueError, match="namespace"):
        kvcache.Client("127.0.0.1:1", namespace="no spaces")
    with pytest.raises(ValueError, match="host:port"):
        kvcache.Client("http://a:b:c")


def test_unknown_namespace(server, unique_keys):
    key, = unique_keys(1)
    with kvcache.Client(server.address, namespace="nosuch") as c:
        with pytest.raises(kvcache.UnknownNamespaceError) as e:
            c.put(key, b"x")
        assert e.value.status == 404 and e.value.code == "unknown-namespace"
        with pytest.raises(kvcache.UnknownNamespaceError):
            c.get_into(key, bytearray(1))


def test_namespaces_do_not_share_blocks(server, unique_keys):
    key, = unique_keys(1)
    with kvcache.Client(server.address) as a, kvcache.Client(server.address, namespace="other") as b:
        a.put(key, b"in default")
        assert b.get(key) is None
        b.put(key, b"in other")
        assert a.get(key) == b"in default" and b.get(key) == b"in other"


def test_put_many_and_checksums_off(server, unique_keys):
    keys = unique_keys(12)
    blocks = [os.urandom(300_000 + i) for i in range(12)]
    with kvcache.Client(server.address, checksums=False, max_workers=4) as c:
        assert c.put_many(zip(keys, blocks)) == [PutStatus.STORED] * 12
        for k, b in zip(keys, blocks):
            assert c.get(k) == b
