"""kvcache-server as a secondary KV tier of vLLM's offloading connector, loaded by vLLM's tiering
spec from ``module_path``; importable where vLLM is installed (``pip install "kvcache[vllm]"``)::

    vllm serve MODEL --kv-transfer-config '{"kv_connector": "OffloadingConnector",
        "kv_role": "kv_both", "kv_connector_extra_config": {
            "spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": 8589934592,
            "secondary_tiers": [{"type": "KvcacheTier", "module_path": "kvcache.integrations.vllm",
                                 "servers": ["127.0.0.1:7070"]}]}}'

The other keys of the tier's entry are :class:`KvcacheTier`'s arguments. The former
``module_path`` ``kvcache.vllm`` loads the same class. See ``docs/engines.md``.

With ``"enable_kv_events": true`` in the tier's entry and the engine's KV events on
(``--kv-events-config``), the tier reports the blocks it stored on kvcache-server and those it
found gone there, which vLLM publishes as ``BlockStored`` and ``BlockRemoved`` events of medium
``STORAGE`` (:meth:`KvcacheTier.take_events`). Each block the tier stores also carries its name
as vLLM's events give it (``engine_names``), so that a server with KV events of its own
(``kvcache.events.endpoint``) tells routers where it holds the block, and answers a lookup by
vLLM's block hashes.
"""
from __future__ import annotations

import logging
import os
import queue
import sys
import threading
import time
from collections import OrderedDict, defaultdict, deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Callable, ClassVar, Iterable, List, Optional, Sequence, Union

from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium, OffloadingEvent, OffloadKey,
                                     ReqContext, RequestOffloadingContext, ScheduleEndContext,
                                     get_offload_block_hash, get_offload_group_idx)
from vllm.v1.kv_offload.tiering.async_lookup import AsyncLookupManager
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager, TransferJob

from ._prefill import LoadOrPrefill
from ._vllm_pins import LookupPins, release_pins
from .. import (BlockKey, Client, EngineBlock, KvCacheError, Namespace, Pin, PrefixLocation,
               PutStatus, RequestError)

__all__ = ["KvcacheTier"]

log = logging.getLogger("kvcache.vllm")

_PIN_KEYS = 4096  # keys a pinned lookup takes per server

#: A load or store of a job's chunks: whether each key's chunk moved.
_Transfer = Callable[[TransferJob, List[OffloadKey]], List[bool]]

#: Keys the tier's events not yet taken by vLLM may name; past that the oldest events are dropped.
_EVENT_KEYS = 1 << 16


class KvcacheTier(SecondaryTierManager):  # type: ignore[misc]
    """A secondary tier of vLLM's ``TieringOffloadingSpec`` over kvcache-server.

    vLLM calls every method on its scheduler thread; none of them waits on the network. Lookups
    are batched per step and request, answered on a lookup thread by a pinned prefix lookup (so
    that the load that follows cannot miss: the server holds the blocks for ``pin_ms`` or until
    they are loaded or the request ends), and answered "retry" until then. Loads and stores run
    on ``workers`` threads, each one a batch of the client's, reading and writing the host tier's
    chunks in place.

    Keys: vLLM's offload key (the block hash and the KV group) under a :class:`kvcache.Namespace`
    of the model, the KV dtype and a layout naming the parallel topology, the tokens per hash and
    chunk and the chunk's size in bytes, so that engines of one model and layout share blocks and
    no two layouts ever do.

    Args:
        servers: ``host:port`` of each server (or ``dns``: ``name:port``).
        namespace: the server namespace.
        token: bearer token (default: ``KVCACHE_TOKEN`` from the environment).
        tenant: salts every key.
        workers: load and store jobs under way at once.
        pin_ms: how long a lookup's pin holds its blocks at most (1 to 60 000).
        timeout: seconds a request may wait on the socket.
        ca_file: trusted certificates for ``https://`` servers.
        dns: a DNS name whose addresses are the servers.
        tls: whether to speak TLS to the servers (default: as their ``https://`` scheme says;
            with ``dns``, False unless set).
        allow_cleartext_token: send the token over plain HTTP to servers beyond loopback, on a
            network that is private by other means (refused otherwise).
        locality: ``REMOTE`` (the default) or ``LOCAL``, for vLLM's KV events and tier filters.
        switch_interval: the interpreter's GIL switch interval in seconds that the tier sets
            for the whole engine process (:func:`sys.setswitchinterval`; Python's own is 0.005);
            0 leaves it alone. While a request waits for its blocks, vLLM's engine loop keeps the
            GIL busy, and each socket call of the tier's threads waits up to the interval to get
            it back: with 0.0002, blocks load 11x faster (``docs/engines.md``).
        prefill_tokens_per_s: the engine's prefill speed in tokens per second, to load only what
            is faster to load than to recompute: a lookup whose blocks the servers estimate
            (:meth:`kvcache.Client.locate_prefix`), plus their bytes at the speed of this tier's
            recent loads, would take longer to load than to prefill answers MISS for them. 0 (the
            default) always loads.
        shared_memory: with a server on this host, load without the socket: the server writes
            pinned chunks straight into the host tier's file (:meth:`kvcache.Pin.copy_into`),
            or the tier copies them out of the server's RAM when it is in shared memory. False
            reads everything through the socket.
        server_copies: with ``shared_memory``, whether the server writes chunks into the host
            tier (True, the default) or the tier copies them itself out of the server's shared
            memory (False; as before the server could write them).
        enable_kv_events: report KV events (:meth:`take_events`), as vLLM's own storage tiers
            take the same option: effective only with the engine's KV events on
            (``kv_events_config.enable_kv_cache_events``).
        event_blocks: how many of the blocks it stored the tier remembers, to report their loss
            (the least recently stored are forgotten first; about 200 bytes each).
        engine_names: send each chunk of KV group 0 it stores with its name as vLLM's KV events
            give it (:class:`kvcache.EngineBlock`): the model (vLLM's ``--model``), the chunk's block
            hash in its 64-bit form, the tokens per chunk, and the parent chunk's hash when the
            same store carries it (vLLM gives the tier no token ids). A server with KV events
            tells routers of the chunk by that name, and a lookup by vLLM's hashes finds it
            (``docs/routing.md``); a server without ignores it. Chunks of other groups carry the
            same hashes and go unnamed.
    """

    medium: ClassVar[Medium] = Medium.STORAGE

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 servers: Union[str, Sequence[str], None] = None, namespace: str = "default",
                 token: Optional[str] = None, tenant: str = "", workers: int = 4,
                 pin_ms: int = 30_000, timeout: float = 30.0, ca_file: Optional[str] = None,
                 dns: Optional[str] = None, tls: Optional[bool] = None,
                 allow_cleartext_token: bool = False, locality: str = "REMOTE",
                 switch_interval: float = 0.0002, prefill_tokens_per_s: float = 0.0,
                 shared_memory: bool = True, server_copies: bool = True,
                 enable_kv_events: bool = False, event_blocks: int = 1 << 18,
                 engine_names: bool = True, backpressure_detector: Any = None) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        if not 1 <= pin_ms <= 60_000:
            raise ValueError(f"pin_ms must be 1 to 60000, got {pin_ms}")
        if isinstance(servers, str):
            servers = [s for s in servers.split(",") if s]
        self.locality = Locality(locality)
        if switch_interval < 0:
            raise ValueError(f"switch_interval must be 0 or more, got {switch_interval}")
        if switch_interval:
            sys.setswitchinterval(switch_interval)
        self.client = Client(servers if dns is None else None, namespace=namespace,
                             token=token or os.environ.get("KVCACHE_TOKEN"), timeout=timeout,
                             ca_file=ca_file, dns=dns, tls=tls,
                             allow_cleartext_token=allow_cleartext_token,
                             max_workers=max(4, workers), shared_memory=shared_memory)
        self.server_copies = server_copies
        self.key_namespace = key_namespace(offloading_spec.config, self.block_size_bytes, tenant)
        self.pin_ms = pin_ms
        cache = offloading_spec.config.cache
        self.tokens_per_chunk = int(cache.tokens_per_hash) * int(cache.blocks_per_chunk)
        self.load_or_prefill = LoadOrPrefill(prefill_tokens_per_s, self.tokens_per_chunk)
        self._bytes = primary_kv_view.cast("B")
        self._jobs = ThreadPoolExecutor(workers, thread_name_prefix="kvcache-vllm")
        self._pending: set[Future[None]] = set()
        self._pending_lock = threading.Lock()
        self._finished: queue.SimpleQueue[_Finished] = queue.SimpleQueue()
        self._pins = LookupPins()
        if event_blocks < 1:
            raise ValueError(f"event_blocks must be 1 or more, got {event_blocks}")
        #: The tier's KV events, or None when it reports none.
        self._events: Optional[_Events] = None
        if enable_kv_events:
            config = getattr(offloading_spec, "kv_events_config", None)
            if config is not None and config.enable_kv_cache_events:
                self._events = _Events(self.medium, self.locality, tier_type, event_blocks)
            else:
                log.warning("kvcache: enable_kv_events is set on tier %r but the engine's KV "
                            "events are off (kv_events_config): it reports none", tier_type)
        #: The model the names of the stored chunks give; None when they go unnamed.
        self._engine_model = _model_name(offloading_spec.config) if engine_names else None
        self._lookups = _PinnedLookup(self, tier_type)

    # -- keys ---------------------------------------------------------------------------------

    def block_key(self, key: OffloadKey) -> BlockKey:
        """The kvcache key of a vLLM offload key."""
        return BlockKey.of_raw(self.key_namespace, bytes(key))

    def _chunk(self, chunk_id: Any) -> memoryview:
        start = int(chunk_id) * self.block_size_bytes
        return self._bytes[start:start + self.block_size_bytes]

    # -- the scheduler's calls ----------------------------------------------------------------

    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        """HIT, MISS, or RETRY while the request's lookup is under way."""
        found = self._lookups.lookup(key, req_context)
        if found is None:
            return LookupResult.RETRY
        return LookupResult.HIT if found else LookupResult.MISS

    def on_schedule_end(self, context: ScheduleEndContext) -> None:
        self._lookups.flush()

    def submit_store(self, job_metadata: TransferJob) -> None:
        self._submit(job_metadata, self._store)

    def submit_load(self, job_metadata: TransferJob) -> None:
        self._submit(job_metadata, self._load)

    def get_finished_jobs(self) -> Iterable[JobResult]:
        done: list[JobResult] = []
        while True:
            try:
                finished = self._finished.get_nowait()
            except queue.Empty:
                return done
            if finished.failed:
                self._lookups.mark_miss(finished.failed)
            if self._events is not None:
                self._events.stored(finished.stored)
                self._events.lost(finished.lost)
            done.append(finished.result)

    def take_events(self) -> Iterable[OffloadingEvent]:
        """The KV events since the last call, oldest first, with ``enable_kv_events`` and the
        engine's KV events on (none otherwise). vLLM's connector takes them on its scheduler
        thread each step and publishes them (``BlockStored``, ``BlockRemoved``), as it does its
        host tier's.

        Each event names vLLM offload keys (a chunk's last block hash and its KV group), with
        medium ``STORAGE``, the tier's ``locality``, and as ``ownership`` the tier's type (its
        entry's ``type``):

        * stored (``removed=False``): the blocks of a store job that the server acknowledged
          (``PutStatus.STORED``), once vLLM learns the job is done (:meth:`get_finished_jobs`);
          a block already announced and not since reported lost is not announced again.
        * removed (``removed=True``): blocks this tier stored and announced that it then found
          gone: a lookup whose server answered that it does not hold the first block past the
          prefix found (only that one is known: a lookup stops there), or a load of a block that
          the server answered missing, or that arrived damaged twice, or in another size. A
          server that does not answer (down, failing) reports nothing lost.

        Nothing is reported for blocks the servers evict on their own, which the tier does not
        learn of until a lookup or load meets them gone. The tier remembers the last
        ``event_blocks`` blocks it stored, and reports the loss only of those. Events vLLM does
        not take are bounded: past 65 536 keys the oldest are dropped (:attr:`events_dropped`
        counts their keys)."""
        if self._events is None:
            return ()
        return self._events.take()

    @property
    def events_dropped(self) -> int:
        """Keys of KV events dropped as vLLM did not take them (:meth:`take_events`)."""
        return self._events.dropped if self._events is not None else 0

    def has_pending_work(self) -> bool:
        with self._pending_lock:
            return bool(self._pending)

    def on_request_finished(self, req_context: ReqContext) -> None:
        self._lookups.cleanup(req_context.req_id)
        pins = self._pins.end_request(req_context.req_id)
        if pins:
            self._jobs.submit(release_pins, pins)

    def drain_jobs(self) -> None:
        with self._pending_lock:
            pending = list(self._pending)
        wait(pending)

    def shutdown(self) -> None:
        self._lookups.shutdown()
        self._jobs.shutdown(wait=True)
        release_pins(self._pins.end_all())
        self.client.close()
        self._bytes.release()  # lets vLLM unmap the host tier

    # -- the worker threads -------------------------------------------------------------------

    def _submit(self, job: TransferJob, run: _Transfer) -> None:
        future = self._jobs.submit(self._run, job, run)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._pending_lock:
            self._pending.discard(future)

    def _run(self, job: TransferJob, run: _Transfer) -> None:
        keys = list(job.keys)
        start = time.monotonic()
        raised = False
        try:
            ok: list[bool] = run(job, keys)
        except Exception as e:  # any failure of the job is a failed job, never a lost one
            log.warning("kvcache: %s of %d blocks failed: %s",
                        "load" if job.is_promotion else "store", len(keys), e)
            ok = [False] * len(keys)
            raised = True
        done = [k for k, good in zip(keys, ok) if good]
        elapsed = time.monotonic() - start
        if job.is_promotion:
            self.load_or_prefill.loaded(len(done), elapsed)
        failed = [k for k, good in zip(keys, ok) if not good] if job.is_promotion else []
        result = JobResult(job_id=job.job_id, success=all(ok),
                           successful_keys=tuple(done) if failed and done else None,
                           transfer_time=elapsed,
                           transfer_bytes=len(done) * self.block_size_bytes)
        stored: list[OffloadKey] = []
        lost: list[OffloadKey] = []
        if self._events is not None:
            if not job.is_promotion:
                stored = done
            elif not raised:  # a load that failed by an error says nothing of its blocks
                lost = [k for k in failed if self.client.answering(self.block_key(k))]
        self._finished.put(_Finished(result, failed, stored, lost))

    @property
    def recomputed_chunks(self) -> int:
        """Chunks found but recomputed, as loading them was estimated slower."""
        return self.load_or_prefill.recomputed

    def _store(self, job: TransferJob, keys: list[OffloadKey]) -> list[bool]:
        names = self._engine_blocks(job, keys)
        statuses = self.client.put_many(
            (self.block_key(k), self._chunk(c), n) for k, c, n in zip(keys, job.chunk_ids, names))
        return [s is PutStatus.STORED for s in statuses]

    def _engine_blocks(self, job: TransferJob, keys: list[OffloadKey]) -> list[Optional[EngineBlock]]:
        """The names of a store's chunks (``engine_names``): for group 0's, the 64-bit form of
        the block hash, as vLLM's KV events carry it, with the tokens per chunk, and as parent
        the chunk whose end token (as the scheduler recorded it) is a chunk before this one's,
        if the store carries it."""
        if self._engine_model is None:
            return [None] * len(keys)
        context = job.req_context
        ends = {}
        for k in keys:
            end = context.get_offload_key_position(k) if get_offload_group_idx(k) == 0 else None
            if end is not None:
                ends[k] = end
        by_end = {end: k for k, end in ends.items()}
        names: list[Optional[EngineBlock]] = []
        for k in keys:
            if get_offload_group_idx(k) != 0:
                names.append(None)
                continue
            parent = by_end.get(ends[k] - self.tokens_per_chunk) if k in ends else None
            names.append(EngineBlock(
                self._engine_model, EngineBlock.hash_of(get_offload_block_hash(k)),
                parent=None if parent is None else EngineBlock.hash_of(
                    get_offload_block_hash(parent)),
                block_size=self.tokens_per_chunk))
        return names

    def _load(self, job: TransferJob, keys: list[OffloadKey]) -> list[bool]:
        """Reads each chunk into its slot. A chunk whose lookup pinned it on a server on this host
        is written into the host tier's file by that server, one request per pin (no copy in this
        process, so no interpreter lock held while it moves); failing that, it is copied straight
        out of the server's shared memory through the pin where the pin offers it. The others
        are read by batch GETs, and a chunk those miss (evicted since its lookup) from its pin
        through the socket. A block of the wrong size is a miss."""
        size = self.block_size_bytes
        slots = [self._chunk(c) for c in job.chunk_ids]
        held = [self._pins.take(key) for key in keys]
        ok = [False] * len(keys)
        by_pin: dict[Pin, list[int]] = {}
        for i, h in enumerate(held):
            if h is not None and self.server_copies:
                by_pin.setdefault(h[0], []).append(i)
        for pin, idx in by_pin.items():
            got = pin.copy_into([held[i][1] for i in idx], [slots[i] for i in idx])  # type: ignore[index]
            for i, n in zip(idx, got):
                ok[i] = n == size
        for i, h in enumerate(held):
            if not ok[i] and h is not None and h[0].in_shared_memory_at(h[1]):
                ok[i] = h[0].get_into(h[1], slots[i]) == size
        rest = [i for i in range(len(keys)) if not ok[i]]
        if rest:
            got = self.client.get_many_into([self.block_key(keys[i]) for i in rest],
                                            [slots[i] for i in rest])
            for i, n in zip(rest, got):
                ok[i] = n == size
                h = held[i]
                if not ok[i] and h is not None and not h[0].in_shared_memory_at(h[1]):
                    ok[i] = h[0].get_into(h[1], slots[i]) == size
        release_pins(self._pins.spent())
        return ok


class _PinnedLookup(AsyncLookupManager):  # type: ignore[misc]
    """vLLM's asynchronous lookup, each step's keys of a request asked as one pinned prefix
    lookup per KV group (vLLM asks a group's keys in order; a sliding-window group from its
    end)."""

    def __init__(self, tier: KvcacheTier, tier_type: str) -> None:
        self._tier = tier
        super().__init__(tier_type=tier_type)

    def batch_lookup(self, keys: list[OffloadKey], req_context: ReqContext) -> list[bool]:
        by_group: dict[bytes, list[int]] = defaultdict(list)
        for i, key in enumerate(keys):
            by_group[bytes(key[-4:])].append(i)
        found = [False] * len(keys)
        for idx in by_group.values():
            for start in range(0, len(idx), _PIN_KEYS):
                run = idx[start:start + _PIN_KEYS]
                present = self._pinned(req_context.req_id, [keys[i] for i in run])
                for i in run[:present]:
                    found[i] = True
                if present < len(run):
                    break
        return found

    def _pinned(self, req_id: str, keys: list[OffloadKey]) -> int:
        client = self._tier.client
        block_keys = [self._tier.block_key(k) for k in keys]
        try:
            pin = client.pin_prefix(block_keys, self._tier.pin_ms)
        except RequestError as e:  # too many pins open on a server: look up without one
            log.warning("kvcache: lookup without a pin: %s", e)
            where = client.locate_prefix(block_keys)
            self._lost_past(keys, where.present)
            return 0 if self._recomputed(where) else where.present
        except KvCacheError as e:
            log.warning("kvcache: lookup of %d blocks failed: %s", len(keys), e)
            return 0
        self._lost_past(keys, pin.present)
        if self._recomputed(pin.location):
            pin.release()
            return 0
        if pin.present == 0:
            pin.release()
        else:
            self._tier._pins.add(req_id, keys[:pin.present], pin)
        return pin.present

    def _lost_past(self, keys: list[OffloadKey], present: int) -> None:
        """After a lookup of ``keys`` that found the first ``present``: the key past them is gone
        from its server if that server answered (it said it does not hold the block), and is
        reported lost if this tier had stored it. The keys after it are not known."""
        events = self._tier._events
        if events is not None and present < len(keys):
            key = keys[present]
            if self._tier.client.answering(self._tier.block_key(key)):
                events.lost([key])

    def _recomputed(self, location: PrefixLocation) -> bool:
        """Whether the chunks found are left to prefill, as loading them is estimated slower."""
        return self._tier.load_or_prefill.to_load(location) == 0 and location.present > 0


class _Finished:
    """A finished job as the worker thread hands it to the scheduler thread: its result, the keys
    it failed to load, and for the tier's events the keys it stored and those it found lost."""

    __slots__ = ("result", "failed", "stored", "lost")

    def __init__(self, result: JobResult, failed: list[OffloadKey], stored: list[OffloadKey],
                 lost: list[OffloadKey]) -> None:
        self.result = result
        self.failed = failed
        self.stored = stored
        self.lost = lost


class _Events:
    """A tier's KV events (vLLM's ``OffloadingEvent``), queued until vLLM takes them, and the
    blocks the tier stored, the last ``remembered`` of them, whose loss it may report.
    Thread-safe: stores and load failures are reported on vLLM's scheduler thread, lookups' finds
    on the lookup thread, and vLLM takes the events on its scheduler thread."""

    def __init__(self, medium: Medium, locality: Optional[Locality], ownership: str,
                 remembered: int, max_keys: int = _EVENT_KEYS) -> None:
        self._medium = medium
        self._locality = locality
        self._ownership = ownership
        self._remembered = remembered
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._held: OrderedDict[OffloadKey, None] = OrderedDict()  # least recently stored first
        self._queue: deque[OffloadingEvent] = deque()
        self._queued = 0  # keys the queued events name
        #: Keys of events dropped as they were not taken.
        self.dropped = 0

    def stored(self, keys: Iterable[OffloadKey]) -> None:
        """The server acknowledged these blocks: announced unless announced already."""
        with self._lock:
            new = []
            for key in keys:
                if key in self._held:
                    self._held.move_to_end(key)
                else:
                    self._held[key] = None
                    new.append(key)
            while len(self._held) > self._remembered:
                self._held.popitem(last=False)
            if new:
                self._add(new, removed=False)

    def lost(self, keys: Iterable[OffloadKey]) -> None:
        """These blocks are gone from the servers: reported for those stored and remembered."""
        with self._lock:
            gone = [key for key in keys if self._held.pop(key, 0) is None]
            if gone:
                self._add(gone, removed=True)

    def take(self) -> list[OffloadingEvent]:
        with self._lock:
            events = list(self._queue)
            self._queue.clear()
            self._queued = 0
            return events

    def _add(self, keys: list[OffloadKey], removed: bool) -> None:
        self._queue.append(OffloadingEvent(keys=keys, medium=self._medium, removed=removed,
                                           locality=self._locality, ownership=self._ownership))
        self._queued += len(keys)
        while self._queued > self._max_keys and len(self._queue) > 1:
            old = self._queue.popleft()
            self._queued -= len(old.keys)
            if not self.dropped:
                log.warning("kvcache: KV events are not being taken; dropping the oldest")
            self.dropped += len(old.keys)


def _model_name(config: Any) -> Optional[str]:
    """The model's name for the chunks' names: the model vLLM's offloading config names (the
    engine's ``--model``); None, with a warning, if it cannot be one (empty, or with ``@``, which
    the events' topic uses)."""
    name = str(config.model.name)
    if not name or "@" in name:
        log.warning("kvcache: the model name %r cannot name blocks for KV events; the tier's "
                    "chunks go unnamed", name)
        return None
    return name


def key_namespace(config: Any, chunk_bytes: int, tenant: str = "") -> Namespace:
    """The key namespace of an engine: its model and KV dtype, and as layout the parallel
    topology (tensor, pipeline, prefill- and decode-context parallel sizes, or ``agnostic`` where
    vLLM says the bytes are the same under any), the KV layout, the tokens per hash, the blocks
    per chunk and the chunk's size in bytes."""
    p = config.parallel
    topology = ("agnostic" if p.is_parallelism_agnostic
                else f"tp{p.tp_size}pp{p.pp_size}pcp{p.pcp_size}dcp{p.dcp_size}")
    if config.replicated_layout:
        topology += "-replicated"
    layout = "/".join(["vllm", topology, str(config.kv_cache_layout or "default"),
                       "canonical" if config.canonical_layout else "direct",
                       f"hash{config.cache.tokens_per_hash}",
                       f"chunk{config.cache.blocks_per_chunk}x{chunk_bytes}"])
    return Namespace(config.model.name, str(config.model.dtype), layout, tenant)
