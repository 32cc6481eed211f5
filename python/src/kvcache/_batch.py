"""Batch GETs: their answer's framing (:func:`parse_framing`), and reads of many blocks from one
server by them (:func:`read_batch`)."""
from __future__ import annotations

import json
from typing import Optional

from ._checksum import parse_checksum
from ._errors import BufferTooSmallError, ProtocolError
from ._http1 import Response
from ._reads import receive, receive_all, skip
from ._session import Session
from ._transport import ConnectionFailed, ServerLink

#: Header of a batch answer: each key's block length in the body, 0 when not cached.
LENGTHS = "Kvcache-Block-Lengths"
#: Header of a batch answer: the CRC32C of each block in its body, in order.
CHECKSUMS = "Kvcache-Block-Crc32c"
#: Keys one batch GET may carry (the server's limit).
MAX_BATCH_KEYS = 256


def parse_framing(lengths: Optional[str], checksums: Optional[str], keys: int,
                  body_length: Optional[int], checking: bool) -> tuple[list[int], list[Optional[int]]]:
    """Each answered key's block length, and its CRC32C (``None`` for a key not cached, or when
    not ``checking``), from a batch answer to ``keys`` keys whose body has ``body_length`` bytes.

    Raises:
        ValueError: the headers break the protocol: lengths that are not numbers, more than the
            keys asked for, none, or not adding up to the body; with ``checking``, checksums
            missing, malformed, or not one per block in the body.
    """
    try:
        sizes = [int(x) for x in (lengths or "").split(",")]
    except ValueError:
        raise ValueError(f"{LENGTHS} {lengths!r}") from None
    if (not 0 < len(sizes) <= keys or any(n < 0 for n in sizes)
            or body_length is None or sum(sizes) != body_length):
        raise ValueError(f"{LENGTHS} {lengths!r} for {keys} keys and a body of {body_length} bytes")
    if not checking:
        return sizes, [None] * len(sizes)
    given = [] if checksums is None or not checksums.strip() else checksums.split(",")
    crcs = [parse_checksum(c.strip()) for c in given]
    blocks = sum(1 for n in sizes if n)
    if checksums is None or len(crcs) != blocks or None in crcs:
        raise ValueError(f"{CHECKSUMS} {checksums!r} for {blocks} blocks")
    found = iter(crcs)
    return sizes, [next(found) if n else None for n in sizes]


def read_batch(session: Session, link: ServerLink, idx: list[int], hexes: list[str],
               views: list[memoryview], results: list[Optional[int]],
               too_small: list[BufferTooSmallError], damage: dict[int, int]) -> None:
    """Reads the blocks of keys ``idx`` of ``hexes`` from ``link`` into their ``views`` with batch
    GETs of up to 256 keys, setting each one read in ``results`` (a miss stays ``None``). A
    server that answers fewer keys than asked is asked again for the rest; a batch that breaks
    is asked again once, on a new connection, for the keys not yet whole; a block that arrives
    damaged is asked again once (``damage`` counts each key's damaged reads), then is a miss.
    A block longer than its view is skipped and noted in ``too_small``."""
    pending = list(idx)
    retried = False
    while pending and link.available():
        chunk = pending[:MAX_BATCH_KEYS]
        done: list[int] = []
        body = json.dumps({"keys": [hexes[i] for i in chunk]}).encode()

        def handle(r: Response) -> int:
            if r.status != 200:
                raise link.error(r)
            try:
                lengths, expected = parse_framing(r.getheader(LENGTHS), r.getheader(CHECKSUMS),
                                                  len(chunk), r.length, session.checksums)
            except ValueError as e:
                raise ProtocolError(f"{link.name}: {e}") from None
            arrived = _receive_blocks(r, link, [(views[i], n, c, hexes[i])
                                                for i, n, c in zip(chunk, lengths, expected)],
                                      too_small)
            for i, length, intact in zip(chunk, lengths, arrived):
                if intact is False:
                    damage[i] = damage.get(i, 0) + 1
                    if damage[i] < 2:
                        continue  # asked for again
                    session.count_damaged(link, hexes[i])
                elif intact:
                    results[i] = length
                done.append(i)
            return len(lengths)
        try:
            answered = link.exchange("POST", f"{session.prefix}/batch-get", handle, body,
                                     {"Content-Type": "application/json"}, fresh=retried)
        except ConnectionFailed as e:
            if retried:
                link.failed(e)
                return
            retried = True
            finished = set(done)
            pending = [i for i in pending if i not in finished]
            continue
        finished = set(done)
        pending = [i for i in chunk[:answered] if i not in finished] + pending[answered:]


def _receive_blocks(r: Response, link: ServerLink,
                    blocks: list[tuple[memoryview, int, Optional[int], str]],
                    too_small: list[BufferTooSmallError]) -> list[Optional[bool]]:
    """Reads a batch answer's blocks, each ``(view, length, crc32c, key)``, into their views:
    whether each arrived intact, ``None`` for a key not cached or a block longer than its view
    (skipped, and noted in ``too_small``). All in one call without the interpreter's lock where
    every block fits its view and :meth:`Response.receive` can."""
    if all(n <= len(v) for v, n, _, _ in blocks):
        full = [(v[:n], c, key) for v, n, c, key in blocks if n]
        intact = iter(receive_all(r, [f[0] for f in full], [f[1] for f in full], link,
                                  [f[2] for f in full]))
        return [next(intact) if n else None for _, n, _, _ in blocks]
    arrived: list[Optional[bool]] = []
    for view, n, crc, key in blocks:
        if n > len(view):
            skip(r, n)
            too_small.append(BufferTooSmallError(n, len(view)))
            arrived.append(None)
        else:
            arrived.append(receive(r, view[:n], crc, link, key) if n else None)
    return arrived
