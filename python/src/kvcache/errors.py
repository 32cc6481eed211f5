"""The exceptions the client raises, at their former path; ``kvcache`` exports them all."""
from ._errors import *  # noqa: F401,F403
from ._errors import __all__
