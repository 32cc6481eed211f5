"""kvcache-server as an SGLang HiCache storage backend (L3), loaded by SGLang's dynamic backend
factory; importable only where SGLang is installed (``pip install "kvcache[sglang]"``)::

    python -m sglang.launch_server --model-path ... --page-size 64 \\
        --enable-hierarchical-cache --hicache-storage-backend dynamic \\
        --hicache-storage-backend-extra-config '{"backend_name": "kvcache",
            "module_path": "kvcache.integrations.sglang", "class_name": "KvcacheHiCacheStorage",
            "interface_v1": 1, "servers": ["127.0.0.1:7070"]}'

Other keys of the extra config: ``namespace`` (the server namespace, ``default``), ``token`` (or
the ``KVCACHE_TOKEN`` environment variable), ``tenant`` (salts every key), ``timeout``,
``ca_file``, ``dns`` (instead of ``servers``), ``tls`` (TLS to the servers, as with ``https://``
servers; needed with ``dns``), ``allow_cleartext_token`` (send the token over plain HTTP beyond
loopback, on a network that is private by other means), ``engine_names`` (default true: name each
page as SGLang's KV events do, below). The former ``module_path`` ``kvcache.sglang`` loads the same
class. See ``docs/engines.md``.

Keys: SGLang names a page by the SHA-256 hex of its token prefix, the same on every rank. The block
key is :meth:`kvcache.BlockKey.of_raw` of ``"<hash>/<part>"`` under a :class:`kvcache.Namespace` of
the model, the host pool's dtype, and a layout naming the pool layout, the page size, the interface
and the rank (tensor-parallel rank unless the model's KV is replicated over ranks, as MLA's is;
pipeline and context-parallel ranks when used). With ``interface_v1`` a page is stored as one
block per buffer SGLang's host pool gives for it (K and V of a ``page_first`` MHA pool, the one
buffer of an MLA page), read and written in place; without it, as one block of the flat page.

Names (``engine_names``): the first block of each page it stores carries the page's name as
SGLang's own KV events give it (:class:`kvcache.EngineBlock`), so that a server with KV events
tells routers of the page and finds it by that hash: the model (SGLang's ``model_name``), the
page's event hash (the first 64 bits of its SHA-256, SGLang's ``hash_str_to_int64``, as an unsigned
integer), the page size in tokens, and the page before it in the prompt where the call gives it
(SGLang's ``prefix_keys``, or an earlier page of the same call). SGLang namespaces the event hashes
of requests with a LoRA adapter or a cache salt, which its storage backends do not see: their
pages are named by the plain hash.
"""
from __future__ import annotations

import ctypes
import logging
import os
import string
from typing import Any, List, Optional

from sglang.srt.mem_cache.hicache_storage import (HiCacheStorage, HiCacheStorageConfig,
                                                  HiCacheStorageExtraInfo)

from ._prefill import LoadOrPrefill
from .. import BlockKey, Client, EngineBlock, KvCacheError, Namespace, PutStatus

__all__ = ["KvcacheHiCacheStorage"]

log = logging.getLogger("kvcache.sglang")

_CLIENT_OPTIONS = ("namespace", "dns", "timeout", "ca_file", "connect_timeout", "tls",
                   "allow_cleartext_token")


class KvcacheHiCacheStorage(HiCacheStorage):  # type: ignore[misc, unused-ignore]
    """A HiCache storage backend over kvcache-server. Thread-safe (SGLang calls it from its
    prefetch, backup and scheduler threads). Failures are answered as misses and failed writes,
    never ``None``."""

    def __init__(self, storage_config: HiCacheStorageConfig,
                 kwargs: Optional[dict[str, Any]] = None) -> None:
        extra = dict(storage_config.extra_config or {})
        self.config = storage_config
        self.interface_v1 = bool(extra.get("interface_v1", 0))
        servers = extra.get("servers")
        if isinstance(servers, str):
            servers = [s for s in servers.split(",") if s]
        options = {k: extra[k] for k in _CLIENT_OPTIONS if k in extra}
        self.client = Client(servers if "dns" not in extra else None,
                             token=extra.get("token") or os.environ.get("KVCACHE_TOKEN"),
                             **options)
        self.tenant = str(extra.get("tenant", ""))
        names = extra.get("engine_names", True)
        self.engine_model: Optional[str] = (storage_config.model_name or None) if names else None
        self.mem_pool_host: Any = None
        self.namespace: Optional[Namespace] = None
        self.parts = 1  # blocks per page
        #: Whether a lookup's pages are loaded or left to prefill (its tokens per block set with
        #: the host pool).
        self.load_or_prefill = LoadOrPrefill(float(extra.get("prefill_tokens_per_s", 0.0)), 1)

    # -- set-up -----------------------------------------------------------------------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Takes the host pool (its layout, page size and dtype name the keys)."""
        super().register_mem_pool_host(mem_pool_host)
        self.mem_pool_host = mem_pool_host
        c = self.config
        scope = [f"sglang/{mem_pool_host.layout}/page{mem_pool_host.page_size}",
                 "v1" if self.interface_v1 else "flat"]
        if not c.is_mla_model:
            scope.append(f"tp{c.tp_rank}of{c.tp_size}")
        if c.pp_size > 1:
            scope.append(f"pp{c.pp_rank}of{c.pp_size}")
        if c.attn_cp_size > 1:
            scope.append(f"cp{c.attn_cp_rank}of{c.attn_cp_size}")
        if c.dcp_size > 1:
            scope.append(f"dcp{c.dcp_rank}of{c.dcp_size}")
        self.namespace = Namespace(c.model_name or "unnamed", str(mem_pool_host.dtype),
                                   "/".join(scope), self.tenant)
        if self.interface_v1:
            import torch
            first = torch.arange(mem_pool_host.page_size, dtype=torch.int64)
            ptrs, _ = mem_pool_host.get_page_buffer_meta(first)
            self.parts = len(ptrs)
        self.load_or_prefill.tokens_per_block = max(1, mem_pool_host.page_size // self.parts)

    def _keys(self, page_hashes: List[str]) -> List[BlockKey]:
        if self.namespace is None:
            raise KvCacheError("the host memory pool was not registered")
        return [BlockKey.of_raw(self.namespace, f"{h}/{p}")
                for h in page_hashes for p in range(self.parts)]

    def _items(self, keys: List[str], buffers: List[Any],
               extra_info: Optional[HiCacheStorageExtraInfo]) -> list[tuple[Any, ...]]:
        """The puts of the pages ``keys``, the first block of each named (``engine_names``)."""
        names = self._engine_blocks(keys, extra_info)
        p = self.parts
        return [(k, b, names[i // p] if i % p == 0 else None)
                for i, (k, b) in enumerate(zip(self._keys(keys), buffers))]

    def _engine_blocks(self, keys: List[str],
                       extra_info: Optional[HiCacheStorageExtraInfo]) -> List[Optional[EngineBlock]]:
        """Each page's name as SGLang's KV events give it, or None (``engine_names`` off, no
        model name, a key that is no SHA-256 hex)."""
        if self.engine_model is None:
            return [None] * len(keys)
        prefix = extra_info.prefix_keys if extra_info is not None else None
        parent = _event_hash(prefix[-1]) if prefix else None
        page_size = self.mem_pool_host.page_size
        names: List[Optional[EngineBlock]] = []
        for key in keys:
            h = _event_hash(key)
            names.append(None if h is None else
                         EngineBlock(self.engine_model, h, parent=parent, block_size=page_size))
            parent = h
        return names

    def _buffers(self, host_indices: Any) -> List[Any]:
        """Views of the host pool's memory for each block of the pages at ``host_indices``."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        return [(ctypes.c_char * size).from_address(ptr) for ptr, size in zip(ptrs, sizes)]

    # -- the prefix lookup --------------------------------------------------------------------

    def batch_exists(self, keys: List[str],
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> int:
        """How many leading pages are stored: one prefix lookup. None when prefilling them is
        estimated faster than loading them (``prefill_tokens_per_s``)."""
        try:
            return self.load_or_prefill.to_load(
                self.client.locate_prefix(self._keys(keys))) // self.parts
        except KvCacheError as e:
            log.warning("kvcache: lookup of %d pages failed: %s", len(keys), e)
            return 0

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    # -- v1: in place in the host pool --------------------------------------------------------

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> List[bool]:
        """Reads each page's blocks straight into the host pool."""
        try:
            got = self.load_or_prefill.get_many_into(self.client, self._keys(keys),
                                                     self._buffers(host_indices))
        except KvCacheError as e:
            log.warning("kvcache: read of %d pages failed: %s", len(keys), e)
            return [False] * len(keys)
        return self._per_page(keys, [n is not None for n in got])

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Optional[HiCacheStorageExtraInfo] = None) -> List[bool]:
        """Stores each page's blocks from the host pool."""
        try:
            statuses = self.client.put_many(
                self._items(keys, self._buffers(host_indices), extra_info))
        except KvCacheError as e:
            log.warning("kvcache: write of %d pages failed: %s", len(keys), e)
            return [False] * len(keys)
        return self._per_page(keys, [s is PutStatus.STORED for s in statuses])

    def _per_page(self, keys: List[str], ok: List[bool]) -> List[bool]:
        p = self.parts
        return [all(ok[i * p:(i + 1) * p]) for i in range(len(keys))]

    # -- v0: flat pages -----------------------------------------------------------------------

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> Any:
        """The flat page of ``key`` in ``target_location`` (or a new page), ``None`` if missing."""
        return self.batch_get([key], [target_location] if target_location is not None else None)[0]

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> List[Any]:
        if self.interface_v1:
            raise NotImplementedError("with interface_v1, SGLang reads through batch_get_v1")
        targets = list(target_locations) if target_locations is not None else [
            self.mem_pool_host.get_dummy_flat_data_page() for _ in keys]
        try:
            got = self.load_or_prefill.get_many_into(self.client, self._keys(keys), targets)
        except KvCacheError as e:
            log.warning("kvcache: read of %d pages failed: %s", len(keys), e)
            return [None] * len(keys)
        return [t if n is not None else None for t, n in zip(targets, got)]

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        return self.batch_set([key], [value])

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None, target_sizes: Optional[Any] = None) -> bool:
        if self.interface_v1:
            raise NotImplementedError("with interface_v1, SGLang writes through batch_set_v1")
        if values is None:
            raise ValueError("batch_set needs the pages' values")
        try:
            statuses = self.client.put_many(
                self._items(keys, [v.contiguous() for v in values], None))
        except KvCacheError as e:
            log.warning("kvcache: write of %d pages failed: %s", len(keys), e)
            return False
        return all(s is PutStatus.STORED for s in statuses)

    # -- the rest -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Not offered: kvcache-server evicts by its own policy and deletes by key only."""
        raise NotImplementedError("kvcache-server has no way to clear a namespace; it evicts on its own")

    def close(self) -> None:
        self.client.close()


def _event_hash(page_hash: str) -> Optional[int]:
    """A page's hash as SGLang's KV events carry it (``hash_str_to_int64``: its first 16 hex
    digits), as an unsigned 64-bit integer; None if it is no hex string of 16 digits or more."""
    head = page_hash[:16]
    if len(head) < 16 or any(c not in string.hexdigits for c in head):
        return None
    return int(head, 16)
