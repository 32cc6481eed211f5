"""Which file a buffer of this process is a shared mapping of: :class:`HostFiles`.

A server on this host can write blocks straight into such a buffer (an engine's host buffer in
``/dev/shm``) by writing its file (:meth:`kvcache.Pin.copy_into`). The mapping is found in
``/proc/self/maps``; a file already unlinked is named by one of this process's descriptors,
``/proc/<pid>/fd/<n>``, which a server of the same user can open.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import NamedTuple, Optional

_DELETED = " (deleted)"


class _Region(NamedTuple):
    start: int
    end: int
    file: str  # the path the server opens
    offset: int  # the file offset of ``start``


class HostFiles:
    """Finds the shared file mapping behind a buffer, remembering the regions it has seen, and
    which servers refused to write which files."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._regions: list[_Region] = []
        self._refused: set[tuple[str, str]] = set()

    def refuse(self, server: str, file: str) -> None:
        """Notes that ``server`` may not write ``file`` (not its user's, or its own)."""
        with self._lock:
            self._refused.add((server, file))

    def refused(self, server: str, file: str) -> bool:
        """Whether ``server`` refused to write ``file`` before."""
        return (server, file) in self._refused

    def locate(self, buffer: memoryview) -> Optional[tuple[str, int]]:
        """``(file, offset)`` of a writable, contiguous buffer that lies in one shared mapping of
        a file, or ``None`` (anonymous or private memory, or a buffer across mappings)."""
        if buffer.readonly or not buffer.c_contiguous or buffer.nbytes == 0:
            return None
        target = (ctypes.c_char * buffer.nbytes).from_buffer(buffer)
        try:
            address = ctypes.addressof(target)
        finally:
            del target
        end = address + buffer.nbytes
        with self._lock:
            region = self._find(address, end)
            if region is None:
                self._regions = _read_maps()
                region = self._find(address, end)
        if region is None:
            return None
        return region.file, region.offset + address - region.start

    def forget(self, file: str) -> None:
        """Drops what is known of ``file``'s mappings (a server could not write it)."""
        with self._lock:
            self._regions = [r for r in self._regions if r.file != file]

    def _find(self, address: int, end: int) -> Optional[_Region]:
        for r in self._regions:
            if r.start <= address and end <= r.end:
                return r
        return None


def _read_maps() -> list[_Region]:
    """This process's shared mappings of files, from ``/proc/self/maps``."""
    regions = []
    descriptors: Optional[dict[str, str]] = None
    try:
        with open("/proc/self/maps") as f:
            lines = f.readlines()
    except OSError:
        return []
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or "s" not in parts[1] or "w" not in parts[1]:
            continue
        path = parts[5].rstrip("\n")
        if not path.startswith("/"):
            continue
        if path.endswith(_DELETED):
            if descriptors is None:
                descriptors = _descriptors()
            named = descriptors.get(path)
            if named is None:
                continue
            path = named
        start, end = (int(x, 16) for x in parts[0].split("-"))
        regions.append(_Region(start, end, path, int(parts[2], 16)))
    return regions


def _descriptors() -> dict[str, str]:
    """For each file this process holds open, a ``/proc/<pid>/fd/<n>`` path naming it."""
    pid = os.getpid()
    named: dict[str, str] = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return {}
    for fd in fds:
        try:
            named.setdefault(os.readlink(f"/proc/self/fd/{fd}"), f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
    return named


PAGE = 4096  # the server's LeaseCopies.TOKEN_STRIDE


def mark_place(view: memoryview, token: bytes) -> None:
    """Writes ``token`` where the server looks for it before it writes a block into ``view``: in
    the last ``len(token)`` bytes, and at the start of each 4 KiB before those; which shows that
    this process has written into every page the server is to write. With numpy, in one strided
    assignment; without, one slice at a time (about 4 times slower: 90 ms a GiB)."""
    n = len(token)
    last = len(view) - n
    try:
        import numpy as np
    except ImportError:
        for at in range(0, last - n + 1, PAGE):
            view[at:at + n] = token
    else:
        if last >= n:
            marks = np.lib.stride_tricks.as_strided(
                np.frombuffer(view, dtype=np.uint8), shape=((last - n) // PAGE + 1, n),
                strides=(PAGE, 1), writeable=True)
            marks[:] = np.frombuffer(token, dtype=np.uint8)
    view[last:] = token
