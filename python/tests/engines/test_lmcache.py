"""kvcache.integrations.lmcache inside LMCache: LMCache's own L2 adapter factory loads it from the
documented ``--l2-adapter`` JSON (and from the former ``module_path`` ``kvcache.lmcache``) and
wraps it in its native-connector bridge; the bridge's contract (store, lookup and lock, load,
unlock, delete) runs against a real server with LMCache's memory objects. LMCache's own S3 back
end (awscrt, virtual-host addressing) stores and loads chunks through the server's S3 API, and
what it does when the cache evicts a chunk under it is shown."""
import contextlib
import hashlib
import json
import time
import warnings

import pytest

from conftest import KvServer, damage_ram_files, ram_only, wait_until

# the engine's environment has these: an import that fails fails the run, never skips it
import torch  # noqa: E402
import lmcache  # noqa: E402,F401

from lmcache.v1.distributed.api import ObjectKey  # noqa: E402
from lmcache.v1.distributed.l2_adapters import create_l2_adapter  # noqa: E402
from lmcache.v1.distributed.l2_adapters.native_plugin_l2_adapter import (  # noqa: E402
    NativePluginL2AdapterConfig)
from lmcache.v1.memory_management import MemoryObjMetadata, TensorMemoryObj  # noqa: E402

CHUNK = 64 << 10


def adapter(server, module="kvcache.integrations.lmcache", **params):
    """What ``lmcache server --l2-adapter '<json>'`` makes of the documented configuration, the
    adapter loaded from ``module``; ``params`` more of its ``adapter_params``."""
    doc = json.dumps({"type": "native_plugin", "module_path": module,
                      "class_name": "KvcacheNativeConnector",
                      "adapter_params": {"servers": [server.address], "timeout": 5, **params}})
    return create_l2_adapter(NativePluginL2AdapterConfig.from_dict(json.loads(doc)))


def keys(n, model="tiny-llama", rank=0, salt=b""):
    return [ObjectKey(chunk_hash=hashlib.sha256(salt + i.to_bytes(4, "little")).digest(),
                      model_name=model, kv_rank=rank) for i in range(n)]


def memory_obj(data):
    """An LMCache memory object over ``data``. A task reads or fills the object's memory after it is
    submitted, so the caller keeps the object (and ``data``) until the task completes."""
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
    import kvcache.integrations.lmcache
    a = adapter(server)
    try:
        assert isinstance(a._client, kvcache.integrations.lmcache.KvcacheNativeConnector)
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
        small = [memory_obj(torch.zeros(100, dtype=torch.uint8))]
        short = wait(a.query_load_result, a.submit_load_task(ks[:1], small))
        assert bits(short, 1) == [False]

        a.delete(ks[1:2])
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 4) == [True, False, False, False]
    finally:
        a.close()


def test_chunks_estimated_faster_to_prefill_than_to_load_are_not_found(server):
    slow = adapter(server, prefill_tokens_per_s=1.0)  # a token a second: loading is faster
    fast = adapter(server, prefill_tokens_per_s=1e15)  # nothing loads faster than that
    try:
        ks = keys(4, salt=b"prefill-or-load")
        data = [torch.randint(0, 256, (CHUNK,), dtype=torch.uint8) for _ in ks]
        assert stored(slow, slow.submit_store_task(ks, [memory_obj(d) for d in data])).is_successful()
        found = wait(slow.query_lookup_and_lock_result, slow.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 4) == [True] * 4
        assert slow._client.load_or_prefill.recomputed == 0
        slow.submit_unlock(ks)
        found = wait(fast.query_lookup_and_lock_result, fast.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 4) == [False] * 4
        assert fast._client.load_or_prefill.recomputed == 4
    finally:
        slow.close()
        fast.close()


def test_the_former_module_path_loads_the_same_classes(server):
    import kvcache.integrations.lmcache
    import kvcache.lmcache
    for name in kvcache.integrations.lmcache.__all__:
        assert getattr(kvcache.lmcache, name) is getattr(kvcache.integrations.lmcache, name)
    a = adapter(server, module="kvcache.lmcache")
    try:
        assert type(a._client) is kvcache.integrations.lmcache.KvcacheNativeConnector
        ks = keys(1, salt=b"former path")
        data = [torch.randint(0, 256, (CHUNK,), dtype=torch.uint8)]
        assert stored(a, a.submit_store_task(ks, [memory_obj(d) for d in data])).is_successful()
    finally:
        a.close()


def test_ranks_are_looked_up_separately(server):
    a = adapter(server)
    try:
        r0, r1 = keys(2, rank=0, salt=b"r"), keys(2, rank=1, salt=b"r")
        objs = [memory_obj(torch.ones(1000, dtype=torch.uint8)) for _ in range(3)]
        stored(a, a.submit_store_task(r0 + r1[:1], objs))
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(r0 + r1, {}))
        assert bits(found, 4) == [True, True, True, False]
    finally:
        a.close()


def test_chunks_damaged_in_the_servers_memory_are_not_loaded(tmp_path):
    s = KvServer(ram_only(**{"kvcache.cache.ram-bytes": "64MiB",
                             "kvcache.cache.ram-shared-memory-dir": str(tmp_path)})).start()
    a = adapter(s)
    try:
        ks = keys(3, salt=b"damaged")
        data = [torch.randint(0, 256, (CHUNK,), dtype=torch.uint8) for _ in ks]
        assert stored(a, a.submit_store_task(ks, [memory_obj(d) for d in data])).is_successful()
        assert damage_ram_files(str(tmp_path))
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 3) == [True] * 3  # the server still holds them
        out = [torch.zeros(CHUNK, dtype=torch.uint8) for _ in ks]
        loaded = wait(a.query_load_result, a.submit_load_task(ks, [memory_obj(o) for o in out]))
        assert bits(loaded, 3) == [False] * 3, "damaged chunks are never reported loaded"
        a.submit_unlock(ks)
    finally:
        a.close()
        s.stop()


def test_a_server_that_goes_away_is_misses():
    s = KvServer(ram_only()).start()
    a = adapter(s)
    try:
        ks = keys(2, salt=b"gone")
        objs = [memory_obj(torch.ones(1000, dtype=torch.uint8)) for _ in ks]
        assert stored(a, a.submit_store_task(ks, objs)).is_successful()
        s.stop()
        after = [memory_obj(torch.ones(10, dtype=torch.uint8))]
        assert not stored(a, a.submit_store_task(keys(1, salt=b"after"), after)).is_successful()
        found = wait(a.query_lookup_and_lock_result, a.submit_lookup_and_lock_task(ks, {}))
        assert bits(found, 2) == [False, False]
        out = [memory_obj(torch.zeros(1000, dtype=torch.uint8)) for _ in ks]
        assert bits(wait(a.query_load_result, a.submit_load_task(ks, out)), 2) == [False, False]
    finally:
        a.close()


# -- in process: the remote storage plugin ------------------------------------------------------

LAYERS, CHUNK_TOKENS, KV_HEADS, HEAD = 2, 16, 2, 64


@contextlib.contextmanager
def storage_backends(config_text, tmp_path):
    """LMCache's own storage-backend factory, given a configuration file of ``config_text``: its
    backends, on an event loop of their own as LMCache's storage manager runs them."""
    import asyncio
    import threading

    from lmcache.v1.config import LMCacheEngineConfig
    from lmcache.v1.metadata import LMCacheMetadata
    from lmcache.v1.storage_backend import CreateStorageBackends

    path = tmp_path / f"lmcache-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(config_text)
    config = LMCacheEngineConfig.from_file(str(path))
    metadata = LMCacheMetadata(model_name="tiny-llama", world_size=1, local_world_size=1,
                               worker_id=0, local_worker_id=0, kv_dtype=torch.bfloat16,
                               kv_shape=(LAYERS, 2, CHUNK_TOKENS, KV_HEADS, HEAD),
                               chunk_size=CHUNK_TOKENS)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    backends = CreateStorageBackends(config, metadata, loop)
    try:
        yield backends
    finally:
        for b in reversed(list(backends.values())):
            # LMCache 0.5.6's S3 connector never returns from close(): it runs on the event loop
            # and waits there for its own executor, which needs that loop
            closing = threading.Thread(target=b.close, daemon=True)
            closing.start()
            closing.join(15)
            if closing.is_alive():
                warnings.warn(f"LMCache's {b} did not close within 15 s")
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def backends_of(server, tmp_path, **options):
    """The documented configuration file of the ``kvcache`` plugin (and ``options``, more of its
    options): the local CPU backend and the plugin's remote backend."""
    more = "".join(f"  remote_storage_plugin.kvcache.{k}: {v}\n" for k, v in options.items())
    return storage_backends(f"""chunk_size: {CHUNK_TOKENS}
local_cpu: true
max_local_cpu_size: 0.05
remote_storage_plugins: ["kvcache"]
extra_config:
  remote_storage_plugin.kvcache.module_path: kvcache.integrations.lmcache
  remote_storage_plugin.kvcache.class_name: KvcacheConnectorAdapter
  remote_storage_plugin.kvcache.servers: "{server.address}"
  remote_storage_plugin.kvcache.timeout: 5
""" + more, tmp_path)


@pytest.fixture
def plugin_backends(server, tmp_path):
    with backends_of(server, tmp_path) as backends:
        yield backends


def engine_keys(n, salt=b""):
    from lmcache.utils import CacheEngineKey
    return [CacheEngineKey(model_name="tiny-llama", world_size=1, worker_id=0,
                           chunk_hash=int.from_bytes(hashlib.sha256(salt + bytes([i])).digest()[:8], "big"),
                           dtype=torch.bfloat16) for i in range(n)]


def kv_chunk(cpu, tokens=CHUNK_TOKENS, seed=0):
    """A memory object of LMCache's allocator holding random KV of ``tokens`` tokens."""
    from lmcache.v1.memory_management import MemoryFormat
    obj = cpu.allocate([torch.Size([2, LAYERS, tokens, KV_HEADS * HEAD])], [torch.bfloat16],
                       MemoryFormat.KV_2LTD)
    g = torch.Generator().manual_seed(seed)
    obj.tensor.copy_(torch.randn(obj.tensor.shape, generator=g).to(torch.bfloat16))
    return obj


def test_the_plugin_loads_and_chunks_round_trip(plugin_backends):
    import kvcache.integrations.lmcache
    remote = plugin_backends["RemoteBackend-kvcache"]
    cpu = plugin_backends["LocalCPUBackend"]
    assert isinstance(remote.connection._connector,
                      kvcache.integrations.lmcache.KvcacheRemoteConnector)
    ks = engine_keys(3, b"round")
    objs = [kv_chunk(cpu, seed=i) for i in range(3)]
    expected = [bytes(o.byte_array) for o in objs]
    remote.batched_submit_put_task(ks, objs)
    assert wait_until(lambda: remote.batched_contains(ks) == 3)

    got = remote.batched_get_blocking(ks)
    assert [bytes(o.byte_array) for o in got] == expected
    for o in got:
        o.ref_count_down()
    one = remote.get_blocking(ks[1])
    assert bytes(one.byte_array) == expected[1]
    one.ref_count_down()

    # a partial last chunk comes back with its own token count
    partial = kv_chunk(cpu, tokens=5, seed=9)
    pk = engine_keys(1, b"partial")
    want = bytes(partial.byte_array)
    remote.batched_submit_put_task(pk, [partial])
    assert wait_until(lambda: remote.contains(pk[0]))
    back = remote.get_blocking(pk[0])
    assert back.meta.shape[2] == 5 and bytes(back.byte_array) == want
    back.ref_count_down()

    # a prefix, never a false hit; delete
    probe = ks[:1] + engine_keys(1, b"absent") + ks[1:]
    assert remote.batched_contains(probe) == 1
    assert remote.remove(ks[0])
    assert remote.batched_contains(ks) == 0
    assert remote.get_blocking(ks[0]) is None


def test_the_plugin_leaves_to_prefill_what_is_estimated_faster_to_prefill(server, tmp_path):
    with backends_of(server, tmp_path, prefill_tokens_per_s=1.0) as slow, \
            backends_of(server, tmp_path, prefill_tokens_per_s=1e15) as fast:
        remote = slow["RemoteBackend-kvcache"]
        ks = engine_keys(3, b"prefill-or-load")
        remote.batched_submit_put_task(ks, [kv_chunk(slow["LocalCPUBackend"], seed=i)
                                            for i in range(3)])
        assert wait_until(lambda: remote.batched_contains(ks) == 3)  # a token a second: load
        for o in remote.batched_get_blocking(ks):
            o.ref_count_down()
        assert remote.connection._connector.load_or_prefill.recomputed == 0
        quick = fast["RemoteBackend-kvcache"]
        assert quick.batched_contains(ks) == 0  # 10^15 tokens a second: prefill
        assert quick.connection._connector.load_or_prefill.recomputed == 3


def test_the_plugin_without_its_server_is_misses(plugin_backends, server):
    remote = plugin_backends["RemoteBackend-kvcache"]
    cpu = plugin_backends["LocalCPUBackend"]
    ks = engine_keys(2, b"gone")
    remote.batched_submit_put_task(ks, [kv_chunk(cpu, seed=i) for i in range(2)])
    assert wait_until(lambda: remote.batched_contains(ks) == 2)
    server.stop()
    try:
        assert remote.batched_contains(ks) == 0
        assert remote.batched_get_blocking(ks) == [None, None]
        assert not remote.contains(ks[0])
    finally:
        server.start()


def test_a_token_goes_beyond_loopback_in_cleartext_only_when_allowed():
    """LMCache's L2 adapter takes ``tls`` and ``allow_cleartext_token`` as the client does: a
    Kubernetes Service's DNS name needs one of them."""
    from kvcache.integrations.lmcache import KvcacheNativeConnector, _flag
    with pytest.raises(ValueError, match="cleartext"):
        KvcacheNativeConnector("10.1.2.3:7070", token="t" * 40)
    KvcacheNativeConnector("10.1.2.3:7070", token="t" * 40, allow_cleartext_token=True).close()
    KvcacheNativeConnector("10.1.2.3:7070", token="t" * 40, tls=True).close()
    assert [_flag(v) for v in (True, "true", "1", "False", "no")] == [True, True, True, False, False]
    with pytest.raises(ValueError):
        _flag("maybe")


# LMCache's S3 back end names its bucket in the host it connects to (virtual-host addressing):
# python/engine-tests.sh resolves these names to loopback in a private /etc/hosts of its own
S3_BASE_DOMAIN = "s3.kvcache.test"
S3_ACCESS_KEY, S3_SECRET = "AKIDLMCACHETEST", "0123456789abcdef0123456789abcdef-lmcache"


@pytest.fixture
def s3_server():
    import socket
    try:
        socket.gethostbyname(f"default.{S3_BASE_DOMAIN}")
    except OSError:
        pytest.fail(f"default.{S3_BASE_DOMAIN} does not resolve: run these tests through "
                    "python/engine-tests.sh, which maps it to loopback in a private /etc/hosts")
    server = KvServer(ram_only(**{
        "kvcache.s3.base-domains": S3_BASE_DOMAIN,
        "kvcache.auth.tokens.lmcache.secret": S3_SECRET,
        "kvcache.auth.tokens.lmcache.access-key": S3_ACCESS_KEY,
        "kvcache.auth.tokens.lmcache.read": "default",
        "kvcache.auth.tokens.lmcache.write": "default"})).start()
    try:
        yield server
    finally:
        server.stop()


def s3_backends_of(server, tmp_path):
    """LMCache's storage backends as its S3 documentation configures them: ``remote_url``
    ``s3://<bucket>.<host>:<port>``, the region, TLS off for a plain-HTTP endpoint, static keys,
    no chunk metadata; full chunks only, as its S3 connector stores."""
    port = server.s3_url.rsplit(":", 1)[1]
    return storage_backends(f"""chunk_size: {CHUNK_TOKENS}
local_cpu: true
max_local_cpu_size: 0.05
remote_url: "s3://default.{S3_BASE_DOMAIN}:{port}"
remote_serde: naive
save_unfull_chunk: false
extra_config:
  s3_region: us-east-1
  disable_tls: true
  s3_num_io_threads: 2
  aws_access_key_id: {S3_ACCESS_KEY}
  aws_secret_access_key: {S3_SECRET}
  save_chunk_meta: false
""", tmp_path)


def test_lmcaches_own_s3_backend_stores_and_loads_chunks_through_the_s3_api(s3_server, tmp_path):
    import boto3
    with s3_backends_of(s3_server, tmp_path) as backends:
        remote = backends["RemoteBackend"]
        cpu = backends["LocalCPUBackend"]
        ks = engine_keys(3, b"s3")
        objs = [kv_chunk(cpu, seed=10 + i) for i in range(3)]
        expected = [bytes(o.byte_array) for o in objs]
        remote.batched_submit_put_task(ks, objs)
        assert wait_until(lambda: all(remote.contains(k) for k in ks))
        for k, want in zip(ks, expected):
            got = remote.get_blocking(k)
            assert got is not None and bytes(got.byte_array) == want
            got.ref_count_down()

        # the objects are the chunks, named as LMCache names them, in the bucket "default"
        s3 = boto3.client("s3", endpoint_url=s3_server.s3_url, region_name="us-east-1",
                          aws_access_key_id=S3_ACCESS_KEY, aws_secret_access_key=S3_SECRET)
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket="default")["Contents"]]
        assert sorted(listed) == sorted(k.to_string().replace("/", "_") for k in ks)
        assert s3.get_object(Bucket="default", Key=listed[0])["Body"].read() in expected

        # a chunk the cache no longer holds (evicted, or deleted as here) is a miss for LMCache,
        # never other bytes: its connector still believes it stored the chunk (it keeps the
        # sizes of what it stored, "assuming S3 is never evicted"), so its lookup says yes and
        # its load comes back empty, which LMCache's storage manager treats as a miss
        s3.delete_object(Bucket="default", Key=ks[0].to_string().replace("/", "_"))
        assert remote.contains(ks[0])
        assert remote.get_blocking(ks[0]) is None
        again = remote.get_blocking(ks[1])
        assert again is not None and bytes(again.byte_array) == expected[1]
        again.ref_count_down()
