"""The SGLang HiCache storage backend at its former path, which engine configurations name as
``module_path``: :mod:`kvcache.integrations.sglang`."""
from .integrations.sglang import *  # noqa: F401,F403
from .integrations.sglang import KvcacheHiCacheStorage, __all__  # noqa: F401
