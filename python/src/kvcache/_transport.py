"""HTTP/1.1 keep-alive connections to one server, with the server's back-off.

HTTP/1.1 over plain sockets is the transport: a body is read straight from the socket into the
caller's buffer and sent from the caller's buffer as it is. It moved blocks faster from Python
than urllib3, httpx over h2, pycurl over HTTP/2 and niquests (``docs/python.md``, "Transport").
"""
from __future__ import annotations

import json
import logging
import ssl
import threading
import time
from typing import Any, Callable, Mapping, Optional, TypeVar

from ._http1 import Connection, Response, readable
from ._errors import (AuthError, ForbiddenError, ProtocolError, RequestError, ServerError,
                     UnknownNamespaceError)

log = logging.getLogger("kvcache")

T = TypeVar("T")

#: Largest error body read (the server's are a few hundred bytes).
_MAX_ERROR_BODY = 64 << 10


class ConnectionFailed(Exception):
    """The server could not be reached, or the connection broke before the answer was whole."""


class ServerLink:
    """One server: a pool of idle keep-alive connections, and whether it is left alone.

    A server that fails (cannot be reached, breaks a connection, does not answer in time) is down
    for a back-off that doubles from ``backoff_min`` to ``backoff_max`` seconds; any answer resets
    it. Thread-safe.
    """

    def __init__(self, name: str, host: str, port: int, *, tls: Optional[ssl.SSLContext],
                 tls_name: Optional[str], connect_timeout: float, timeout: float,
                 headers: Mapping[str, str], backoff_min: float, backoff_max: float,
                 idle_timeout: float) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._tls = tls
        self._tls_name = tls_name or host
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self.headers = dict(headers)
        self._backoff_min = backoff_min
        self._backoff_max = backoff_max
        self._idle_timeout = idle_timeout
        self._idle: list[tuple[Connection, float]] = []
        self._lock = threading.Lock()
        self._backoff = backoff_min
        self._down_until = 0.0
        self._down = False
        self._closed = False
        #: Whether the server answers pinned lookups with places in shared memory (None until a
        #: pinned lookup that found blocks tells).
        self.shared_memory: Optional[bool] = None

    @property
    def tls(self) -> bool:
        """Whether the connections to the server are TLS."""
        return self._tls is not None

    # -- health -----------------------------------------------------------------------------

    def available(self) -> bool:
        """False while the server is left alone after a failure."""
        return not self._down or time.monotonic() >= self._down_until

    @property
    def answering(self) -> bool:
        """False from a failure of the server until it next answers (through its back-off and
        after it, until a request gets an answer)."""
        return not self._down

    def failed(self, reason: BaseException) -> None:
        """Marks the server down for its back-off (it failed a request, or its retry)."""
        with self._lock:
            now = time.monotonic()
            if self._down and now < self._down_until:
                return
            was_down = self._down
            self._down = True
            self._down_until = now + self._backoff
            wait = self._backoff
            self._backoff = min(self._backoff * 2, self._backoff_max)
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()
        if was_down:
            log.debug("kvcache server %s still down (%s); next try in %.1f s", self.name, reason, wait)
        else:
            log.warning("kvcache server %s is down (%s); its keys are misses for %.1f s",
                        self.name, reason, wait)

    def _succeeded(self) -> None:
        if self._down:
            with self._lock:
                if self._down:
                    log.warning("kvcache server %s is back", self.name)
                self._down = False
                self._backoff = self._backoff_min

    # -- connections ------------------------------------------------------------------------

    def _new_connection(self) -> Connection:
        return Connection(self.host, self.port, connect_timeout=self._connect_timeout,
                          timeout=self._timeout, tls=self._tls, server_name=self._tls_name)

    def _take(self) -> Connection:
        now = time.monotonic()
        while True:
            with self._lock:
                if not self._idle:
                    break
                conn, since = self._idle.pop()
            if conn.owed and not self._settle(conn):
                continue
            # An idle connection the server closed (its idle timeout, a restart) reads as ready:
            # drop it rather than fail a request on it.
            if (now - since < self._idle_timeout and conn.sock is not None
                    and not conn.has_unread() and not readable(conn.sock)):
                return conn
            conn.close()
        return self._new_connection()

    def _settle(self, conn: Connection) -> bool:
        """Reads and drops the answers ``conn`` owes (:meth:`send_later`); False, with the
        connection closed, if one does not come whole or ends the connection."""
        try:
            while conn.owed:
                response = conn.read_response(conn.owed.pop(0))
                if response.length is None and not response.chunked:
                    break  # a body that runs to the end of the connection
                response.read(_MAX_ERROR_BODY)
                if response.will_close or not response.isclosed():
                    break
            else:
                return True
        except OSError:
            pass
        conn.close()
        return False

    def _give_back(self, conn: Connection) -> None:
        if conn.sock is None:
            return
        with self._lock:
            if not self._closed:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections; connections in use close when their request ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    # -- requests ---------------------------------------------------------------------------

    def exchange(self, method: str, path: str, handle: Callable[[Response], T],
                 body: Any = None, headers: Optional[Mapping[str, str]] = None,
                 fresh: bool = False) -> T:
        """Sends one request and hands its answer to ``handle``, which must read the body whole
        (or set ``response.will_close``) for the connection to be used again.

        A buffer-protocol ``body`` is sent as it is, in slices of 1 MiB; if the server answers
        before the body is all sent (a 413 from the headers alone, a 401), the rest is not sent
        and the answer is read.

        Args:
            fresh: use a new connection rather than an idle one (a retry).

        Raises:
            ConnectionFailed: the server could not be reached, or broke the connection before
                the answer was whole. The caller decides whether that makes it down
                (:meth:`failed`).
        """
        conn = self._new_connection() if fresh else self._take()
        h = dict(self.headers)
        if headers:
            h.update(headers)
        if body is not None and "Content-Length" not in h:
            h["Content-Length"] = str(memoryview(body).nbytes)
        try:
            if conn.sock is None:
                conn.connect()
            complete = conn.send(method, path, h, body)
            response = conn.read_response(method)
            result = handle(response)
            reusable = complete and not response.will_close and response.isclosed()
        except OSError as e:  # ssl.SSLError, ShortRead and BadAnswer among them
            conn.close()
            raise ConnectionFailed(f"{self.name}: {e}") from e
        except BaseException:
            conn.close()
            raise
        self._succeeded()
        if reusable:
            self._give_back(conn)
        else:
            conn.close()
        return result

    def send_later(self, method: str, path: str) -> None:
        """Sends a bodiless request whose answer nobody waits for (the release of a pin). The
        connection goes back to the pool owing the answer; the next request to take it reads and
        drops the answer first.

        Raises:
            ConnectionFailed: as :meth:`exchange`.
        """
        conn = self._take()
        try:
            if conn.sock is None:
                conn.connect()
            conn.send(method, path, self.headers)
        except OSError as e:
            conn.close()
            raise ConnectionFailed(f"{self.name}: {e}") from e
        except BaseException:
            conn.close()
            raise
        conn.owed.append(method)
        self._give_back(conn)

    def error(self, response: Response) -> ServerError:
        """The exception for an error answer; reads its (small) body."""
        raw = response.read(_MAX_ERROR_BODY)
        if not response.isclosed():
            response.will_close = True
        code, message = f"http-{response.status}", raw.decode("utf-8", "replace")[:500]
        try:
            parsed = json.loads(raw)
            code, message = str(parsed.get("error", code)), str(parsed.get("message", ""))
        except (ValueError, AttributeError):
            pass
        cls: type[ServerError]
        if response.status == 401:
            cls = AuthError
        elif response.status == 403:
            cls = ForbiddenError
        elif response.status == 404 and code == "unknown-namespace":
            cls = UnknownNamespaceError
        else:
            cls = RequestError
        return cls(response.status, code, message, self.name)

    def __repr__(self) -> str:
        return f"ServerLink({self.name})"


def read_json(response: Response, server: str) -> Any:
    """The JSON body of a ``200`` answer."""
    raw = response.read()
    try:
        return json.loads(raw)
    except ValueError as e:
        raise ProtocolError(f"{server}: the answer is not JSON ({e}): {raw[:200]!r}") from None


def warn_damaged(link: ServerLink, what: str) -> None:
    """Warns that ``link`` sent ``what`` with bytes other than its CRC32C's: it is read again."""
    log.warning("kvcache: %s sent %s with a CRC32C other than its bytes'; read again",
                link.name, what)
