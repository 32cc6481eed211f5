"""kvcache.lmcache inside LMCache: LMCache's own L2 adapter factory loads it from the documented
``--l2-adapter`` JSON and wraps it in its native-connector bridge; the bridge's contract (store,
lookup and lock, load, unlock, delete) runs against a real server with LMCache's memory objects."""
import hashlib
import json
import time

import pytest

from conftest import KvServer, ram_only

torch = pytest.importorskip("torch")
pytest.importorskip("lmcache")

from lmcache.v1.distributed.api import ObjectKey  # noqa: E402
from lmcache.v1.distributed.l2_adapters import create_l2_adapter  # noqa: E402
from lmcache.v1.distributed.l2_adapters.native_plugin_l2_adapter import (  # noqa: E402
    NativePluginL2AdapterConfig)
from lmcache.v1.memory_management import MemoryObjMetadata, TensorMemoryObj  # noqa: E402

CHUNK = 64 << 10


def adapter(server):
    """What ``lmcache server --l2-adapter '<json>'`` makes of the documented configuration."""
    doc = json.dumps({"type": "native_plugin", "module_path": "kvcache.lmcache",
                      "class_name": "KvcacheNativeConnector",
                      "adapter_params": {"servers": [server.address], "timeout": 5}})
    return create_l2_adapter(NativePluginL2AdapterConfig.from_dict(json.loads(doc)))


def keys(n, model="tiny-llama", rank=0, salt=b""):
    return [ObjectKey(chunk_hash=hashlib.sha256(salt + i.to_bytes(4, "little")).digest(),
                      model_name=model, kv_rank=rank) for i in range(n)]


def memory_obj(data):
    meta = MemoryObjMetadata(shape=data.shape, dtype=data.dtype, address=0,
                             phy_size=data.numel() * data.element_size(), ref_count=1)
    return TensorMemoryObj(data, meta, None)


def wait(query, task, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = query(task)
        if result is not None:
            return result
        time.sleep(0.01)
    raise AssertionError(f"task {task} did not complete in {timeout} s")


def stored(a, task, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = a.pop_completed_store_tasks()
        if task in done:
            return done[task]
        time.sleep(0.01)
    raise AssertionError(f"store {task} did not complete")


def bits(bitmap, n):
    return [bitmap.test(i) for i in range(n)]



def test_the_factory_loads_it_and_chunks_round_trip(server):
    import kvcache.lmcache
    a = adapter(server)
    try:
        assert isinstance(a._client, kvcache.lmcache.KvcacheNativeConnector)
        ks = keys(4)
        data = [torch.randint(0, 256, (CHUNK,), dtype=torch.uint8) for _ in ks]
        result = stored(a, a.submit_store_task(ks, [memory_obj(d) for d in data]))
        assert result.is_successful() and int(result) == 4 * CHUNK  # the bytes it stored

        probe = ks[:2] + keys(1, salt=b"missing") + ks[2:]
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(probe, {}))
        assert bits(found, 5) == [True, True, False, False, False]  # a prefix, never a false hit

        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 4) == [True] * 4
        out = [torch.zeros(CHUNK, dtype=torch.uint8) for _ in ks]
        loaded = wait(a.query_load_result, a.submit_load_task(ks, [memory_obj(o) for o in out]))
        assert bits(loaded, 4) == [True] * 4
        assert all(torch.equal(o, d) for o, d in zip(out, data))
        a.submit_unlock(ks)

        # a buffer of another length is not filled: a miss
        short = wait(a.query_load_result, a.submit_load_task(ks[:1], [memory_obj(torch.zeros(100, dtype=torch.uint8))]))
        assert bits(short, 1) == [False]

        a.delete(ks[1:2])
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 4) == [True, False, False, False]
    finally:
        a.close()


def test_ranks_are_looked_up_separately(server):
    a = adapter(server)
    try:
        r0, r1 = keys(2, rank=0, salt=b"r"), keys(2, rank=1, salt=b"r")
        stored(a, a.submit_store_task(r0 + r1[:1], [memory_obj(torch.ones(1000, dtype=torch.uint8)) for _ in range(3)]))
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(r0 + r1, {}))
        assert bits(found, 4) == [True, True, True, False]
    finally:
        a.close()


def test_a_server_that_goes_away_is_misses():
    s = KvServer(ram_only()).start()
    a = adapter(s)
    try:
        ks = keys(2, salt=b"gone")
        assert stored(a, a.submit_store_task(ks, [memory_obj(torch.ones(1000, dtype=torch.uint8)) for _ in ks])).is_successful()
        s.stop()
        assert not stored(a, a.submit_store_task(keys(1, salt=b"after"), [memory_obj(torch.ones(10, dtype=torch.uint8))])).is_successful()
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 2) == [False, False]
        out = [memory_obj(torch.zeros(1000, dtype=torch.uint8)) for _ in ks]
        assert bits(wait(a.query_load_result, a.submit_load_task(ks, out)), 2) == [False, False]
    finally:
        a.close()
