"""Views of the caller's buffers as flat bytes, without copying them."""
from __future__ import annotations

from typing import Any

#: What the client reads from and writes into: any object with the buffer protocol, or a CPU
#: torch tensor.
Buffer = Any


def _torch_view(obj: Any) -> Any:
    """A numpy view of a CPU torch tensor's bytes (torch tensors have no buffer protocol)."""
    if obj.device.type != "cpu":
        raise TypeError(f"a {obj.device.type} tensor: kvcache reads and writes host memory; "
                        "copy it to a CPU (pinned) tensor first")
    if not obj.is_contiguous():
        raise ValueError("the tensor is not contiguous")
    import torch  # type: ignore[import-not-found, unused-ignore]
    return obj.reshape(-1).view(torch.uint8).numpy()


def _flat(obj: Any, writable: bool) -> memoryview:
    if type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr"):
        obj = _torch_view(obj)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{type(obj).__name__} does not support the buffer protocol") from None
    if writable and view.readonly:
        raise TypeError(f"{type(obj).__name__} is read-only; give a writable buffer "
                        "(bytearray, numpy array, CPU tensor)")
    if not view.c_contiguous:
        raise ValueError("the buffer is not C-contiguous")
    if view.format == "B" and view.ndim == 1:
        return view
    return view.cast("B")


def readable_view(obj: Any) -> memoryview:
    """``obj``'s bytes, flat."""
    return _flat(obj, False)


def writable_view(obj: Any) -> memoryview:
    """``obj``'s bytes, flat and writable."""
    return _flat(obj, True)
