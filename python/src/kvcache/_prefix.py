"""Prefix lookups: how many leading keys the servers hold and where (:func:`locate_prefix`), and
those blocks held for reading (:func:`pin_prefix`)."""
from __future__ import annotations

import json
import time
from functools import partial
from typing import Any, Optional, Sequence

from ._errors import ProtocolError
from ._http1 import Response
from ._location import PrefixLocation, locate
from ._pin import Pin
from ._reads import read
from ._servers import is_loopback
from ._session import Session
from ._shm import Slice, parse_slice
from ._transport import ConnectionFailed, ServerLink, read_json

#: Keys one lookup request may carry (the server's limit).
MAX_LOOKUP_KEYS = 4096


def lookup(session: Session, link: ServerLink, hexes: list[str],
           pin_ms: Optional[int]) -> Optional[dict[str, Any]]:
    """One lookup of ``hexes`` (at most :data:`MAX_LOOKUP_KEYS`) on ``link``: its answer, with
    ``shared_memory`` parsed into slices, or ``None`` if the server is down. With ``pin_ms`` the
    blocks found are pinned for that long (a lease), and their places in the server's shared
    memory asked for where this client copies from it; a pinned lookup is not retried, as it
    opens a lease."""
    request: dict[str, Any] = {"keys": hexes}
    if pin_ms is not None:
        request["pin_ms"] = pin_ms
        if session.shared is not None and is_loopback(link.host):
            request["shared_memory"] = True
    body = json.dumps(request).encode()

    def handle(r: Response) -> tuple[dict[str, Any], bool]:
        if r.status != 200:
            raise link.error(r)
        answer = read_json(r, link.name)
        n = answer.get("present") if isinstance(answer, dict) else None
        if not isinstance(n, int) or not 0 <= n <= len(hexes):
            raise ProtocolError(f"{link.name}: lookup answer {answer!r}")
        if pin_ms is not None and n > 0 and (
                not isinstance(answer.get("lease"), str)
                or len(answer.get("lengths") or []) != n):
            raise ProtocolError(f"{link.name}: pinned lookup answer without its lease {answer!r}")
        shared = answer.get("shared_memory") if pin_ms is not None else None
        if "shared_memory" in request and n > 0:
            # a server that pinned blocks without their places has its RAM in private memory
            link.shared_memory = shared is not None
        if shared is not None:
            try:
                if not isinstance(shared, list) or len(shared) != n:
                    raise ValueError(f"{shared!r}")
                answer["shared_memory"] = [parse_slice(e, int(answer["lengths"][j]))
                                           for j, e in enumerate(shared)]
            except ValueError as e:
                raise ProtocolError(f"{link.name}: pinned lookup answer with a bad "
                                    f"shared_memory list: {e}") from None
        return answer, True
    headers = {"Content-Type": "application/json"}
    if pin_ms is None:
        return read(session, link, f"{session.prefix}/lookup", handle, "POST", body, headers)
    if not link.available():
        return None
    try:
        return link.exchange("POST", f"{session.prefix}/lookup", lambda r: handle(r)[0], body,
                             headers)
    except ConnectionFailed as e:
        link.failed(e)
        return None


def prefix_length(hexes: Sequence[str], groups: dict[ServerLink, list[int]],
                  present: dict[ServerLink, int]) -> int:
    """The leading keys present, given how many of each server's own keys (in order) it has."""
    first_missing = len(hexes)
    for link, idx in groups.items():
        n = present.get(link, 0)
        if n < len(idx):
            first_missing = min(first_missing, idx[n])
    return first_missing


def locate_prefix(session: Session, hexes: list[str]) -> PrefixLocation:
    """How many leading ``hexes`` are cached, which tiers hold them and how long their servers
    should take to read them: one request per server of some keys (per 4096 of them), the
    servers at once."""
    if not hexes:
        return PrefixLocation(0)
    groups = session.servers.by_server(hexes)
    present: dict[ServerLink, int] = {}
    answers: dict[ServerLink, list[dict[str, Any]]] = {}

    def ask(link: ServerLink, idx: list[int]) -> None:
        n = 0
        answers[link] = []
        for start in range(0, len(idx), MAX_LOOKUP_KEYS):
            chunk = idx[start:start + MAX_LOOKUP_KEYS]
            got = lookup(session, link, [hexes[i] for i in chunk], None)
            if got:
                answers[link].append(got)
            n += got["present"] if got else 0
            if not got or got["present"] < len(chunk):
                break
        present[link] = n
    session.run_all([partial(ask, link, idx) for link, idx in groups.items()])
    return locate(prefix_length(hexes, groups, present), hexes, groups, answers)


def pin_prefix(session: Session, hexes: list[str], ms: int) -> Pin:
    """The leading cached ``hexes``, pinned by their servers for ``ms`` milliseconds: one pinned
    lookup per server of some keys, the servers at once.

    Raises:
        ValueError: more than 4096 keys on one server.
        RequestError: ``too-many-pins`` (the server's limit on open pins).
    """
    groups = session.servers.by_server(hexes)
    for link, idx in groups.items():
        if len(idx) > MAX_LOOKUP_KEYS:
            raise ValueError(f"{len(idx)} keys on {link.name}; a pinned lookup takes at most "
                             f"{MAX_LOOKUP_KEYS} per server")
    answers: dict[ServerLink, dict[str, Any]] = {}
    # a pin expires no earlier than this: its server starts the clock after the lookup arrives
    deadline = time.monotonic() + ms / 1000

    def ask(link: ServerLink, idx: list[int]) -> None:
        got = lookup(session, link, [hexes[i] for i in idx], ms)
        if got is not None:
            answers[link] = got
    try:
        session.run_all([partial(ask, link, idx) for link, idx in groups.items()])
    except BaseException:
        session.release(answers)
        raise
    present = {link: a["present"] for link, a in answers.items()}
    n = prefix_length(hexes, groups, present)
    slots: list[tuple[ServerLink, str, int, int]] = []
    slices: list[Optional[Slice]] = []
    position = {link: 0 for link in groups}
    owners = session.servers.owners(hexes)
    for i in range(n):
        link = owners[i]
        j = position[link]
        position[link] += 1
        a = answers[link]
        slots.append((link, a["lease"], j, int(a["lengths"][j])))
        slices.append(a["shared_memory"][j] if a.get("shared_memory") else None)
    location = locate(n, hexes, groups, {link: [a] for link, a in answers.items()})
    return Pin(session, [bytes.fromhex(h) for h in hexes[:n]], slots, answers, location,
               slices if any(slices) else None, deadline)
