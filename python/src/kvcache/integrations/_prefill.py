"""Loading or prefilling a prefix found in kvcache, for every engine adapter:
:class:`LoadOrPrefill`."""
from __future__ import annotations

import logging
import threading
import time
from typing import Optional, Sequence

from .._buffers import Buffer
from .._client import Client
from .._keys import KeyLike
from .._location import PrefixLocation

log = logging.getLogger("kvcache")


class LoadOrPrefill:
    """Decides whether the blocks a lookup found are loaded or left to the engine's prefill: a
    load takes the servers' read estimate (:attr:`PrefixLocation.load_s`) plus the blocks at this
    adapter's recent load speed; a prefill takes their tokens at ``prefill_tokens_per_s``. The
    load speed is a moving average of the loads :meth:`loaded` is told of; before the first, the
    estimate alone counts. Thread-safe.

    Args:
        prefill_tokens_per_s: the engine's prefill speed in tokens per second; 0 always loads.
        tokens_per_block: the prompt tokens one block holds (:attr:`tokens_per_block`, which an
            adapter that learns it later sets then).
    """

    def __init__(self, prefill_tokens_per_s: float, tokens_per_block: int) -> None:
        if prefill_tokens_per_s < 0:
            raise ValueError(f"prefill_tokens_per_s must be 0 or more, got {prefill_tokens_per_s}")
        if tokens_per_block < 1:
            raise ValueError(f"tokens_per_block must be at least 1, got {tokens_per_block}")
        self.prefill_tokens_per_s = prefill_tokens_per_s
        self.tokens_per_block = tokens_per_block
        #: Blocks found but left to prefill, as loading them was estimated slower.
        self.recomputed = 0
        self._blocks_per_s = 0.0
        self._lock = threading.Lock()

    def loaded(self, blocks: int, seconds: float) -> None:
        """Tells of a load of ``blocks`` blocks that took ``seconds``."""
        if blocks <= 0 or seconds <= 0:
            return
        rate = blocks / seconds
        with self._lock:
            self._blocks_per_s = rate if not self._blocks_per_s else (
                self._blocks_per_s + 0.1 * (rate - self._blocks_per_s))

    def get_many_into(self, client: Client, keys: Sequence[KeyLike],
                      buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """``client.get_many_into(keys, buffers)``, its blocks read and its time told to
        :meth:`loaded`."""
        start = time.monotonic()
        got = client.get_many_into(keys, buffers)
        self.loaded(sum(1 for n in got if n is not None), time.monotonic() - start)
        return got

    def prefill_is_faster(self, location: PrefixLocation) -> bool:
        """Whether prefilling the blocks ``location`` found beats loading them; False when either
        time is unknown (no prefill speed given, no estimate from a server)."""
        if not self.prefill_tokens_per_s or location.load_s is None or not location.present:
            return False
        with self._lock:
            rate = self._blocks_per_s
        transfer = location.present / rate if rate else 0.0
        prefill = location.present * self.tokens_per_block / self.prefill_tokens_per_s
        return location.load_s + transfer > prefill

    def to_load(self, location: PrefixLocation) -> int:
        """How many of the blocks ``location`` found to load: all of them, or none when prefilling
        them is faster (then counted in :attr:`recomputed`)."""
        if not self.prefill_is_faster(location):
            return location.present
        log.debug("kvcache: %d blocks left to prefill: loading them is estimated slower (%s)",
                  location.present, location)
        with self._lock:
            self.recomputed += location.present
        return 0
