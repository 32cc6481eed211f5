"""kvcache-server as an L2 tier of LMCache's multiprocess server, through its ``native_plugin``
adapter; importable where LMCache is installed (``pip install "kvcache[lmcache]"``)::

    lmcache server --l1-size-gb 8 --l2-adapter '{"type": "native_plugin",
        "module_path": "kvcache.lmcache", "class_name": "KvcacheNativeConnector",
        "adapter_params": {"servers": ["127.0.0.1:7070"]}}'

``adapter_params`` are :class:`KvcacheNativeConnector`'s arguments. See ``docs/engines.md``.
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import lmcache  # noqa: F401  (an adapter of LMCache: importable only beside it)

from . import Client, Namespace, PutStatus
from .errors import KvCacheError
from .keys import BlockKey

__all__ = ["KvcacheNativeConnector"]

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
    """

    def __init__(self, servers: Union[str, Sequence[str], None] = None, namespace: str = "default",
                 token: Optional[str] = None, tenant: str = "", workers: int = 4,
                 timeout: float = 30.0, ca_file: Optional[str] = None,
                 dns: Optional[str] = None) -> None:
        self.client = Client(servers, namespace=namespace,
                             token=token or os.environ.get("KVCACHE_TOKEN"), timeout=timeout,
                             ca_file=ca_file, dns=dns, max_workers=workers)
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
        got = self.client.get_many_into(self._keys(keys), views)
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
            present = self.client.lookup_prefix(self._keys(keys[start:end]))
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
