"""A block's CRC32C as the ``x-amz-checksum-crc32c`` header carries it: the base64 of its four
bytes, big-endian."""
from __future__ import annotations

import base64
import struct
from typing import Optional

#: The header of a block's CRC32C, on a put and on the answer to a GET.
HEADER = "x-amz-checksum-crc32c"


def parse_checksum(header: str) -> Optional[int]:
    """The CRC32C a header value gives, or ``None`` if it is not one."""
    try:
        raw = base64.b64decode(header, validate=True)
    except ValueError:
        return None
    return int(struct.unpack(">I", raw)[0]) if len(raw) == 4 else None


def checksum_header(crc: int) -> str:
    """The header value of a CRC32C."""
    return base64.b64encode(struct.pack(">I", crc)).decode("ascii")
