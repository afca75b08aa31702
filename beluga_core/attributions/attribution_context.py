"""The model side of attributions: tokenizing an input as the model reads it (with character offsets and
words), and the objectives estimators differentiate or probe — from token ids, from the word embeddings, or
from the embedding layer's output — for a classifier (a class probability, a logit, a cross-entropy) or a span
model (the predicted span's start + end logit).

Attributions run in fp32 without autocast: gradients of a bf16 forward are too coarse for integrated gradients'
completeness (Σ attributions = f(x) − f(baseline)).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from beluga_core.contracts.attributions import Baseline, Objective, Scale, Target, TokenizedInput
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Input


def tokenize(tokenizer: Any, x: Input, max_length: int, *, span: bool = False,
             model_text: Callable[[str], str] | None = None) -> TokenizedInput:
    """``x`` as the model reads it. A text pair keeps both segments; a span model's (context, question) is
    read question first, as the reading task feeds it (only the first window of a long context).

    ``model_text`` is the task encoder's rewriting of a single text before tokenization, word for word (the
    relation task's entity markers to the vocabulary ids it trained with): the tokens are the encoder's, their
    offsets point into ``x``, and a word the rewriting changed (an entity marker) is one special token shown as
    the input's own word, so that a marker stays whole and is never attributed as text."""
    if not getattr(tokenizer, "is_fast", False):
        raise BelugaError("attributions need a fast (Rust) tokenizer for character offsets; "
                          f"{type(tokenizer).__name__} has none")
    if isinstance(x, str):
        texts: tuple[str, ...] = (model_text(x) if model_text is not None else x,)
    elif span:
        texts = (x[1], x[0])
    else:
        texts = (x[0], x[1])
    enc = tokenizer(*texts, truncation="only_second" if span else True, max_length=max_length,
                    return_offsets_mapping=True)
    segments = [-1 if s is None else int(s) for s in enc.sequence_ids()]
    if span:  # segment 0 = the context (the suite's first text), 1 = the question
        segments = [-1 if s < 0 else 1 - s for s in segments]
    words = list(enc.word_ids())
    offsets = [(0, 0) if seg < 0 else (int(a), int(b)) for seg, (a, b) in zip(segments, enc["offset_mapping"],
                                                                               strict=True)]
    tokens = list(tokenizer.convert_ids_to_tokens(enc["input_ids"]))
    if isinstance(x, str) and model_text is not None and texts[0] != x:
        _back_to_input(x, texts[0], segments, words, offsets, tokens)
    numbered: dict[tuple[int, int], int] = {}
    word_ids = []
    for seg, w in zip(segments, words, strict=True):
        if seg < 0 or w is None:
            word_ids.append(-1)
        else:
            word_ids.append(numbered.setdefault((seg, int(w)), len(numbered)))
    types = enc.get("token_type_ids")
    return TokenizedInput(tuple(enc["input_ids"]), tuple(tokens), tuple(offsets), tuple(segments), tuple(word_ids),
                          tuple(types) if types is not None else None)


def _word_starts(text: str) -> tuple[list[str], list[int]]:
    words, starts, pos = text.split(), [], 0
    for w in words:
        pos = text.index(w, pos)
        starts.append(pos)
        pos += len(w)
    return words, starts


def _back_to_input(x: str, text: str, segments: list[int], words: list[int | None],
                   offsets: list[tuple[int, int]], tokens: list[str]) -> None:
    """Map the tokens of ``text`` (``x`` rewritten word for word) back onto ``x``, in place: offsets shift to the
    word's place in ``x``; a token of a rewritten word becomes a special token (segment −1) named by ``x``'s word."""
    original, original_starts = _word_starts(x)
    rewritten, starts = _word_starts(text)
    if len(original) != len(rewritten):
        raise BelugaError("the task's encoder rewrites inputs other than word for word; attributions cannot map "
                          "its tokens back onto the input's words")
    for i, seg in enumerate(segments):
        if seg < 0:
            continue
        a, b = offsets[i]
        w = bisect.bisect_right(starts, a) - 1
        if w < 0:
            continue
        if rewritten[w] != original[w]:
            segments[i], words[i], offsets[i], tokens[i] = -1, None, (0, 0), original[w]
        else:
            shift = original_starts[w] - starts[w]
            offsets[i] = (a + shift, b + shift)


def _embeddings_module(model: torch.nn.Module) -> torch.nn.Module:
    base = getattr(model, "base_model", model)
    module = getattr(base, "embeddings", None)
    if not isinstance(module, torch.nn.Module):
        raise BelugaError(f"{type(model).__name__} has no `embeddings` module: scale = 'embedding_output' needs one "
                          "(use scale = 'word_embeddings')")
    return module


class ModelContext:
    """An ``AttributionContext`` over a Hugging Face classifier or span model (eval mode, no gradients to
    its parameters)."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, device: torch.device, *, span: bool = False,
                 objective: Objective = "prob", batch_size: int = 64) -> None:
        self.model = model.eval()
        self.device = device
        self.tokenizer = tokenizer
        self.span = span
        self.objective: Objective = objective
        self.batch_size = batch_size
        mask = tokenizer.mask_token_id if tokenizer.mask_token_id is not None else tokenizer.unk_token_id
        if mask is None:
            raise BelugaError(f"{type(tokenizer).__name__} has neither a mask nor an unknown token to occlude with")
        self.mask_id = int(mask)

    # -- inputs -----------------------------------------------------------------------------------------------
    def ids(self, x: TokenizedInput) -> torch.Tensor:
        return torch.tensor([x.input_ids], dtype=torch.long, device=self.device)

    def _extra(self, x: TokenizedInput, n: int) -> dict[str, torch.Tensor]:
        out = {"attention_mask": torch.ones((n, len(x)), dtype=torch.long, device=self.device)}
        if x.token_type_ids is not None:
            out["token_type_ids"] = torch.tensor([x.token_type_ids] * n, dtype=torch.long, device=self.device)
        return out

    def masked_ids(self, x: TokenizedInput) -> torch.Tensor:
        """``x`` with every non-special token replaced by the mask token."""
        ids = [t if seg < 0 else self.mask_id for t, seg in zip(x.input_ids, x.segment_ids, strict=True)]
        return torch.tensor([ids], dtype=torch.long, device=self.device)

    # -- objectives -------------------------------------------------------------------------------------------
    def _score(self, out: Any, target: Target, objective: Objective) -> torch.Tensor:
        if self.span:
            s, e = target if isinstance(target, tuple) else (target, target)
            return out.start_logits[:, s].float() + out.end_logits[:, e].float()
        logits = out.logits.float()
        assert isinstance(target, int)
        if objective == "logit":
            return logits[:, target]
        log_p = torch.log_softmax(logits, dim=-1)[:, target]
        return log_p.exp() if objective == "prob" else -log_p

    def predict(self, x: TokenizedInput) -> Target:
        """The model's own prediction: the argmax class, or a span model's best span (end ≥ start, at most 30
        tokens, in the context)."""
        with torch.no_grad(), fp32(self.device):
            out = self.model(input_ids=self.ids(x), **self._extra(x, 1))
        if not self.span:
            return int(out.logits[0].argmax())
        context = [i for i, s in enumerate(x.segment_ids) if s == 0]
        if not context:
            raise BelugaError("a span model's input without context tokens to point at")
        start, end = out.start_logits[0].float(), out.end_logits[0].float()
        best = max(((s, e) for s in context for e in context if s <= e <= s + 30),
                   key=lambda p: float(start[p[0]] + end[p[1]]))
        return (int(best[0]), int(best[1]))

    def objective_from_ids(self, x: TokenizedInput, target: Target,
                           objective: Objective | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
        obj = objective or self.objective

        def f(ids: torch.Tensor) -> torch.Tensor:
            outs = []
            for start in range(0, len(ids), self.batch_size):
                chunk = ids[start:start + self.batch_size].to(self.device)
                with fp32(self.device):
                    outs.append(self._score(self.model(input_ids=chunk, **self._extra(x, len(chunk))), target, obj))
            # Back where the ids were built (the CPU, for perturbation samples): captum combines the scores with
            # its own tensors there.
            return torch.cat(outs).to(ids.device)

        return f

    def layer_input(self, x: TokenizedInput, scale: Scale, baseline: Baseline) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad(), fp32(self.device):
            if scale == "word_embeddings":
                layer: Any = getattr(self.model, "get_input_embeddings")()  # noqa: B009 - a Module attribute
                value, masked = layer(self.ids(x)), layer(self.masked_ids(x))
            else:
                value, masked = (self._embedding_output(ids, x) for ids in (self.ids(x), self.masked_ids(x)))
        if baseline == "mask":
            return value.detach(), masked.detach()
        special = torch.tensor(x.special, device=self.device)[None, :, None]
        # A zero baseline everywhere but the special tokens, which every interpolation keeps as they are.
        return value.detach(), torch.where(special, value, torch.zeros_like(value)).detach()

    def _embedding_output(self, ids: torch.Tensor, x: TokenizedInput) -> torch.Tensor:
        types = self._extra(x, len(ids)).get("token_type_ids")
        module = _embeddings_module(self.model)
        out: torch.Tensor = module(input_ids=ids, token_type_ids=types) if types is not None else module(input_ids=ids)
        return out

    def objective_from_layer(self, x: TokenizedInput, scale: Scale, target: Target,
                             objective: Objective | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
        obj = objective or self.objective

        def f(values: torch.Tensor) -> torch.Tensor:
            n = len(values)
            extra = self._extra(x, n)
            with fp32(self.device):
                if scale == "word_embeddings":
                    out = self.model(inputs_embeds=values, **extra)
                else:
                    with _replaced_output(_embeddings_module(self.model), values):
                        out = self.model(input_ids=self.ids(x).expand(n, -1), **extra)
            return self._score(out, target, obj)

        return f


@contextmanager
def fp32(device: torch.device) -> Iterator[None]:
    """No autocast on ``device``, whatever the run's precision."""
    with torch.autocast(device.type, enabled=False):
        yield


@contextmanager
def _replaced_output(module: torch.nn.Module, values: torch.Tensor) -> Iterator[None]:
    handle = module.register_forward_hook(lambda _m, _i, _o: values)
    try:
        yield
    finally:
        handle.remove()
