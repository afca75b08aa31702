"""From start / end logits to answer strings: n-best span decoding over every window of an input.

Per window, the ``n_best`` highest start logits and the ``n_best`` highest end logits among the window's
context tokens are paired; a pair is a valid span when it ends at or after its start and is at most
``max_answer_length`` tokens long; its score is start + end logit. The input's answer is the best valid span
over all its windows, mapped back to the context's characters — "" when no window has a valid span (an
empty context). The same rule as HF's ``postprocess_qa_predictions`` for SQuAD v1.1, except that candidates
are drawn among context tokens only (HF draws among all tokens and then drops the non-context ones, which
can leave it fewer than n_best candidates), and it runs batched on the model's device.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from beluga_core.tasks.reading.reading_encode import ReadingEncoder, ReadingInput, Window, reading_input
from beluga_core.training.precision import autocast


def best_spans(start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor, n_best: int,
               max_answer_length: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Best valid span per row: (score [B] — -inf where none is valid —, start [B], end [B])."""
    neg_inf = torch.tensor(float("-inf"), device=start_logits.device)
    start = torch.where(context_mask, start_logits.float(), neg_inf)
    end = torch.where(context_mask, end_logits.float(), neg_inf)
    k = min(n_best, start.shape[1])
    top_s, idx_s = start.topk(k, dim=1)
    top_e, idx_e = end.topk(k, dim=1)
    length = idx_e[:, None, :] - idx_s[:, :, None] + 1  # [B, k (start), k (end)]
    valid = (length >= 1) & (length <= max_answer_length)
    valid &= torch.isfinite(top_s)[:, :, None] & torch.isfinite(top_e)[:, None, :]
    scores = torch.where(valid, top_s[:, :, None] + top_e[:, None, :], neg_inf)
    best, flat = scores.flatten(1).max(dim=1)
    return best, idx_s.gather(1, (flat // k)[:, None])[:, 0], idx_e.gather(1, (flat % k)[:, None])[:, 0]


def predict_answers(model: torch.nn.Module, encoder: ReadingEncoder, inputs: Sequence[ReadingInput],
                    device: torch.device, *, n_best: int = 20, max_answer_length: int = 30,
                    batch_size: int = 64) -> tuple[list[str], np.ndarray]:
    """The answer string for every element of ``inputs`` (repeated inputs are computed once), and its
    confidence: p(start) · p(end) of the chosen span, each a softmax over its window's context tokens
    (0 where no window has a valid span)."""
    unique = list(dict.fromkeys(reading_input(x) for x in inputs))
    if not unique:
        return [], np.zeros(0)
    encoder.encode_many(unique)
    windows: list[tuple[int, Window]] = [(u, w) for u, x in enumerate(unique) for w in encoder[x]]
    # Length-sorted batches waste little on padding.
    order = sorted(range(len(windows)), key=lambda i: len(windows[i][1]))
    best_score = np.full(len(unique), -np.inf)
    confidence = np.zeros(len(unique))
    answers = [""] * len(unique)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = [windows[i] for i in order[start:start + batch_size]]
            ws = [w for _, w in chunk]
            batch = {k: v.to(device, non_blocking=True) for k, v in encoder.collate(ws).items()}
            with autocast(device):
                out = model(**batch)
            mask = encoder.context_mask(ws, batch["input_ids"].shape[1]).to(device)
            score, s, e = best_spans(out.start_logits, out.end_logits, mask, n_best, max_answer_length)
            conf = _span_probability(out.start_logits, out.end_logits, mask, s, e)
            for (u, w), sc, si, ei, pc in zip(chunk, score.tolist(), s.tolist(), e.tolist(), conf.tolist(),
                                              strict=True):
                if sc > best_score[u]:  # only a strictly better span replaces the one kept
                    best_score[u] = sc
                    answers[u] = w.text(unique[u][0], si, ei)
                    confidence[u] = pc
    position = {x: i for i, x in enumerate(unique)}
    rows = [position[reading_input(x)] for x in inputs]
    return [answers[i] for i in rows], confidence[rows]


def _span_probability(start_logits: torch.Tensor, end_logits: torch.Tensor, context_mask: torch.Tensor,
                      s: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    neg_inf = torch.tensor(float("-inf"), device=start_logits.device)
    p_start = torch.softmax(torch.where(context_mask, start_logits.float(), neg_inf), dim=1)
    p_end = torch.softmax(torch.where(context_mask, end_logits.float(), neg_inf), dim=1)
    prob = p_start.gather(1, s[:, None])[:, 0] * p_end.gather(1, e[:, None])[:, 0]
    return torch.nan_to_num(prob, nan=0.0).cpu()


def token_accuracy(model: torch.nn.Module, encoder: ReadingEncoder, items: Sequence[tuple[ReadingInput, np.ndarray]],
                   device: torch.device, batch_size: int = 64) -> tuple[float, float]:
    """Share of items whose argmax start (end) context token is the gold one, in the first window that
    wholly holds the gold span ``[char_start, char_end)``; an item no window holds counts as wrong."""
    found: list[tuple[Window, int, int]] = []
    for x, (cs, ce) in ((x, np.asarray(t, dtype=np.int64).tolist()) for x, t in items):
        for w in encoder[x]:
            s, e = w.token_span(cs, ce)
            if (s, e) != (w.cls_index, w.cls_index):
                found.append((w, s, e))
                break
    if not items:
        return float("nan"), float("nan")
    hits = np.zeros(2)
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(found), batch_size):
            chunk = found[start:start + batch_size]
            ws = [w for w, _, _ in chunk]
            batch = {k: v.to(device, non_blocking=True) for k, v in encoder.collate(ws).items()}
            with autocast(device):
                out = model(**batch)
            mask = encoder.context_mask(ws, batch["input_ids"].shape[1]).to(device)
            neg_inf = torch.tensor(float("-inf"), device=device)
            s_pred = torch.where(mask, out.start_logits.float(), neg_inf).argmax(dim=1).tolist()
            e_pred = torch.where(mask, out.end_logits.float(), neg_inf).argmax(dim=1).tolist()
            hits += [sum(p == s for p, (_, s, _) in zip(s_pred, chunk, strict=True)),
                     sum(p == e for p, (_, _, e) in zip(e_pred, chunk, strict=True))]
    return float(hits[0] / len(items)), float(hits[1] / len(items))
