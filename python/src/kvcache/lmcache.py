"""The LMCache L2 adapter and remote storage plugin at their former path, which engine
configurations name as ``module_path``: :mod:`kvcache.integrations.lmcache`."""
from .integrations.lmcache import *  # noqa: F401,F403
from .integrations.lmcache import (KvcacheConnectorAdapter, KvcacheNativeConnector,  # noqa: F401
                                   KvcacheRemoteConnector, __all__)
