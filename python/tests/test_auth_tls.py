"""Tokens and TLS: refusals surface as the documented exceptions, another namespace's blocks are
out of reach, and TLS verifies the server's certificate."""
import datetime
import ipaddress
import os

import pytest

import kvcache
from conftest import KvServer, ram_only

WRITER = "w" * 40
READER = "r" * 40
OTHER = "o" * 40


@pytest.fixture(scope="module")
def secured():
    s = KvServer(ram_only(**{
        "kvcache.namespaces": "a,b",
        "kvcache.auth.tokens.writer.secret": WRITER,
        "kvcache.auth.tokens.writer.read": "a",
        "kvcache.auth.tokens.writer.write": "a",
        "kvcache.auth.tokens.reader.secret": READER,
        "kvcache.auth.tokens.reader.read": "a",
        "kvcache.auth.tokens.other.secret": OTHER,
        "kvcache.auth.tokens.other.read": "b",
        "kvcache.auth.tokens.other.write": "b",
    })).start()
    yield s
    s.stop()


def test_tokens_and_namespaces(secured, unique_keys):
    key, = unique_keys(1)
    with kvcache.Client(secured.address, namespace="a", token=WRITER) as writer:
        assert writer.put(key, b"secret block") is kvcache.PutStatus.STORED
    with kvcache.Client(secured.address, namespace="a") as anonymous:
        with pytest.raises(kvcache.AuthError) as e:
            anonymous.get(key)
        assert e.value.status == 401 and e.value.code == "unauthorized"
        with pytest.raises(kvcache.AuthError):
            anonymous.put(key, b"x")
        with pytest.raises(kvcache.AuthError):
            anonymous.lookup_prefix([key])
    with kvcache.Client(secured.address, namespace="a", token="x" * 40) as wrong:
        with pytest.raises(kvcache.AuthError):
            wrong.get_into(key, bytearray(100))
    with kvcache.Client(secured.address, namespace="a", token=READER) as reader:
        assert reader.get(key) == b"secret block"
        with pytest.raises(kvcache.ForbiddenError) as e:
            reader.put(key, b"overwrite")
        assert e.value.status == 403
        with pytest.raises(kvcache.ForbiddenError):
            reader.delete(key)
        assert reader.get(key) == b"secret block"
    # another namespace's token reaches neither namespace a nor, through b, a's blocks
    with kvcache.Client(secured.address, namespace="a", token=OTHER) as other_in_a:
        with pytest.raises(kvcache.ForbiddenError):
            other_in_a.get(key)
    with kvcache.Client(secured.address, namespace="b", token=OTHER) as other:
        assert other.get(key) is None
        assert other.lookup_prefix([key]) == 0
    assert isinstance(e.value, kvcache.ServerError) and isinstance(e.value, kvcache.KvCacheError)


def test_a_token_is_not_sent_in_cleartext_beyond_loopback():
    with pytest.raises(ValueError, match="cleartext"):
        kvcache.Client("10.1.2.3:7070", token=WRITER)
    kvcache.Client("10.1.2.3:7070", token=WRITER, allow_cleartext_token=True).close()
    kvcache.Client("localhost:7070", token=WRITER).close()
    kvcache.Client("https://10.1.2.3:7070", token=WRITER).close()


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    d = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (d / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "server.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"kvcache", key, cert, None, serialization.BestAvailableEncryption(b"secret")))
    s = KvServer(ram_only(**{
        "micronaut.server.ssl.enabled": "true",
        "micronaut.server.ssl.key-store.path": f"file:{d / 'server.p12'}",
        "micronaut.server.ssl.key-store.type": "PKCS12",
        "micronaut.server.ssl.key-store.password": "secret",
        "kvcache.auth.tokens.writer.secret": WRITER,
        "kvcache.auth.tokens.writer.read": "default",
        "kvcache.auth.tokens.writer.write": "default",
    })).start()
    s.ca_file = str(d / "server.pem")
    yield s
    s.stop()


def test_tls_with_a_trusted_certificate(tls_server, unique_keys):
    assert tls_server.scheme == "https"
    key, = unique_keys(1)
    data = os.urandom(3 << 20)
    with kvcache.Client(f"https://localhost:{tls_server.port}", token=WRITER,
                        ca_file=tls_server.ca_file) as c:
        assert c.put(key, data) is kvcache.PutStatus.STORED
        out = bytearray(len(data))
        assert c.get_into(key, out) == len(data) and out == data
        with c.pin_prefix([key]) as pin:
            assert pin.present == 1


def test_tls_refuses_a_certificate_it_cannot_verify(tls_server, unique_keys, caplog):
    key, = unique_keys(1)
    with kvcache.Client(f"localhost:{tls_server.port}", tls=True, token=WRITER) as c:
        assert c.put(key, b"x" * 100) is kvcache.PutStatus.NOT_ADMITTED
        assert c.get(key) is None
    assert any("CERTIFICATE_VERIFY_FAILED" in r.getMessage() for r in caplog.records)
    with kvcache.Client(f"localhost:{tls_server.port}", tls=True, verify=False, token=WRITER) as c:
        assert c.put(key, b"x" * 100) is kvcache.PutStatus.STORED
