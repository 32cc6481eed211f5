"""The server's S3 port as boto3 drives it with its default settings (SigV4, a CRC32 of every
body, the payload's SHA-256 signed over plain HTTP): objects round-trip byte for byte, whole and
by ranges, are found by HEAD and gone after DELETE; a presigned URL reads one with no client at
all; a wrong secret, an unknown bucket and a body damaged after it was checksummed are refused
with S3's errors, and the damaged body is not stored; DeleteObjects deletes every key it
names."""
from __future__ import annotations

import io
import os
import socket
import urllib.error
import urllib.request
from typing import Any, Iterator

import boto3
import botocore.config
import botocore.exceptions
import pytest

from conftest import KvServer, ram_only

ACCESS_KEY = "AKIDKVCACHEPYTEST"
SECRET = "0123456789abcdef0123456789abcdef-py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    server = KvServer(ram_only(**{
        "kvcache.s3.port": str(port),
        "kvcache.auth.tokens.engine.secret": SECRET,
        "kvcache.auth.tokens.engine.access-key": ACCESS_KEY,
        "kvcache.auth.tokens.engine.read": "default",
        "kvcache.auth.tokens.engine.write": "default"}), port=free_port()).start()
    try:
        yield f"http://127.0.0.1:{port}"
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
