"""Batched inference: each distinct input once, length-sorted batches, inference mode."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from beluga_core.suite.schema import Input
from beluga_core.training.encode import Encoder
from beluga_core.training.precision import autocast


def predict_probs(model: torch.nn.Module, encoder: Encoder, inputs: Sequence[Input], device: torch.device,
                  batch_size: int = 128) -> np.ndarray:
    """Softmax probabilities, one row per element of ``inputs`` (repeated inputs are computed once)."""
    unique = list(dict.fromkeys(inputs))
    if not unique:
        return np.zeros((0, 0), dtype=np.float32)
    encoder.encode_many(unique)
    # Length-sorted batches waste little on padding; results are put back in input order below.
    order = sorted(range(len(unique)), key=lambda i: encoder.length(unique[i]))
    out: np.ndarray | None = None
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            batch = {k: v.to(device, non_blocking=True)
                     for k, v in encoder.collate([unique[i] for i in idx]).items()}
            with autocast(device):
                logits = model(**batch).logits
            probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()
            if out is None:
                out = np.empty((len(unique), probs.shape[1]), dtype=np.float32)
            out[idx] = probs
    assert out is not None
    position = {x: i for i, x in enumerate(unique)}
    return out[[position[x] for x in inputs]]
