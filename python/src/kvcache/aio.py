"""The asyncio client, :class:`AsyncClient` and :class:`AsyncPin`, at their former path;
``kvcache`` exports both."""
from ._async_client import AsyncClient, AsyncPin

__all__ = ["AsyncClient", "AsyncPin"]
