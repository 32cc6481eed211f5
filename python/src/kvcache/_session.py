"""What the operations of one client share: :class:`Session`."""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, TypeVar

from ._hostfile import HostFiles
from ._keys import KeyLike, key_hex
from ._native_io import native_transfers
from ._servers import ServerSet, is_loopback
from ._shm import SharedMemory
from ._transport import ConnectionFailed, ServerLink

log = logging.getLogger("kvcache")

T = TypeVar("T")
R = TypeVar("R")


#: Bytes of blocks per connection below which a read from one server is not split across
#: connections.
PART_BYTES = 16 << 20


class Session:
    """The servers of one client and namespace, and what its operations and pins share: the
    worker threads, the mappings of the servers' RAM files, the files of this process's buffers,
    the count of damaged blocks. Thread-safe.

    Args:
        namespace: the server namespace, already checked.
        servers: the servers, with a link to each.
        checksums: whether puts carry their CRC32C and reads check it.
        shared_memory: whether reads copy out of a local server's RAM, and servers may copy
            pinned blocks into this process's buffers.
        max_workers: threads for operations across servers.
    """

    def __init__(self, namespace: str, servers: ServerSet, *, checksums: bool,
                 shared_memory: bool, max_workers: int) -> None:
        #: The namespace's part of every request path.
        self.prefix = f"/v1/namespaces/{namespace}"
        #: The servers in use.
        self.servers = servers
        #: Whether puts carry their CRC32C and reads check it.
        self.checksums = checksums
        #: The servers' RAM files mapped here (``None``: reads come through the socket).
        self.shared = SharedMemory() if shared_memory else None
        #: The files behind this process's buffers (``None``: servers copy into none).
        self.host_files = HostFiles() if shared_memory else None
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._max_workers = max_workers
        self._damaged = 0

    @property
    def damaged(self) -> int:
        """Blocks that arrived damaged on their last read, answered as misses."""
        return self._damaged

    def route(self, key: KeyLike) -> tuple[str, ServerLink]:
        """The key's hex digits, validated, and the server that holds it."""
        hexkey = key_hex(key)
        return hexkey, self.servers.owner(bytes.fromhex(hexkey))

    def offers_shared_memory(self, link: ServerLink) -> bool:
        """Whether reads from ``link`` may be copied out of its RAM: this client copies from
        shared memory, the server is on this host, and has not answered without it."""
        return (self.shared is not None and link.shared_memory is not False
                and is_loopback(link.host))

    def connections_for(self, link: ServerLink, sizes: Sequence[int],
                        idx: list[int]) -> list[list[int]]:
        """``idx`` (whose blocks take up to ``sizes`` bytes) split into runs of keys that are read
        from ``link`` at once, each on its own connection: one run per ``PART_BYTES``, up to the
        worker threads, where blocks are received without the interpreter's lock (which threads
        reading through pure Python would contend for); one run otherwise."""
        total = sum(sizes)
        parts = min(self._max_workers, len(idx), total // PART_BYTES)
        if parts < 2 or link.tls or native_transfers() is not None:
            return [idx]
        runs: list[list[int]] = [[] for _ in range(parts)]
        at = 0
        for i, n in zip(idx, sizes):
            runs[min(parts - 1, at * parts // total)].append(i)
            at += n
        return [run for run in runs if run]

    def run_all(self, jobs: Sequence[Callable[[], None]]) -> None:
        """Runs ``jobs`` on the worker threads (one in the calling thread) and waits for them;
        the first exception raised is raised again."""
        if len(jobs) == 1:
            jobs[0]()
            return
        for f in [self._pool().submit(job) for job in jobs]:
            f.result()

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``fn`` of each item, on the worker threads, in order."""
        return list(self._pool().map(fn, items))

    def count_damaged(self, link: ServerLink, what: str) -> None:
        """Counts a block that arrived damaged on its last read, a miss, and warns of it."""
        with self._lock:
            self._damaged += 1
        log.warning("kvcache: %s sent %s damaged (a CRC32C other than its bytes') twice: "
                    "a miss", link.name, what)

    def release(self, answers: Mapping[ServerLink, Mapping[str, Any]]) -> None:
        """Sends each server the release of the lease of its pinned lookup answer, without
        waiting for the answers: a lease whose release is lost ends when its time is up."""
        for link, answer in answers.items():
            lease = answer.get("lease")
            if not lease or not link.available():
                continue
            try:
                link.send_later("DELETE", f"{self.prefix}/leases/{lease}")
            except ConnectionFailed as e:
                link.failed(e)

    def close(self) -> None:
        """Stops the worker threads, closes the connections and unmaps the RAM files."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self.servers.close()
        if self.shared is not None:
            self.shared.close()

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self._max_workers, "kvcache")
        return self._executor
