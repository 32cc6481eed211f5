"""What vLLM's offloading needs to run on a machine without a GPU, for the engine tests only.

vLLM's offloading worker copies between the GPU's KV cache and the host tier with CUDA streams
and refuses other platforms. :class:`HostCopyTieringSpec` is vLLM's own ``TieringOffloadingSpec``
(scheduler, offloading manager, host tier and secondary tiers unchanged) whose worker copies the
same bytes between the CPU model runner's KV cache and the host tier with ``memmove``,
synchronously. vLLM loads it by ``spec_name`` / ``spec_module_path``; on a GPU the stock spec is
used instead.

:func:`make_model` writes a Llama with random weights and a byte-level BPE tokenizer trained on
local text, so that no model hub is needed.
"""
from __future__ import annotations

import ctypes
import json
import os
import time
from typing import Any

import numpy as np
import torch
from vllm.utils.math_utils import cdiv
from vllm.v1.kv_offload.base import (CanonicalKVCaches, GPULoadStoreSpec, LoadStoreSpec,
                                     OffloadingWorker, TransferResult)
from vllm.v1.kv_offload.cpu.gpu_worker import compute_sub_block_ptrs
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec


class HostCopyWorker(OffloadingWorker):
    """Copies KV blocks between the engine's (CPU) KV cache and the host tier's shared region."""

    def __init__(self, kv_caches: CanonicalKVCaches, blocks_per_chunk: int,
                 region: SharedOffloadRegion) -> None:
        self._region = region
        self._blocks_per_chunk = blocks_per_chunk
        self._refs = kv_caches.group_data_refs
        self._device: list[torch.Tensor] = []
        self._host: list[torch.Tensor] = []
        for t in kv_caches.tensors:
            self._device.append(t.tensor.view(torch.int8).view((-1, t.page_size_bytes)))
            self._host.append(region.create_next_worker_view(t.page_size_bytes * blocks_per_chunk))
        self._finished: list[TransferResult] = []

    def _copy(self, job_id: int, device: GPULoadStoreSpec, host: Any, to_host: bool) -> bool:
        start = time.monotonic()
        moved = 0
        dev_at = host_at = 0
        bpc = self._blocks_per_chunk
        for group, (size, index) in enumerate(zip(device.group_sizes, device.block_indices)):
            if size == 0:
                continue
            skip = index % bpc
            dev_ids = device.block_ids[dev_at:dev_at + size]
            n_host = cdiv(size + skip, bpc)
            host_ids = host.block_ids[host_at:host_at + n_host]
            dev_at += size
            host_at += n_host
            for ref in self._refs[group]:
                dev_ptrs = np.empty(size, dtype=np.uint64)
                host_ptrs = np.empty(size, dtype=np.uint64)
                compute_sub_block_ptrs(dev_ids, 1, dev_ptrs, self._device[ref.tensor_idx])
                compute_sub_block_ptrs(host_ids, bpc, host_ptrs, self._host[ref.tensor_idx],
                                       skip_count=skip)
                for d, h in zip(dev_ptrs.tolist(), host_ptrs.tolist()):
                    if to_host:
                        ctypes.memmove(h, d, ref.page_size_bytes)
                    else:
                        ctypes.memmove(d, h, ref.page_size_bytes)
                moved += size * ref.page_size_bytes
        self._finished.append(TransferResult(job_id, True, moved, time.monotonic() - start))
        return True

    def submit_store(self, job_id: int, src_spec: GPULoadStoreSpec, dst_spec: LoadStoreSpec) -> bool:
        return self._copy(job_id, src_spec, dst_spec, to_host=True)

    def submit_load(self, job_id: int, src_spec: LoadStoreSpec, dst_spec: GPULoadStoreSpec) -> bool:
        return self._copy(job_id, dst_spec, src_spec, to_host=False)

    def get_finished(self) -> list[TransferResult]:
        done, self._finished = self._finished, []
        return done

    def wait(self, job_ids: set[int]) -> None:
        return  # every copy is finished when it is submitted

    def shutdown(self) -> None:
        self._device.clear()
        self._host.clear()  # the views of the region go before it is unmapped
        self._region.cleanup()


class HostCopyTieringSpec(TieringOffloadingSpec):  # type: ignore[misc]
    """vLLM's tiering spec with :class:`HostCopyWorker` as its worker."""

    _host_worker: HostCopyWorker | None = None

    def get_worker(self, kv_caches: CanonicalKVCaches) -> OffloadingWorker:
        if self._host_worker is None:
            rank = 0 if self.replicated_layout else self.config.parallel.rank
            region = SharedOffloadRegion(engine_id=self._engine_id, num_chunks=self.num_chunks,
                                         rank=rank, kv_bytes_per_chunk=self.kv_bytes_per_chunk,
                                         cpu_page_size=self.cpu_page_size_per_worker)
            self._host_worker = HostCopyWorker(kv_caches, self.blocks_per_chunk, region)
        return self._host_worker


def make_model(path: str, *, layers: int = 2, hidden: int = 256, heads: int = 4,
               kv_heads: int = 2, vocab: int = 4096, seed: int = 0) -> str:
    """Writes a random-weight Llama and a byte-level BPE tokenizer (trained on this Python's own
    library sources) to ``path``; returns ``path``. Nothing is downloaded."""
    if os.path.exists(os.path.join(path, "config.json")):
        return path
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    os.makedirs(path, exist_ok=True)
    corpus = []
    lib = os.path.dirname(os.__file__)
    for name in sorted(os.listdir(lib))[:200]:
        if name.endswith(".py"):
            with open(os.path.join(lib, name), encoding="utf-8", errors="replace") as f:
                corpus.append(f.read())
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(path)

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=hidden,
                         intermediate_size=hidden * 2, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads,
                         max_position_embeddings=40_000, bos_token_id=0, eos_token_id=1,
                         torch_dtype="bfloat16")
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(path)
    with open(os.path.join(path, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 0, "eos_token_id": 1}, f)
    return path
