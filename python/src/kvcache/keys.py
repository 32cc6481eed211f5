"""Block keys, at their former path; ``kvcache`` exports :class:`BlockKey`, :class:`Namespace` and
:class:`PrefixKeys`."""
from ._keys import *  # noqa: F401,F403
from ._keys import KEY_BYTES, MAX_FIELD_BYTES, __all__, key_hex, keys_hex
