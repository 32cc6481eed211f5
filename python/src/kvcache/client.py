"""The blocking client: :class:`Client` and :class:`PutStatus`.

This module is past the size the project splits modules at, and is not split yet: reads from
shared memory (``_read_shared``) and batch reads (``_batch``) are to move beside the shared-memory
mapping (``_shm``) and the batch framing (``_batch``), leaving the client the front.
"""
from __future__ import annotations

import base64
import enum
import json
import logging
import re
import ssl
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, Iterable, Optional, Sequence, TypeVar, Union

import crc32c as _crc32c

from . import _batch
from ._batch import parse_checksum, parse_framing
from ._buffers import readable_view, writable_view
from ._http1 import Response, ShortRead
from ._location import PrefixLocation, locate
from ._pin import Pin, prefix_length
from ._servers import DEFAULT_PORT, ServerSet, is_loopback, parse_server
from ._shm import CHECK_SLICE, Copy, SharedMemory, Slice, parse_slice
from ._hostfile import HostFiles
from ._transport import ConnectionFailed, ServerLink, read_json, warn_damaged
from .errors import BufferTooSmallError, ProtocolError, RequestError, ServerUnavailableError
from .keys import KeyLike, key_hex, keys_hex

__all__ = ["Client", "PutStatus"]

log = logging.getLogger("kvcache")

_NAMESPACE = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: Keys one lookup request may carry (the server's limit).
MAX_LOOKUP_KEYS = 4096
#: Keys one batch GET may carry (the server's limit).
MAX_BATCH_KEYS = 256
#: How long the pin of a read from shared memory (:meth:`Client.get_many_into`) may hold its
#: blocks; it is released as soon as they are copied.
_SHARED_READ_PIN_MS = 5000
_CHECKSUM = "x-amz-checksum-crc32c"


class PutStatus(enum.Enum):
    """What became of a put."""

    #: The server stored the block (``201``).
    STORED = "stored"
    #: The server's policy declined to keep it (``202``); a get will miss.
    NOT_ADMITTED = "not-admitted"
    #: The block is larger than the server's largest (``413``).
    TOO_LARGE = "too-large"
    #: The server is down, had no room, or could not keep the block as durably as its mode
    #: promises while its disk fails (``507``); nothing was stored.
    NOT_STORED = "not-stored"


Buffer = Any  # any object with the buffer protocol, or a CPU torch tensor
T = TypeVar("T")


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
            in seconds; its keys are misses and its puts ``NOT_STORED`` meanwhile.
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
        self.namespace = namespace
        self._prefix = f"/v1/namespaces/{namespace}"
        self._checksums = checksums
        self._damaged = 0
        self._shared = SharedMemory() if shared_memory else None
        self._host_files = HostFiles() if shared_memory else None
        self._tls_context: Optional[ssl.SSLContext] = None
        if tls:
            ctx = ssl.create_default_context(cafile=ca_file)
            if not verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["http/1.1"])
            self._tls_context = ctx
        elif ca_file is not None:
            raise ValueError("ca_file is given but TLS is not on (tls=True or https:// servers)")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        tls_context = self._tls_context

        def make_link(name: str, host: str, port: int, tls_name: str) -> ServerLink:
            return ServerLink(name, host, port, tls=tls_context, tls_name=tls_name,
                              connect_timeout=connect_timeout, timeout=timeout, headers=headers,
                              backoff_min=backoff[0], backoff_max=backoff[1],
                              idle_timeout=idle_timeout)
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._max_workers = max_workers
        dns_address = parse_server(dns)[1:] if dns is not None else None
        self._servers = ServerSet([(host, port) for _, host, port in specs], dns_address,
                                  make_link, resolve_interval,
                                  token_in_clear=bool(token) and not tls and not allow_cleartext_token)

    # -- servers ----------------------------------------------------------------------------

    @property
    def damaged_blocks(self) -> int:
        """Blocks that arrived damaged on their second read too (their bytes without the CRC32C
        the server stored them with, in its memory, on its disk or on the way) and were answered
        as misses; each was logged as a warning."""
        return self._damaged

    @property
    def servers(self) -> list[str]:
        """The servers in use, as ``host:port``."""
        return self._servers.names()

    def server_for(self, key: KeyLike) -> str:
        """The server (``host:port``) that holds ``key``."""
        return self._route(key)[1].name

    def _route(self, key: KeyLike) -> tuple[str, ServerLink]:
        """The key's hex digits, validated, and the server that holds it."""
        hexkey = key_hex(key)
        return hexkey, self._servers.owner(bytes.fromhex(hexkey))

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self._max_workers, "kvcache")
        return self._executor

    # -- blocks -----------------------------------------------------------------------------

    def put(self, key: KeyLike, data: Buffer) -> PutStatus:
        """Stores ``data`` (bytes, memoryview, a numpy array, a CPU torch tensor: any C-contiguous
        buffer) under ``key``. The bytes are sent from ``data`` itself, not copied first.

        Writes are not retried: a server that is down, or fails during the put, gives
        ``NOT_STORED``.

        Raises:
            AuthError, ForbiddenError, UnknownNamespaceError: the server refused the request.
            RequestError: any other refusal (a ``checksum-mismatch`` if the buffer changed while
                it was sent).
        """
        hexkey, link = self._route(key)
        view = readable_view(data)
        if not link.available():
            return PutStatus.NOT_STORED
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(len(view))}
        if self._checksums:
            headers[_CHECKSUM] = _checksum_header(_crc32c.crc32c(view))

        def handle(r: Response) -> PutStatus:
            if r.status in (201, 202):
                r.read()
                return PutStatus.STORED if r.status == 201 else PutStatus.NOT_ADMITTED
            if r.status == 413:
                r.read()
                return PutStatus.TOO_LARGE
            error = link.error(r)
            if r.status == 507:
                log.warning("kvcache: %s", error)
                return PutStatus.NOT_STORED
            raise error
        try:
            return link.exchange("PUT", f"{self._prefix}/blocks/{hexkey}", handle, view, headers)
        except ConnectionFailed as e:
            link.failed(e)
            return PutStatus.NOT_STORED

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
        hexkey, link = self._route(key)
        out = writable_view(buffer)
        damage: dict[int, int] = {}
        if self._offers_shared_memory(link):
            results: list[Optional[int]] = [None]
            too_small: list[BufferTooSmallError] = []
            if not self._read_shared(link, [0], [hexkey], [out], results, too_small, damage):
                if too_small:
                    raise too_small[0]
                return results[0]
        return self._read_block(link, f"{self._prefix}/blocks/{hexkey}", out,
                                attempts=2 - damage.get(0, 0))

    def get(self, key: KeyLike) -> Optional[bytes]:
        """The bytes of ``key``'s block, or ``None`` on a miss (as :meth:`get_into`)."""
        hexkey, link = self._route(key)

        def handle(r: Response) -> tuple[Optional[bytes], bool]:
            length = self._block_length(r, link)
            if length is None:
                return None, True
            data = r.read()
            if len(data) != length:
                raise ShortRead(f"{len(data)} of {length} bytes arrived")
            return data, self._intact(r, memoryview(data), self._expected(r, link), link, hexkey)
        return self._read(link, f"{self._prefix}/blocks/{hexkey}", handle)

    def head(self, key: KeyLike) -> Optional[int]:
        """The length of ``key``'s block, or ``None`` if it is not cached (or its server is down)."""
        hexkey, link = self._route(key)

        def handle(r: Response) -> tuple[Optional[int], bool]:
            length = self._block_length(r, link)
            r.read()
            return length, True
        return self._read(link, f"{self._prefix}/blocks/{hexkey}", handle, method="HEAD")

    def delete(self, key: KeyLike) -> bool:
        """Removes ``key``'s block from every tier of its server.

        Returns:
            ``True`` if it was cached, ``False`` if not.

        Raises:
            ServerUnavailableError: its server is down or failed, so the block may still be there.
        """
        hexkey, link = self._route(key)
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
            return link.exchange("DELETE", f"{self._prefix}/blocks/{hexkey}", handle)
        except ConnectionFailed as e:
            link.failed(e)
            raise ServerUnavailableError(link.name, str(e.__cause__ or e)) from e

    def put_many(self, items: Iterable[tuple[KeyLike, Buffer]]) -> list[PutStatus]:
        """Stores many blocks, up to ``max_workers`` at a time over as many connections.

        Returns:
            one status per item, in order.
        """
        items = list(items)
        if len(items) <= 1:
            return [self.put(k, d) for k, d in items]
        return list(self._pool().map(lambda kd: self.put(kd[0], kd[1]), items))

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
        hexes = keys_hex(keys)
        views = [writable_view(b) for b in buffers]
        groups = self._servers.by_server(hexes)
        results: list[Optional[int]] = [None] * len(keys)
        too_small: list[BufferTooSmallError] = []
        self._run_all([partial(self._batch, link, idx, hexes, views, results, too_small)
                       for link, idx in groups.items()])
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
        hexes = keys_hex(keys)
        if not hexes:
            return PrefixLocation(0)
        groups = self._servers.by_server(hexes)
        present: dict[ServerLink, int] = {}
        answers: dict[ServerLink, list[dict[str, Any]]] = {}

        def ask(link: ServerLink, idx: list[int]) -> None:
            n = 0
            answers[link] = []
            for start in range(0, len(idx), MAX_LOOKUP_KEYS):
                chunk = idx[start:start + MAX_LOOKUP_KEYS]
                got = self._lookup(link, [hexes[i] for i in chunk], None)
                if got:
                    answers[link].append(got)
                n += got["present"] if got else 0
                if not got or got["present"] < len(chunk):
                    break
            present[link] = n
        self._run_all([partial(ask, link, idx) for link, idx in groups.items()])
        return locate(prefix_length(hexes, groups, present), hexes, groups, answers)

    def pin_prefix(self, keys: Sequence[KeyLike], ms: int = 5000) -> "Pin":
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
        hexes = keys_hex(keys)
        groups = self._servers.by_server(hexes)
        for link, idx in groups.items():
            if len(idx) > MAX_LOOKUP_KEYS:
                raise ValueError(f"{len(idx)} keys on {link.name}; a pinned lookup takes at most "
                                 f"{MAX_LOOKUP_KEYS} per server")
        answers: dict[ServerLink, dict[str, Any]] = {}
        # a pin expires no earlier than this: its server starts the clock after the lookup arrives
        deadline = time.monotonic() + ms / 1000

        def ask(link: ServerLink, idx: list[int]) -> None:
            got = self._lookup(link, [hexes[i] for i in idx], ms)
            if got is not None:
                answers[link] = got
        try:
            self._run_all([partial(ask, link, idx) for link, idx in groups.items()])
        except BaseException:
            Pin._release_all(self, answers)
            raise
        present = {link: a["present"] for link, a in answers.items()}
        n = prefix_length(hexes, groups, present)
        slots: list[tuple[ServerLink, str, int, int]] = []
        shared: list[Optional[Slice]] = []
        position = {link: 0 for link in groups}
        owners = self._servers.owners(hexes)
        for i in range(n):
            link = owners[i]
            j = position[link]
            position[link] += 1
            a = answers[link]
            slots.append((link, a["lease"], j, int(a["lengths"][j])))
            shared.append(a["shared_memory"][j] if a.get("shared_memory") else None)
        location = locate(n, hexes, groups, {link: [a] for link, a in answers.items()})
        return Pin(self, [bytes.fromhex(h) for h in hexes[:n]], slots, answers, location,
                   shared if any(shared) else None, deadline)

    # -- internals --------------------------------------------------------------------------

    def _run_all(self, jobs: Sequence[Callable[[], None]]) -> None:
        if len(jobs) == 1:
            jobs[0]()
            return
        for f in [self._pool().submit(job) for job in jobs]:
            f.result()

    def _read(self, link: ServerLink, path: str,
              handle: Callable[[Response], tuple[Optional[T], bool]],
              method: str = "GET", body: Any = None,
              headers: Optional[dict[str, str]] = None, attempts: int = 2) -> Optional[T]:
        """A read: retried once (``attempts`` 2) on a new connection if the server fails or the
        answer arrives damaged; a miss (``None``) after that, and the server is left alone if it
        failed, or the block counted as damaged if it arrived so."""
        if not link.available():
            return None
        for attempt in range(attempts):
            try:
                value, intact = link.exchange(method, path, handle, body, headers, fresh=attempt > 0)
            except ConnectionFailed as e:
                if attempt == attempts - 1:
                    link.failed(e)
                    return None
                continue
            if intact:
                return value
        self._count_damaged(link, path)
        return None

    def _read_block(self, link: ServerLink, path: str, out: memoryview,
                    attempts: int = 2) -> Optional[int]:
        def handle(r: Response) -> tuple[Optional[int], bool]:
            length = self._block_length(r, link)
            if length is None:
                return None, True
            if length > len(out):
                raise BufferTooSmallError(length, len(out))
            expected = self._expected(r, link)
            return length, self._receive(r, out[:length], expected, link, path)
        return self._read(link, path, handle, attempts=attempts)

    def _block_length(self, r: Response, link: ServerLink) -> Optional[int]:
        """The length of a ``200`` block answer, ``None`` for a miss; raises for errors."""
        head = r.method == "HEAD"
        if r.status == 200:
            length = r.length
            if head:  # a HEAD answer has no body: its length is the GET's
                given = r.getheader("Content-Length")
                length = int(given) if given and given.isdigit() else None
            announced = r.getheader("Kvcache-Block-Length")
            if length is None or (announced is not None and announced != str(length)):
                raise ProtocolError(f"{link.name}: a block of Content-Length {length} but "
                                    f"Kvcache-Block-Length {announced}")
            return length
        if r.status == 404 and head:
            return None
        error = link.error(r)
        if error.status == 404 and error.code in ("not-cached", "no-lease", "no-block"):
            return None
        raise error

    def _expected(self, r: Response, link: ServerLink) -> Optional[int]:
        """The CRC32C a block's answer carries, or ``None`` when not checking; a
        ``ProtocolError`` if it carries none (the server sends one with every block)."""
        if not self._checksums:
            return None
        header = r.getheader(_CHECKSUM)
        expected = None if header is None else parse_checksum(header)
        if expected is None:
            raise ProtocolError(f"{link.name}: a block answer with {_CHECKSUM} {header!r}")
        return expected

    def _receive(self, r: Response, out: memoryview, expected: Optional[int], link: ServerLink,
                 what: str) -> bool:
        """Reads ``len(out)`` body bytes into ``out`` a slice at a time, each checksummed as it
        lands (still in the CPU's caches); whether they have ``expected`` (``None``: unchecked)."""
        crc = 0
        for at in range(0, len(out), CHECK_SLICE):
            part = out[at:at + CHECK_SLICE]
            n = r.readinto(part)
            if n != len(part):
                raise ShortRead(f"{at + n} of {len(out)} bytes arrived")
            if expected is not None:
                crc = _crc32c.crc32c(part, crc)
        return self._intact_crc(crc, expected, link, what)

    def _intact(self, r: Response, data: memoryview, expected: Optional[int], link: ServerLink,
                what: str) -> bool:
        """Whether ``data`` has the checksum ``expected`` (``None``: unchecked)."""
        crc = _crc32c.crc32c(data) if expected is not None else 0
        return self._intact_crc(crc, expected, link, what)

    @staticmethod
    def _intact_crc(crc: int, expected: Optional[int], link: ServerLink, what: str) -> bool:
        if expected is None or crc == expected:
            return True
        warn_damaged(link, what)
        return False

    def _count_damaged(self, link: ServerLink, what: str) -> None:
        """Counts a block that arrived damaged on its last read, a miss, and warns of it."""
        with self._lock:
            self._damaged += 1
        log.warning("kvcache: %s sent %s damaged (a CRC32C other than its bytes') twice: "
                    "a miss", link.name, what)

    def _lookup(self, link: ServerLink, hexes: list[str], pin_ms: Optional[int]) -> Optional[dict[str, Any]]:
        request: dict[str, Any] = {"keys": hexes}
        if pin_ms is not None:
            request["pin_ms"] = pin_ms
            if self._shared is not None and is_loopback(link.host):
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
        # A pinned lookup is a write of sorts (it opens a lease): it is not retried.
        if pin_ms is not None:
            if not link.available():
                return None
            try:
                return link.exchange("POST", f"{self._prefix}/lookup", lambda r: handle(r)[0], body,
                                     {"Content-Type": "application/json"})
            except ConnectionFailed as e:
                link.failed(e)
                return None
        return self._read(link, f"{self._prefix}/lookup", handle, "POST", body,
                          {"Content-Type": "application/json"})

    def _offers_shared_memory(self, link: ServerLink) -> bool:
        """Whether reads from ``link`` may be copied out of its RAM: this client copies from
        shared memory, the server is on this host, and has not answered without it."""
        return (self._shared is not None and link.shared_memory is not False
                and is_loopback(link.host))

    def _read_shared(self, link: ServerLink, idx: list[int], hexes: list[str],
                     views: list[memoryview], results: list[Optional[int]],
                     too_small: list[BufferTooSmallError], damage: dict[int, int]) -> list[int]:
        """Pins the leading keys of ``idx`` (up to 4096) that ``link`` holds, copies those in its
        shared memory into their views (each checked against its CRC32C as it is copied), and
        lets the pin go. The first key it does not hold is a miss. Returns the indices still to
        read another way: the keys after that one, the blocks not in RAM, a copy that ended past
        the pin's time, a copy that arrived damaged (counted in ``damage``: its next read is its
        last). A server at its limit of pins reads them all another way."""
        shared = self._shared
        assert shared is not None
        head = idx[:MAX_LOOKUP_KEYS]
        deadline = time.monotonic() + _SHARED_READ_PIN_MS / 1000
        try:
            answer = self._lookup(link, [hexes[i] for i in head], _SHARED_READ_PIN_MS)
        except RequestError as e:
            if e.code == "too-many-pins":
                return idx
            raise
        if answer is None:
            return idx
        present = answer["present"]
        # the key after the pinned ones was missing when the server looked: a miss
        after = idx[present + 1:] if present < len(head) else idx[present:]
        if not present:
            return after
        slices = answer.get("shared_memory")
        rest: list[int] = []
        try:
            for j, i in enumerate(head[:present]):
                where = slices[j] if slices is not None else None
                length = int(answer["lengths"][j])
                if where is None:
                    rest.append(i)
                elif length > len(views[i]):
                    too_small.append(BufferTooSmallError(length, len(views[i])))
                else:
                    copied = shared.copy(where[0], where[1], length, views[i], deadline,
                                         where[3] if self._checksums else None)
                    if copied is Copy.COPIED:
                        results[i] = length
                    else:
                        if copied is Copy.DAMAGED:
                            warn_damaged(link, hexes[i])
                            damage[i] = 1
                        rest.append(i)
        finally:
            Pin._release_all(self, {link: answer})
        return rest + after

    def _batch(self, link: ServerLink, idx: list[int], hexes: list[str], views: list[memoryview],
               results: list[Optional[int]], too_small: list[BufferTooSmallError]) -> None:
        damage: dict[int, int] = {}  # reads of a key that arrived damaged
        if self._offers_shared_memory(link):
            idx = self._read_shared(link, idx, hexes, views, results, too_small, damage)
        pending = list(idx)
        retried = False
        while pending and link.available():
            chunk = pending[:MAX_BATCH_KEYS]
            done: list[int] = []
            body = json.dumps({"keys": [hexes[i] for i in chunk]}).encode()

            def handle(r: Response) -> int:
                if r.status != 200:
                    raise link.error(r)
                try:
                    lengths, expected = parse_framing(
                        r.getheader(_batch.LENGTHS), r.getheader(_batch.CHECKSUMS), len(chunk),
                        r.length, self._checksums)
                except ValueError as e:
                    raise ProtocolError(f"{link.name}: {e}") from None
                for i, length, crc in zip(chunk, lengths, expected):
                    if length > len(views[i]):
                        _skip(r, length)
                        too_small.append(BufferTooSmallError(length, len(views[i])))
                    elif length and not self._receive(r, views[i][:length], crc, link, hexes[i]):
                        damage[i] = damage.get(i, 0) + 1
                        if damage[i] < 2:
                            continue  # asked for again
                        self._count_damaged(link, hexes[i])
                    elif length:
                        results[i] = length
                    done.append(i)
                return len(lengths)
            try:
                answered = link.exchange("POST", f"{self._prefix}/batch-get", handle, body,
                                         {"Content-Type": "application/json"}, fresh=retried)
            except ConnectionFailed as e:
                if retried:
                    link.failed(e)
                    return
                retried = True
                finished = set(done)
                pending = [i for i in pending if i not in finished]
                continue
            finished = set(done)
            pending = [i for i in chunk[:answered] if i not in finished] + pending[answered:]

    def close(self) -> None:
        """Closes the connections and the worker threads."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._servers.close()
        if self._shared is not None:
            self._shared.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.servers}, namespace={self.namespace!r})"


def _skip(r: Response, length: int) -> None:
    scratch = bytearray(min(length, 1 << 20))
    view = memoryview(scratch)
    while length:
        n = r.readinto(view[:min(length, len(view))])
        if not n:
            raise ShortRead(f"the answer ended {length} bytes short")
        length -= n


def _checksum_header(crc: int) -> str:
    return base64.b64encode(struct.pack(">I", crc)).decode("ascii")
