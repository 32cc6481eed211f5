"""Reads copied straight out of the RAM of a server on this host, under a pin that lasts as long
as the copies: :func:`read_shared`."""
from __future__ import annotations

import time
from typing import Optional

from ._errors import BufferTooSmallError, RequestError
from ._prefix import MAX_LOOKUP_KEYS, lookup
from ._session import Session
from ._shm import Copy
from ._transport import ServerLink, warn_damaged

#: How long the pin of a read from shared memory may hold its blocks; it is released as soon as
#: they are copied.
PIN_MS = 5000


def read_shared(session: Session, link: ServerLink, idx: list[int], hexes: list[str],
                views: list[memoryview], results: list[Optional[int]],
                too_small: list[BufferTooSmallError], damage: dict[int, int]) -> list[int]:
    """Pins the leading keys of ``idx`` (up to 4096) that ``link`` holds, copies those in its
    shared memory into their views (each checked against its CRC32C as it is copied), and lets
    the pin go. The first key it does not hold is a miss. Returns the indices still to read
    another way: the keys after that one, the blocks not in RAM, a copy that ended past the
    pin's time, a copy that arrived damaged (counted in ``damage``: its next read is its last).
    A server at its limit of pins reads them all another way."""
    shared = session.shared
    assert shared is not None
    head = idx[:MAX_LOOKUP_KEYS]
    deadline = time.monotonic() + PIN_MS / 1000
    try:
        answer = lookup(session, link, [hexes[i] for i in head], PIN_MS)
    except RequestError as e:
        if e.code == "too-many-pins":
            return idx
        raise
    if answer is None:
        return idx
    present = answer["present"]
    # the key after the pinned ones was missing when the server looked: a miss
    after = idx[present + 1:] if present < len(head) else idx[present:]
    if not present:
        return after
    slices = answer.get("shared_memory")
    rest: list[int] = []
    try:
        for j, i in enumerate(head[:present]):
            where = slices[j] if slices is not None else None
            length = int(answer["lengths"][j])
            if where is None:
                rest.append(i)
            elif length > len(views[i]):
                too_small.append(BufferTooSmallError(length, len(views[i])))
            else:
                copied = shared.copy(where[0], where[1], length, views[i], deadline,
                                     where[3] if session.checksums else None)
                if copied is Copy.COPIED:
                    results[i] = length
                else:
                    if copied is Copy.DAMAGED:
                        warn_damaged(link, hexes[i])
                        damage[i] = 1
                    rest.append(i)
    finally:
        session.release({link: answer})
    return rest + after
