"""A lean HTTP/1.1 client connection: the subset of the protocol kvcache-server speaks.

``http.client`` parses every answer's headers with the ``email`` package and wraps the socket in
a new file object per answer, which cost more CPU than moving a 256 KiB block
(``docs/python.md``, "Transport"). This reads the head with one or two ``recv_into`` calls into an
8 KiB buffer, parses it with ``bytes.split``, and reads bodies straight from the socket into the
caller's buffer (what arrived with the head is copied from the small buffer).
"""
from __future__ import annotations

import select
import socket
import ssl
from typing import Any, Mapping, Optional, Sequence

from . import _native_io
#: Bytes read at a time while looking for the end of an answer's head.
_HEAD_READ = 8192
#: Bytes of a body sent at a time, between looks for an early answer.
_SEND_SLICE = 1 << 20
#: Longest answer head accepted.
_MAX_HEAD = 64 << 10


class ShortRead(ConnectionError):
    """The connection ended before the answer was whole."""


class BadAnswer(ConnectionError):
    """The bytes on the connection are not an HTTP/1.1 answer."""


class Response:
    """One answer. Its body must be read whole (``readinto``, ``read``, ``skip``) before the
    connection carries the next request."""

    def __init__(self, conn: "Connection", method: str, status: int,
                 headers: dict[str, str], will_close: bool) -> None:
        self._conn = conn
        self.method = method
        self.status = status
        self.headers = headers
        self.will_close = will_close
        self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        given = headers.get("content-length")
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            self.length: Optional[int] = 0
        elif self.chunked:
            self.length = None
        elif given is not None:
            try:
                self.length = int(given)
            except ValueError:
                raise BadAnswer(f"Content-Length {given!r}") from None
        else:
            self.length = None  # to the end of the connection
            self.will_close = True

    def getheader(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """A header's value (the last one if repeated), by case-insensitive name."""
        return self.headers.get(name.lower(), default)

    def isclosed(self) -> bool:
        """True once the body has been read whole."""
        return self.length == 0 and not self.chunked

    def readinto(self, view: memoryview) -> int:
        """Reads up to ``len(view)`` body bytes into ``view`` (fewer only if the connection ends)."""
        if self.chunked:
            raise BadAnswer("a block answer in chunked coding")
        want = len(view) if self.length is None else min(len(view), self.length)
        n = self._conn._readinto(view[:want])
        if self.length is not None:
            self.length -= n
        return n

    def receive(self, views: Sequence[memoryview], check: bool) -> Optional[list[Optional[int]]]:
        """Fills ``views`` in turn with the next body bytes in one call that lets go of the
        interpreter's lock (:mod:`._native_io`), checksumming each as it lands.

        Returns:
            each view's CRC32C (``None`` unless ``check``), or ``None`` if this answer cannot be
            read so (no compiled module, a TLS connection, a chunked body, too short a body):
            read it with :meth:`readinto`.

        Raises:
            ShortRead: the connection ended or was silent past its timeout first.
        """
        want = sum(len(v) for v in views)
        conn = self._conn
        if (self.chunked or self.length is None or want > self.length
                or not _native_io.can_receive(conn.sock)):
            return None
        crcs = conn._receive(views, check)
        self.length -= want
        return crcs

    def read(self, limit: Optional[int] = None) -> bytes:
        """The rest of the body (or its first ``limit`` bytes)."""
        if self.chunked:
            data = self._conn._read_chunked()
            self.chunked = False
            self.length = 0
            return data if limit is None else data[:limit]
        if self.length is None:
            out = bytearray()
            chunk = bytearray(65536)
            while limit is None or len(out) < limit:
                n = self._conn._readinto(memoryview(chunk))
                if not n:
                    break
                out += chunk[:n]
            return bytes(out)
        want = self.length if limit is None else min(self.length, limit)
        buf = bytearray(want)
        n = self.readinto(memoryview(buf))
        if n != want:
            raise ShortRead(f"the answer ended after {n} of {want} bytes")
        return bytes(buf)


class Connection:
    """One keep-alive HTTP/1.1 connection (TLS if ``tls`` is given). Not thread-safe."""

    def __init__(self, host: str, port: int, *, connect_timeout: float, timeout: float,
                 tls: Optional[ssl.SSLContext] = None, server_name: Optional[str] = None) -> None:
        self.host = host
        self.port = port
        self._host_header = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._tls = tls
        self._server_name = server_name or host
        self.sock: Optional[socket.socket] = None
        #: The methods of requests sent whose answers nobody has read yet, oldest first.
        self.owed: list[str] = []
        self._buf = bytearray(_HEAD_READ)
        self._start = 0
        self._end = 0

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self._connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._server_name)
            sock.settimeout(self._timeout)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.owed = []
        self._start = self._end = 0

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    def has_unread(self) -> bool:
        """Bytes arrived that no request asked for (an idle connection the server closed)."""
        return self._start != self._end

    def send(self, method: str, path: str, headers: Mapping[str, str], body: Any = None) -> bool:
        """Sends a request: the head and the start of ``body`` (any buffer, sent as it is) in one
        system call, then the rest of the body in slices of 1 MiB.

        Returns:
            False if the server answered before the body was all sent (a 413 from the headers
            alone, a 401): the rest is not sent, and the connection cannot carry another request.
        """
        lines = [f"{method} {path} HTTP/1.1\r\nHost: {self._host_header}\r\n"]
        lines += [f"{k}: {v}\r\n" for k, v in headers.items()]
        lines.append("\r\n")
        head = "".join(lines).encode("latin-1")
        sock = self.sock
        assert sock is not None
        if body is None:
            sock.sendall(head)
            return True
        view = memoryview(body)
        first = view[:_SEND_SLICE]
        if isinstance(sock, ssl.SSLSocket):  # no scatter-gather over TLS
            sock.sendall(head)
            sock.sendall(first)
        else:
            sent = sock.sendmsg([head, first])
            if sent < len(head):
                sock.sendall(head[sent:])
                sent = len(head)
            if sent - len(head) < len(first):
                sock.sendall(first[sent - len(head):])
        for start in range(len(first), len(view), _SEND_SLICE):
            if self._answered():
                return False
            try:
                sock.sendall(view[start:start + _SEND_SLICE])
            except (BrokenPipeError, ConnectionResetError):
                return False  # the server may have answered and closed: read its answer next
        return True

    def _answered(self) -> bool:
        assert self.sock is not None
        return readable(self.sock)

    def read_response(self, method: str) -> Response:
        """Reads an answer's head (skipping ``100 Continue``)."""
        while True:
            status, headers, will_close = self._read_head()
            if status != 100:
                return Response(self, method, status, headers, will_close)

    def _read_head(self) -> tuple[int, dict[str, str], bool]:
        head = self._read_until(b"\r\n\r\n", "an answer head").decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise BadAnswer(f"not an HTTP/1.1 status line: {lines[0][:100]!r}")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise BadAnswer(f"a malformed header line: {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
        connection = headers.get("connection", "").lower()
        will_close = "close" in connection or (parts[0] == "HTTP/1.0" and "keep-alive" not in connection)
        return int(parts[1]), headers, will_close

    def _readinto(self, view: memoryview) -> int:
        """Fills ``view`` from what is buffered, then straight from the socket; short only if the
        connection ends."""
        n = 0
        buffered = self._end - self._start
        if buffered:
            n = min(buffered, len(view))
            view[:n] = self._buf[self._start:self._start + n]
            self._start += n
            if self._start == self._end:
                self._start = self._end = 0
        assert self.sock is not None
        while n < len(view):
            got = self.sock.recv_into(view[n:])
            if not got:
                break
            n += got
        return n

    def _receive(self, views: Sequence[memoryview], check: bool) -> list[Optional[int]]:
        """:func:`._native_io.receive` from what is buffered, then the socket."""
        assert self.sock is not None
        try:
            used, crcs = _native_io.receive(self.sock, self._timeout,
                                            memoryview(self._buf)[self._start:self._end], views,
                                            check)
        except _native_io.ReceiveEnded as e:
            raise ShortRead(str(e)) from None
        self._start += used
        if self._start == self._end:
            self._start = self._end = 0
        return crcs

    def _read_until(self, delimiter: bytes, what: str) -> bytes:
        """The bytes of ``what`` up to ``delimiter`` (at most 64 KiB), read past it."""
        assert self.sock is not None
        while True:
            end = self._buf.find(delimiter, self._start, self._end)
            if end >= 0:
                break
            if self._end - self._start >= _MAX_HEAD:
                raise BadAnswer(f"{what} over 64 KiB")
            if self._start and self._end == len(self._buf):
                del self._buf[:self._start]  # keep what is unread at the front
                self._end -= self._start
                self._start = 0
            if self._end == len(self._buf):
                self._buf.extend(bytes(_HEAD_READ))
            n = self.sock.recv_into(memoryview(self._buf)[self._end:])
            if not n:
                raise ShortRead(f"the connection closed before {what} was whole")
            self._end += n
        found = bytes(self._buf[self._start:end])
        self._start = end + len(delimiter)
        if self._start == self._end:
            self._start = self._end = 0
        return found

    def _read_line(self) -> bytes:
        return self._read_until(b"\r\n", "a line of a chunked body")

    def _read_chunked(self) -> bytes:
        out = bytearray()
        while True:
            size_line = self._read_line().split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise BadAnswer(f"a chunk size {size_line[:20]!r}") from None
            if size == 0:
                while self._read_line():  # trailers, then the empty line
                    pass
                return bytes(out)
            chunk = bytearray(size)
            if self._readinto(memoryview(chunk)) != size:
                raise ShortRead("the connection closed inside a chunk")
            out += chunk
            self._read_line()


def readable(sock: socket.socket) -> bool:
    """Whether ``sock`` has bytes (or an end) to read now."""
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    try:
        r, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(r)
