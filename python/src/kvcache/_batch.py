"""The framing of a batch GET answer: :func:`parse_framing`."""
from __future__ import annotations

import base64
import struct
from typing import Optional

#: Header of a batch answer: each key's block length in the body, 0 when not cached.
LENGTHS = "Kvcache-Block-Lengths"
#: Header of a batch answer: the CRC32C of each block in its body, in order.
CHECKSUMS = "Kvcache-Block-Crc32c"


def parse_checksum(header: str) -> Optional[int]:
    """The CRC32C an ``x-amz-checksum-crc32c`` value gives (the base64 of four bytes,
    big-endian), or ``None`` if it is not one."""
    try:
        raw = base64.b64decode(header, validate=True)
    except ValueError:
        return None
    return int(struct.unpack(">I", raw)[0]) if len(raw) == 4 else None


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
