"""Copies of pinned blocks straight out of a server's RAM on this host: :class:`SharedMemory`."""
from __future__ import annotations

import mmap
import os
import threading
import time
from typing import Any, Optional


def parse_slice(entry: Any, length: int) -> Optional[tuple[str, int, int]]:
    """One entry of a pinned lookup's ``shared_memory`` list, as ``(file, offset, length)``, or
    ``None`` for a block that lies elsewhere; ``ValueError`` if it is malformed."""
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise ValueError(f"shared-memory slice {entry!r}")
    file, offset, n = entry.get("file"), entry.get("offset"), entry.get("length")
    if (not isinstance(file, str) or not isinstance(offset, int) or not isinstance(n, int)
            or offset < 0 or n != length):
        raise ValueError(f"shared-memory slice {entry!r} for a block of {length} bytes")
    return file, offset, n


class SharedMemory:
    """The server's RAM files this client has mapped, read-only, one mapping per file.

    A slice is valid only while the server's pin holds its block. :meth:`copy` therefore answers
    whether it finished before ``deadline``, the earliest time the pin can have expired: the time
    the lookup was sent plus the pin's duration. A file replaced since it was mapped (a restarted
    server) is mapped again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: dict[str, tuple[tuple[int, int], mmap.mmap, memoryview]] = {}

    def copy(self, file: str, offset: int, length: int, out: memoryview, deadline: float) -> bool:
        """Copies ``length`` bytes at ``offset`` of ``file`` into ``out``; False if the file is
        not there (or too short), or the copy ended past ``deadline`` (``time.monotonic()``), when
        ``out`` may hold another block's bytes and must be read again another way."""
        view = self._view(file)
        if view is None or offset + length > len(view):
            return False
        out[:length] = view[offset:offset + length]
        return time.monotonic() < deadline

    def _view(self, file: str) -> Optional[memoryview]:
        try:
            st = os.stat(file)
        except OSError:
            return None
        identity = (st.st_dev, st.st_ino)
        with self._lock:
            held = self._maps.get(file)
            if held is not None and held[0] == identity:
                return held[2]
            try:
                fd = os.open(file, os.O_RDONLY)
            except OSError:
                return None
            try:
                m = mmap.mmap(fd, st.st_size, prot=mmap.PROT_READ)
            except (OSError, ValueError):
                return None
            finally:
                os.close(fd)
            if held is not None:
                self._close(held)
            self._maps[file] = (identity, m, memoryview(m))
            return self._maps[file][2]

    @staticmethod
    def _close(held: tuple[tuple[int, int], mmap.mmap, memoryview]) -> None:
        try:
            held[2].release()
            held[1].close()
        except BufferError:  # a copy under way still reads it: the mapping goes with the object
            pass

    def close(self) -> None:
        """Unmaps the files."""
        with self._lock:
            for held in self._maps.values():
                self._close(held)
            self._maps.clear()
