"""Prefix lookups, pinned lookups and batch reads against real servers."""
import os
import time

import pytest

import kvcache
from conftest import KvServer, ram_only
from kvcache._location import locate


@pytest.fixture(scope="module")
def small_batches():
    """A server whose batch GETs answer at most 1 MiB, and that holds at most 2 pins."""
    s = KvServer(ram_only(**{"kvcache.max-batch-bytes": "1MiB", "kvcache.max-pins": "2"})).start()
    yield s
    s.stop()


def test_lookup_counts_leading_blocks(client, unique_keys):
    keys = unique_keys(4)
    for k in (keys[0], keys[1], keys[3]):
        client.put(k, b"block " + k)
    assert client.lookup_prefix(keys) == 2
    assert client.lookup_prefix(keys[:2]) == 2
    assert client.lookup_prefix(keys[2:]) == 0
    assert client.lookup_prefix([]) == 0


def test_locate_says_which_tier_holds_the_blocks_and_how_long_reading_them_takes(client, unique_keys):
    keys = unique_keys(4)
    for k in keys[:3]:
        client.put(k, os.urandom(100_000))
    where = client.locate_prefix(keys)
    assert where.present == 3 == client.lookup_prefix(keys)
    assert where.tiers == {"ram": 3}
    assert where.load_s is not None and 0 < where.load_s < 1.0
    with client.pin_prefix(keys) as pin:
        assert pin.location.present == pin.present == 3
        assert pin.location.tiers == {"ram": 3}
    assert client.locate_prefix(keys[3:]) == kvcache.PrefixLocation(0, {}, 0.0)


class _Link:
    def __init__(self, name):
        self.name = name


def test_a_prefix_across_servers_is_located_per_server_and_read_at_once():
    a, b = _Link("a"), _Link("b")
    hexes = ["k0", "k1", "k2", "k3", "k4", "k5"]
    groups = {a: [0, 2, 4], b: [1, 3, 5]}
    answers = {
        a: [{"present": 3, "tiers": [{"tier": "ram", "blocks": 1, "load_us": 10},
                                     {"tier": "disk", "blocks": 2, "load_us": 4000}]}],
        b: [{"present": 1, "tiers": [{"tier": "ram", "blocks": 1, "load_us": 30}]}],
    }
    # b lacks k3: the prefix is k0..k2, of which a holds k0 (ram) and k2 (half its disk run)
    where = locate(3, hexes, groups, answers)
    assert where.present == 3
    assert where.tiers == {"ram": 2, "disk": 1}
    assert where.load_s == pytest.approx(max(10e-6 + 2000e-6, 30e-6))

    answers[a][0]["tiers"][1].pop("load_us")  # a disk that has not timed a read yet
    assert locate(3, hexes, groups, answers).load_s is None
    assert locate(1, hexes, groups, answers).load_s == pytest.approx(10e-6)  # k0 alone


def test_a_bad_tier_run_is_a_protocol_error():
    a = _Link("a")
    with pytest.raises(kvcache.ProtocolError, match="bad tier run"):
        locate(1, ["k0"], {a: [0]}, {a: [{"present": 1, "tiers": [{"tier": "ram", "blocks": 0}]}]})


def test_lookup_of_more_keys_than_one_request_takes(client, unique_keys):
    keys = unique_keys(5000)
    for k in keys[:4200]:
        client.put(k, b"1")
    assert client.lookup_prefix(keys) == 4200


def test_pinned_blocks_survive_delete_and_overwrite(client, unique_keys):
    keys = unique_keys(3)
    blocks = [os.urandom(200_000), os.urandom(300_000)]
    client.put(keys[0], blocks[0])
    client.put(keys[1], blocks[1])
    with client.pin_prefix(keys, ms=10_000) as pin:
        assert pin.present == 2
        assert pin.lengths == [200_000, 300_000]
        assert pin.keys == [bytes(keys[0]), bytes(keys[1])]
        client.delete(keys[0])
        client.put(keys[1], os.urandom(300_000))
        assert client.get(keys[0]) is None
        bufs = [bytearray(200_000), bytearray(300_000)]
        assert pin.read_into(bufs) == [200_000, 300_000]
        assert bufs == [bytearray(b) for b in blocks]
        one = bytearray(300_000)
        assert pin.get_into(1, one) == 300_000 and one == blocks[1]
        with pytest.raises(IndexError):
            pin.get_into(2, one)
    assert pin.get_into(0, bufs[0]) is None, "released on exit"


def test_a_pin_ends_after_its_time(client, unique_keys):
    key, = unique_keys(1)
    client.put(key, b"pinned briefly")
    pin = client.pin_prefix([key], ms=300)
    assert pin.present == 1
    time.sleep(0.8)
    assert pin.get_into(0, bytearray(100)) is None
    pin.release()  # the lease is gone already: nothing raises


def test_a_release_does_not_wait_and_the_next_request_reads_its_own_answer(small_batches,
                                                                            unique_keys):
    """The release's answer is read by the next request on the connection: that request gets its
    own answer, on the same connection, and the server has let go of the pin (it holds at most 2)."""
    keys = unique_keys(2)
    blocks = [os.urandom(50_000), os.urandom(70_000)]
    with kvcache.Client(small_batches.address, shared_memory=False) as c:
        c.put_many(list(zip(keys, blocks)))
        link = c._session.route(keys[0])[1]
        connections = {id(conn) for conn, _ in link._idle}

        def owed() -> int:
            return sum(len(conn.owed) for conn, _ in link._idle)
        for _ in range(5):
            with c.pin_prefix(keys) as pin, c.pin_prefix(keys):
                assert pin.present == 2
            assert owed() == 1, "the second release read the first one's answer"
            assert c.get(keys[1]) == blocks[1]
            assert owed() == 0
        expired = c.pin_prefix(keys, ms=100)
        time.sleep(0.5)
        expired.release()  # answered 404: the lease ended already
        assert c.get(keys[0]) == blocks[0]
        assert {id(conn) for conn, _ in link._idle} == connections, "no connection was dropped"


def test_a_pin_of_nothing_cached(client, unique_keys):
    with client.pin_prefix(unique_keys(3)) as pin:
        assert pin.present == 0 and pin.lengths == []


def test_pins_past_the_servers_limit_are_refused(small_batches, unique_keys):
    key, = unique_keys(1)
    with kvcache.Client(small_batches.address) as c:
        c.put(key, b"x" * 10)
        with c.pin_prefix([key]), c.pin_prefix([key]):
            with pytest.raises(kvcache.RequestError) as e:
                c.pin_prefix([key])
            assert e.value.status == 503 and e.value.code == "too-many-pins"
        with c.pin_prefix([key]) as pin:  # released pins make room
            assert pin.present == 1
    with pytest.raises(ValueError, match="ms must be"):
        c.pin_prefix([key], ms=0)


def test_batch_reads_are_split_and_asked_again(small_batches, unique_keys):
    keys = unique_keys(14)
    blocks = {i: os.urandom(300_000 + i) for i in range(14) if i % 5 != 3}
    with kvcache.Client(small_batches.address) as c:
        for i, b in blocks.items():
            c.put(keys[i], b)
        bufs = [bytearray(310_000) for _ in keys]
        got = c.get_many_into(keys, bufs)  # 4 MB of blocks through answers of at most 1 MiB
        for i in range(14):
            if i in blocks:
                assert got[i] == len(blocks[i]) and bufs[i][:got[i]] == blocks[i]
            else:
                assert got[i] is None
        many = unique_keys(300)  # more keys than one batch takes
        for k in many[::2]:
            c.put(k, k * 4)
        small = [bytearray(64) for _ in many]
        got = c.get_many_into(many, small)
        assert got == [64 if i % 2 == 0 else None for i in range(300)]
        assert all(small[i] == many[i] * 4 for i in range(0, 300, 2))
        with pytest.raises(kvcache.BufferTooSmallError):
            c.get_many_into([keys[0], keys[1]], [bytearray(10), bytearray(310_000)])
        with pytest.raises(ValueError, match="2 keys but 1 buffers"):
            c.get_many_into(keys[:2], bufs[:1])
