"""Reads through the socket: a request retried once on a new connection, the answer of a block,
and its bytes checked against their CRC32C as they land in the caller's buffer."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, TypeVar

import crc32c as _crc32c

from ._checksum import HEADER, parse_checksum
from ._errors import BufferTooSmallError, ProtocolError
from ._http1 import Response, ShortRead
from ._session import Session
from ._shm import CHECK_SLICE
from ._transport import ConnectionFailed, ServerLink, warn_damaged

T = TypeVar("T")


def read(session: Session, link: ServerLink, path: str,
         handle: Callable[[Response], tuple[Optional[T], bool]],
         method: str = "GET", body: Any = None,
         headers: Optional[dict[str, str]] = None, attempts: int = 2) -> Optional[T]:
    """A read: ``handle`` gives the answer's value and whether it arrived intact. Retried once
    (``attempts`` 2) on a new connection if the server fails or the answer arrives damaged; a
    miss (``None``) after that, and the server is left alone if it failed, or the block counted
    as damaged if it arrived so."""
    if not link.available():
        return None
    for attempt in range(attempts):
        try:
            value, intact = link.exchange(method, path, handle, body, headers, fresh=attempt > 0)
        except ConnectionFailed as e:
            if attempt == attempts - 1:
                link.failed(e)
                return None
            continue
        if intact:
            return value
    session.count_damaged(link, path)
    return None


def read_block(session: Session, link: ServerLink, path: str, out: memoryview,
               attempts: int = 2) -> Optional[int]:
    """Reads the block a GET of ``path`` answers into the start of ``out``, as :func:`read`.

    Returns:
        its length, or ``None`` on a miss.

    Raises:
        BufferTooSmallError: the block is longer than ``out``.
    """
    def handle(r: Response) -> tuple[Optional[int], bool]:
        length = block_length(r, link)
        if length is None:
            return None, True
        if length > len(out):
            raise BufferTooSmallError(length, len(out))
        expected = expected_checksum(session, r, link)
        return length, receive(r, out[:length], expected, link, path)
    return read(session, link, path, handle, attempts=attempts)


def block_length(r: Response, link: ServerLink) -> Optional[int]:
    """The length of a ``200`` block answer, ``None`` for a miss; raises for errors."""
    head = r.method == "HEAD"
    if r.status == 200:
        length = r.length
        if head:  # a HEAD answer has no body: its length is the GET's
            given = r.getheader("Content-Length")
            length = int(given) if given and given.isdigit() else None
        announced = r.getheader("Kvcache-Block-Length")
        if length is None or (announced is not None and announced != str(length)):
            raise ProtocolError(f"{link.name}: a block of Content-Length {length} but "
                                f"Kvcache-Block-Length {announced}")
        return length
    if r.status == 404 and head:
        return None
    error = link.error(r)
    if error.status == 404 and error.code in ("not-cached", "no-lease", "no-block"):
        return None
    raise error


def expected_checksum(session: Session, r: Response, link: ServerLink) -> Optional[int]:
    """The CRC32C a block's answer carries, or ``None`` when not checking; a
    ``ProtocolError`` if it carries none (the server sends one with every block)."""
    if not session.checksums:
        return None
    header = r.getheader(HEADER)
    expected = None if header is None else parse_checksum(header)
    if expected is None:
        raise ProtocolError(f"{link.name}: a block answer with {HEADER} {header!r}")
    return expected


def receive(r: Response, out: memoryview, expected: Optional[int], link: ServerLink,
            what: str) -> bool:
    """Reads ``len(out)`` body bytes into ``out`` a slice at a time, each checksummed as it
    lands (still in the CPU's caches); whether they have ``expected`` (``None``: unchecked).
    Without the interpreter's lock where :meth:`Response.receive` can."""
    return receive_all(r, [out], [expected], link, [what])[0]


def receive_all(r: Response, outs: Sequence[memoryview], expected: Sequence[Optional[int]],
                link: ServerLink, whats: Sequence[str]) -> list[bool]:
    """:func:`receive` of consecutive blocks of one answer into ``outs``: in one call without the
    interpreter's lock where :meth:`Response.receive` can, else one by one; whether each has its
    ``expected`` CRC32C."""
    check = any(e is not None for e in expected)
    crcs = r.receive(outs, check) if outs else []
    if crcs is None:
        return [_receive_slices(r, o, e, link, w) for o, e, w in zip(outs, expected, whats)]
    return [_intact_crc(c or 0, e, link, w) for c, e, w in zip(crcs, expected, whats)]


def _receive_slices(r: Response, out: memoryview, expected: Optional[int], link: ServerLink,
                    what: str) -> bool:
    crc = 0
    for at in range(0, len(out), CHECK_SLICE):
        part = out[at:at + CHECK_SLICE]
        n = r.readinto(part)
        if n != len(part):
            raise ShortRead(f"{at + n} of {len(out)} bytes arrived")
        if expected is not None:
            crc = _crc32c.crc32c(part, crc)
    return _intact_crc(crc, expected, link, what)


def intact(data: memoryview, expected: Optional[int], link: ServerLink, what: str) -> bool:
    """Whether ``data`` has the checksum ``expected`` (``None``: unchecked)."""
    crc = _crc32c.crc32c(data) if expected is not None else 0
    return _intact_crc(crc, expected, link, what)


def skip(r: Response, length: int) -> None:
    """Reads and drops ``length`` body bytes."""
    scratch = bytearray(min(length, 1 << 20))
    view = memoryview(scratch)
    while length:
        n = r.readinto(view[:min(length, len(view))])
        if not n:
            raise ShortRead(f"the answer ended {length} bytes short")
        length -= n


def _intact_crc(crc: int, expected: Optional[int], link: ServerLink, what: str) -> bool:
    if expected is None or crc == expected:
        return True
    warn_damaged(link, what)
    return False
