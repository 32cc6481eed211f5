"""The exceptions the client raises. All derive from :class:`KvCacheError`.

A server that is down does not raise on reads and writes: its keys are misses and its puts are
``PutStatus.NOT_ADMITTED`` while it is left alone for a back-off. What raises is what the caller must
fix (a token, a namespace, a buffer) and answers that break the protocol.
"""
from __future__ import annotations

from typing import Optional

__all__ = [
    "KvCacheError", "ServerError", "AuthError", "ForbiddenError", "UnknownNamespaceError",
    "TooLargeError", "BufferTooSmallError", "RequestError", "ServerUnavailableError",
    "ProtocolError",
]


class KvCacheError(Exception):
    """Base of every error the kvcache client raises."""


class ServerError(KvCacheError):
    """The server refused a request. ``status`` is the HTTP status, ``code`` the ``error`` field of
    its JSON body (``"bad-key"``, ``"forbidden"``...), ``server`` the ``host:port`` that said so."""

    def __init__(self, status: int, code: str, message: str, server: str = "") -> None:
        super().__init__(f"{server + ': ' if server else ''}{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.server = server


class AuthError(ServerError):
    """401: tokens are configured on the server and this client's token is missing or unknown."""


class ForbiddenError(ServerError):
    """403: the token may not read (or write) this namespace."""


class UnknownNamespaceError(ServerError):
    """404 ``unknown-namespace``: the server does not serve this namespace."""


class TooLargeError(KvCacheError):
    """A block does not fit where it has to go."""


class BufferTooSmallError(TooLargeError):
    """The block is longer than the caller's buffer; the buffer holds nothing of it.
    ``length`` is the block's length."""

    def __init__(self, length: int, capacity: int) -> None:
        super().__init__(f"the block is {length} bytes; the buffer holds {capacity}")
        self.length = length
        self.capacity = capacity


class RequestError(ServerError):
    """Any other 4xx or 5xx answer: a malformed request (``bad-key``, ``bad-lookup``), a pin
    limit (``too-many-pins``), a lease that is gone (``no-lease``)."""


class ServerUnavailableError(KvCacheError):
    """No server could be reached for an operation that cannot be answered as a miss (a delete)."""

    def __init__(self, server: str, reason: Optional[str] = None) -> None:
        super().__init__(f"{server} is unavailable" + (f": {reason}" if reason else ""))
        self.server = server


class ProtocolError(KvCacheError):
    """The server's answer is not what the protocol says: a block whose length differs from the
    one announced, a body that is not the JSON expected, an unexpected status. The caller's
    buffer is not reported filled."""
