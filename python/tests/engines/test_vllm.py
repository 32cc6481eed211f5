"""kvcache.integrations.vllm inside a real vLLM engine: vLLM's offloading connector, tiering spec
and secondary tier factory load ``KvcacheTier`` from the documented ``kv_transfer_config`` (and
from the former ``module_path`` ``kvcache.vllm``); a prompt run twice,
with the engine's prefix cache and its host tier emptied in between, is served the second time
from kvcache-server, and the output is the same token for token. The server keeps its RAM in
shared memory, as beside an engine, so loads copy blocks straight out of it; blocks damaged there
or on the server's disk between the runs are recomputed, never loaded.

The engine publishes KV events, as routers read them: a ZMQ subscriber here decodes its batches
with vLLM's ``KVEventBatch``, and the tier's events (medium ``STORAGE``) name exactly the blocks
it stored on the server, with their tokens, and a block deleted or damaged there once a lookup or
load meets it gone. The server publishes KV events of its own: the tier names each chunk it
stores as vLLM's events do, the server's events (decoded the same way) tell them in its RAM, and a
lookup by vLLM's block hashes finds them.

The model is a random-weight Llama made here (no hub); vLLM runs on the CPU, its host copies done
by the ``HostCopyTieringSpec`` of ``vllm_cpu.py`` (vLLM's own copy worker needs CUDA)."""
import contextlib
import glob
import os
import random
import shutil
import sys
import tempfile
import time
import urllib.request

import pytest

from conftest import (KvServer, damage_files, damage_ram_files, events_socket, lookup_by_engine_hashes,
                      ram_only, wait_until, with_events)

# the engine's environment has these: an import that fails fails the run, never skips it
import torch  # noqa: E402,F401
import vllm  # noqa: E402,F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")

from vllm import LLM, SamplingParams  # noqa: E402
from vllm.config import KVEventsConfig, KVTransferConfig  # noqa: E402

from vllm_cpu import make_model  # noqa: E402

BLOCK_TOKENS = 32  # vLLM's CPU attention takes multiples of 32
PROMPT_TOKENS = 2000
CHUNKS = PROMPT_TOKENS // BLOCK_TOKENS  # whole blocks of the prompt: what can be offloaded
TIER = "1:KvcacheTier"
TOPIC = "kvcache-test"  # the engine's KV event topic
POOL = "kvcache-vllm-test"  # the server's, in its events' topics


class KvEvents:
    """The engine's KV events as a router reads them: a ZMQ SUB socket bound to a loopback port,
    to which vLLM's publisher connects (it connects to a ``tcp://`` endpoint without ``*``), each
    message a ``KVEventBatch`` decoded with msgspec as vLLM's own subscribers decode it."""

    def __init__(self) -> None:
        import msgspec
        import zmq
        from vllm.distributed.kv_events import KVEventBatch

        self._socket = zmq.Context.instance().socket(zmq.SUB)
        self._socket.setsockopt(zmq.RCVHWM, 0)  # keep every batch until read
        self._socket.setsockopt_string(zmq.SUBSCRIBE, TOPIC)
        self._socket.bind("tcp://127.0.0.1:*")
        self.endpoint = self._socket.getsockopt_string(zmq.LAST_ENDPOINT)
        self._decoder = msgspec.msgpack.Decoder(type=KVEventBatch)

    def take(self):
        """The events received since the last call, in order."""
        events = []
        while self._socket.poll(0):
            topic, _, payload = self._socket.recv_multipart()
            assert topic == TOPIC.encode()
            events += self._decoder.decode(payload).events
        return events

    def close(self) -> None:
        self._socket.close(linger=0)


@pytest.fixture(scope="module")
def shm():
    """A directory on tmpfs for the server's RAM files."""
    path = tempfile.mkdtemp(prefix="kvcache-vllm-test-", dir="/dev/shm")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def server(shm):
    s = KvServer(with_events(POOL, **{"kvcache.cache.ram-shared-memory-dir": shm})).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def kv_events():
    events = KvEvents()
    yield events
    events.close()


@pytest.fixture(scope="module")
def llm(server, kv_events, tmp_path_factory):
    """The engine, its KV events on: published to ``kv_events``, self-describing (vLLM's
    connector gives stored blocks' tokens), the tier's among them."""
    model = make_model(str(tmp_path_factory.mktemp("model")))
    config = KVTransferConfig(
        kv_connector="OffloadingConnector", kv_role="kv_both",
        kv_connector_extra_config={
            "spec_name": "HostCopyTieringSpec", "spec_module_path": "vllm_cpu",
            "cpu_bytes_to_use": 64 << 20, "self_describing_kv_events": True,
            "secondary_tiers": [{"type": "KvcacheTier",
                                 "module_path": "kvcache.integrations.vllm",
                                 "servers": [server.address], "timeout": 5,
                                 "enable_kv_events": True}]})
    events = KVEventsConfig(enable_kv_cache_events=True, publisher="zmq",
                            endpoint=kv_events.endpoint, topic=TOPIC)
    engine = LLM(model=model, dtype="bfloat16", max_model_len=4096, enforce_eager=True,
                 kv_transfer_config=config, kv_events_config=events, enable_prefix_caching=True,
                 block_size=BLOCK_TOKENS, gpu_memory_utilization=0.3, max_num_seqs=4, seed=0,
                 disable_log_stats=False)
    yield engine
    del engine


def server_metrics(server):
    text = urllib.request.urlopen(f"http://{server.address}/prometheus", timeout=5).read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("kvcache_") and " " in line:
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def engine_metric(llm, name, tier=TIER):
    return sum(m.value for m in llm.get_metrics()
               if m.name == name and m.labels.get("tier") == tier)


def prompt(seed):
    rng = random.Random(seed)
    return {"prompt_token_ids": [rng.randrange(2, 4000) for _ in range(PROMPT_TOKENS)]}


def run(llm, p):
    out = llm.generate([p], SamplingParams(max_tokens=16, temperature=0), use_tqdm=False)[0]
    return list(out.outputs[0].token_ids), out.num_cached_tokens


def run_and_store(llm, server, p):
    """Runs the prompt, then waits for its blocks to reach the server (vLLM stores them after the
    step that computed them)."""
    puts = server_metrics(server)["kvcache_puts_total"]
    out = run(llm, p)
    assert wait_until(lambda: server_metrics(server)["kvcache_puts_total"] - puts >= CHUNKS)
    return out


def forget(llm):
    """Empties the engine's prefix cache and its host tier, and scribbles over the host tier's
    memory: what the next run reuses can only come from kvcache-server."""
    assert llm.reset_prefix_cache(reset_connector=True)
    for region in glob.glob("/dev/shm/vllm_offload_*.mmap"):
        size = os.path.getsize(region)
        with open(region, "r+b") as f:
            for at in range(0, size, 1 << 20):
                f.write(os.urandom(min(1 << 20, size - at)))


def test_second_run_is_served_by_kvcache(llm, server):
    p = prompt(1)
    before = server_metrics(server)
    first, cached = run_and_store(llm, server, p)
    assert cached == 0
    stored = server_metrics(server)
    assert stored["kvcache_puts_total"] - before["kvcache_puts_total"] == CHUNKS
    chunk_bytes = (stored["kvcache_bytes_used"] - before["kvcache_bytes_used"]) / CHUNKS
    assert chunk_bytes == 2 * 2 * 2 * 64 * 2 * BLOCK_TOKENS  # K,V x layers x kv heads x dim x bf16

    forget(llm)
    hits = engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits")
    read = engine_metric(llm, "vllm:kv_offload_tiering_read_bytes")
    second, cached = run(llm, p)
    assert second == first
    assert cached == CHUNKS * BLOCK_TOKENS
    after = server_metrics(server)
    # each chunk is a hit of the pinned lookup, and no more: the server is on this host, so it
    # writes each chunk from that pin straight into vLLM's host tier, a file in /dev/shm
    assert after["kvcache_hits_total"] - stored["kvcache_hits_total"] == CHUNKS
    copied = 'kvcache_copied_into_files_total{outcome="copied"}'
    assert after[copied] - stored[copied] == CHUNKS
    assert engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits") - hits == CHUNKS
    assert engine_metric(llm, "vllm:kv_offload_tiering_read_bytes") - read == CHUNKS * chunk_bytes
    # the lookup's pins were released once their blocks were loaded
    assert after["kvcache_leases_open"] == 0


def test_blocks_gone_from_the_server_are_recomputed(llm, server):
    p = prompt(2)
    first, _ = run_and_store(llm, server, p)
    forget(llm)
    server.restart()  # a RAM-only server: every block is gone
    hits = engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits")
    second, cached = run(llm, p)
    assert second == first
    assert cached == 0
    assert engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits") == hits
    assert server_metrics(server)["kvcache_misses_total"] >= 1


def engine_tier(llm):
    """The engine's KvcacheTier (the engine runs in this process)."""
    from kvcache.integrations.vllm import KvcacheTier
    scheduler = llm.llm_engine.engine_core.engine_core.scheduler
    tiers = scheduler.connector.connector_scheduler.manager.secondary_tiers
    return next(t for t in tiers if isinstance(t, KvcacheTier))


def block_hashes(llm, p):
    """The prompt's block hashes as the engine computes them (vLLM's own chained hash, in this
    process, whose seed the engine set), one per whole block: with a block per chunk, each is the
    block hash of a chunk's offload key."""
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core import kv_cache_utils
    fn = get_hash_fn_by_name(llm.llm_engine.vllm_config.cache_config.prefix_caching_hash_algo)
    tokens = p["prompt_token_ids"]
    hashes, parent = [], None
    for i in range(CHUNKS):
        parent = kv_cache_utils.hash_block_tokens(fn, parent,
                                                  tokens[i * BLOCK_TOKENS:(i + 1) * BLOCK_TOKENS])
        hashes.append(parent)
    return hashes


def gathered(llm, kv_events, enough, timeout=30.0):
    """The engine's events until ``enough(events)``, and those of one more step. vLLM takes a
    tier's events at the end of a step, so meanwhile the engine steps on a prompt too short to
    fill a block (nothing of it is stored or looked up)."""
    events = []
    deadline = time.monotonic() + timeout
    while True:
        events += kv_events.take()
        done = enough(events)
        llm.generate([{"prompt_token_ids": [5, 6, 7]}], SamplingParams(max_tokens=1),
                     use_tqdm=False)
        time.sleep(0.2)
        if done or time.monotonic() > deadline:
            return events + kv_events.take()


def settled_puts(server, quiet=1.0, timeout=30.0):
    """The server's count of puts once none has come for ``quiet`` seconds: the stores of an
    earlier test's run, which the engine sends after its step, are not taken for this test's."""
    count = server_metrics(server)["kvcache_puts_total"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = server_metrics(server)["kvcache_puts_total"]
        if now == count:
            return count
        count = now
    raise AssertionError(f"puts still arriving after {timeout} s")


def storage(events, kind):
    """The block hashes of the ``kind`` events of medium ``STORAGE`` (the kvcache tier's; the
    engine's own are ``GPU`` and its host tier's ``CPU``), in order."""
    return [h for e in events if isinstance(e, kind) and e.medium == "STORAGE"
            for h in e.block_hashes]


def test_kv_events_name_the_blocks_the_tier_stored_and_lost(llm, server, shm, kv_events):
    from vllm.distributed.kv_events import BlockRemoved, BlockStored
    from vllm.v1.core.kv_cache_utils import maybe_convert_block_hash
    from vllm.v1.kv_offload.base import make_offload_key

    tier = engine_tier(llm)
    # the earlier tests' stores, which the engine sends after its steps, and then their events,
    # which it publishes at the end of a step: all arrived before this test counts its own
    settled_puts(server)
    gathered(llm, kv_events, lambda ev: True)
    p = prompt(6)
    hashes = block_hashes(llm, p)
    keys = [make_offload_key(h, 0) for h in hashes]
    published = [maybe_convert_block_hash(h) for h in hashes]  # as events carry hashes

    puts = settled_puts(server)
    first, _ = run_and_store(llm, server, p)
    # the server holds the prompt's blocks, and was sent no others
    assert all(tier.client.head(tier.block_key(k)) is not None for k in keys)
    assert server_metrics(server)["kvcache_puts_total"] - puts == CHUNKS
    events = gathered(llm, kv_events, lambda ev: len(storage(ev, BlockStored)) >= CHUNKS)
    assert sorted(storage(events, BlockStored)) == sorted(published), \
        "the tier's stored events name exactly the blocks it stored"
    assert storage(events, BlockRemoved) == []
    # self-describing, as vLLM's connector makes them: each block's tokens, parent and size
    stored = {e.block_hashes[0]: e for e in events
              if isinstance(e, BlockStored) and e.medium == "STORAGE"}
    for i, h in enumerate(published):
        e = stored[h]
        assert e.token_ids == p["prompt_token_ids"][i * BLOCK_TOKENS:(i + 1) * BLOCK_TOKENS]
        assert e.parent_block_hash == (published[i - 1] if i else None)
        assert (e.block_size, e.group_idx, e.lora_name) == (BLOCK_TOKENS, 0, None)
        assert (e.locality, e.ownership) == ("REMOTE", "KvcacheTier")

    # a block deleted on the server: the lookup that meets it gone reports it removed, and once
    # recomputed and stored again it is announced again (the others, stored again too, are not)
    gone = 10
    forget(llm)
    assert tier.client.delete(tier.block_key(keys[gone]))
    second, cached = run(llm, p)
    assert second == first
    assert cached == gone * BLOCK_TOKENS
    events = gathered(llm, kv_events, lambda ev: published[gone] in storage(ev, BlockStored))
    assert storage(events, BlockRemoved) == [published[gone]]
    assert storage(events, BlockStored) == [published[gone]]

    # every block damaged in the server's memory: the lookup finds them all, the load refuses
    # them all, and each is reported removed
    forget(llm)
    try:
        assert damage_ram_files(shm)
        third, _ = run(llm, p)
        assert third == first
        events = gathered(llm, kv_events, lambda ev: len(storage(ev, BlockRemoved)) >= CHUNKS)
        assert sorted(storage(events, BlockRemoved)) == sorted(published)
    finally:
        server.restart()  # empty: no damaged block left for the next tests


def test_the_server_tells_and_finds_the_blocks_by_the_names_the_tier_gives(llm, server):
    from vllm.distributed.kv_events import BlockStored
    from vllm.v1.core.kv_cache_utils import maybe_convert_block_hash

    model = llm.llm_engine.vllm_config.model_config.model
    import msgspec
    from vllm.distributed.kv_events import KVEventBatch

    socket, decoder = events_socket(server), msgspec.msgpack.Decoder(type=KVEventBatch)
    try:
        time.sleep(0.5)  # the subscription reaches the server
        p = prompt(7)
        published = [maybe_convert_block_hash(h) for h in block_hashes(llm, p)]
        run_and_store(llm, server, p)
        stored = {}
        deadline = time.monotonic() + 10
        while not set(published) <= set(stored) and time.monotonic() < deadline:
            if socket.poll(200):
                topic, _, payload = socket.recv_multipart()
                assert topic == f"kv@{POOL}@{model}".encode()
                for e in decoder.decode(payload).events:
                    if isinstance(e, BlockStored):
                        stored[e.block_hashes[0]] = e
    finally:
        socket.close(linger=0)
    assert set(published) <= set(stored), "the server told of every chunk the tier stored"
    parents = 0
    for i, h in enumerate(published):
        e = stored[h]
        assert (e.medium, e.block_size, e.token_ids) == ("CPU", BLOCK_TOKENS, [])
        # the parent, where the store that carried the chunk carried the one before it too
        assert e.parent_block_hash in ((published[i - 1], None) if i else (None,))
        parents += e.parent_block_hash is not None
    assert parents > 0

    answer = lookup_by_engine_hashes(server, published, model)
    assert answer["present"] == CHUNKS
    assert [t["tier"] for t in answer["tiers"]] == ["ram"]
    unknown = (published[3] + 1) % (1 << 64)
    assert lookup_by_engine_hashes(server, published[:3] + [unknown], model)["present"] == 3
    assert lookup_by_engine_hashes(server, published, model + "-other")["present"] == 0


def test_engine_keeps_serving_without_the_server(llm, server):
    p = prompt(3)
    server.stop()
    try:
        queries = engine_metric(llm, "vllm:kv_offload_tiering_chunk_queries")
        hits = engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits")
        first, _ = run(llm, p)
        forget(llm)
        second, cached = run(llm, p)
        assert second == first
        assert cached == 0
        assert engine_metric(llm, "vllm:kv_offload_tiering_chunk_queries") > queries
        assert engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits") == hits
    finally:
        server.start()
    # once the server is back (and the client's back-off from it is over), the tier serves again
    deadline = time.monotonic() + 45
    seed = 100
    while True:
        p = prompt(seed)
        hits = engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits")
        first, _ = run(llm, p)
        time.sleep(0.5)  # for the stores, if the server is taken again
        forget(llm)
        second, _ = run(llm, p)
        assert second == first
        if engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits") - hits == CHUNKS:
            break
        assert time.monotonic() < deadline, "the tier was not used again after the server came back"
        seed += 1
        time.sleep(1)


# -- the tier's contract, driven as vLLM's tiering manager drives it ----------------------------

def tier_under_test(server, rows, chunk, module="kvcache.integrations.vllm", events=False,
                    **options):
    """A KvcacheTier over a host tier of ``rows`` chunks of ``chunk`` bytes, as vLLM's secondary
    tier factory makes it from ``module`` with ``options`` in its entry, in an engine with KV
    events on if ``events``, and its memory as a numpy array."""
    import types

    import numpy as np
    from vllm.v1.kv_offload.base import OffloadingKVEventsConfig
    from vllm.v1.kv_offload.config import (OffloadingCacheConfig, OffloadingConfig,
                                           OffloadingModelConfig, OffloadingParallelConfig)
    from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory

    config = OffloadingConfig(
        groups=(), worker_kv_bytes_per_block=chunk, enable_kv_cache_events=events, extra_config={},
        engine_id="test", model=OffloadingModelConfig(name="tiny-llama", dtype="bfloat16"),
        cache=OffloadingCacheConfig(tokens_per_hash=BLOCK_TOKENS, blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(rank=0, world_size=1, tp_size=1, pp_size=1, pcp_size=1,
                                          dcp_size=1, data_parallel_index=0, data_parallel_size=1,
                                          data_parallel_rank_local=None,
                                          is_parallelism_agnostic=False))
    memory = np.zeros((rows, chunk), dtype=np.uint8)
    tier = SecondaryTierFactory.create_secondary_tier(
        {"type": "KvcacheTier", "module_path": module, "servers": [server.address],
         "timeout": 5, **options}, memoryview(memory),
        types.SimpleNamespace(config=config, kv_events_config=OffloadingKVEventsConfig(
            enable_kv_cache_events=events, self_describing_kv_events=False)))
    return tier, memory


def finished(tier, job_id):
    results = []
    assert wait_until(lambda: results.extend(tier.get_finished_jobs()) or
                      any(r.job_id == job_id for r in results))
    return next(r for r in results if r.job_id == job_id)


def looked_up(tier, keys, ctx):
    """vLLM's scheduler: ``lookup`` each key, end the step, and in later steps ask again until
    answered."""
    from vllm.v1.kv_offload.base import LookupResult, ScheduleEndContext
    answers = [tier.lookup(k, ctx) for k in keys]
    assert set(answers) == {LookupResult.RETRY}  # never blocks on the network

    def step():
        tier.on_schedule_end(ScheduleEndContext((), ()))
        return tier.lookup(keys[0], ctx) is not LookupResult.RETRY
    assert wait_until(step)
    return [tier.lookup(k, ctx) for k in keys]


def test_the_former_module_path_makes_the_same_tier(server):
    import kvcache.integrations.vllm
    import kvcache.vllm
    assert kvcache.vllm.KvcacheTier is kvcache.integrations.vllm.KvcacheTier
    assert kvcache.vllm.key_namespace is kvcache.integrations.vllm.key_namespace
    tier, _ = tier_under_test(server, 2, 4096, module="kvcache.vllm")
    try:
        assert type(tier) is kvcache.integrations.vllm.KvcacheTier
    finally:
        tier.shutdown()


def test_tier_loads_pinned_blocks_deleted_after_the_lookup(server):
    import hashlib

    import numpy as np
    from vllm.v1.kv_offload.base import LookupResult, ReqContext, make_offload_key
    from vllm.v1.kv_offload.tiering.base import TransferJob

    n, chunk = 8, 64 << 10
    tier, memory = tier_under_test(server, 2 * n, chunk)
    try:
        keys = [make_offload_key(hashlib.sha256(b"contract" + bytes([i])).digest(), 0) for i in range(n)]
        memory[:n] = np.random.default_rng(0).integers(0, 256, (n, chunk), dtype=np.uint8)
        ctx = ReqContext(req_id="r1")
        tier.submit_store(TransferJob(1, keys, np.arange(n), False, ctx))
        assert finished(tier, 1).success

        assert looked_up(tier, keys, ctx) == [LookupResult.HIT] * n
        # the server loses two blocks between the lookup and the load: the pin still has them
        for k in keys[2:4]:
            assert tier.client.delete(tier.block_key(k))
        tier.submit_load(TransferJob(2, keys, np.arange(n, 2 * n), True, ctx))
        result = finished(tier, 2)
        assert result.success and result.transfer_bytes == n * chunk
        assert np.array_equal(memory[n:], memory[:n])
        # all its blocks loaded, the pin is released
        assert wait_until(lambda: server_metrics(server)["kvcache_leases_open"] == 0)
        tier.on_request_finished(ctx)  # (vLLM keeps a key's answer while a request asking it lives)

        # blocks neither stored nor pinned: the load fails for them only, and they then miss
        absent = [make_offload_key(hashlib.sha256(b"absent" + bytes([i])).digest(), 0) for i in range(2)]
        ctx2 = ReqContext(req_id="r2")
        assert looked_up(tier, absent, ctx2) == [LookupResult.MISS] * 2
        tier.submit_load(TransferJob(3, keys[4:6] + absent, np.arange(4), True, ctx2))
        result = finished(tier, 3)
        assert not result.success and set(result.successful_keys) == set(keys[4:6])
        assert tier.lookup(absent[0], ctx2) is LookupResult.MISS

        # a request that ends before loading lets its pins go
        ctx3 = ReqContext(req_id="r3")
        assert looked_up(tier, keys[4:], ctx3) == [LookupResult.HIT] * (n - 4)
        assert server_metrics(server)["kvcache_leases_open"] >= 1
        tier.on_request_finished(ctx3)
        assert wait_until(lambda: server_metrics(server)["kvcache_leases_open"] == 0)
        tier.drain_jobs()
        assert not tier.has_pending_work()
    finally:
        tier.shutdown()


def test_tier_recomputes_what_is_estimated_faster_to_prefill_than_to_load(server):
    import hashlib

    import numpy as np
    from vllm.v1.kv_offload.base import LookupResult, ReqContext, make_offload_key
    from vllm.v1.kv_offload.tiering.base import TransferJob

    n, chunk = 4, 64 << 10
    keys = [make_offload_key(hashlib.sha256(b"prefill-or-load" + bytes([i])).digest(), 0)
            for i in range(n)]
    # an engine that prefills a token a second: loading 64 KiB chunks from RAM is faster
    slow, memory = tier_under_test(server, n, chunk, prefill_tokens_per_s=1.0)
    # an engine that prefills 10^15 tokens a second: nothing loads faster than that
    fast, _ = tier_under_test(server, n, chunk, prefill_tokens_per_s=1e15)
    try:
        memory[:] = np.random.default_rng(1).integers(0, 256, (n, chunk), dtype=np.uint8)
        slow.submit_store(TransferJob(1, keys, np.arange(n), False, ReqContext(req_id="store")))
        assert finished(slow, 1).success
        where = slow.client.locate_prefix([slow.block_key(k) for k in keys])
        assert where.present == n and where.load_s is not None

        assert looked_up(slow, keys, ReqContext(req_id="r1")) == [LookupResult.HIT] * n
        assert slow.recomputed_chunks == 0
        assert looked_up(fast, keys, ReqContext(req_id="r2")) == [LookupResult.MISS] * n
        assert fast.recomputed_chunks == n
        # the skipped lookup let go of its pin
        slow.on_request_finished(ReqContext(req_id="r1"))
        assert wait_until(lambda: server_metrics(server)["kvcache_leases_open"] == 0)
    finally:
        slow.shutdown()
        fast.shutdown()


def test_tier_events_name_what_it_stored_and_what_it_found_gone(server, caplog):
    import hashlib

    import numpy as np
    from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium, OffloadingEvent,
                                         ReqContext, make_offload_key)
    from vllm.v1.kv_offload.tiering.base import TransferJob

    from kvcache.integrations.vllm import _Events

    n, chunk = 4, 4096
    keys = [make_offload_key(hashlib.sha256(b"events" + bytes([i])).digest(), 0) for i in range(n)]
    tier, memory = tier_under_test(server, n, chunk, events=True, enable_kv_events=True)
    try:
        memory[:] = np.random.default_rng(2).integers(0, 256, (n, chunk), dtype=np.uint8)
        assert list(tier.take_events()) == []
        tier.submit_store(TransferJob(1, keys, np.arange(n), False, ReqContext(req_id="s1")))
        assert finished(tier, 1).success
        assert list(tier.take_events()) == [OffloadingEvent(
            keys=keys, medium=Medium.STORAGE, removed=False, locality=Locality.REMOTE,
            ownership="KvcacheTier")]
        assert list(tier.take_events()) == []  # taken
        # stored again: announced already
        tier.submit_store(TransferJob(2, keys, np.arange(n), False, ReqContext(req_id="s2")))
        assert finished(tier, 2).success
        assert list(tier.take_events()) == []

        # the server loses a block: the lookup that meets it reports it, and only it (the
        # keys past it are not known); a block this tier never stored is not reported
        assert tier.client.delete(tier.block_key(keys[1]))
        never = make_offload_key(hashlib.sha256(b"events-never").digest(), 0)
        assert looked_up(tier, keys, ReqContext(req_id="r1")) == (
            [LookupResult.HIT] + [LookupResult.MISS] * (n - 1))
        assert looked_up(tier, [never], ReqContext(req_id="r2")) == [LookupResult.MISS]
        [removed] = tier.take_events()
        assert (removed.keys, removed.removed, removed.medium) == ([keys[1]], True, Medium.STORAGE)
        tier.on_request_finished(ReqContext(req_id="r1"))

        # a server that does not answer says nothing of its blocks
        server.stop()
        try:
            assert looked_up(tier, keys[2:], ReqContext(req_id="r3")) == [LookupResult.MISS] * 2
            assert list(tier.take_events()) == []
        finally:
            server.start()
    finally:
        tier.shutdown()

    # with the engine's KV events off, the tier reports none, and says so
    quiet, _ = tier_under_test(server, n, chunk, events=False, enable_kv_events=True)
    try:
        assert list(quiet.take_events()) == []
        assert any("KV events are off" in r.getMessage() for r in caplog.records)
    finally:
        quiet.shutdown()

    # events nobody takes are bounded: the oldest are dropped
    events = _Events(Medium.STORAGE, Locality.REMOTE, "KvcacheTier", remembered=8, max_keys=4)
    for key in keys:
        events.stored([key, make_offload_key(key[:-4], 1)])
    assert [e.keys[0] for e in events.take()] == keys[2:] and events.dropped == 4


# -- damaged blocks ------------------------------------------------------------------------------

@contextlib.contextmanager
def serving(server, settings):
    """The engine's tier served, on the same port, by a server of other settings, then by the
    module's again (emptied by its restart)."""
    server.stop()
    other = KvServer(settings, port=server.port).start()
    try:
        yield other
    finally:
        other.stop()
        server.start()


def load_of_damaged_blocks(llm, p, first, found_by_lookup):
    """Runs ``p`` again, with the engine's own caches emptied, and checks that the tier loaded
    no block (they are damaged) and that the engine recomputed them to ``first``'s tokens; with
    ``found_by_lookup``, that its lookups found every block first."""
    forget(llm)
    hits = engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits")
    read = engine_metric(llm, "vllm:kv_offload_tiering_read_bytes")
    second, _ = run(llm, p)
    if found_by_lookup:
        assert engine_metric(llm, "vllm:kv_offload_tiering_chunk_hits") - hits == CHUNKS, \
            "the lookups found every block"
    assert engine_metric(llm, "vllm:kv_offload_tiering_read_bytes") == read, "none was loaded"
    assert second == first


def test_blocks_damaged_in_the_servers_memory_are_recomputed(llm, server, shm, caplog):
    p = prompt(4)
    first, _ = run_and_store(llm, server, p)
    assert damage_ram_files(shm)
    # the server finds nothing wrong (it does not check RAM on reads): the client does
    load_of_damaged_blocks(llm, p, first, found_by_lookup=True)
    assert any("twice: a miss" in r.getMessage() for r in caplog.records)
    server.restart()  # empty: no damaged block left for the next tests


def test_blocks_damaged_on_the_servers_disk_are_recomputed(llm, server, shm, tmp_path):
    disk = tmp_path / "disk"
    with serving(server, ram_only(**{"kvcache.cache.ram-shared-memory-dir": shm,
                                     "kvcache.cache.disk-dir": str(disk),
                                     "kvcache.cache.disk-capacity": "256MiB",
                                     "kvcache.cache.max-block-bytes": "8MiB"})) as on_disk:
        p = prompt(5)
        first, _ = run_and_store(llm, on_disk, p)
        on_disk.restart()  # RAM written to disk on the way down; the blocks are read from there
        damage_files(glob.glob(str(disk / "sb-*.kvsb")))
        # the disk tier checks each record as it reads it: a damaged one is dropped as a miss,
        # which its pinned lookup already meets
        load_of_damaged_blocks(llm, p, first, found_by_lookup=False)
        assert any("is damaged" in line for line in on_disk.log), "the disk tier found them"


def test_a_token_goes_beyond_loopback_in_cleartext_only_when_allowed(server):
    """The tier takes ``tls`` and ``allow_cleartext_token`` as the client does: a Kubernetes
    Service's DNS name needs one of them."""
    beyond = {"servers": ["10.1.2.3:7070"], "token": "t" * 40}
    with pytest.raises(Exception, match="cleartext"):
        tier_under_test(server, 2, 4096, **beyond)
    for way in ({"allow_cleartext_token": True}, {"tls": True}):
        tier, _ = tier_under_test(server, 2, 4096, **beyond, **way)
        tier.shutdown()
