"""The pins of vLLM's lookups, held from a lookup to the load that reads its blocks:
:class:`LookupPins`."""
from __future__ import annotations

import logging
import threading
from collections import defaultdict
from typing import Optional

from vllm.v1.kv_offload.base import OffloadKey

from .. import KvCacheError, Pin

log = logging.getLogger("kvcache")


class LookupPins:
    """The pins of each request's lookups and, for each pinned key, its pin and place in it. A pin
    is released once all of its blocks are taken for loading, or when its request ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[OffloadKey, tuple[Pin, int]] = {}
        self._by_request: dict[str, list[Pin]] = defaultdict(list)
        self._keys: dict[Pin, list[OffloadKey]] = {}
        self._unread: dict[Pin, int] = {}
        self._spent: list[Pin] = []

    def add(self, req_id: str, keys: list[OffloadKey], pin: Pin) -> None:
        with self._lock:
            for j, key in enumerate(keys):
                self._by_key[key] = (pin, j)
            self._by_request[req_id].append(pin)
            self._keys[pin] = keys
            self._unread[pin] = len(keys)

    def take(self, key: OffloadKey) -> Optional[tuple[Pin, int]]:
        """The pin holding ``key``'s block and its place in the pin, if one does."""
        with self._lock:
            held = self._by_key.pop(key, None)
            if held is not None:
                pin = held[0]
                self._unread[pin] -= 1
                if self._unread[pin] == 0:
                    self._spent.append(pin)
            return held

    def spent(self) -> list[Pin]:
        """The pins all of whose blocks were taken (to release once read)."""
        with self._lock:
            spent, self._spent = self._spent, []
            for pin in spent:
                self._forget(pin)
            return spent

    def end_request(self, req_id: str) -> list[Pin]:
        """The request's pins not yet released (to release now)."""
        with self._lock:
            pins = [p for p in self._by_request.pop(req_id, []) if p in self._keys]
            for pin in pins:
                self._forget(pin)
            return pins

    def end_all(self) -> list[Pin]:
        with self._lock:
            pins = list(self._keys)
            for pin in pins:
                self._forget(pin)
            return pins

    def _forget(self, pin: Pin) -> None:
        self._unread.pop(pin, None)
        for key in self._keys.pop(pin, []):
            if self._by_key.get(key, (None, 0))[0] is pin:
                del self._by_key[key]


def release_pins(pins: list[Pin]) -> None:
    """Lets go of each pin; one whose release fails ends by its time."""
    for pin in pins:
        try:
            pin.release()
        except KvCacheError as e:
            log.debug("kvcache: releasing a pin failed (it ends by its time): %s", e)
