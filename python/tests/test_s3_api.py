"""The server's S3 port as boto3 drives it with its default settings (SigV4, a CRC32 of every
body, the payload's SHA-256 signed over plain HTTP): objects round-trip byte for byte, whole and
by ranges, are found by HEAD and gone after DELETE; a presigned URL reads one with no client at
all; a wrong secret, an unknown bucket and a body damaged after it was checksummed are refused
with S3's errors, and the damaged body is not stored; DeleteObjects deletes every key it
names. boto3's managed transfers (multipart uploads, ranged downloads) and virtual-host
addressing work, empty objects and what an object keeps (type, metadata, checksum) come back,
and awscrt, the client of LMCache's S3 back ends, uploads in parts and downloads by ranges as
it does against S3."""
from __future__ import annotations

import io
import os
import socket
import urllib.error
import urllib.request
from typing import Any, Iterator

import awscrt.auth
import awscrt.exceptions
import awscrt.http
import awscrt.io
import awscrt.s3
import boto3
import boto3.s3.transfer
import botocore.config
import botocore.exceptions
import pytest

from conftest import KvServer, ram_only

ACCESS_KEY = "AKIDKVCACHEPYTEST"
SECRET = "0123456789abcdef0123456789abcdef-py"


BASE_DOMAIN = "s3.kvcache.test"
MIB = 1 << 20


TOKEN = {"kvcache.auth.tokens.engine.secret": SECRET,
         "kvcache.auth.tokens.engine.access-key": ACCESS_KEY,
         "kvcache.auth.tokens.engine.read": "default",
         "kvcache.auth.tokens.engine.write": "default"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    server = KvServer(ram_only(**{"kvcache.s3.base-domains": BASE_DOMAIN, **TOKEN})).start()
    try:
        yield server.s3_url
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_tls_endpoint() -> Iterator[str]:
    server = KvServer(ram_only(**{"micronaut.server.ssl.enabled": "true",
                                  "micronaut.server.ssl.build-self-signed": "true",
                                  **TOKEN})).start()
    try:
        yield server.s3_url
    finally:
        server.stop()


def s3_client(endpoint: str, secret: str = SECRET, **config: Any) -> Any:
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
                        config=botocore.config.Config(retries={"max_attempts": 1}, **config))


def error_code(e: botocore.exceptions.ClientError) -> str:
    return str(e.response["Error"]["Code"])


@pytest.mark.parametrize("length", [1, 65_537, 3 << 20])
def test_objects_round_trip_whole_and_by_ranges_and_are_gone_after_delete(
        s3_endpoint: str, length: int) -> None:
    s3 = s3_client(s3_endpoint)
    key = f"model@ws@worker/{length}/a b+c.bin"
    data = os.urandom(length)
    put = s3.put_object(Bucket="default", Key=key, Body=data)
    got = s3.get_object(Bucket="default", Key=key)
    assert got["Body"].read() == data
    assert got["ETag"] == put["ETag"]
    assert s3.head_object(Bucket="default", Key=key)["ContentLength"] == length
    if length > 200:
        ranged = s3.get_object(Bucket="default", Key=key, Range="bytes=100-199")
        assert ranged["Body"].read() == data[100:200]
        assert ranged["ContentRange"] == f"bytes 100-199/{length}"
    s3.delete_object(Bucket="default", Key=key)
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.get_object(Bucket="default", Key=key)
    assert error_code(missing.value) == "NoSuchKey"


def test_delete_objects_deletes_every_key_it_names(s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)
    keys = ["batch/1", "batch/2", "batch/never-stored"]
    for key in keys[:2]:
        s3.put_object(Bucket="default", Key=key, Body=os.urandom(1000))
    answer = s3.delete_objects(Bucket="default",
                               Delete={"Objects": [{"Key": k} for k in keys]})
    assert sorted(d["Key"] for d in answer["Deleted"]) == sorted(keys)
    assert not answer.get("Errors")
    for key in keys:
        with pytest.raises(botocore.exceptions.ClientError) as missing:
            s3.head_object(Bucket="default", Key=key)
        assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_a_presigned_url_reads_the_object_with_no_client(s3_endpoint: str) -> None:
    data = os.urandom(100_000)
    s3_client(s3_endpoint).put_object(Bucket="default", Key="presigned", Body=data)
    # boto3 presigns with Signature Version 2 unless told otherwise, which the server refuses
    v2 = s3_client(s3_endpoint).generate_presigned_url(
        "get_object", Params={"Bucket": "default", "Key": "presigned"}, ExpiresIn=300)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(v2)
    assert b"presigned with Signature Version 2" in refused.value.read()
    s3 = s3_client(s3_endpoint, signature_version="s3v4")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "default", "Key": "presigned"},
                                    ExpiresIn=300)
    with urllib.request.urlopen(url) as answer:
        assert answer.read() == data
    with pytest.raises(urllib.error.HTTPError) as tampered:
        urllib.request.urlopen(url.replace("presigned?", "presigneD?"))
    assert tampered.value.code == 403
    assert b"<Code>SignatureDoesNotMatch</Code>" in tampered.value.read()


def test_a_wrong_secret_and_an_unknown_bucket_are_refused(s3_endpoint: str) -> None:
    with pytest.raises(botocore.exceptions.ClientError) as wrong:
        s3_client(s3_endpoint, "not-the-secret-not-the-secret-00").put_object(
            Bucket="default", Key="k", Body=b"x")
    assert error_code(wrong.value) == "SignatureDoesNotMatch"
    with pytest.raises(botocore.exceptions.ClientError) as unknown:
        s3_client(s3_endpoint).put_object(Bucket="nope", Key="k", Body=b"x")
    assert error_code(unknown.value) == "NoSuchBucket"


def test_a_body_damaged_after_its_checksum_is_refused_and_not_stored(s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)

    def damage(request: Any, **_: Any) -> None:  # after boto3 computed the CRC32 and signed
        body = bytearray(request.body.read())
        body[len(body) // 2] ^= 1
        request.body = io.BytesIO(bytes(body))

    s3.meta.events.register("before-send.s3.PutObject", damage)
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.put_object(Bucket="default", Key="damaged", Body=os.urandom(200_000))
    assert error_code(refused.value) == "BadDigest"
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3_client(s3_endpoint).head_object(Bucket="default", Key="damaged")
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_boto3_transfers_upload_in_parts_and_download_by_ranges(s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)
    data = os.urandom(13 * MIB + 5)
    config = boto3.s3.transfer.TransferConfig(multipart_threshold=5 * MIB,
                                              multipart_chunksize=5 * MIB, max_concurrency=3)
    s3.upload_fileobj(io.BytesIO(data), "default", "transfer/chunk.bin", Config=config)
    assert s3.head_object(Bucket="default", Key="transfer/chunk.bin")["ContentLength"] == len(data)
    out = io.BytesIO()
    s3.download_fileobj("default", "transfer/chunk.bin", out, Config=config)
    assert out.getvalue() == data


def test_empty_objects_and_what_an_object_keeps_come_back(s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)
    s3.put_object(Bucket="default", Key="empty", Body=b"")
    assert s3.get_object(Bucket="default", Key="empty")["Body"].read() == b""
    data = os.urandom(70_000)
    put = s3.put_object(Bucket="default", Key="kept", Body=data, ContentType="application/x-kv",
                        Metadata={"model": "llama-8b"})
    got = s3.get_object(Bucket="default", Key="kept", ChecksumMode="ENABLED")
    assert got["Body"].read() == data  # boto3 checks the bytes against the checksum returned
    assert got["ChecksumCRC32"] == put["ChecksumCRC32"]
    assert got["ContentType"] == "application/x-kv"
    assert got["Metadata"] == {"model": "llama-8b"}


def test_virtual_host_addressing_names_the_bucket_in_the_host(
        s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    resolve = socket.getaddrinfo

    def loopback(host: Any, *args: Any, **kwargs: Any) -> Any:  # *.s3.kvcache.test: this host
        return resolve("127.0.0.1" if str(host).endswith(BASE_DOMAIN) else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback)
    port = s3_endpoint.rsplit(":", 1)[1]
    s3 = s3_client(f"http://{BASE_DOMAIN}:{port}", s3={"addressing_style": "virtual"})
    sent: list[str] = []
    s3.meta.events.register("before-send.s3.*",
                            lambda request, **_: sent.append(request.url))
    s3.put_object(Bucket="default", Key="virtual/key", Body=b"by host")
    assert sent[-1] == f"http://default.{BASE_DOMAIN}:{port}/virtual/key"
    assert s3_client(s3_endpoint).get_object(
        Bucket="default", Key="virtual/key")["Body"].read() == b"by host"


def crt_request(client: awscrt.s3.S3Client, kind: awscrt.s3.S3RequestType, method: str,
                host: str, path: str, body: bytes | None = None,
                into: bytearray | None = None) -> int:
    """One of awscrt's meta-requests, as LMCache makes them: its status."""
    headers = [("Host", host)]
    if body is not None:
        headers += [("Content-Length", str(len(body))),
                    ("Content-Type", "application/octet-stream")]
    request = awscrt.http.HttpRequest(method, path, awscrt.http.HttpHeaders(headers),
                                      io.BytesIO(body) if body is not None else None)
    status: list[int] = []

    def on_body(chunk: bytes, offset: int, **_: Any) -> None:
        assert into is not None
        into[offset:offset + len(chunk)] = chunk

    made = client.make_request(
        type=kind, request=request,
        on_headers=lambda status_code, headers, **_: status.append(status_code),
        on_body=on_body if into is not None else None)
    made.finished_future.result(60)
    return status[-1]


def test_awscrt_uploads_in_parts_and_downloads_by_ranges(s3_endpoint: str) -> None:
    group = awscrt.io.EventLoopGroup(2)
    bootstrap = awscrt.io.ClientBootstrap(group, awscrt.io.DefaultHostResolver(group))
    client = awscrt.s3.S3Client(
        bootstrap=bootstrap, region="us-east-1", tls_mode=awscrt.s3.S3RequestTlsMode.DISABLED,
        credential_provider=awscrt.auth.AwsCredentialsProvider.new_static(ACCESS_KEY, SECRET))
    host = s3_endpoint.removeprefix("http://")
    data = os.urandom(20 * MIB + 7)  # over awscrt's 8 MiB: three parts, then ranges
    assert crt_request(client, awscrt.s3.S3RequestType.PUT_OBJECT, "PUT", host,
                       "/default/crt/chunk%40hash", body=data) == 200
    received = bytearray(len(data))
    assert crt_request(client, awscrt.s3.S3RequestType.GET_OBJECT, "GET", host,
                       "/default/crt/chunk%40hash", into=received) in (200, 206)
    assert bytes(received) == data
    assert s3_client(s3_endpoint).get_object(
        Bucket="default", Key="crt/chunk@hash")["Body"].read() == data
    with pytest.raises(awscrt.exceptions.AwsCrtError):
        crt_request(client, awscrt.s3.S3RequestType.GET_OBJECT, "GET", host,
                    "/default/crt/never-stored", into=bytearray(1))


def test_boto3_lists_keys_of_any_characters_by_page(s3_endpoint: str) -> None:
    s3 = s3_client(s3_endpoint)
    keys = ["list/model@1@0@abc", "list/a b+c.bin", "list/sub/é%25", "list/z"]
    for key in keys:
        s3.put_object(Bucket="default", Key=key, Body=key.encode())
    pages = list(s3.get_paginator("list_objects_v2").paginate(
        Bucket="default", Prefix="list/", PaginationConfig={"PageSize": 2}))
    listed = [o["Key"] for page in pages for o in page.get("Contents", [])]
    assert listed == sorted(keys)  # boto3 asks for url encoding and decodes the keys
    assert len(pages) == 2
    sizes = {o["Key"]: o["Size"] for page in pages for o in page["Contents"]}
    assert sizes == {k: len(k.encode()) for k in keys}
    rolled = s3.list_objects_v2(Bucket="default", Prefix="list/", Delimiter="/")
    assert [p["Prefix"] for p in rolled["CommonPrefixes"]] == ["list/sub/"]


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_boto3_over_tls_streams_bodies_with_trailing_checksums(s3_tls_endpoint: str) -> None:
    assert s3_tls_endpoint.startswith("https://")
    # verify off: the server's certificate is a throwaway it made itself
    s3 = boto3.client("s3", endpoint_url=s3_tls_endpoint, region_name="us-east-1",
                      aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET, verify=False,
                      config=botocore.config.Config(retries={"max_attempts": 1}))
    headers: list[dict[str, str]] = []

    def keep(request: Any, **_: Any) -> None:
        headers.append({k.lower(): v.decode() if isinstance(v, bytes) else v
                        for k, v in request.headers.items()})

    s3.meta.events.register("before-send.s3.PutObject", keep)
    for length in (0, 1, 3 * MIB + 1):
        data = os.urandom(length)
        s3.put_object(Bucket="default", Key=f"tls/{length}", Body=data)
        got = s3.get_object(Bucket="default", Key=f"tls/{length}", ChecksumMode="ENABLED")
        assert got["Body"].read() == data
    # over TLS boto3 sends aws-chunked bodies with a trailing CRC32 and an unsigned payload
    assert headers[-1]["x-amz-content-sha256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    assert headers[-1]["x-amz-trailer"] == "x-amz-checksum-crc32"
