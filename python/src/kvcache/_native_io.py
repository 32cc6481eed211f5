"""The transfers of a load without the interpreter's lock, through the compiled ``_native``
module when it is installed: :func:`native_transfers`, :func:`receive`, :func:`copy`.

Through pure Python, a load returns to the interpreter after every ``recv_into`` and every
checksummed slice, and each return waits for the interpreter's lock, which an engine's scheduler
loop in the same process holds for up to its switch interval. The compiled module receives every
block of an answer, or copies a block out of shared memory, in one call that lets go of the lock
for all of it, checksumming the bytes as they land. Where it is not installed (a platform without
a wheel, an install with no C compiler) or ``KVCACHE_PURE_PYTHON=1`` is set, the same transfers
run in pure Python.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Any, Optional, Sequence

log = logging.getLogger("kvcache")

_native: Any
try:
    from . import _native  # type: ignore[attr-defined,no-redef]
    _WHY_NOT: Optional[str] = None
except ImportError as e:  # no wheel for this platform, or built without a compiler
    _native = None
    _WHY_NOT = f"the compiled module is not installed ({e})"
if _native is not None and os.environ.get("KVCACHE_PURE_PYTHON", "") not in ("", "0"):
    _native = None
    _WHY_NOT = "KVCACHE_PURE_PYTHON is set"

#: Outcomes of ``_native.receive`` other than every view full.
_ENDED, _TIMED_OUT, _FAILED = 1, 2, 3


class ReceiveEnded(ConnectionError):
    """The connection ended, or was silent past its timeout, before every block was whole."""


def native_transfers() -> Optional[str]:
    """``None`` when loads run without the interpreter's lock (the compiled module is installed
    and not turned off); otherwise why not."""
    return None if _native is not None else _WHY_NOT or "the compiled module is turned off"


def can_receive(sock: Optional[socket.socket]) -> bool:
    """Whether :func:`receive` can read from ``sock``: the compiled module is there and ``sock``
    is a plain socket (a TLS socket is read by Python's ``ssl``)."""
    return _native is not None and sock is not None and type(sock) is socket.socket


def receive(sock: socket.socket, timeout: Optional[float], head: memoryview,
            views: Sequence[memoryview], check: bool) -> tuple[int, list[Optional[int]]]:
    """Fills each of ``views`` in turn, first from ``head`` (bytes of the answer already read),
    then from ``sock``, waiting up to ``timeout`` seconds whenever nothing arrives.

    Returns:
        how many bytes of ``head`` were used, and each view's CRC32C (``None`` unless ``check``).

    Raises:
        ReceiveEnded: the connection ended or stayed silent past ``timeout`` first.
        OSError: the socket failed.
    """
    ms = -1 if timeout is None else max(1, int(timeout * 1000))
    used, outcome, err, total, crcs = _native.receive(sock.fileno(), ms, head, views, check)
    if outcome == _FAILED:
        raise OSError(err, f"{os.strerror(err)} after {total} bytes of the answer")
    if outcome != 0:
        why = "ended" if outcome == _ENDED else f"was silent for {timeout} s"
        raise ReceiveEnded(f"the connection {why} after {total} of "
                           f"{sum(len(v) for v in views)} bytes")
    return used, crcs


def copy(out: memoryview, address: int, threads: int, check: bool) -> Optional[int]:
    """Copies ``len(out)`` bytes from ``address`` (memory the caller keeps mapped) into ``out`` on
    up to ``threads`` threads, without the interpreter's lock (0: in this thread, with it); their
    CRC32C if ``check``."""
    crc: Optional[int] = _native.copy(out, address, threads, check)
    return crc


def can_copy() -> bool:
    """Whether :func:`copy` is there."""
    return _native is not None
