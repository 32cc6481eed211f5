"""Key derivation and rendezvous hashing against the vectors the Java tests check too."""
import json

import pytest

from conftest import REPO
from kvcache import BlockKey, Namespace, PrefixKeys, _rendezvous

KEY_VECTORS = json.loads((REPO / "kvcache-core/src/test/resources/key-vectors.json").read_text("utf-8"))
RENDEZVOUS = json.loads(
    (REPO / "kvcache-client/src/test/resources/rendezvous-vectors.json").read_text("utf-8"))


def namespace(v):
    n = v["namespace"]
    return Namespace(n["model"], n["dtype"], n["layout"], n["tenant"])


@pytest.mark.parametrize("v", KEY_VECTORS["vectors"], ids=lambda v: v["namespace"]["model"] + "/" + v["namespace"]["tenant"])
def test_key_vectors(v):
    ns = namespace(v)
    assert ns.digest.hex() == v["namespaceDigest"]
    for raw in v["raw"]:
        assert BlockKey.of_raw(ns, bytes.fromhex(raw["rawHex"])).hex() == raw["key"]
    assert len(v["names"]) >= 3
    for name in v["names"]:
        assert BlockKey.of_raw(ns, name["name"]).hex() == name["key"]
    for p in v["prefix"]:
        keys = PrefixKeys(ns, p["blockSizeTokens"]).keys_for(p["tokens"])
        assert [k.hex() for k in keys] == p["keys"]


def test_chained_keys_continue_from_a_parent():
    v = KEY_VECTORS["vectors"][0]
    p = v["prefix"][0]
    prefix = PrefixKeys(namespace(v), p["blockSizeTokens"])
    first = prefix.keys_for(p["tokens"][:16])
    rest = prefix.keys_for(p["tokens"][16:32], parent=first[-1])
    assert [k.hex() for k in first + rest] == p["keys"][:2]


def test_token_ids_wrap_as_32_bit():
    ns = Namespace("m", "bf16", "tp0of1")
    assert PrefixKeys(ns, 2).keys_for([-1, 5]) == PrefixKeys(ns, 2).keys_for([2**32 - 1, 5])
    with pytest.raises(ValueError, match="not a 32-bit"):
        PrefixKeys(ns, 2).keys_for([2**32, 0])


def test_bad_names_and_namespaces_are_refused():
    ns = Namespace("m", "bf16", "tp0of1")
    with pytest.raises(ValueError, match="15 bytes"):
        BlockKey.of_raw(ns, "fifteen-bytes..")
    with pytest.raises(ValueError, match="4097 bytes"):
        BlockKey.of_raw(ns, b"x" * 4097)
    with pytest.raises(ValueError, match="not valid Unicode"):
        BlockKey.of_raw(ns, "sixteen-bytes..\ud800")
    with pytest.raises(ValueError, match="model may not be empty"):
        Namespace("", "bf16", "tp0of1")
    with pytest.raises(ValueError, match="1025 UTF-8 bytes"):
        Namespace("m" * 1025, "bf16", "tp0of1")
    with pytest.raises(ValueError, match="at least 1"):
        PrefixKeys(ns, 0)
    with pytest.raises(ValueError, match="32 hex digits"):
        BlockKey.from_hex("xyz")
    assert BlockKey.from_hex("00" * 15 + "AB").hex() == "00" * 15 + "ab"


@pytest.mark.parametrize("v", RENDEZVOUS["vectors"], ids=lambda v: ",".join(v["servers"]))
def test_rendezvous_vectors(v):
    ids = [_rendezvous.server_id(s) for s in v["servers"]]
    assert [format(i, "016x") for i in ids] == v["serverIds"]
    for case in v["keys"]:
        key = bytes.fromhex(case["key"])
        scores = [_rendezvous.score(key, i) for i in ids]
        assert [format(s & (2**64 - 1), "016x") for s in scores] == case["scores"]
        assert _rendezvous.pick(key, ids) == case["owner"]
        assert sorted(range(len(ids)), key=lambda i: (-scores[i], i)) == case["order"]


def test_resolved_addresses_are_named_as_java_names_them():
    assert _rendezvous.java_host_string("::1") == "0:0:0:0:0:0:0:1"
    assert _rendezvous.java_host_string("fe80::2") == "fe80:0:0:0:0:0:0:2"
    assert _rendezvous.java_host_string("10.0.0.1") == "10.0.0.1"
    assert _rendezvous.java_host_string("kv-0.kv") == "kv-0.kv"


def test_rendezvous_moves_about_one_nth_of_keys():
    import os
    keys = [os.urandom(16) for _ in range(3000)]
    four = [_rendezvous.server_id(f"10.0.0.{i}:7070") for i in range(4)]
    owners4 = [_rendezvous.pick(k, four) for k in keys]
    owners3 = [_rendezvous.pick(k, four[:3]) for k in keys]
    moved = sum(a != b for a, b in zip(owners4, owners3))
    assert moved == owners4.count(3)  # only the removed server's keys move
    assert 0.15 < moved / len(keys) < 0.35
