"""kvcache: a client of kvcache-server, the shared KV-cache tier of LLM engines.

>>> import numpy as np, kvcache
>>> ns = kvcache.Namespace("llama-3.1-8b", "bf16", "tp0of1")
>>> keys = kvcache.PrefixKeys(ns, block_tokens=16).keys_for(token_ids)   # doctest: +SKIP
>>> with kvcache.Client("127.0.0.1:7070") as kv:                          # doctest: +SKIP
...     kv.put(keys[0], block)
...     kv.get_into(keys[0], np.empty(block.nbytes, np.uint8))

See ``docs/python.md`` in the kvcache repository.
"""
from .aio import AsyncClient, AsyncPin
from ._location import PrefixLocation
from ._pin import Pin
from .client import Client, PutStatus
from .errors import (AuthError, BufferTooSmallError, ForbiddenError, KvCacheError, ProtocolError,
                     RequestError, ServerError, ServerUnavailableError, TooLargeError,
                     UnknownNamespaceError)
from .keys import BlockKey, Namespace, PrefixKeys

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "AsyncPin", "AuthError", "BlockKey", "BufferTooSmallError", "Client",
    "ForbiddenError", "KvCacheError", "Namespace", "Pin", "PrefixKeys", "PrefixLocation",
    "ProtocolError", "PutStatus", "RequestError", "ServerError", "ServerUnavailableError",
    "TooLargeError", "UnknownNamespaceError",
]
