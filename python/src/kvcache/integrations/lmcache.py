"""kvcache-server as a tier of LMCache, in both of its deployments; importable where LMCache is
installed (``pip install "kvcache[lmcache]"``).

In LMCache's multiprocess server, as an L2 adapter (:class:`KvcacheNativeConnector`)::

    lmcache server --l1-size-gb 8 --l2-adapter '{"type": "native_plugin",
        "module_path": "kvcache.integrations.lmcache", "class_name": "KvcacheNativeConnector",
        "adapter_params": {"servers": ["127.0.0.1:7070"]}}'

In process (LMCache inside vLLM through ``LMCacheConnectorV1``), as a remote storage plugin
(:class:`KvcacheConnectorAdapter`), in LMCache's configuration file::

    remote_storage_plugins: ["kvcache"]
    extra_config:
      remote_storage_plugin.kvcache.module_path: kvcache.integrations.lmcache
      remote_storage_plugin.kvcache.class_name: KvcacheConnectorAdapter
      remote_storage_plugin.kvcache.servers: 127.0.0.1:7070

The former ``module_path`` ``kvcache.lmcache`` loads the same classes. See ``docs/engines.md``.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, Tuple, TypeVar, Union

from lmcache.v1.storage_backend.connector import ConnectorAdapter, ConnectorContext
from lmcache.v1.storage_backend.connector.base_connector import RemoteConnector

from ._prefill import LoadOrPrefill
from .. import BlockKey, Client, KvCacheError, Namespace, PutStatus

__all__ = ["KvcacheNativeConnector", "KvcacheConnectorAdapter", "KvcacheRemoteConnector"]

log = logging.getLogger("kvcache.lmcache")

Completion = Tuple[int, bool, str, Optional[List[bool]]]


class KvcacheNativeConnector:
    """LMCache's native connector protocol over kvcache-server: batch get, set, exists and
    delete run on worker threads and complete through an event fd, which LMCache's bridge polls.

    Keys: LMCache names an object ``model@rank@group@chunk-hash[@salt]``; the block key is
    :meth:`kvcache.BlockKey.of_raw` of that string under ``Namespace("lmcache", "any", "mp-l2",
    tenant)`` (the model and rank are in the name). ``exists`` answers with one prefix lookup per
    run of keys of one model, rank and group, as LMCache asks in chunk order.

    Args:
        servers: ``host:port`` of each server (or ``dns``: ``name:port``).
        namespace: the server namespace.
        token: bearer token (default: ``KVCACHE_TOKEN`` from the environment).
        tenant: salts every key.
        workers: batches under way at once.
        timeout: seconds a request may wait on the socket.
        ca_file: trusted certificates for ``https://`` servers.
        dns: a DNS name whose addresses are the servers.
        tls: whether to speak TLS to the servers (default: as their ``https://`` scheme says;
            with ``dns``, False unless set).
        allow_cleartext_token: send the token over plain HTTP to servers beyond loopback, on a
            network that is private by other means (refused otherwise).
        prefill_tokens_per_s: the engine's prefill speed in tokens per second: ``exists``
            answers False for the chunks a lookup found when the servers' read estimate plus the
            chunks at this connector's recent load speed would take longer than prefilling their
            tokens (``docs/engines.md``, "Loading or recomputing"). 0 (the default) always loads.
        tokens_per_chunk: the tokens of one of LMCache's chunks (its ``chunk_size``, 256).
    """

    def __init__(self, servers: Union[str, Sequence[str], None] = None, namespace: str = "default",
                 token: Optional[str] = None, tenant: str = "", workers: int = 4,
                 timeout: float = 30.0, ca_file: Optional[str] = None,
                 dns: Optional[str] = None, tls: Optional[bool] = None,
                 allow_cleartext_token: bool = False, prefill_tokens_per_s: float = 0.0,
                 tokens_per_chunk: int = 256) -> None:
        self.load_or_prefill = LoadOrPrefill(prefill_tokens_per_s, tokens_per_chunk)
        self.client = Client(servers, namespace=namespace,
                             token=token or os.environ.get("KVCACHE_TOKEN"), timeout=timeout,
                             ca_file=ca_file, dns=dns, tls=tls,
                             allow_cleartext_token=allow_cleartext_token, max_workers=workers)
        self.key_namespace = Namespace("lmcache", "any", "mp-l2", tenant)
        self._efd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._workers = ThreadPoolExecutor(workers, "kvcache-lmcache")
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._done: List[Completion] = []
        self._closed = False

    # -- the protocol -------------------------------------------------------------------------

    def event_fd(self) -> int:
        """Readable when completions wait in :meth:`drain_completions`."""
        return self._efd

    def submit_batch_get(self, keys: List[str], memoryviews: List[memoryview]) -> int:
        """Reads each key's block into its memoryview; a key counts as loaded only if its block
        fills the memoryview exactly."""
        return self._submit(self._get, keys, memoryviews)

    def submit_batch_set(self, keys: List[str], memoryviews: List[memoryview]) -> int:
        """Stores each memoryview under its key. LMCache reads only the batch's success: it is a
        success only if every block was stored."""
        return self._submit(self._set, keys, memoryviews)

    def submit_batch_exists(self, keys: List[str]) -> int:
        """Which keys are stored (a prefix lookup per run of one model, rank and group)."""
        return self._submit(self._exists, keys)

    def submit_batch_delete(self, keys: List[str]) -> int:
        """Deletes each key's block."""
        return self._submit(self._delete, keys)

    def drain_completions(self) -> List[Completion]:
        """The completions since the last call: ``(future_id, ok, error, per-key results)``."""
        try:
            os.eventfd_read(self._efd)
        except BlockingIOError:
            pass
        with self._lock:
            done, self._done = self._done, []
        return done

    def close(self) -> None:
        """Waits for the batches under way, then closes the connections and the event fd."""
        if self._closed:
            return
        self._closed = True
        self._workers.shutdown(wait=True)
        self.client.close()
        os.close(self._efd)

    # -- work ---------------------------------------------------------------------------------

    def _submit(self, fn: Callable[..., List[bool]], *args: Any) -> int:
        if self._closed:
            raise RuntimeError("the connector is closed")
        future_id = next(self._ids)
        self._workers.submit(self._run, future_id, fn, *args)
        return future_id

    def _run(self, future_id: int, fn: Callable[..., List[bool]], *args: Any) -> None:
        try:
            results = fn(*args)
            ok = all(results) if fn == self._set else True
            completion: Completion = (future_id, ok, "" if ok else "not every block was stored",
                                      results)
        except (KvCacheError, ValueError, TypeError) as e:
            log.warning("kvcache: batch %d failed: %s", future_id, e)
            completion = (future_id, False, str(e), None)
        with self._lock:
            self._done.append(completion)
        os.eventfd_write(self._efd, 1)

    def _keys(self, keys: List[str]) -> List[BlockKey]:
        return [BlockKey.of_raw(self.key_namespace, k) for k in keys]

    def _get(self, keys: List[str], views: List[memoryview]) -> List[bool]:
        got = self.load_or_prefill.get_many_into(self.client, self._keys(keys), views)
        return [n == len(v) for n, v in zip(got, views)]

    def _set(self, keys: List[str], views: List[memoryview]) -> List[bool]:
        statuses = self.client.put_many(zip(self._keys(keys), views))
        return [s is PutStatus.STORED for s in statuses]

    def _exists(self, keys: List[str]) -> List[bool]:
        found = [False] * len(keys)
        start = 0
        while start < len(keys):  # runs of one model, rank and group, in chunk order
            row = _row(keys[start])
            end = start + 1
            while end < len(keys) and _row(keys[end]) == row:
                end += 1
            where = self.client.locate_prefix(self._keys(keys[start:end]))
            present = self.load_or_prefill.to_load(where)
            found[start:start + present] = [True] * present
            start = end
        return found

    def _delete(self, keys: List[str]) -> List[bool]:
        out = []
        for key in self._keys(keys):
            try:
                out.append(self.client.delete(key))
            except KvCacheError:
                out.append(False)
        return out


def _row(key: str) -> str:
    """``model@rank@group`` of an LMCache object name (a model name has no ``@``)."""
    return "@".join(key.split("@", 3)[:3])


# -- in process: a remote storage plugin -----------------------------------------------------

T = TypeVar("T")

_PLUGIN = "kvcache"
def _flag(value: Any) -> bool:
    """A yes-or-no option as LMCache's configuration holds it: a bool, or its text."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(value)


_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "servers": str, "dns": str, "namespace": str, "token": str, "tenant": str, "workers": int,
    "timeout": float, "ca_file": str, "tls": _flag, "allow_cleartext_token": _flag,
    "prefill_tokens_per_s": float}


class KvcacheConnectorAdapter(ConnectorAdapter):  # type: ignore[misc]
    """What LMCache's connector manager loads from ``remote_storage_plugin.<name>.class_name``:
    it makes a :class:`KvcacheRemoteConnector` for the plugin ``kvcache`` (or ``kvcache.<any>``,
    for several servers' sets)."""

    def __init__(self) -> None:
        super().__init__(f"plugin://{_PLUGIN}")

    def can_parse(self, url: str) -> bool:
        name = url[len("plugin://"):] if url.startswith("plugin://") else ""
        return name.split(".", 1)[0] == _PLUGIN

    def create_connector(self, context: ConnectorContext) -> RemoteConnector:
        return KvcacheRemoteConnector(context)


class KvcacheRemoteConnector(RemoteConnector):  # type: ignore[misc]
    """LMCache's remote connector over kvcache-server. Blocks hold a chunk's KV bytes as LMCache's
    memory object has them; a partial last chunk is a shorter block, its token count given by its
    length. LMCache calls the ``async`` methods on its storage event loop: the client's blocking
    calls run on ``workers`` threads instead, and a get reads straight into the memory object it
    allocates.

    Its options are ``remote_storage_plugin.<plugin name>.<option>`` keys of LMCache's
    ``extra_config``: ``servers`` (``host:port``, comma-separated), or ``dns``; ``namespace``;
    ``token`` (default: ``KVCACHE_TOKEN`` from the environment); ``tenant``; ``workers`` (4);
    ``timeout``; ``ca_file``; ``tls`` and ``allow_cleartext_token`` (``true`` or ``false``);
    ``prefill_tokens_per_s`` (0: always load), with which a lookup answers no chunks when the
    servers' read estimate plus the chunks at this connector's recent load speed would take longer
    than prefilling their tokens (LMCache's ``chunk_size`` each; ``docs/engines.md``, "Loading or
    recomputing").

    Keys: :meth:`kvcache.BlockKey.of_raw` of LMCache's key string (model, world size, worker,
    chunk hash, dtype) under ``Namespace("lmcache", <dtype and chunk shape>, "inproc", tenant)``.
    """

    def __init__(self, context: ConnectorContext) -> None:
        backend = context.local_cpu_backend
        config = context.config or backend.config
        super().__init__(config, context.metadata or backend.metadata)
        prefix = f"remote_storage_plugin.{context.plugin_name or _PLUGIN}."
        extra = dict(config.extra_config or {})
        options: dict[str, Any] = {}
        for name, kind in _OPTIONS.items():
            if prefix + name in extra:
                try:
                    options[name] = kind(extra[prefix + name])
                except ValueError:
                    what = "true or false" if kind is _flag else f"a {getattr(kind, '__name__')}"
                    raise ValueError(f"{prefix}{name}: {extra[prefix + name]!r} is not "
                                     f"{what}") from None
        servers = [s.strip() for s in options.pop("servers", "").split(",") if s.strip()]
        workers = options.pop("workers", 4)
        tenant = options.pop("tenant", "")
        token = options.pop("token", None) or os.environ.get("KVCACHE_TOKEN")
        self.load_or_prefill = LoadOrPrefill(options.pop("prefill_tokens_per_s", 0.0),
                                             int(config.chunk_size))
        self.client = Client(servers or None, token=token, max_workers=workers, **options)
        self.loop = context.loop
        self.local_cpu_backend = backend
        shape = ";".join(f"{tuple(sh)}:{dt}" for sh, dt in zip(self.meta_shapes, self.meta_dtypes))
        self.key_namespace = Namespace("lmcache", f"{shape}:{self.meta_fmt.name}", "inproc",
                                       tenant)
        self._io = ThreadPoolExecutor(workers, "kvcache-lmcache-io")

    # -- helpers ------------------------------------------------------------------------------

    def _key(self, key: Any) -> BlockKey:
        return BlockKey.of_raw(self.key_namespace, key.to_string())

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._io, fn, *args)

    def _allocate(self) -> Any:
        # not busy_loop: waiting for memory here would stall LMCache's storage event loop
        return self.local_cpu_backend.allocate(self.meta_shapes, self.meta_dtypes, self.meta_fmt,
                                               busy_loop=False)

    def _filled(self, obj: Any, length: Optional[int]) -> Any:
        """``obj`` cut to the ``length`` bytes read, or None (and ``obj`` let go) on a miss."""
        if length is None or length == 0:
            obj.ref_count_down()
            return None
        try:
            return self.reshape_partial_chunk(obj, length)
        except ValueError as e:  # a block that is no whole number of tokens
            log.warning("kvcache: a block of %d bytes is not a chunk: %s", length, e)
            obj.ref_count_down()
            return None

    # -- presence -----------------------------------------------------------------------------

    async def exists(self, key: Any) -> bool:
        return await self._call(self.exists_sync, key)

    def exists_sync(self, key: Any) -> bool:
        try:
            return self.client.head(self._key(key)) is not None
        except KvCacheError as e:
            log.warning("kvcache: lookup failed: %s", e)
            return False

    def support_batched_contains(self) -> bool:
        return True

    def batched_contains(self, keys: List[Any]) -> int:
        """How many leading keys are stored: one prefix lookup."""
        try:
            return self.load_or_prefill.to_load(self.client.locate_prefix(
                [self._key(k) for k in keys]))
        except KvCacheError as e:
            log.warning("kvcache: lookup of %d keys failed: %s", len(keys), e)
            return 0

    def support_batched_async_contains(self) -> bool:
        return True

    async def batched_async_contains(self, lookup_id: str, keys: List[Any], pin: bool = False) -> int:
        return await self._call(self.batched_contains, keys)

    # -- reads --------------------------------------------------------------------------------

    async def get(self, key: Any) -> Any:
        return (await self.batched_get([key]))[0]

    def support_batched_get(self) -> bool:
        return True

    async def batched_get(self, keys: List[Any]) -> List[Any]:
        """Each key's chunk in a memory object of LMCache's, read into it in place; None for a
        miss (or when LMCache's memory is full)."""
        objs = [self._allocate() for _ in keys]
        want = [i for i, o in enumerate(objs) if o is not None]
        try:
            got = await self._call(self.load_or_prefill.get_many_into, self.client,
                                   [self._key(keys[i]) for i in want],
                                   [objs[i].byte_array for i in want])
        except KvCacheError as e:
            log.warning("kvcache: read of %d chunks failed: %s", len(want), e)
            got = [None] * len(want)
        out: List[Any] = [None] * len(keys)
        for i, n in zip(want, got):
            out[i] = self._filled(objs[i], n)
        return out

    def support_batched_get_non_blocking(self) -> bool:
        return True

    async def batched_get_non_blocking(self, lookup_id: str, keys: List[Any]) -> List[Any]:
        """The leading chunks that are stored, up to the first one that is not."""
        objs = await self.batched_get(keys)
        n = next((i for i, o in enumerate(objs) if o is None), len(objs))
        for o in objs[n:]:
            if o is not None:
                o.ref_count_down()
        return objs[:n]

    # -- writes -------------------------------------------------------------------------------

    async def put(self, key: Any, memory_obj: Any) -> None:
        await self.batched_put([key], [memory_obj])

    def support_batched_put(self) -> bool:
        return True

    async def batched_put(self, keys: List[Any], memory_objs: List[Any]) -> None:
        """Stores each memory object's bytes (sent before this returns: LMCache lets the objects go
        after)."""
        try:
            statuses = await self._call(self.client.put_many,
                                        [(self._key(k), o.byte_array) for k, o in zip(keys, memory_objs)])
        except KvCacheError as e:
            log.warning("kvcache: write of %d chunks failed: %s", len(keys), e)
            return
        missed = sum(s is not PutStatus.STORED for s in statuses)
        if missed:
            log.debug("kvcache: %d of %d chunks not stored", missed, len(keys))

    def remove_sync(self, key: Any) -> bool:
        try:
            return self.client.delete(self._key(key))
        except KvCacheError as e:
            log.warning("kvcache: delete failed: %s", e)
            return False

    async def list(self) -> List[str]:
        raise NotImplementedError("kvcache-server does not list its keys")

    async def close(self) -> None:
        self._io.shutdown(wait=True)
        self.client.close()
