"""Copies of pinned blocks straight out of a server's RAM on this host: :class:`SharedMemory`."""
from __future__ import annotations

import ctypes
import enum
import mmap
import os
import threading
import time
from typing import Any, Optional

import crc32c as _crc32c

from . import _native_io

#: Bytes copied (or received), then checksummed, at a time. Copies of 512 KiB and more take the C
#: library's streaming path, which here ran at full speed whatever the buffers' alignment, where
#: smaller ones ran 5-8 times slower into a buffer 16 bytes past a page boundary (a
#: ``bytearray``'s) (``docs/benchmarks/checksums.md``, "What every block's checksum costs").
CHECK_SLICE = 1 << 20

#: The C library's ``memmove``, called with the GIL held: a slice's copy takes a fraction of a
#: millisecond, and letting go of the GIL for it (as ``ctypes.memmove`` does) hands the GIL to any
#: busy thread, an engine's scheduler loop, for up to a whole switch interval per slice. Held, the
#: interpreter still switches between slices at its interval.
_memmove = ctypes.PyDLL(None).memmove
_memmove.restype = ctypes.c_void_p
_memmove.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
#: ``crc32c``'s mode that keeps the GIL, for the same reason.
_KEEP_GIL = 0
#: Threads a copy runs on when the compiled module makes it (:func:`._native_io.copy`), which
#: lets go of the GIL once for the whole block; each copies and checksums its own part.
COPY_THREADS = 2
#: Blocks shorter than this are copied by the compiled module in the calling thread with the GIL
#: kept: their copy takes less than the 0.2 ms switch interval an engine's tier sets, and letting
#: the GIL go for it would wait up to that to take it back from a busy engine loop (1 MiB copies
#: ran at 2.5-2.7 GB/s so beside a busy thread, against 3.8 with the GIL kept).
COPY_ALONE_BYTES = 4 << 20

#: Where a pinned block lies in shared memory: ``(file, offset, length, crc32c)``.
Slice = tuple[str, int, int, int]


def parse_slice(entry: Any, length: int) -> Optional[Slice]:
    """One entry of a pinned lookup's ``shared_memory`` list, as ``(file, offset, length,
    crc32c)``, or ``None`` for a block that lies elsewhere; ``ValueError`` if it is malformed or
    lacks the block's checksum."""
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise ValueError(f"shared-memory slice {entry!r}")
    file, offset, n = entry.get("file"), entry.get("offset"), entry.get("length")
    crc = entry.get("crc32c")
    if (not isinstance(file, str) or not isinstance(offset, int) or not isinstance(n, int)
            or offset < 0 or n != length):
        raise ValueError(f"shared-memory slice {entry!r} for a block of {length} bytes")
    if not isinstance(crc, int) or not 0 <= crc < 1 << 32:
        raise ValueError(f"shared-memory slice {entry!r} without the block's crc32c")
    return file, offset, n, crc


class Copy(enum.Enum):
    """What became of a copy out of shared memory."""

    #: The block is in the buffer, and has its checksum.
    COPIED = "copied"
    #: The block could not be copied (its file is gone, or the pin's time ran out): read it
    #: another way. The buffer may hold anything.
    ELSEWHERE = "elsewhere"
    #: The bytes copied do not have the block's checksum: damaged where the server keeps them.
    DAMAGED = "damaged"


class _Libc:
    """``mmap`` and ``munmap`` of the C library, through ``ctypes``."""

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.mmap = libc.mmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        self.munmap = libc.munmap
        self.munmap.restype = ctypes.c_int
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


_MAP_FAILED = ctypes.c_void_p(-1).value


class _Mapping:
    """One of the server's RAM files, mapped read-only, and how many copies read it now."""

    def __init__(self, address: int, size: int, identity: tuple[int, int]) -> None:
        self.address = address
        self.size = size
        self.identity = identity
        self.readers = 0
        self.retired = False


class SharedMemory:
    """The server's RAM files this client has mapped, read-only, one mapping per file.

    The mapping is made and copied from through ``ctypes`` (``mmap``, ``memmove``), which lets
    other threads run Python while a block is copied: a copy out of a Python ``mmap`` object holds
    the interpreter's lock for all of a 64 MiB block, and ``preadv`` on the file copies at a third of
    the speed. A slice is valid only while the server's pin holds its block. :meth:`copy` therefore
    answers whether it finished before ``deadline``, the earliest time the pin can have expired:
    the time the lookup was sent plus the pin's duration. A file replaced since it was mapped (a
    restarted server) is mapped again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._maps: dict[str, _Mapping] = {}
        self._libc: Optional[_Libc] = None

    @property
    def mapped(self) -> list[str]:
        """The files mapped now."""
        with self._lock:
            return list(self._maps)

    def copy(self, file: str, offset: int, length: int, out: memoryview, deadline: float,
             crc: Optional[int] = None) -> Copy:
        """Copies ``length`` bytes at ``offset`` of ``file`` into ``out`` and, if ``crc`` is
        given, checks them against it, slice by slice as each is copied. ``ELSEWHERE`` if the file
        is not there (or too short) or cannot be mapped, or the copy ended past ``deadline``
        (``time.monotonic()``), when ``out`` may hold another block's bytes and must be read again
        another way; ``DAMAGED`` if the bytes do not have the checksum."""
        held = self._acquire(file)
        if held is None:
            return Copy.ELSEWHERE
        actual = 0
        try:
            if offset + length > held.size:
                return Copy.ELSEWHERE
            if _native_io.can_copy():
                threads = COPY_THREADS if length >= COPY_ALONE_BYTES else 0
                got = _native_io.copy(out[:length], held.address + offset, threads,
                                      crc is not None)
                actual = got if got is not None else 0
                return self._outcome(actual, crc, deadline)
            target = (ctypes.c_char * length).from_buffer(out)
            try:
                base = ctypes.addressof(target)
                for at in range(0, length, CHECK_SLICE):
                    n = min(CHECK_SLICE, length - at)
                    _memmove(base + at, held.address + offset + at, n)
                    if crc is not None:
                        actual = _crc32c.crc32c(out[at:at + n], actual, _KEEP_GIL)
            finally:
                del target
        finally:
            self._let_go(held)
        return self._outcome(actual, crc, deadline)

    @staticmethod
    def _outcome(actual: int, crc: Optional[int], deadline: float) -> Copy:
        if time.monotonic() >= deadline:
            return Copy.ELSEWHERE
        return Copy.DAMAGED if crc is not None and actual != crc else Copy.COPIED

    def _acquire(self, file: str) -> Optional[_Mapping]:
        try:
            st = os.stat(file)
        except OSError:
            return None
        identity = (st.st_dev, st.st_ino)
        with self._lock:
            held = self._maps.get(file)
            if held is None or held.identity != identity:
                fresh = self._map(file, identity)
                if fresh is None:
                    return None
                if held is not None:
                    self._retire(held)
                held = self._maps[file] = fresh
            held.readers += 1
            return held

    def _map(self, file: str, identity: tuple[int, int]) -> Optional[_Mapping]:
        try:
            if self._libc is None:
                self._libc = _Libc()
            fd = os.open(file, os.O_RDONLY | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return None
            address = self._libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if address is None or address == _MAP_FAILED:
            return None
        return _Mapping(address, size, identity)

    def _let_go(self, held: _Mapping) -> None:
        with self._lock:
            held.readers -= 1
            if held.retired and not held.readers:
                self._unmap(held)

    def _retire(self, held: _Mapping) -> None:
        """Unmaps ``held`` now or, if a copy still reads it, when the last one ends (under the
        lock)."""
        held.retired = True
        if not held.readers:
            self._unmap(held)

    def _unmap(self, held: _Mapping) -> None:
        assert self._libc is not None
        self._libc.munmap(held.address, held.size)

    def close(self) -> None:
        """Unmaps the files (each once the copies under way from it end)."""
        with self._lock:
            for held in self._maps.values():
                self._retire(held)
            self._maps.clear()
