"""Where a prefix's cached blocks are: :class:`PrefixLocation`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ._transport import ServerLink
from ._errors import ProtocolError


@dataclass(frozen=True)
class PrefixLocation:
    """The answer of :meth:`Client.locate_prefix`: how many leading blocks are cached, which tier
    of their servers holds them, and how long the servers should take to read them.

    An engine compares :attr:`load_s`, plus the network time for the blocks' bytes, with its own
    prefill time for the same tokens, and loads only if that is faster (see ``docs/engines.md``).
    """

    #: How many leading keys are cached, as :meth:`Client.lookup_prefix` counts them.
    present: int
    #: Of those, how many each tier holds: ``ram``, ``spill`` (evicted from RAM, not yet on
    #: disk), ``disk``.
    tiers: dict[str, int] = field(default_factory=dict)
    #: The servers' estimate of the time to read them, in seconds, from moving averages of each
    #: tier's recent reads: per server the blocks one after another, the servers at once (the
    #: slowest server's time). ``None`` if a tier holding some has not timed a read yet. The
    #: network between server and client is not in it.
    load_s: Optional[float] = 0.0


def _runs(link: ServerLink, answer: dict[str, Any]) -> list[tuple[str, int, Optional[int]]]:
    """A server's lookup answer as runs of (tier, blocks, microseconds or None)."""
    runs = []
    for run in answer.get("tiers") or []:
        tier, blocks, micros = run.get("tier"), run.get("blocks"), run.get("load_us")
        if not isinstance(tier, str) or not isinstance(blocks, int) or blocks < 1 or not (
                micros is None or isinstance(micros, int)):
            raise ProtocolError(f"{link.name}: lookup answer with a bad tier run {run!r}")
        runs.append((tier, blocks, micros))
    return runs


def locate(n: int, hexes: Sequence[str], groups: dict[ServerLink, list[int]],
           answers: dict[ServerLink, list[dict[str, Any]]]) -> PrefixLocation:
    """The location of the first ``n`` of ``hexes``, from each server's lookup answers (in the
    order of its own keys, ``groups[link]``)."""
    tiers: dict[str, int] = {}
    slowest: Optional[float] = 0.0
    for link, idx in groups.items():
        wanted = sum(1 for i in idx if i < n)  # this server's share of the prefix
        seconds: Optional[float] = 0.0
        for answer in answers.get(link, []):
            for tier, blocks, micros in _runs(link, answer):
                if wanted == 0:
                    break
                taken = min(blocks, wanted)
                wanted -= taken
                tiers[tier] = tiers.get(tier, 0) + taken
                if seconds is not None:
                    seconds = None if micros is None else seconds + micros * 1e-6 * taken / blocks
        if wanted > 0:  # a server too old to say where its blocks are
            tiers["unknown"] = tiers.get("unknown", 0) + wanted
            seconds = None
        if slowest is not None:
            slowest = None if seconds is None else max(slowest, seconds)
    return PrefixLocation(n, tiers, slowest)
