"""What an engine knows a block by: :class:`EngineBlock`, sent with a put so that the server's KV
events can name the block as the engine does."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

_MAX_HASH = (1 << 64) - 1
#: The most tokens one block may name (the server's limit).
MAX_TOKENS = 4096


@dataclass(frozen=True)
class EngineBlock:
    """A block as the engine that computed it names it: its model, the engine's hash of the block
    and of its parent, its token ids, and the LoRA adapter it was computed with. A put that carries
    one (``Client.put(key, data, engine_block=...)``) lets a server that publishes KV events
    (``kvcache.events.endpoint``) tell routers of the block in vLLM's format, on the topic
    ``kv@<pool>@<model>``; a server without events ignores it.

    Args:
        model: the model as routers name it (vLLM's served model name), without ``@``.
        hash: the engine's hash of the block, an unsigned 64-bit integer (vLLM's
            ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`` form; a bytes hash is given as the integer
            of its last 8 bytes, as vLLM converts it).
        tokens: the block's token ids, which routers such as llm-d's indexer need to place the
            block; empty where the engine's plug-in point does not give them (then
            ``block_size``), as vLLM's storage tiers tell theirs.
        parent: the hash of the block before it in the prompt; None for the first.
        block_size: the engine's block size in tokens; default ``len(tokens)``.
        lora: the LoRA adapter's name, or None.

    Raises:
        ValueError: a hash outside 0..2**64-1, a model with ``@`` or empty, more than 4096
            tokens, neither tokens nor a block size, or a block size other than their number.
    """

    model: str
    hash: int
    tokens: Sequence[int] = ()
    parent: Optional[int] = None
    block_size: Optional[int] = None
    lora: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.model or "@" in self.model:
            raise ValueError(f"an engine block's model must be a name without '@', "
                             f"got {self.model!r}")
        for name, value in (("hash", self.hash), ("parent", self.parent)):
            if value is not None and not 0 <= value <= _MAX_HASH:
                raise ValueError(f"an engine block's {name} must be in 0..2**64-1, got {value}")
        if len(self.tokens) > MAX_TOKENS:
            raise ValueError(f"an engine block names at most {MAX_TOKENS} tokens, "
                             f"got {len(self.tokens)}")
        if self.block_size is None and not self.tokens:
            raise ValueError("an engine block needs its tokens or its block_size")
        if self.block_size is not None and (self.block_size < 1 or self.tokens
                                             and self.block_size != len(self.tokens)):
            raise ValueError(f"block_size {self.block_size} is not the number of the "
                             f"{len(self.tokens)} tokens" if self.tokens
                             else f"block_size must be 1 or more, got {self.block_size}")

    @staticmethod
    def hash_of(value: "int | bytes") -> int:
        """An engine's block hash as the unsigned 64-bit integer the events carry: an int as it
        is, bytes as the integer of their last 8 bytes (big-endian), as vLLM converts them."""
        if isinstance(value, int):
            return value & _MAX_HASH
        return int.from_bytes(bytes(value)[-8:], "big")

    def headers(self) -> dict[str, str]:
        """The put's ``kvcache-engine-*`` headers for this block."""
        h = {
            "kvcache-engine-hash": str(self.hash),
            "kvcache-engine-model": self.model,
            "kvcache-engine-block-size": str(self.block_size or len(self.tokens)),
        }
        if self.tokens:
            h["kvcache-engine-tokens"] = ",".join(map(str, self.tokens))
        if self.parent is not None:
            h["kvcache-engine-parent"] = str(self.parent)
        if self.lora:
            h["kvcache-engine-lora"] = self.lora
        return h
