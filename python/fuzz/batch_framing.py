"""Fuzzes the Python client's parser of a batch GET answer's framing with atheris.

    python fuzz/batch_framing.py -max_total_time=30     # python/fuzz.sh runs it so

The property: whatever the headers, :func:`kvcache._batch.parse_framing` either raises
``ValueError`` or returns one length per answered key (at least one, at most the keys asked for,
none negative, adding up to the body) and, when checking, one CRC32C (a 32-bit number) for each
block in the body and none for a key not cached; it raises nothing else.
"""
from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from kvcache._batch import parse_framing


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    keys = fdp.ConsumeIntInRange(1, 300)
    body = fdp.ConsumeIntInRange(-1, 1 << 20)
    checking = fdp.ConsumeBool()
    lengths = None if fdp.ConsumeIntInRange(0, 15) == 0 else fdp.ConsumeUnicodeNoSurrogates(64)
    checksums = None if fdp.ConsumeIntInRange(0, 15) == 0 else fdp.ConsumeUnicodeNoSurrogates(96)
    try:
        sizes, crcs = parse_framing(lengths, checksums, keys, body if body >= 0 else None, checking)
    except ValueError:
        return
    assert 0 < len(sizes) <= keys, (lengths, keys)
    assert all(n >= 0 for n in sizes) and sum(sizes) == body, (lengths, body)
    assert len(crcs) == len(sizes)
    for n, crc in zip(sizes, crcs):
        if checking and n:
            assert crc is not None and 0 <= crc < 1 << 32, (checksums, crc)
        else:
            assert crc is None


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
