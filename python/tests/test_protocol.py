"""Answers that break the protocol, from a fake server: a block that arrives short, lengths that
disagree, a damaged checksum. The caller's buffer is never reported filled. The clients read through
the socket (``shared_memory=False``): a fake server answers every request alike, lookups too."""
import base64
import logging
import os
import socket
import struct
import threading

import crc32c
import pytest

import kvcache

pytestmark = pytest.mark.usefixtures("transfers")

KEY = "00112233445566778899aabbccddeeff"


class FakeServer:
    """Answers every request with ``answer(method, path)``: (head bytes, body bytes, close)."""

    def __init__(self, answer):
        self.answer = answer
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        f = conn.makefile("rb")
        with conn:
            while True:
                line = f.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                length = 0
                while (h := f.readline()) not in (b"\r\n", b""):
                    name, _, value = h.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                self.last_body = f.read(length)
                self.requests += 1
                head, body, close = self.answer(method, path)
                conn.sendall(head + body)
                if close:
                    conn.shutdown(socket.SHUT_RDWR)
                    return

    def close(self):
        self.sock.close()


def answer_with(status, headers, body, close=False):
    head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return lambda method, path: (head.encode(), body, close)


@pytest.fixture
def fake():
    servers = []

    def make(answer):
        s = FakeServer(answer)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.close()


def checksum(body):
    return base64.b64encode(struct.pack(">I", crc32c.crc32c(body))).decode()


def test_a_short_block_is_a_miss_after_one_retry(fake, caplog):
    s = fake(answer_with("200 OK", {"Content-Length": 1000, "Kvcache-Block-Length": 1000,
                                    "x-amz-checksum-crc32c": checksum(b"x" * 1000)},
                         b"x" * 500, close=True))
    with kvcache.Client(s.address, shared_memory=False) as c:
        assert c.get_into(KEY, bytearray(1000)) is None
        assert s.requests == 2, "read once, retried once"
        assert c.get_into(KEY, bytearray(1000)) is None
        assert s.requests == 2, "then left alone for its back-off"
    assert any("is down" in r.getMessage() for r in caplog.records)


def test_lengths_that_disagree_are_a_protocol_error(fake):
    s = fake(answer_with("200 OK", {"Content-Length": 1000, "Kvcache-Block-Length": 900}, b"x" * 1000))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="Kvcache-Block-Length 900"):
            c.get_into(KEY, bytearray(1000))


def test_a_damaged_block_is_read_again_then_a_miss(fake, caplog):
    caplog.set_level(logging.WARNING, "kvcache")
    body = b"y" * 1000
    bad = base64.b64encode(struct.pack(">I", crc32c.crc32c(body) ^ 1)).decode()
    s = fake(answer_with("200 OK", {"Content-Length": 1000, "x-amz-checksum-crc32c": bad}, body))
    with kvcache.Client(s.address, shared_memory=False) as c:
        out = bytearray(1000)
        assert c.get_into(KEY, out) is None
        assert c.get(KEY) is None
        assert s.requests == 4
        assert c.damaged_blocks == 2
    messages = [r.getMessage() for r in caplog.records]
    assert sum("read again" in m for m in messages) == 4
    assert sum("twice: a miss" in m for m in messages) == 2
    with kvcache.Client(s.address, checksums=False) as c:
        assert c.get(KEY) == body


def test_a_block_answer_without_its_checksum_is_a_protocol_error(fake):
    s = fake(answer_with("200 OK", {"Content-Length": 1000}, b"y" * 1000))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="x-amz-checksum-crc32c"):
            c.get_into(KEY, bytearray(1000))
        with pytest.raises(kvcache.ProtocolError, match="x-amz-checksum-crc32c"):
            c.get(KEY)
    with kvcache.Client(s.address, shared_memory=False, checksums=False) as c:
        assert c.get(KEY) == b"y" * 1000


def test_a_damaged_block_of_a_batch_is_asked_for_again_then_a_miss(fake, caplog):
    caplog.set_level(logging.WARNING, "kvcache")
    good, damaged = os.urandom(3000), bytearray(os.urandom(2000))
    checksums = checksum(good) + "," + checksum(bytes(damaged))
    damaged[1000] ^= 8
    body = good + bytes(damaged)
    first = answer_with("200 OK", {"Content-Length": len(body), "Kvcache-Block-Lengths": "3000,0,2000",
                                   "Kvcache-Block-Crc32c": checksums}, body)
    again = answer_with("200 OK", {"Content-Length": 2000, "Kvcache-Block-Lengths": "2000",
                                   "Kvcache-Block-Crc32c": checksums.split(",")[1]}, bytes(damaged))
    s = fake(lambda method, path: (first if s.last_body.count(KEY.encode()) == 3 else again)(method, path))
    with kvcache.Client(s.address, shared_memory=False) as c:
        bufs = [bytearray(3000), bytearray(3000), bytearray(3000)]
        assert c.get_many_into([KEY, KEY, KEY], bufs) == [3000, None, None]
        assert bufs[0] == good
        assert s.requests == 2, "the damaged block was asked for once more"
        assert c.damaged_blocks == 1
    assert sum("twice: a miss" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("checksums", [None, "", "AAAAAA==,AAAAAA==", "not base64"])
def test_a_batch_answer_without_its_checksums_is_a_protocol_error(fake, checksums):
    headers = {"Content-Length": 10, "Kvcache-Block-Lengths": "10"}
    if checksums is not None:
        headers["Kvcache-Block-Crc32c"] = checksums
    s = fake(answer_with("200 OK", headers, b"x" * 10))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="Kvcache-Block-Crc32c"):
            c.get_many_into([KEY], [bytearray(10)])
    with kvcache.Client(s.address, shared_memory=False, checksums=False) as c:
        assert c.get_many_into([KEY], [bytearray(10)]) == [10]


def test_a_good_checksum_passes(fake):
    body = b"z" * 5000
    s = fake(answer_with("200 OK", {"Content-Length": 5000, "x-amz-checksum-crc32c": checksum(body)},
                         body))
    with kvcache.Client(s.address, shared_memory=False) as c:
        out = bytearray(5000)
        assert c.get_into(KEY, out) == 5000 and out == body


def test_a_lookup_answer_that_is_not_json(fake):
    s = fake(answer_with("200 OK", {"Content-Length": 5}, b"hello"))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="not JSON"):
            c.lookup_prefix([KEY])
    s = fake(answer_with("200 OK", {"Content-Length": 15}, b'{"present": 7} '))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="lookup answer"):
            c.lookup_prefix([KEY])


def test_batch_lengths_that_do_not_add_up(fake):
    s = fake(answer_with("200 OK", {"Content-Length": 10, "Kvcache-Block-Lengths": "4,4"}, b"x" * 10))
    with kvcache.Client(s.address, shared_memory=False) as c:
        with pytest.raises(kvcache.ProtocolError, match="Kvcache-Block-Lengths"):
            c.get_many_into([KEY, KEY], [bytearray(10), bytearray(10)])


@pytest.mark.parametrize("status, error, expected", [
    ("201 Created", None, "STORED"),
    ("202 Accepted", None, "NOT_ADMITTED"),
    ("413 Payload Too Large", "too-large", "TOO_LARGE"),
    ("507 Insufficient Storage", "no-space", "NO_SPACE"),
    ("507 Insufficient Storage", "not-durable", "NOT_DURABLE"),
])
def test_put_statuses_are_the_java_clients(fake, caplog, status, error, expected):
    """Each answer to a put maps to the status the Java client's ``RemoteTier`` gives it; a 507
    is logged, and does not leave the server alone."""
    caplog.set_level(logging.WARNING, "kvcache")
    body = b'{"error": "%s", "message": "m"}' % error.encode() if error else b""
    s = fake(answer_with(status, {"Content-Length": len(body)}, body))
    with kvcache.Client(s.address, shared_memory=False) as c:
        assert c.put(KEY, b"x" * 100) is kvcache.PutStatus[expected]
        assert c.put(KEY, b"x" * 100) is kvcache.PutStatus[expected]
    assert s.requests == 2, "the server is not taken for down"
    logged = any("507" in r.getMessage() for r in caplog.records)
    assert logged == status.startswith("507")


def test_a_server_that_cannot_be_reached(caplog):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    address = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()  # nothing listens there
    with kvcache.Client(address, backoff=(5, 5)) as c:
        assert c.get_into(KEY, bytearray(10)) is None
        assert c.put(KEY, b"x") is kvcache.PutStatus.NOT_ADMITTED
        assert c.lookup_prefix([KEY]) == 0
        assert c.get_many_into([KEY], [bytearray(10)]) == [None]
        with c.pin_prefix([KEY]) as pin:
            assert pin.present == 0
        with pytest.raises(kvcache.ServerUnavailableError):
            c.delete(KEY)
    assert sum("is down" in r.getMessage() for r in caplog.records) == 1
