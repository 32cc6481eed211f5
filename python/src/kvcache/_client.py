"""The blocking client: :class:`Client`."""
from __future__ import annotations

import re
import ssl
from functools import partial
from typing import Iterable, Optional, Sequence, Union

from ._batch import read_batch
from ._buffers import Buffer, readable_view, writable_view
from ._engine_block import EngineBlock
from ._errors import BufferTooSmallError, ServerUnavailableError
from ._http1 import Response, ShortRead
from ._keys import KeyLike, keys_hex
from ._location import PrefixLocation
from ._pin import Pin
from ._prefix import locate_prefix, pin_prefix
from ._put import PutStatus, put
from ._reads import block_length, expected_checksum, intact, read, read_block
from ._servers import DEFAULT_PORT, ServerSet, parse_server
from ._session import Session
from ._shared_reads import read_shared
from ._transport import ConnectionFailed, ServerLink

__all__ = ["Client"]

_NAMESPACE = re.compile(r"[A-Za-z0-9._-]{1,64}")



#: An item of :meth:`Client.put_many`: ``(key, data)`` or ``(key, data, engine_block)``.
PutItem = Union[tuple[KeyLike, Buffer], tuple[KeyLike, Buffer, Optional[EngineBlock]]]


class Client:
    """A client of one or more kvcache servers, for one namespace. Thread-safe.

    Args:
        servers: ``"host:port"`` strings (or ``http://`` / ``https://`` URLs); a key goes to one of
            them by rendezvous hashing, the same as the Java client's.
        namespace: the server namespace (``kvcache.namespaces`` on the server).
        token: a bearer token, if the server has tokens configured.
        dns: instead of ``servers``, ``"name:port"``: every address of the DNS name is a server,
            looked up again every ``resolve_interval`` seconds (a Kubernetes headless service).
        tls: speak TLS to every server (also implied by ``https://`` servers). The certificate must
            chain to a CA the system trusts, or to ``ca_file``, and name the server (or the DNS name).
        ca_file: a PEM file of trusted certificates (a server's own self-signed one works too).
        verify: ``False`` turns certificate checks off (tests only).
        allow_cleartext_token: send the token without TLS to servers beyond loopback.
        connect_timeout: seconds to connect.
        timeout: seconds a request may wait on the socket without progress.
        checksums: send each put's CRC32C, and check every block read against the CRC32C the
            server stored it with (through the socket, or copied out of shared memory), as its
            bytes land in the buffer. A damaged block is read again once, then is a miss
            (:attr:`damaged_blocks`); its bytes are never reported read. An answer without its
            checksum is a :class:`ProtocolError`.
        max_workers: threads for batch operations across servers and for ``put_many``.
        backoff: a server that fails is left alone for a back-off doubling between these bounds
            in seconds; its keys are misses and its puts ``NOT_ADMITTED`` meanwhile.
        resolve_interval: seconds between lookups of the DNS name of ``dns``.
        idle_timeout: idle connections older than this many seconds are not reused (the server
            closes them after 60 s).
        shared_memory: reads from a server on loopback whose RAM is in shared memory
            (``kvcache.cache.ram-shared-memory-dir``), by a pin, ``get_into`` or
            ``get_many_into``, copy each block in RAM straight out of the server's RAM files
            instead of through the socket; other blocks are read through the socket.

    Raises:
        ValueError: a malformed server, namespace or option, or a token in cleartext beyond
            loopback without ``allow_cleartext_token``.
    """

    def __init__(self, servers: Union[str, Sequence[str], None] = None, *,
                 namespace: str = "default", token: Optional[str] = None,
                 dns: Optional[str] = None, tls: Optional[bool] = None,
                 ca_file: Optional[str] = None, verify: bool = True,
                 allow_cleartext_token: bool = False, connect_timeout: float = 2.0,
                 timeout: float = 30.0, checksums: bool = True, max_workers: int = 4,
                 backoff: tuple[float, float] = (0.5, 30.0), resolve_interval: float = 30.0,
                 idle_timeout: float = 30.0, shared_memory: bool = True) -> None:
        if not isinstance(namespace, str) or not _NAMESPACE.fullmatch(namespace):
            raise ValueError(
                f"namespace {namespace!r} must be 1 to 64 of A-Z a-z 0-9 . _ - (as the server's)")
        if servers is not None and dns is not None:
            raise ValueError("give servers or dns, not both")
        if isinstance(servers, str):
            servers = [servers]
        if token is not None and not re.fullmatch(r"[\x21-\x7e]+", token):
            raise ValueError("the token must be printable ASCII without spaces")
        if servers is None and dns is None:
            servers = [f"127.0.0.1:{DEFAULT_PORT}"]
        specs = [parse_server(s) for s in servers or []]
        if dns is None and not specs:
            raise ValueError("no servers given")
        schemes = {scheme for scheme, _, _ in specs if scheme}
        if len(schemes) > 1:
            raise ValueError("servers mix http:// and https://")
        if tls is None:
            tls = schemes == {"https"}
        elif schemes and tls != (schemes == {"https"}):
            raise ValueError(f"tls={tls} contradicts the {schemes.pop()}:// servers")
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        tls_context: Optional[ssl.SSLContext] = None
        if tls:
            tls_context = ssl.create_default_context(cafile=ca_file)
            if not verify:
                tls_context.check_hostname = False
                tls_context.verify_mode = ssl.CERT_NONE
            tls_context.set_alpn_protocols(["http/1.1"])
        elif ca_file is not None:
            raise ValueError("ca_file is given but TLS is not on (tls=True or https:// servers)")
        headers = {"Authorization": f"Bearer {token}"} if token else {}

        def make_link(name: str, host: str, port: int, tls_name: str) -> ServerLink:
            return ServerLink(name, host, port, tls=tls_context, tls_name=tls_name,
                              connect_timeout=connect_timeout, timeout=timeout, headers=headers,
                              backoff_min=backoff[0], backoff_max=backoff[1],
                              idle_timeout=idle_timeout)
        dns_address = parse_server(dns)[1:] if dns is not None else None
        server_set = ServerSet([(host, port) for _, host, port in specs], dns_address, make_link,
                               resolve_interval,
                               token_in_clear=bool(token) and not tls and not allow_cleartext_token)
        #: The server namespace.
        self.namespace = namespace
        self._session = Session(namespace, server_set, checksums=checksums,
                                shared_memory=shared_memory, max_workers=max_workers)

    # -- servers ----------------------------------------------------------------------------

    @property
    def damaged_blocks(self) -> int:
        """Blocks that arrived damaged on their second read too (their bytes without the CRC32C
        the server stored them with, in its memory, on its disk or on the way) and were answered
        as misses; each was logged as a warning."""
        return self._session.damaged

    @property
    def servers(self) -> list[str]:
        """The servers in use, as ``host:port``."""
        return self._session.servers.names()

    def server_for(self, key: KeyLike) -> str:
        """The server (``host:port``) that holds ``key``."""
        return self._session.route(key)[1].name

    def answering(self, key: KeyLike) -> bool:
        """Whether the server of ``key`` answered the last request this client sent it: False
        from a failure of that server (it is then left alone for its back-off, its keys misses)
        until it answers again. A miss from a server that is answering is the server's own word,
        or a block that arrived damaged twice: either way the block is not to be had there. A
        miss from one that is not says nothing of the block. Sends nothing."""
        return self._session.route(key)[1].answering

    # -- blocks -----------------------------------------------------------------------------

    def put(self, key: KeyLike, data: Buffer,
            engine_block: Optional[EngineBlock] = None) -> PutStatus:
        """Stores ``data`` (bytes, memoryview, a numpy array, a CPU torch tensor: any C-contiguous
        buffer) under ``key``. The bytes are sent from ``data`` itself, not copied first. With
        ``engine_block``, the server's KV events name the block as the engine does
        (:class:`EngineBlock`).

        Writes are not retried: a server that is down, or fails during the put, gives
        ``NOT_ADMITTED``, as the Java client's put does. A server without room gives
        ``NO_SPACE`` (or ``NOT_DURABLE``); see :class:`PutStatus`.

        Raises:
            AuthError, ForbiddenError, UnknownNamespaceError: the server refused the request.
            RequestError: any other refusal (a ``checksum-mismatch`` if the buffer changed while
                it was sent).
        """
        hexkey, link = self._session.route(key)
        return put(self._session, link, hexkey, readable_view(data), engine_block)

    def get_into(self, key: KeyLike, buffer: Buffer) -> Optional[int]:
        """Reads the block of ``key`` into the start of ``buffer`` (a writable, C-contiguous buffer:
        bytearray, numpy array, CPU torch tensor), copied once, from the socket into place, or,
        from a server on this host with its RAM in shared memory, straight out of its RAM (pinned
        for the copy, then let go).

        Returns:
            the block's length, or ``None`` on a miss (not cached, or its server is down, or the
            block arrived damaged twice). On ``None`` the buffer's contents are unspecified.

        Raises:
            BufferTooSmallError: the block is longer than ``buffer``.
            AuthError, ForbiddenError, UnknownNamespaceError: the server refused the request.
            ProtocolError: the server announced inconsistent lengths.
        """
        session = self._session
        hexkey, link = session.route(key)
        out = writable_view(buffer)
        damage: dict[int, int] = {}
        if session.offers_shared_memory(link):
            results: list[Optional[int]] = [None]
            too_small: list[BufferTooSmallError] = []
            if not read_shared(session, link, [0], [hexkey], [out], results, too_small, damage):
                if too_small:
                    raise too_small[0]
                return results[0]
        return read_block(session, link, f"{session.prefix}/blocks/{hexkey}", out,
                          attempts=2 - damage.get(0, 0))

    def get(self, key: KeyLike) -> Optional[bytes]:
        """The bytes of ``key``'s block, or ``None`` on a miss (as :meth:`get_into`)."""
        session = self._session
        hexkey, link = session.route(key)

        def handle(r: Response) -> tuple[Optional[bytes], bool]:
            length = block_length(r, link)
            if length is None:
                return None, True
            data = r.read()
            if len(data) != length:
                raise ShortRead(f"{len(data)} of {length} bytes arrived")
            expected = expected_checksum(session, r, link)
            return data, intact(memoryview(data), expected, link, hexkey)
        return read(session, link, f"{session.prefix}/blocks/{hexkey}", handle)

    def head(self, key: KeyLike) -> Optional[int]:
        """The length of ``key``'s block, or ``None`` if it is not cached (or its server is down)."""
        session = self._session
        hexkey, link = session.route(key)

        def handle(r: Response) -> tuple[Optional[int], bool]:
            length = block_length(r, link)
            r.read()
            return length, True
        return read(session, link, f"{session.prefix}/blocks/{hexkey}", handle, method="HEAD")

    def delete(self, key: KeyLike) -> bool:
        """Removes ``key``'s block from every tier of its server.

        Returns:
            ``True`` if it was cached, ``False`` if not.

        Raises:
            ServerUnavailableError: its server is down or failed, so the block may still be there.
        """
        hexkey, link = self._session.route(key)
        if not link.available():
            raise ServerUnavailableError(link.name, "left alone after a failure")

        def handle(r: Response) -> bool:
            if r.status == 204:
                r.read()
                return True
            error = link.error(r)
            if error.status == 404 and error.code == "not-cached":
                return False
            raise error
        try:
            return link.exchange("DELETE", f"{self._session.prefix}/blocks/{hexkey}", handle)
        except ConnectionFailed as e:
            link.failed(e)
            raise ServerUnavailableError(link.name, str(e.__cause__ or e)) from e

    def put_many(self, items: Iterable[PutItem]) -> list[PutStatus]:
        """Stores many blocks, up to ``max_workers`` at a time over as many connections. Each item
        is ``(key, data)``, or ``(key, data, engine_block)`` (see :meth:`put`).

        Returns:
            one status per item, in order.
        """
        items = list(items)
        if len(items) <= 1:
            return [self.put(*item) for item in items]
        return self._session.map(lambda item: self.put(*item), items)

    def get_many_into(self, keys: Sequence[KeyLike], buffers: Sequence[Buffer]) -> list[Optional[int]]:
        """Reads many blocks, each into its buffer, with batch GETs (up to 256 keys each) to each
        server, the servers at once. A server that answers fewer keys than asked (its batch byte
        limit) is asked again for the rest; a batch that breaks is asked again once for the keys
        not yet whole. From a server on this host with its RAM in shared memory, the leading
        blocks it holds in RAM are pinned and copied straight out of it instead (as a
        :meth:`pin_prefix`), and only the others come through batch GETs.

        Returns:
            per key, its block's length, or ``None`` on a miss.

        Raises:
            BufferTooSmallError: a block is longer than its buffer (after the whole batch is read).
        """
        if len(keys) != len(buffers):
            raise ValueError(f"{len(keys)} keys but {len(buffers)} buffers")
        session = self._session
        hexes = keys_hex(keys)
        views = [writable_view(b) for b in buffers]
        results: list[Optional[int]] = [None] * len(keys)
        too_small: list[BufferTooSmallError] = []

        by_server = session.servers.by_server(hexes)
        damage: dict[int, int] = {}  # reads of a key that arrived damaged; each key is one job's

        def read_server(link: ServerLink, idx: list[int]) -> None:
            by_server[link] = read_shared(session, link, idx, hexes, views, results, too_small,
                                          damage)
        shared = [link for link in by_server if session.offers_shared_memory(link)]
        if shared:
            session.run_all([partial(read_server, link, by_server[link]) for link in shared])
        session.run_all([partial(read_batch, session, link, part, hexes, views, results,
                                 too_small, damage)
                         for link, idx in by_server.items() if idx
                         for part in session.connections_for(link, [len(views[i]) for i in idx],
                                                             idx)])
        if too_small:
            raise too_small[0]
        return results

    # -- prefixes ---------------------------------------------------------------------------

    def lookup_prefix(self, keys: Sequence[KeyLike]) -> int:
        """How many leading ``keys`` are cached, with one request per server holding some of them
        (several servers at once). A server that is down ends the prefix at its first key."""
        return self.locate_prefix(keys).present

    def locate_prefix(self, keys: Sequence[KeyLike]) -> PrefixLocation:
        """As :meth:`lookup_prefix`, and also which tier holds the blocks found and how long their
        servers should take to read them (:class:`PrefixLocation`), in the same requests."""
        return locate_prefix(self._session, keys_hex(keys))

    def pin_prefix(self, keys: Sequence[KeyLike], ms: int = 5000) -> Pin:
        """Looks up the leading cached ``keys`` and has their servers hold those blocks for
        ``ms`` milliseconds (1 to 60 000), whatever happens to their keys meanwhile, so that
        reading them cannot miss. Use it as a context manager; leaving it releases the blocks::

            with client.pin_prefix(keys, ms=5000) as pin:
                for i in range(pin.present):
                    pin.get_into(i, buffers[i])

        Raises:
            ValueError: more than 4096 keys on one server, or ``ms`` out of range.
            RequestError: ``too-many-pins`` (the server's limit on open pins).
        """
        if not 1 <= ms <= 60_000:
            raise ValueError(f"ms must be 1 to 60000, got {ms}")
        return pin_prefix(self._session, keys_hex(keys), ms)

    def close(self) -> None:
        """Closes the connections and the worker threads."""
        self._session.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.servers}, namespace={self.namespace!r})"
