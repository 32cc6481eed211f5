"""A pinned prefix: :class:`Pin`."""
from __future__ import annotations

import json
import threading
from collections import defaultdict
from functools import partial
from typing import Any, Optional, Sequence

from ._buffers import Buffer, writable_view
from ._errors import BufferTooSmallError, ProtocolError, ServerError
from ._hostfile import mark_place
from ._http1 import Response
from ._location import PrefixLocation
from ._reads import read_block
from ._session import Session
from ._shm import Copy, Slice
from ._transport import ConnectionFailed, ServerLink, read_json, warn_damaged


class Pin:
    """The leading cached blocks of a :meth:`Client.pin_prefix`, held by their servers until
    :meth:`release` (or leaving the ``with`` block), or until the pin's time is up."""

    def __init__(self, session: Session, keys: list[bytes],
                 slots: list[tuple[ServerLink, str, int, int]],
                 answers: dict[ServerLink, dict[str, Any]], location: PrefixLocation,
                 slices: Optional[list[Optional[Slice]]] = None,
                 deadline: float = 0.0) -> None:
        self._session = session
        #: The keys of the pinned blocks, in order.
        self.keys = keys
        #: Which tier held the pinned blocks and how long their servers should take to read them.
        self.location = location
        self._slots = slots
        self._answers = answers
        # where each pinned block lies in its server's shared memory, if anywhere
        self._slices = slices
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
        if self._slices is None or self._session.shared is None:
            return 0
        return sum(1 for s in self._slices if s is not None)

    def in_shared_memory_at(self, i: int) -> bool:
        """Whether :meth:`get_into` copies pinned block ``i`` straight out of its server's RAM,
        with no request (see :attr:`in_shared_memory`)."""
        return (self._slices is not None and self._session.shared is not None
                and 0 <= i < len(self._slices) and self._slices[i] is not None)

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
        session = self._session
        shared = session.shared
        where = self._slices[i] if self._slices is not None else None
        attempts = 2
        if where is not None and shared is not None:
            if length > len(out):
                raise BufferTooSmallError(length, len(out))
            with self._copies:
                if self._released:
                    return None
                self._copying += 1
            try:
                copied = shared.copy(where[0], where[1], length, out, self._deadline,
                                     where[3] if session.checksums else None)
                if copied is Copy.COPIED:
                    return length
                if copied is Copy.DAMAGED:
                    warn_damaged(link, f"block {j} of lease {lease}")
                    attempts = 1
            finally:
                with self._copies:
                    self._copying -= 1
                    self._copies.notify_all()
        return read_block(session, link, f"{session.prefix}/leases/{lease}/blocks/{j}", out,
                          attempts)

    def copy_into(self, indices: Sequence[int], buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """Has the servers write pinned blocks ``indices`` straight into ``buffers``, one request
        per server, when each buffer is part of a shared mapping of a file on this host (an
        engine's host buffer in ``/dev/shm``) and its server is on this host too: no copy in this
        process, and no interpreter lock held while the bytes move. The server computes each
        block's CRC32C as it writes it and answers a damaged block as such.

        To show that every page the server is to write may be written, the pin's token is first
        written at the start of each 4 KiB of each buffer's place and in its last 16 bytes; the
        server writes nothing unless it finds it at every one. The server must run as a
        user that may open the file for writing (the engine's own, as a rule).

        Returns:
            each block's length, or ``None`` where the servers did not copy it (the buffer is
            not such a mapping, the server is elsewhere or may not write the file, the block is
            not in its memory or is damaged): read those with :meth:`get_into`.
        """
        if len(indices) != len(buffers):
            raise ValueError(f"{len(indices)} indices for {len(buffers)} buffers")
        out: list[Optional[int]] = [None] * len(indices)
        files = self._session.host_files
        if files is None or not indices:
            return out
        views: list[Optional[memoryview]] = [None] * len(indices)
        for k, (i, buffer) in enumerate(zip(indices, buffers)):
            if not 0 <= i < len(self._slots):
                raise IndexError(f"block {i} of a pin of {len(self._slots)}")
            link, _, _, length = self._slots[i]
            token = self._answers[link].get("copy_token")
            view = writable_view(buffer)
            if length > len(view):
                raise BufferTooSmallError(length, len(view))
            if isinstance(token, str) and length >= len(token) // 2:
                views[k] = view[:length]
        todo = [k for k in range(len(indices)) if views[k] is not None]
        for _ in range(2):  # again once for files whose mapping here had changed (stale)
            groups: dict[tuple[ServerLink, str], list[tuple[int, int, int, memoryview]]] = \
                defaultdict(list)
            for k in todo:
                mapped = views[k]
                assert mapped is not None
                where = files.locate(mapped)
                link, _, j, _ = self._slots[indices[k]]
                if where is not None and not files.refused(link.name, where[0]):
                    groups[(link, where[0])].append((k, j, where[1], mapped))
            todo = []
            for (link, file), blocks in groups.items():
                if self._copy_file(link, file, blocks, out):
                    files.forget(file)
                    todo += [b[0] for b in blocks]
            if not todo:
                break
        return out

    def _copy_file(self, link: ServerLink, file: str,
                   blocks: list[tuple[int, int, int, memoryview]], out: list[Optional[int]]) -> bool:
        """One copy-into request: ``blocks`` are (place in ``out``, index in the server's lease,
        offset in ``file``, buffer). True if the server found another file than the buffers' (the
        file this process had mapped there is gone or replaced): look their file up again."""
        answer = self._answers[link]
        token = bytes.fromhex(answer["copy_token"])
        lease = answer["lease"]
        pairs = []
        for _, j, offset, view in blocks:
            mark_place(view, token)
            pairs.append([j, offset])
        body = json.dumps({"file": file, "token": answer["copy_token"], "blocks": pairs}).encode()

        def handle(r: Response) -> list[Any]:
            if r.status != 200:
                raise link.error(r)
            got = read_json(r, link.name)
            outcomes = got.get("blocks") if isinstance(got, dict) else None
            if not isinstance(outcomes, list) or len(outcomes) != len(blocks):
                raise ProtocolError(f"{link.name}: copy-into answer {got!r}")
            return outcomes
        with self._copies:
            if self._released or not link.available():
                return False
            self._copying += 1
        try:
            outcomes = link.exchange("POST", f"{self._session.prefix}/leases/{lease}/copy-into",
                                     handle, body, {"Content-Type": "application/json"})
        except ConnectionFailed as e:
            link.failed(e)
            return False
        except ServerError as e:
            files = self._session.host_files
            if files is not None and e.code in ("file-not-writable", "own-file", "not-this-host",
                                                    "no-copies"):
                files.refuse(link.name, file)
            return e.code in ("no-file", "token-not-in-file")
        finally:
            with self._copies:
                self._copying -= 1
                self._copies.notify_all()
        for (k, _, _, view), outcome in zip(blocks, outcomes):
            if outcome == "copied":
                out[k] = len(view)
            elif outcome == "damaged":
                warn_damaged(link, f"a block of lease {lease} (copied into {file})")
        return False

    def read_into(self, buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """Reads the first ``len(buffers)`` pinned blocks into ``buffers``, several at a time."""
        if len(buffers) > self.present:
            raise ValueError(f"{len(buffers)} buffers for {self.present} pinned blocks")
        out: list[Optional[int]] = [None] * len(buffers)

        def read(i: int) -> None:
            out[i] = self.get_into(i, buffers[i])
        self._session.run_all([partial(read, i) for i in range(len(buffers))])
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
        self._session.release(self._answers)

    def __enter__(self) -> "Pin":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"Pin(present={self.present})"

