"""The vLLM secondary tier at its former path, which engine configurations name as
``module_path``: :mod:`kvcache.integrations.vllm`."""
from .integrations.vllm import *  # noqa: F401,F403
from .integrations.vllm import KvcacheTier, __all__, key_namespace  # noqa: F401
