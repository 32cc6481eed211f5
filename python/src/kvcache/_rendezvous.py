"""Rendezvous (highest random weight) hashing, bit for bit the Java client's
(``dev.kvcache.spi.Rendezvous``): a key goes to the server scoring highest for it, so every
client with the same server list agrees without coordination, and adding or removing one of n
servers moves about 1/n of the keys."""
from __future__ import annotations

import ipaddress
from typing import Sequence

_MASK = (1 << 64) - 1


def _signed(v: int) -> int:
    return v - (1 << 64) if v & (1 << 63) else v


def mix(z: int) -> int:
    """MurmurHash3's 64-bit finalizer, on unsigned 64-bit values."""
    z &= _MASK
    z = ((z ^ (z >> 33)) * 0xFF51AFD7ED558CCD) & _MASK
    z = ((z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53) & _MASK
    return z ^ (z >> 33)


def server_id(host_and_port: str) -> int:
    """A server's id (unsigned 64-bit): FNV-1a over the UTF-16 code units of ``host:port``, mixed."""
    h = 0xCBF29CE484222325
    units = host_and_port.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h ^= (units[i] << 8) | units[i + 1]
        h = (h * 0x100000001B3) & _MASK
    return mix(h)


def score(key: bytes, sid: int) -> int:
    """The key's score on the server with id ``sid``, as a signed 64-bit value (as Java's long)."""
    hi = int.from_bytes(key[:8], "big")
    lo = int.from_bytes(key[8:16], "big")
    return _signed(mix(hi ^ mix(lo ^ sid)))


def pick(key: bytes, ids: Sequence[int]) -> int:
    """The index in ``ids`` of the server for ``key``: the highest score, the lowest index on ties."""
    best, best_score = 0, None
    for i, sid in enumerate(ids):
        s = score(key, sid)
        if best_score is None or s > best_score:
            best, best_score = i, s
    return best


def java_host_string(host: str) -> str:
    """``host`` as Java's ``InetSocketAddress.getHostString()`` prints a resolved address: IPv6
    in full, without zero compression (``0:0:0:0:0:0:0:1``); IPv4 and names unchanged. The
    server's name in its id must be the same in both clients."""
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if ip.version == 4:
        return str(ip)
    return ":".join(format(int.from_bytes(ip.packed[i:i + 2], "big"), "x") for i in range(0, 16, 2))
