"""kvcache: a client of kvcache-server, the shared KV-cache tier of LLM engines.

>>> import numpy as np, kvcache
>>> ns = kvcache.Namespace("llama-3.1-8b", "bf16", "tp0of1")
>>> keys = kvcache.PrefixKeys(ns, block_tokens=16).keys_for(token_ids)   # doctest: +SKIP
>>> with kvcache.Client("127.0.0.1:7070") as kv:                          # doctest: +SKIP
...     kv.put(keys[0], block)
...     kv.get_into(keys[0], np.empty(block.nbytes, np.uint8))

Everything a user needs is exported here; the modules with a leading underscore are the
implementation. The engines' adapters are in ``kvcache.integrations`` (``.vllm``, ``.sglang``,
``.lmcache``), importable where their engines are installed. ``kvcache.client``, ``kvcache.aio``,
``kvcache.errors``, ``kvcache.keys``, ``kvcache.vllm``, ``kvcache.sglang`` and ``kvcache.lmcache``
are former paths, kept working.

See ``docs/python.md`` in the kvcache repository.
"""
from ._async_client import AsyncClient, AsyncPin
from ._client import Client
from ._engine_block import EngineBlock
from ._errors import (AuthError, BufferTooSmallError, ForbiddenError, KvCacheError, ProtocolError,
                      RequestError, ServerError, ServerUnavailableError, TooLargeError,
                      UnknownNamespaceError)
from ._keys import BlockKey, Namespace, PrefixKeys
from ._location import PrefixLocation
from ._native_io import native_transfers
from ._pin import Pin
from ._put import PutStatus

__version__ = "0.1.0"

__all__ = [
    "AsyncClient", "AsyncPin", "AuthError", "BlockKey", "BufferTooSmallError", "Client",
    "EngineBlock", "ForbiddenError", "KvCacheError", "Namespace", "Pin", "PrefixKeys", "PrefixLocation",
    "ProtocolError", "PutStatus", "RequestError", "ServerError", "ServerUnavailableError",
    "TooLargeError", "UnknownNamespaceError", "native_transfers",
]
