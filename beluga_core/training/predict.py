"""Batched inference: each distinct input once, length-sorted batches, inference mode.

On a GPU, batches are as large as a token budget allows (short sentences: 1,024 rows), inputs go through
pinned memory, and probabilities stay on the device until the end, so the host waits once per call rather
than once per batch. On a CPU, 32 rows per batch: larger batches' activations outgrow the cores' caches
(benchmarks/perf/RESULTS.md, "CPU evaluation batch size", has the measurement).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from beluga_core.data.suite.suite_schema import Input
from beluga_core.training.encode import Encoder
from beluga_core.training.precision import autocast

CPU_BATCH = 32
GPU_MAX_ROWS = 1024
# Padded tokens per GPU batch: 1,024 rows of 256 tokens; long inputs (reading, 384 tokens) get fewer rows.
GPU_TOKEN_BUDGET = 1024 * 256


def eval_batch_size(device: torch.device) -> int:
    """Rows per inference batch for inputs of ordinary length on ``device``."""
    return GPU_MAX_ROWS if device.type == "cuda" else CPU_BATCH


def _batches(order: list[int], lengths: list[int], device: torch.device, batch_size: int | None) -> Iterator[list[int]]:
    """Consecutive slices of ``order`` (sorted by length, ascending)."""
    if batch_size is not None or device.type != "cuda":
        size = batch_size or CPU_BATCH
        for start in range(0, len(order), size):
            yield order[start:start + size]
        return
    start = 0
    while start < len(order):
        end = start + 1
        # The batch's width is its last (longest) input's length: grow while rows × width fits the budget.
        while end < len(order) and end - start < GPU_MAX_ROWS and \
                (end + 1 - start) * lengths[order[end]] <= GPU_TOKEN_BUDGET:
            end += 1
        yield order[start:end]
        start = end


def predict_probs(model: torch.nn.Module, encoder: Encoder, inputs: Sequence[Input], device: torch.device,
                  batch_size: int | None = None) -> np.ndarray:
    """Softmax probabilities, one row per element of ``inputs`` (repeated inputs are computed once)."""
    unique = list(dict.fromkeys(inputs))
    if not unique:
        return np.zeros((0, 0), dtype=np.float32)
    encoder.encode_many(unique)
    lengths = [encoder.length(x) for x in unique]
    # Length-sorted batches waste little on padding; results are put back in input order below.
    order = sorted(range(len(unique)), key=lengths.__getitem__)
    pin = device.type == "cuda"
    parts: list[torch.Tensor] = []
    model.eval()
    with torch.inference_mode():
        for idx in _batches(order, lengths, device, batch_size):
            batch = {k: (v.pin_memory() if pin else v).to(device, non_blocking=True)
                     for k, v in encoder.collate([unique[i] for i in idx]).items()}
            with autocast(device):
                logits = model(**batch).logits
            parts.append(torch.softmax(logits.float(), dim=-1))
    probs = torch.cat(parts).cpu().numpy()  # the one device→host copy
    out = np.empty_like(probs)
    out[np.asarray(order)] = probs
    position = {x: i for i, x in enumerate(unique)}
    return out[[position[x] for x in inputs]]
