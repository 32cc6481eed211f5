#!/usr/bin/env python3
"""Independent reference implementation of kvcache's key derivation (docs/keys.md, scheme v1).

Prints the test vectors as JSON. kvcache-core's KeyVectorsTest checks the Java implementation
against the committed output of this script:

    python3 docs/tools/key_vectors.py > kvcache-core/src/test/resources/key-vectors.json
"""
import hashlib
import json
import struct


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def namespace_digest(model, dtype, layout, tenant):
    h = hashlib.sha256(b"kvcache.namespace.v1")
    for field in (model, dtype, layout, tenant):
        b = field.encode("utf-8")
        h.update(u32(len(b)))
        h.update(b)
    return h.digest()


def raw_key(ns, raw):
    return hashlib.sha256(b"kvcache.raw.v1" + ns + raw).digest()[:16]


def prefix_keys(ns, block_size, tokens):
    parent = ns[:16]
    keys = []
    for b in range(len(tokens) // block_size):
        block = tokens[b * block_size:(b + 1) * block_size]
        data = b"kvcache.block.v1" + ns + parent + u32(block_size) + b"".join(u32(t) for t in block)
        parent = hashlib.sha256(data).digest()[:16]
        keys.append(parent.hex())
    return keys


# Names engines give blocks: an SGLang SHA-256 hex digest, an LMCache key string, non-ASCII.
NAMES = [
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "vllm@meta-llama/Llama-3.1-8B@1@0@-6523457732914981562@bfloat16",
    "Блок номер один, 16+ байт",
]


def main():
    namespaces = [
        ("llama-3.1-8b", "bf16", "tp0of1", ""),
        ("llama-3.1-8b", "bf16", "tp0of1", "tenant-a"),
        ("qwen2.5-7b", "fp16", "tp1of2", ""),
        ("smollm2-135m", "fp8", "layer-major/ü", "租户"),
    ]
    prompts = [
        (16, list(range(40))),
        (4, [128000, 9906, 11, 1917, 0, 4294967295 & 0x7FFFFFFF, 7, 65535, 1, 2, 3]),
        (1, [5, 4, 3]),
        (512, list(range(1000))),
        (16, [-1, -2, -3, -2147483648] * 4),
    ]
    vectors = []
    for model, dtype, layout, tenant in namespaces:
        ns = namespace_digest(model, dtype, layout, tenant)
        entry = {
            "namespace": {"model": model, "dtype": dtype, "layout": layout, "tenant": tenant},
            "namespaceDigest": ns.hex(),
            "raw": [],
            "names": [],
            "prefix": [],
        }
        for raw in (bytes(range(16)), bytes(range(32)), b"\xff" * 20):
            entry["raw"].append({"rawHex": raw.hex(), "key": raw_key(ns, raw).hex()})
        for name in NAMES:
            entry["names"].append({"name": name, "key": raw_key(ns, name.encode("utf-8")).hex()})
        for block_size, tokens in prompts:
            entry["prefix"].append(
                {"blockSizeTokens": block_size, "tokens": tokens,
                 "keys": prefix_keys(ns, block_size, tokens)})
        vectors.append(entry)
    print(json.dumps({"scheme": "kvcache keys v1", "vectors": vectors}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
