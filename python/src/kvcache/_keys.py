"""Block keys, derived exactly as ``docs/keys.md`` specifies (scheme v1), bit for bit the same
as the Java library's ``dev.kvcache.Namespace``, ``PrefixKeys`` and ``BlockKey.ofRaw``.

A key is 128 bits: the first 16 bytes of a SHA-256 digest salted with the namespace's digest.
Prefix keys chain: each block's key hashes its predecessor's, so a key names its whole prefix.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Iterable, Sequence, Union

__all__ = ["BlockKey", "Namespace", "PrefixKeys", "KeyLike", "MIN_RAW_BYTES", "MAX_RAW_BYTES"]

#: Length of a key in bytes.
KEY_BYTES = 16
#: The shortest engine name :meth:`BlockKey.of_raw` accepts: engines must hash to >= 128 bits.
MIN_RAW_BYTES = 16
#: The longest engine name :meth:`BlockKey.of_raw` accepts.
MAX_RAW_BYTES = 4096
#: The longest namespace field, in UTF-8 bytes.
MAX_FIELD_BYTES = 1024

_NAMESPACE_TAG = b"kvcache.namespace.v1"
_RAW_TAG = b"kvcache.raw.v1"
_BLOCK_TAG = b"kvcache.block.v1"


class BlockKey(bytes):
    """The 16 bytes of a block key. A ``bytes`` subclass, so it hashes, compares and slices as
    bytes do; ``hex()`` prints the 32 lower-case digits the server's URLs use."""

    def __new__(cls, value: Union[bytes, bytearray, memoryview]) -> "BlockKey":
        b = bytes(value)
        if len(b) != KEY_BYTES:
            raise ValueError(f"a block key is {KEY_BYTES} bytes, got {len(b)}")
        return super().__new__(cls, b)

    @classmethod
    def from_hex(cls, text: str) -> "BlockKey":
        """The key whose 32 hex digits (either case) are ``text``."""
        if len(text) != 2 * KEY_BYTES:
            raise ValueError(f"a block key is 32 hex digits, got {len(text)}: {text[:40]!r}")
        try:
            return cls(bytes.fromhex(text))
        except ValueError:
            raise ValueError(f"a block key is 32 hex digits, got {text!r}") from None

    @classmethod
    def of_raw(cls, namespace: "Namespace", name: Union[bytes, bytearray, memoryview, str]) -> "BlockKey":
        """The key of a block the engine names itself, under ``namespace``.

        ``name`` is the engine's own identity for the block: vLLM's block hash bytes, SGLang's
        SHA-256 hex string, an LMCache key string. A ``str`` is taken as its UTF-8 bytes. The key is
        ``SHA-256("kvcache.raw.v1" || N || name)[0:16]``, the same as Java's ``BlockKey.ofRaw``.

        Raises:
            ValueError: ``name`` is shorter than 16 bytes (it would not be a hash of 128 bits, so
                names would collide) or longer than 4096 bytes, or a ``str`` that is not valid
                Unicode.
        """
        raw = _utf8(name, "raw name") if isinstance(name, str) else bytes(name)
        if not MIN_RAW_BYTES <= len(raw) <= MAX_RAW_BYTES:
            raise ValueError(
                f"raw key is {len(raw)} bytes; it must be {MIN_RAW_BYTES} to {MAX_RAW_BYTES} "
                "bytes (a hash of at least 128 bits)")
        return cls(hashlib.sha256(_RAW_TAG + namespace.digest + raw).digest()[:KEY_BYTES])

    def __repr__(self) -> str:
        return f"BlockKey({self.hex()})"


#: What the client accepts as a key: a :class:`BlockKey`, its 16 bytes or its 32 hex digits.
KeyLike = Union[BlockKey, bytes, str]


def key_hex(key: KeyLike) -> str:
    """The 32 lower-case hex digits of ``key``, validated."""
    if isinstance(key, str):
        return BlockKey.from_hex(key).hex()
    if len(key) != KEY_BYTES:
        raise ValueError(f"a block key is {KEY_BYTES} bytes, got {len(key)}")
    return key.hex()


def keys_hex(keys: Iterable[KeyLike]) -> list[str]:
    """The hex digits of many keys, validated (as :func:`key_hex`)."""
    out = []
    for key in keys:
        if type(key) is BlockKey or (type(key) is bytes and len(key) == KEY_BYTES):
            out.append(key.hex())
        else:
            out.append(key_hex(key))
    return out


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} {text!r} is not valid Unicode: {e.reason}") from None


@dataclass(frozen=True)
class Namespace:
    """What salts every key: the model, the KV dtype, the layout (parallel rank and such) and an
    optional tenant. Identical token prefixes in two namespaces never share a key.

    Each field is at most 1024 UTF-8 bytes; only ``tenant`` may be empty.
    """

    model: str
    dtype: str
    layout: str
    tenant: str = ""
    digest: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        h = hashlib.sha256(_NAMESPACE_TAG)
        for name in ("model", "dtype", "layout", "tenant"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"namespace {name} must be a str, got {type(value).__name__}")
            b = _utf8(value, f"namespace {name}")
            if not b and name != "tenant":
                raise ValueError(f"namespace {name} may not be empty")
            if len(b) > MAX_FIELD_BYTES:
                raise ValueError(
                    f"namespace {name} is {len(b)} UTF-8 bytes; at most {MAX_FIELD_BYTES}")
            h.update(struct.pack("<I", len(b)))
            h.update(b)
        object.__setattr__(self, "digest", h.digest())


@dataclass(frozen=True)
class PrefixKeys:
    """Chained prefix keys of token sequences, ``block_tokens`` tokens per block.

    >>> keys = PrefixKeys(Namespace("llama-3.1-8b", "bf16", "tp0of1"), 16).keys_for(range(40))
    >>> [k.hex() for k in keys]
    ['2c45b67c74c5ef2a03c37cbfc0c4f04a', '498db9a0ef93c1c73552139fb69ddaec']
    """

    namespace: Namespace
    block_tokens: int

    def __post_init__(self) -> None:
        if not isinstance(self.block_tokens, int) or self.block_tokens < 1:
            raise ValueError(f"block_tokens must be at least 1, got {self.block_tokens!r}")

    def keys_for(self, tokens: Iterable[int], parent: "BlockKey | None" = None) -> list[BlockKey]:
        """One key per full block of ``tokens`` (the trailing partial block has none).

        Token ids are 32-bit integers: -2**31 to 2**32 - 1, where ``v`` and ``v - 2**32`` are the
        same id. ``parent`` continues a chain after the key of the block before ``tokens``.

        Raises:
            ValueError: a token id outside that range.
        """
        ids: Sequence[int] = tokens if isinstance(tokens, (list, tuple)) else list(tokens)
        b = self.block_tokens
        ns = self.namespace.digest
        prev = bytes(parent) if parent is not None else ns[:KEY_BYTES]
        size = struct.pack("<I", b)
        pack = struct.Struct(f"<{b}I").pack
        keys = []
        for start in range(0, len(ids) - b + 1, b):
            block = [int(t) for t in ids[start:start + b]]
            for t in block:
                if not -(1 << 31) <= t < (1 << 32):
                    raise ValueError(f"token id {t} is not a 32-bit integer")
            data = pack(*(t & 0xFFFFFFFF for t in block))
            prev = hashlib.sha256(_BLOCK_TAG + ns + prev + size + data).digest()[:KEY_BYTES]
            keys.append(BlockKey(prev))
        return keys
