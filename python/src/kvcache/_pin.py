"""A pinned prefix: :class:`Pin`."""
from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ._buffers import writable_view
from ._location import PrefixLocation
from ._shm import Copy, Slice
from ._transport import ConnectionFailed, ServerLink, warn_damaged
from .errors import BufferTooSmallError

if TYPE_CHECKING:
    from .client import Buffer, Client


class Pin:
    """The leading cached blocks of a :meth:`Client.pin_prefix`, held by their servers until
    :meth:`release` (or leaving the ``with`` block), or until the pin's time is up."""

    def __init__(self, client: Client, keys: list[bytes], slots: list[tuple[ServerLink, str, int, int]],
                 answers: dict[ServerLink, dict[str, Any]], location: PrefixLocation,
                 shared: Optional[list[Optional[Slice]]] = None,
                 deadline: float = 0.0) -> None:
        self._client = client
        #: The keys of the pinned blocks, in order.
        self.keys = keys
        #: Which tier held the pinned blocks and how long their servers should take to read them.
        self.location = location
        self._slots = slots
        self._answers = answers
        self._shared = shared
        self._deadline = deadline
        self._released = False
        # copies out of shared memory under way: release waits for them, so that no copy reads a
        # block its server may already have let go of
        self._copies = threading.Condition()
        self._copying = 0

    @property
    def present(self) -> int:
        """How many leading keys are cached and pinned."""
        return len(self._slots)

    @property
    def lengths(self) -> list[int]:
        """The pinned blocks' lengths, in order."""
        return [s[3] for s in self._slots]

    @property
    def in_shared_memory(self) -> int:
        """How many pinned blocks :meth:`get_into` copies straight out of their server's RAM (a
        server on this host with its RAM in shared memory); the others come through the socket."""
        if self._shared is None or self._client._shared is None:
            return 0
        return sum(1 for s in self._shared if s is not None)

    def in_shared_memory_at(self, i: int) -> bool:
        """Whether :meth:`get_into` copies pinned block ``i`` straight out of its server's RAM,
        with no request (see :attr:`in_shared_memory`)."""
        return (self._shared is not None and self._client._shared is not None
                and 0 <= i < len(self._shared) and self._shared[i] is not None)

    def get_into(self, i: int, buffer: Buffer) -> Optional[int]:
        """Reads pinned block ``i`` (0 to ``present - 1``) into ``buffer``: copied straight out of
        the server's RAM when the server offered its place in shared memory (a server on this host
        with ``kvcache.cache.ram-shared-memory-dir``), through the socket otherwise. Either way the
        bytes are checked against the block's CRC32C as they land (unless the client was made
        with ``checksums=False``); a damaged block is read again once, then is a miss.

        Returns:
            its length, or ``None`` if the pin was released or timed out, its server is down, or
            the block arrived damaged twice.
        """
        if not 0 <= i < len(self._slots):
            raise IndexError(f"block {i} of a pin of {len(self._slots)}")
        link, lease, j, length = self._slots[i]
        out = writable_view(buffer)
        c = self._client
        where = self._shared[i] if self._shared is not None else None
        attempts = 2
        if where is not None and c._shared is not None:
            if length > len(out):
                raise BufferTooSmallError(length, len(out))
            with self._copies:
                if self._released:
                    return None
                self._copying += 1
            try:
                copied = c._shared.copy(where[0], where[1], length, out, self._deadline,
                                        where[3] if c._checksums else None)
                if copied is Copy.COPIED:
                    return length
                if copied is Copy.DAMAGED:
                    warn_damaged(link, f"block {j} of lease {lease}")
                    attempts = 1
            finally:
                with self._copies:
                    self._copying -= 1
                    self._copies.notify_all()
        return c._read_block(link, f"{c._prefix}/leases/{lease}/blocks/{j}", out, attempts)

    def read_into(self, buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """Reads the first ``len(buffers)`` pinned blocks into ``buffers``, several at a time."""
        if len(buffers) > self.present:
            raise ValueError(f"{len(buffers)} buffers for {self.present} pinned blocks")
        out: list[Optional[int]] = [None] * len(buffers)

        def read(i: int) -> None:
            out[i] = self.get_into(i, buffers[i])
        self._client._run_all([partial(read, i) for i in range(len(buffers))])
        return out

    def release(self) -> None:
        """Lets the servers drop the pinned blocks, once copies out of shared memory under way in
        other threads are over. The releases are sent without waiting for their answers, which
        the next requests on the same connections read. Idempotent."""
        with self._copies:
            if self._released:
                return
            self._released = True
            while self._copying:
                self._copies.wait()
        Pin._release_all(self._client, self._answers)

    @staticmethod
    def _release_all(client: Client, answers: dict[ServerLink, dict[str, Any]]) -> None:
        """Sends each server the release of its lease, without waiting for the answers: a lease
        whose release is lost ends when its time is up."""
        for link, answer in answers.items():
            lease = answer.get("lease")
            if not lease or not link.available():
                continue
            try:
                link.send_later("DELETE", f"{client._prefix}/leases/{lease}")
            except ConnectionFailed as e:
                link.failed(e)

    def __enter__(self) -> "Pin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Pin(present={self.present})"


def prefix_length(hexes: Sequence[str], groups: dict[ServerLink, list[int]],
                   present: dict[ServerLink, int]) -> int:
    """The leading keys present, given how many of each server's own keys (in order) it has."""
    first_missing = len(hexes)
    for link, idx in groups.items():
        n = present.get(link, 0)
        if n < len(idx):
            first_missing = min(first_missing, idx[n])
    return first_missing
