#!/usr/bin/env python3
"""Compression ratio of LZ4 after no filter, byte shuffle and bit shuffle, on the shared KV tensors.

An independent cross-check of the codec's ratios (numpy and the lz4 package from PyPI; 256 KiB
chunks, 16-bit little-endian elements, a chunk that does not shrink counts as stored raw), and
the measurement that decides whether a bit-shuffle filter is worth adding:

    pip install numpy lz4 && python3 docs/tools/filter_ratios.py [../shared/data/kv]
"""
import sys

import lz4.block
import numpy as np

CHUNK = 256 << 10


def byte_shuffle(chunk):
    return np.frombuffer(chunk, dtype=np.uint8).reshape(-1, 2).T.tobytes()


def bit_shuffle(chunk):
    # plane k holds bit k of every element, packed eight elements to a byte
    elements = np.frombuffer(chunk, dtype="<u2")
    bits = ((elements[:, None] >> np.arange(16, dtype=np.uint16)) & 1).astype(np.uint8)
    return np.packbits(bits.T, axis=1, bitorder="little").tobytes()


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/kv"
    for dtype in ["fp16", "bf16"]:
        with open(f"{data_dir}/kv_prose_{dtype}.bin", "rb") as f:
            data = f.read(4 << 20)
        for name, transform in [("none", lambda c: c), ("byte shuffle", byte_shuffle),
                                ("bit shuffle", bit_shuffle)]:
            stored = 0
            for i in range(0, len(data), CHUNK):
                chunk = transform(data[i:i + CHUNK])
                stored += min(len(chunk), len(lz4.block.compress(chunk, mode="fast", store_size=False)))
            print(f"{dtype}  {name:12s}  LZ4 ratio {len(data) / stored:.4f}")


if __name__ == "__main__":
    main()
