"""kvcache.integrations.sglang inside SGLang: SGLang's own backend factory loads it from the
documented extra config (and from the former ``module_path`` ``kvcache.sglang``), and its contract
runs against a real server with SGLang's real host memory pool (the CPU build of the pool the
HiCache controller reads into and writes from)."""
import hashlib
import logging
import time

import pytest

from conftest import (KvServer, damage_ram_files, events_socket, lookup_by_engine_hashes, ram_only,
                      with_events)

# the engine's environment has these: an import that fails fails the run, never skips it
import torch  # noqa: E402
import sglang  # noqa: E402,F401

from sglang.srt.mem_cache.device_pool_info import KVBufferLayout, KVBuffers, MHABufferInfo  # noqa: E402
from sglang.srt.mem_cache.hicache_storage import (HiCacheStorage, HiCacheStorageConfig,  # noqa: E402
                                                  HiCacheStorageExtraInfo)
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost  # noqa: E402
from sglang.srt.mem_cache.storage.backend_factory import StorageBackendFactory  # noqa: E402

LAYERS, HEADS, HEAD_DIM, PAGE = 2, 2, 64, 16
CAPACITY = 256


def host_pool(layout="page_first"):
    """SGLang's MHA host pool for a 2-layer bf16 model, over CPU 'device' buffers."""
    k = tuple(torch.zeros(CAPACITY + PAGE, HEADS, HEAD_DIM, dtype=torch.bfloat16) for _ in range(LAYERS))
    v = tuple(torch.zeros(CAPACITY + PAGE, HEADS, HEAD_DIM, dtype=torch.bfloat16) for _ in range(LAYERS))
    buffers = KVBuffers(k=k, v=v, layout=KVBufferLayout.NHD,
                        k_data_ptrs=torch.tensor([t.data_ptr() for t in k], dtype=torch.uint64),
                        v_data_ptrs=torch.tensor([t.data_ptr() for t in v], dtype=torch.uint64))
    info = MHABufferInfo(buffers=buffers, page_size=PAGE, head_num=HEADS, head_dim=HEAD_DIM,
                         v_head_dim=HEAD_DIM, dtype=torch.bfloat16, device=torch.device("cpu"))
    return MHATokenToKVPoolHost(info, 2.0, 0, PAGE, layout, pin_memory=False, device="cpu",
                                device_capacity_tokens=CAPACITY, start_layer=0, end_layer=LAYERS)


def backend(server, host, tp_rank=0, v1=True, module="kvcache.integrations.sglang", **extra):
    """The backend as SGLang's HiCache controller makes it from ``module``: the factory, then the
    host pool; ``extra`` more keys of its extra config."""
    config = HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=2, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
        is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
        model_name="tiny-llama",
        extra_config={"backend_name": "kvcache", "module_path": module,
                      "class_name": "KvcacheHiCacheStorage", "interface_v1": 1 if v1 else 0,
                      "servers": [server.address], "timeout": 5, **extra})
    b = StorageBackendFactory.create_backend("dynamic", config, host)
    b.register_mem_pool_host(host)
    return b


def page_hashes(n, salt=b""):
    """Chained SHA-256 hex page names, as SGLang gives them."""
    out, prev = [], b"" + salt
    for i in range(n):
        prev = hashlib.sha256(prev + i.to_bytes(4, "little")).digest()
        out.append(prev.hex())
    return out


def slots(pages, first=0):
    """Host-pool token slots of ``pages`` whole pages from page ``first``, as the controller passes."""
    return torch.arange(first * PAGE, (first + pages) * PAGE, dtype=torch.int64)



def test_the_factory_loads_it_and_pages_round_trip_in_place(server):
    import kvcache.integrations.sglang
    host = host_pool()
    b = backend(server, host)
    assert isinstance(b, kvcache.integrations.sglang.KvcacheHiCacheStorage)
    assert isinstance(b, HiCacheStorage)
    assert b.parts == 2  # K and V of a page_first MHA page
    keys = page_hashes(5)
    host.kv_buffer.copy_(torch.randn(host.kv_buffer.shape).to(torch.bfloat16))
    src = slots(5)
    before = [host.get_data_page(int(src[i * PAGE]), flat=True).clone() for i in range(5)]
    assert b.batch_set_v1(keys, src) == [True] * 5
    assert b.batch_exists(keys + page_hashes(1, b"other")) == 5
    assert b.batch_exists(page_hashes(1, b"other") + keys) == 0
    assert b.exists(keys[0]) and not b.exists(page_hashes(1, b"x")[0])

    dst = slots(5, first=8)  # other host slots, as a prefetch would get
    for i in range(5):
        host.get_data_page(int(dst[i * PAGE]), flat=False).zero_()
    assert b.batch_get_v1(keys, dst) == [True] * 5
    for i in range(5):
        assert torch.equal(host.get_data_page(int(dst[i * PAGE]), flat=True), before[i])

    # a page missing in the middle: leading hits, then misses
    b.client.delete(b._keys([keys[2]])[1])
    assert b.batch_exists(keys) == 2
    assert b.batch_get_v1(keys, dst)[:3] == [True, True, False]


def test_pages_estimated_faster_to_prefill_than_to_load_are_left_to_prefill(server):
    host = host_pool()
    # an engine that prefills a token a second: loading pages from RAM is faster
    slow = backend(server, host, prefill_tokens_per_s=1.0)
    # an engine that prefills 10^15 tokens a second: nothing loads faster than that
    fast = backend(server, host, prefill_tokens_per_s=1e15)
    keys = page_hashes(4, b"prefill-or-load")
    host.kv_buffer.copy_(torch.randn(host.kv_buffer.shape).to(torch.bfloat16))
    assert slow.batch_set_v1(keys, slots(4)) == [True] * 4
    assert slow.batch_get_v1(keys, slots(4, first=8)) == [True] * 4  # a load, timed
    assert slow.client.locate_prefix(slow._keys(keys)).load_s is not None

    assert slow.batch_exists(keys) == 4
    assert slow.load_or_prefill.recomputed == 0
    assert fast.batch_exists(keys) == 0
    assert fast.load_or_prefill.recomputed == 8  # 4 pages of a K and a V block
    assert backend(server, host).batch_exists(keys) == 4  # without the option: always load


def test_the_former_module_path_loads_the_same_backend(server):
    import kvcache.integrations.sglang
    import kvcache.sglang
    assert kvcache.sglang.KvcacheHiCacheStorage is kvcache.integrations.sglang.KvcacheHiCacheStorage
    host = host_pool()
    b = backend(server, host, module="kvcache.sglang")
    try:
        assert type(b) is kvcache.integrations.sglang.KvcacheHiCacheStorage
        keys = page_hashes(1, b"former path")
        assert b.batch_set_v1(keys, slots(1)) == [True]
        assert b.batch_exists(keys) == 1
    finally:
        b.close()


def test_ranks_and_models_do_not_share_pages(server):
    host = host_pool()
    rank0, rank1 = backend(server, host, tp_rank=0), backend(server, host, tp_rank=1)
    keys = page_hashes(2, b"ranks")
    assert rank0.batch_set_v1(keys, slots(2)) == [True, True]
    assert rank0.batch_exists(keys) == 2
    assert rank1.batch_exists(keys) == 0
    assert rank1.batch_get_v1(keys, slots(2, first=4)) == [False, False]


def test_the_v0_interface_with_flat_pages(server):
    host = host_pool()
    b = backend(server, host, v1=False)
    keys = page_hashes(3, b"v0")
    pages = [torch.randn(host.get_dummy_flat_data_page().shape).to(torch.bfloat16) for _ in keys]
    assert b.batch_set(keys, pages) is True
    assert b.batch_exists(keys) == 3
    got = b.batch_get(keys + page_hashes(1, b"none"))
    assert all(torch.equal(g, p) for g, p in zip(got[:3], pages)) and got[3] is None
    target = host.get_dummy_flat_data_page()
    assert torch.equal(b.get(keys[1], target), pages[1])
    assert b.set(keys[0], pages[0]) is True
    with pytest.raises(NotImplementedError):
        b.clear()


def test_pages_damaged_in_the_servers_memory_are_not_loaded(tmp_path):
    s = KvServer(ram_only(**{"kvcache.cache.ram-bytes": "64MiB",
                             "kvcache.cache.ram-shared-memory-dir": str(tmp_path)})).start()
    try:
        host = host_pool()
        b = backend(s, host)
        keys = page_hashes(3, b"damaged")
        host.kv_buffer.copy_(torch.randn(host.kv_buffer.shape).to(torch.bfloat16))
        assert b.batch_set_v1(keys, slots(3)) == [True] * 3
        assert damage_ram_files(str(tmp_path))
        assert b.batch_exists(keys) == 3  # the server still holds them
        assert b.batch_get_v1(keys, slots(3, first=8)) == [False] * 3, \
            "damaged pages are never reported loaded"
        b.close()
    finally:
        s.stop()


def test_the_server_tells_and_finds_the_pages_by_sglangs_event_hashes():
    """A server with KV events tells each page the backend stores, and its removal, as SGLang's
    own events name the page (decoded with SGLang's ``KVEventBatch``), and finds the pages by
    those hashes."""
    import msgspec
    from sglang.srt.disaggregation.kv_events import BlockRemoved, BlockStored, KVEventBatch
    from sglang.srt.mem_cache.utils import hash_str_to_int64

    s = KvServer(with_events("kvcache-sglang-test")).start()
    socket, decoder = events_socket(s), msgspec.msgpack.Decoder(type=KVEventBatch)
    try:
        time.sleep(0.5)  # the subscription reaches the server
        host = host_pool()
        b = backend(s, host)
        keys = page_hashes(5, b"named")
        published = [hash_str_to_int64(k) % (1 << 64) for k in keys]
        # two pages, then three more that the controller stores with the two as their prefix
        assert b.batch_set_v1(keys[:2], slots(2)) == [True] * 2
        assert b.batch_set_v1(keys[2:], slots(3, first=2),
                              HiCacheStorageExtraInfo(prefix_keys=keys[:2])) == [True] * 3
        stored, removed = {}, []

        def receive(until):
            deadline = time.monotonic() + 10
            while not until() and time.monotonic() < deadline:
                if socket.poll(200):
                    topic, _, payload = socket.recv_multipart()
                    assert topic == b"kv@kvcache-sglang-test@tiny-llama"
                    for e in decoder.decode(payload).events:
                        if isinstance(e, BlockStored):
                            stored[e.block_hashes[0]] = e
                        elif isinstance(e, BlockRemoved):
                            removed.extend(e.block_hashes)
        receive(lambda: set(published) <= set(stored))
        assert set(stored) == set(published), "one event per page, for its first block"
        for i, h in enumerate(published):
            e = stored[h]
            assert (e.medium, e.block_size, e.token_ids) == ("CPU", PAGE, [])
            assert e.parent_block_hash == (published[i - 1] if i else None)

        assert lookup_by_engine_hashes(s, published, "tiny-llama")["present"] == 5
        assert lookup_by_engine_hashes(s, published, "other-model")["present"] == 0

        b.client.delete(b._keys([keys[4]])[0])
        receive(lambda: published[4] in removed)
        assert removed == [published[4]]
        assert lookup_by_engine_hashes(s, published, "tiny-llama")["present"] == 4
        b.close()
    finally:
        socket.close(linger=0)
        s.stop()


def test_a_server_that_goes_away_is_misses_and_failed_writes(caplog):
    caplog.set_level(logging.WARNING)
    s = KvServer(ram_only()).start()
    host = host_pool()
    b = backend(s, host)
    keys = page_hashes(2, b"gone")
    assert b.batch_set_v1(keys, slots(2)) == [True, True]
    s.stop()
    assert b.batch_exists(keys) == 0
    assert b.batch_get_v1(keys, slots(2, first=4)) == [False, False]
    assert b.batch_set_v1(keys, slots(2)) == [False, False]
    b.close()


def test_a_token_goes_beyond_loopback_in_cleartext_only_when_allowed():
    """A Kubernetes Service's DNS name needs ``tls`` (its servers are not ``https://`` URLs), or
    ``allow_cleartext_token`` on a network that is private by other means."""
    def config(**extra):
        return HiCacheStorageConfig(
            tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
            is_mla_model=False, enable_storage_metrics=False, is_page_first_layout=True,
            model_name="tiny-llama", extra_config={"servers": ["10.1.2.3:7070"],
                                                   "token": "t" * 40, **extra})
    from kvcache.integrations.sglang import KvcacheHiCacheStorage
    with pytest.raises(ValueError, match="cleartext"):
        KvcacheHiCacheStorage(config())
    KvcacheHiCacheStorage(config(allow_cleartext_token=True)).client.close()
    KvcacheHiCacheStorage(config(tls=True)).client.close()
