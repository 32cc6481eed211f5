"""A server with KV events tells a ZMQ subscriber, in vLLM's format, of the blocks the Python
client put naming their engine block (``kvcache.EngineBlock``), and a subscriber that was away
gets what it missed from the replay socket."""
from __future__ import annotations

import re
import struct
from typing import Any, Iterator

import msgpack
import pytest
import zmq

import kvcache
from conftest import KvServer, ram_only

MODEL = "llama-3.1-8b"
TOPIC = f"kv@pod-py@{MODEL}".encode()
ENDPOINT = re.compile(r"KV events on (tcp://\S+) \(replays on (tcp://\S+)\)")


@pytest.fixture(scope="module")
def events_server() -> Iterator[KvServer]:
    s = KvServer(ram_only(**{"kvcache.events.endpoint": "tcp://127.0.0.1:*",
                             "kvcache.events.replay-endpoint": "tcp://127.0.0.1:*",
                             "kvcache.events.pool": "pod-py",
                             "kvcache.events.interval": "5ms"})).start()
    yield s
    s.stop()


def endpoints(server: KvServer) -> tuple[str, str]:
    for line in server.log:
        m = ENDPOINT.search(line)
        if m:
            return m.group(1), m.group(2)
    raise AssertionError("the server did not say where its KV events are:\n" + "".join(server.log))


def batches(sub: zmq.Socket, timeout_ms: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """The batches the subscriber reads until none comes for ``timeout_ms``: (number, events)."""
    while sub.poll(timeout_ms):
        topic, seq, payload = sub.recv_multipart()
        assert topic == TOPIC
        ts, events, rank = msgpack.unpackb(payload)
        yield struct.unpack(">q", seq)[0], events


def block(i: int, parent: int | None = None) -> kvcache.EngineBlock:
    return kvcache.EngineBlock(MODEL, 1000 + i, tokens=list(range(16 * i, 16 * i + 16)),
                               parent=parent)


def test_puts_naming_their_engine_block_are_told_and_a_replay_gives_back_what_was_missed(
        events_server: KvServer, unique_keys: Any) -> None:
    pub, replay = endpoints(events_server)
    context = zmq.Context()
    sub = context.socket(zmq.SUB)
    sub.setsockopt(zmq.SUBSCRIBE, b"kv@")
    sub.connect(pub)
    keys = unique_keys(8)
    data = bytes(4096)
    with kvcache.Client(events_server.address) as kv:
        # the first put may go out before the subscription is up: put again until one is heard
        heard: list[tuple[int, list[dict[str, Any]]]] = []
        for _ in range(50):
            assert kv.put(keys[0], data, engine_block=block(0)) is kvcache.PutStatus.STORED
            heard = list(batches(sub, 200))
            if heard:
                break
        assert heard, "no KV event reached the subscriber"
        first = heard[-1][1][-1]
        assert first == {"type": "BlockStored", "block_hashes": [1000], "parent_block_hash": None,
                         "token_ids": list(range(16)), "block_size": 16, "lora_id": None,
                         "medium": "CPU", "lora_name": None}

        statuses = kv.put_many([(keys[1], data, block(1, parent=1000)), (keys[2], data)])
        assert statuses == [kvcache.PutStatus.STORED] * 2
        told = [e for _, events in batches(sub, 500) for e in events]
        assert [(e["type"], e["block_hashes"], e["parent_block_hash"]) for e in told] == [
            ("BlockStored", [1001], 1000)], "the block put without its engine block is not told"
        last_seen = max(n for n, _ in heard)

        # the subscriber goes away; what is published meanwhile comes back from the replay socket
        sub.close(0)
        assert kv.delete(keys[0])
        assert kv.put(keys[3], data, engine_block=block(3, parent=1002)) is kvcache.PutStatus.STORED
        dealer = context.socket(zmq.DEALER)
        dealer.connect(replay)
        missed: list[dict[str, Any]] = []
        for _ in range(20):  # until the events are in a batch
            dealer.send_multipart([b"", struct.pack(">q", last_seen + 1)])
            replayed = []
            while True:
                assert dealer.poll(5000), "the replay socket did not answer"
                empty, topic, seq, payload = dealer.recv_multipart()
                if not topic:
                    assert seq == b"\xff" * 8
                    break
                replayed.append(msgpack.unpackb(payload)[1])
            missed = [e for events in replayed for e in events]
            if len(missed) >= 3:
                break
        assert [(e["type"], e["block_hashes"], e["medium"]) for e in missed] == [
            ("BlockStored", [1001], "CPU"), ("BlockRemoved", [1000], "CPU"),
            ("BlockStored", [1003], "CPU")]
    context.destroy(0)


def test_an_engine_block_that_names_nothing_is_refused_before_it_is_sent() -> None:
    with pytest.raises(ValueError, match="without '@'"):
        kvcache.EngineBlock("a@b", 1, tokens=[1])
    with pytest.raises(ValueError, match="0..2"):
        kvcache.EngineBlock(MODEL, 1 << 64, tokens=[1])
    with pytest.raises(ValueError, match="tokens or its block_size"):
        kvcache.EngineBlock(MODEL, 1)
    assert kvcache.EngineBlock.hash_of(b"\x00" * 24 + b"\x00" * 7 + b"\x05") == 5
    assert kvcache.EngineBlock(MODEL, 7, block_size=16).headers() == {
        "kvcache-engine-hash": "7", "kvcache-engine-model": MODEL,
        "kvcache-engine-block-size": "16"}
