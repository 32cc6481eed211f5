"""The asyncio client: :class:`AsyncClient`, the same operations as :class:`kvcache.Client`
as coroutines, for engines that run an event loop.

Each operation runs the blocking client's on a thread pool of its own, so the event loop never
waits on a socket; the bytes still move once, from the socket into the caller's buffer (which
must stay alive, and untouched, until the coroutine returns).
"""
from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar

from ._buffers import Buffer
from ._client import Client, PutItem
from ._engine_block import EngineBlock
from ._keys import KeyLike
from ._location import PrefixLocation
from ._pin import Pin
from ._put import PutStatus

__all__ = ["AsyncClient", "AsyncPin"]

T = TypeVar("T")


class AsyncClient:
    """An asyncio client; takes the arguments of :class:`kvcache.Client`, plus ``threads``: how
    many operations run at once (default 8)::

        async with AsyncClient(["127.0.0.1:7070"]) as kv:
            n = await kv.get_into(key, buffer)
    """

    def __init__(self, *args: Any, threads: int = 8, **kwargs: Any) -> None:
        self._client = Client(*args, **kwargs)
        self._threads = ThreadPoolExecutor(threads, "kvcache-async")

    @property
    def sync(self) -> Client:
        """The blocking client underneath."""
        return self._client

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, functools.partial(fn, *args))

    async def put(self, key: KeyLike, data: Buffer,
                  engine_block: Optional[EngineBlock] = None) -> PutStatus:
        """As :meth:`kvcache.Client.put`."""
        return await self._run(self._client.put, key, data, engine_block)

    async def get(self, key: KeyLike) -> Optional[bytes]:
        """As :meth:`kvcache.Client.get`."""
        return await self._run(self._client.get, key)

    async def get_into(self, key: KeyLike, buffer: Buffer) -> Optional[int]:
        """As :meth:`kvcache.Client.get_into`."""
        return await self._run(self._client.get_into, key, buffer)

    async def head(self, key: KeyLike) -> Optional[int]:
        """As :meth:`kvcache.Client.head`."""
        return await self._run(self._client.head, key)

    async def delete(self, key: KeyLike) -> bool:
        """As :meth:`kvcache.Client.delete`."""
        return await self._run(self._client.delete, key)

    async def put_many(self, items: Iterable[PutItem]) -> list[PutStatus]:
        """As :meth:`kvcache.Client.put_many`, the puts all under way at once."""
        return list(await asyncio.gather(*(self.put(*item) for item in items)))

    async def get_many_into(self, keys: Sequence[KeyLike], buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """As :meth:`kvcache.Client.get_many_into`."""
        return await self._run(self._client.get_many_into, keys, buffers)

    async def lookup_prefix(self, keys: Sequence[KeyLike]) -> int:
        """As :meth:`kvcache.Client.lookup_prefix`."""
        return await self._run(self._client.lookup_prefix, keys)

    async def locate_prefix(self, keys: Sequence[KeyLike]) -> PrefixLocation:
        """As :meth:`kvcache.Client.locate_prefix`."""
        return await self._run(self._client.locate_prefix, keys)

    def pin_prefix(self, keys: Sequence[KeyLike], ms: int = 5000) -> "AsyncPin":
        """As :meth:`kvcache.Client.pin_prefix`, as an asynchronous context manager::

            async with kv.pin_prefix(keys, ms=5000) as pin:
                await pin.read_into(buffers[:pin.present])
        """
        return AsyncPin(self, keys, ms)

    async def close(self) -> None:
        """Closes the connections and threads."""
        await self._run(self._client.close)
        self._threads.shutdown(wait=False)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncPin:
    """A pinned prefix under asyncio; see :class:`kvcache.Pin`."""

    def __init__(self, client: AsyncClient, keys: Sequence[KeyLike], ms: int) -> None:
        self._client = client
        self._keys = keys
        self._ms = ms
        self._pin: Optional[Pin] = None

    async def __aenter__(self) -> "AsyncPin":
        self._pin = await self._client._run(self._client.sync.pin_prefix, self._keys, self._ms)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.release()

    def _held(self) -> Pin:
        if self._pin is None:
            raise RuntimeError("use the pin inside 'async with'")
        return self._pin

    @property
    def present(self) -> int:
        """How many leading keys are cached and pinned."""
        return self._held().present

    @property
    def lengths(self) -> list[int]:
        """The pinned blocks' lengths, in order."""
        return self._held().lengths

    @property
    def location(self) -> PrefixLocation:
        """As :attr:`kvcache.Pin.location`."""
        return self._held().location

    async def get_into(self, i: int, buffer: Buffer) -> Optional[int]:
        """As :meth:`kvcache.Pin.get_into`."""
        return await self._client._run(self._held().get_into, i, buffer)

    async def read_into(self, buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """As :meth:`kvcache.Pin.read_into`."""
        return await self._client._run(self._held().read_into, buffers)

    async def release(self) -> None:
        """As :meth:`kvcache.Pin.release`."""
        if self._pin is not None:
            await self._client._run(self._pin.release)
