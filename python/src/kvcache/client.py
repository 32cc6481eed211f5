"""The blocking client, :class:`Client`, and :class:`PutStatus`, at their former path; ``kvcache``
exports both."""
from ._batch import MAX_BATCH_KEYS  # noqa: F401
from ._buffers import Buffer  # noqa: F401
from ._client import Client
from ._prefix import MAX_LOOKUP_KEYS  # noqa: F401
from ._put import PutStatus

__all__ = ["Client", "PutStatus"]
