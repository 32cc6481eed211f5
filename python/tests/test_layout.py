"""The package's public paths: everything from ``kvcache``, and the former module paths giving the
very same objects."""
import importlib.util

import kvcache


def test_former_module_paths_give_the_same_objects():
    import kvcache.aio
    import kvcache.client
    import kvcache.errors
    import kvcache.keys
    assert kvcache.client.Client is kvcache.Client
    assert kvcache.client.PutStatus is kvcache.PutStatus
    assert kvcache.aio.AsyncClient is kvcache.AsyncClient
    assert kvcache.aio.AsyncPin is kvcache.AsyncPin
    for name in kvcache.errors.__all__:
        assert getattr(kvcache.errors, name) is getattr(kvcache, name)
    for name in ("BlockKey", "Namespace", "PrefixKeys"):
        assert getattr(kvcache.keys, name) is getattr(kvcache, name)
    assert kvcache.keys.BlockKey.of_raw(kvcache.keys.Namespace("m", "d", "l"), "x" * 16)


def test_every_exported_name_is_there():
    assert all(hasattr(kvcache, name) for name in kvcache.__all__)


def test_the_engine_adapters_are_under_integrations():
    import kvcache.integrations  # importable without any engine
    for engine in ("vllm", "sglang", "lmcache"):
        assert importlib.util.find_spec(f"kvcache.integrations.{engine}") is not None
        assert importlib.util.find_spec(f"kvcache.{engine}") is not None, "the former path"


def test_put_statuses_match_the_java_clients():
    assert [s.name for s in kvcache.PutStatus] == [
        "STORED", "NOT_ADMITTED", "TOO_LARGE", "NO_SPACE", "NOT_DURABLE"]
    assert kvcache.PutStatus.NOT_STORED is kvcache.PutStatus.NOT_ADMITTED
