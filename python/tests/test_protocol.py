"""Answers that break the protocol, from a fake server: a block that arrives short, lengths that
disagree, a damaged checksum. The caller's buffer is never reported filled. The clients read through
the socket (``shared_memory=False``): a fake server answers every request alike, lookups too."""
import base64
import logging
import socket
import struct
import threading

import crc32c
import pytest

import kvcache

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
                f.read(length)
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


def test_a_short_block_is_a_miss_after_one_retry(fake, caplog):
    s = fake(answer_with("200 OK", {"Content-Length": 1000, "Kvcache-Block-Length": 1000}, b"x" * 500, close=True))
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
        assert c.get_into(KEY, bytearray(1000)) is None
        assert c.get(KEY) is None
        assert s.requests == 4
    assert sum("CRC32C" in r.getMessage() for r in caplog.records) == 4
    with kvcache.Client(s.address, checksums=False) as c:
        assert c.get(KEY) == body


def test_a_good_checksum_passes(fake):
    body = b"z" * 5000
    good = base64.b64encode(struct.pack(">I", crc32c.crc32c(body))).decode()
    s = fake(answer_with("200 OK", {"Content-Length": 5000, "x-amz-checksum-crc32c": good}, body))
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


def test_a_server_that_cannot_be_reached(caplog):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    address = "127.0.0.1:%d" % s.getsockname()[1]
    s.close()  # nothing listens there
    with kvcache.Client(address, backoff=(5, 5)) as c:
        assert c.get_into(KEY, bytearray(10)) is None
        assert c.put(KEY, b"x") is kvcache.PutStatus.NOT_STORED
        assert c.lookup_prefix([KEY]) == 0
        assert c.get_many_into([KEY], [bytearray(10)]) == [None]
        with c.pin_prefix([KEY]) as pin:
            assert pin.present == 0
        with pytest.raises(kvcache.ServerUnavailableError):
            c.delete(KEY)
    assert sum("is down" in r.getMessage() for r in caplog.records) == 1
