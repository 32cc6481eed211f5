"""Where keys live: the servers of a client, from a list or a DNS name, and rendezvous hashing
over them."""
from __future__ import annotations

import functools
import ipaddress
import logging
import re
import socket
import threading
import time
from typing import Callable, Optional, Sequence

from . import _rendezvous
from ._transport import ServerLink

log = logging.getLogger("kvcache")

DEFAULT_PORT = 7070

#: Makes the link to one server: (name for ids, host to connect to, port, name for TLS).
LinkFactory = Callable[[str, str, int, str], ServerLink]


class ServerSet:
    """The servers in use and the rendezvous ids of their names. A DNS name is looked up again
    every ``resolve_interval`` seconds; a lookup that fails or finds nothing keeps the servers."""

    def __init__(self, addresses: Sequence[tuple[str, int]], dns: Optional[tuple[str, int]],
                 make_link: LinkFactory, resolve_interval: float, token_in_clear: bool) -> None:
        self._make_link = make_link
        self._dns = dns
        self._resolve_interval = resolve_interval
        self._token_in_clear = token_in_clear
        self._next_resolve = 0.0
        self._lock = threading.Lock()
        # links and their ids, replaced together so that readers never see one without the other
        self._view: tuple[list[ServerLink], list[int]] = ([], [])
        if dns is not None:
            self._resolve(initial=True)
        else:
            self._set([(host, port, host) for host, port in addresses])

    def view(self) -> tuple[list[ServerLink], list[int]]:
        """The links and their ids, looking the DNS name up again if it is time."""
        if self._dns is not None and time.monotonic() >= self._next_resolve:
            with self._lock:
                if time.monotonic() >= self._next_resolve:
                    self._resolve(initial=False)
        return self._view

    def owner(self, key: bytes) -> ServerLink:
        """The server of ``key`` (its 16 bytes)."""
        links, ids = self.view()
        return links[_rendezvous.pick(key, ids)]

    def owners(self, hexes: Sequence[str]) -> list[ServerLink]:
        """The server of each key (hex digits), in order."""
        links, ids = self.view()
        if len(links) == 1:
            return [links[0]] * len(hexes)
        return [links[_rendezvous.pick(bytes.fromhex(h), ids)] for h in hexes]

    def by_server(self, hexes: Sequence[str]) -> dict[ServerLink, list[int]]:
        """The indices of the keys each server holds, in order."""
        links, _ = self.view()
        if len(links) == 1:
            return {links[0]: list(range(len(hexes)))}
        groups: dict[ServerLink, list[int]] = {}
        for i, link in enumerate(self.owners(hexes)):
            groups.setdefault(link, []).append(i)
        return groups

    def names(self) -> list[str]:
        """The servers as ``host:port``."""
        return [link.name for link in self.view()[0]]

    def close(self) -> None:
        for link in self._view[0]:
            link.close()

    def _set(self, addresses: list[tuple[str, int, str]]) -> None:
        """``addresses``: (host to connect to, port, name for TLS)."""
        old = {link.name: link for link in self._view[0]}
        links = []
        for host, port, tls_name in addresses:
            if self._token_in_clear and not is_loopback(host):
                raise ValueError(
                    f"refusing to send the token in cleartext to {host}:{port}: use TLS, or "
                    "allow_cleartext_token=True on a network that is private by other means")
            name = f"{_rendezvous.java_host_string(host) if self._dns else host}:{port}"
            link = old.pop(name, None)
            links.append(link if link is not None else self._make_link(name, host, port, tls_name))
        self._view = (links, [_rendezvous.server_id(link.name) for link in links])
        for gone in old.values():
            gone.close()

    def _resolve(self, initial: bool) -> None:
        assert self._dns is not None
        name, port = self._dns
        self._next_resolve = time.monotonic() + self._resolve_interval
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
            hosts = sorted({str(info[4][0]) for info in infos})
            if not hosts:
                raise ValueError(f"{name} has no addresses")
            self._set([(h, port, name) for h in hosts])
        except (OSError, ValueError) as e:
            if initial:
                raise ValueError(f"cannot use {name}: {e}") from e
            log.warning("kvcache: cannot use %s (%s); keeping %d servers", name, e,
                        len(self._view[0]))


def parse_server(spec: str) -> tuple[str, str, int]:
    """``(scheme or "", host, port)`` of ``host:port``, ``[v6]:port``, or an http(s) URL."""
    scheme = ""
    text = spec.strip()
    m = re.fullmatch(r"(https?)://(.*?)/?", text)
    if m:
        scheme, text = m.group(1), m.group(2)
    m = re.fullmatch(r"\[([0-9A-Fa-f:.%a-zA-Z]+)\](?::(\d+))?|([^:\[\]/]+)(?::(\d+))?", text)
    if not m:
        raise ValueError(f"server {spec!r} is not host:port")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4) or DEFAULT_PORT)
    if not 0 < port < 65536:
        raise ValueError(f"server {spec!r}: port {port} is out of range")
    return scheme, host, port


@functools.lru_cache(maxsize=1024)
def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this host's loopback; remembered per host, as
    reads ask it on every call."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False
