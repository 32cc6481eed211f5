"""kvcache-server as a KV tier of inference engines: one module per engine, importable where the
engine is installed.

* :mod:`kvcache.integrations.vllm`: a secondary tier of vLLM's offloading connector
  (``pip install "kvcache[vllm]"``).
* :mod:`kvcache.integrations.sglang`: a HiCache storage backend of SGLang
  (``pip install "kvcache[sglang]"``).
* :mod:`kvcache.integrations.lmcache`: an L2 adapter and a remote storage plugin of LMCache
  (``pip install "kvcache[lmcache]"``).

See ``docs/engines.md``.
"""
