"""The attribution plugin kind: which input tokens a model's output relied on.

A plugin (``beluga.attributions``) is one estimator (integrated gradients, occlusion, LIME, Kernel SHAP, …). It
gets an ``AttributionContext`` — the model and what a task knows about it: the tokenized inputs, the objective
whose attribution is asked for (a class probability, a logit, a loss; a span's start + end logit), forwards from
token ids, from word embeddings or from the embedding layer's output — and returns one score per token of
each input. beluga normalises the scores, sums them over each word's pieces and stores them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
import torch
from pydantic import Field

from beluga_core.contracts.options import DeclaresOptions, Options, PluginOptions, validate_options

Objective = Literal["prob", "logit", "ce"]


def attribution_name(plugin: object) -> str:
    """An estimator's name in messages: its ``name`` attribute where it has one (ig), else its class's."""
    name = getattr(plugin, "name", None)
    return name if isinstance(name, str) else type(plugin).__name__.lower()


@dataclass(frozen=True)
class TokenizedInput:
    """One model input as the model sees it: token ids, their strings, character offsets into the text of
    their segment (``(0, 0)`` for special tokens), their segment (0: the text or a pair's first, 1: a pair's
    second, -1: special tokens) and the word each piece belongs to (``-1`` for specials; words numbered per
    input across segments)."""

    input_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    offsets: tuple[tuple[int, int], ...]
    segment_ids: tuple[int, ...]
    word_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def special(self) -> np.ndarray:
        return np.array([s < 0 for s in self.segment_ids], dtype=bool)


Scale = Literal["word_embeddings", "embedding_output"]
Baseline = Literal["zero", "mask"]
# A classifier's target is a class id; a span model's is the (start, end) token pair of its predicted span.
Target = int | tuple[int, int]


class AttributionContext(Protocol):
    """What an estimator may use: the model (frozen, eval mode, fp32) and objectives of one input."""

    model: torch.nn.Module
    device: torch.device
    mask_id: int
    objective: Objective

    def ids(self, x: TokenizedInput) -> torch.Tensor:
        """``[1, tokens]`` token ids of ``x`` on the device."""
        ...

    def objective_from_ids(self, x: TokenizedInput, target: Target,
                           objective: Objective | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
        """f(ids ``[n, tokens]``) → ``[n]``: the objective (default: the context's) for ``target`` of ``n``
        variants of ``x`` (tokens replaced, same length). The ids may be on any device (perturbation estimators
        build them on the CPU); the model runs on its own, and the scores come back on the ids' device."""
        ...

    def layer_input(self, x: TokenizedInput, scale: Scale, baseline: Baseline) -> tuple[torch.Tensor, torch.Tensor]:
        """(``x`` at the layer, the baseline at the layer), each ``[1, tokens, dim]``: the word embeddings, or the
        embedding layer's output (word + position + type embeddings, normalised); the baseline is zeros or
        the mask token's embedding at every non-special position."""
        ...

    def objective_from_layer(self, x: TokenizedInput, scale: Scale, target: Target,
                             objective: Objective | None = None) -> Callable[[torch.Tensor], torch.Tensor]:
        """f(layer values ``[n, tokens, dim]``) → ``[n]``, differentiable: the objective computed from the
        given values at the layer."""
        ...


Normalization = Literal["none", "l1", "max", "minmax"]


class AttributionOptions(Options):
    """The options every estimator takes (beluga applies them around ``attribute``); an estimator's own Options
    derive from this model."""

    target: Literal["predicted", "gold"] = Field("predicted", description=(
        "The class explained: the model's prediction or the gold label."))
    normalize: Normalization = Field("none", description=(
        "How a vector of token scores is scaled: none, l1 (by the sum of absolute values), max (by the largest "
        "absolute value) or minmax (to [0, 1])."))
    seed: int = Field(0, description="The seed of the estimator's random draws (per input and method).")


class Attribution(DeclaresOptions, ABC):
    """Base of every attribution plugin: ``attribute`` is the one member to implement.

    ``Options`` (a subclass of ``AttributionOptions``, a strict pydantic model) are its options, with the full
    budgets as defaults (what ``beluga explain`` uses); ``run_budget`` the cheaper values a run's folds use unless
    ``[attributions.options.NAME]`` says otherwise. ``spans``: the estimator also explains span models (reading
    comprehension), whose objective is the predicted span's start + end logit. ``self.options`` is the validated
    instance, ``self.option_values`` the values as a dict (what a stored attribution records). An estimator
    written before Options (a ``defaults`` dict) gets the dict as ``self.options``, unchecked.
    """

    Options: ClassVar[type[PluginOptions] | None] = AttributionOptions
    run_budget: ClassVar[dict[str, Any]] = {}
    spans: ClassVar[bool] = False
    # Options every estimator understands, for one written before Options (``AttributionOptions``' defaults).
    COMMON: ClassVar[dict[str, Any]] = {"target": "predicted", "normalize": "none", "seed": 0}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        given = dict(options or {})
        self.option_values: dict[str, Any] = {**self.COMMON, **self.defaults, **given}
        self.options: Any = self.option_values
        if self.Options is not None:
            self.options = validate_options(self.Options, given, f"attributions.options.{attribution_name(self)}")

    @abstractmethod
    def attribute(self, ctx: AttributionContext, x: TokenizedInput, target: Target,
                  rng: np.random.Generator) -> np.ndarray:
        """One score per token of ``x`` for the objective of ``target``; special tokens may get any score."""


@dataclass
class TokenAttribution:
    """A scored input: its tokenization, per-token and per-word scores, the target and what produced it."""

    input: TokenizedInput
    scores: np.ndarray                       # per token (after normalisation)
    target: str                              # the class id (or span) the scores explain
    method: str
    options: dict[str, Any] = field(default_factory=dict)

    def word_scores(self) -> list[tuple[int, int, int, float]]:
        """(segment, char start, char end, score) per word: a word's score is the sum over its pieces;
        special tokens are words of their own (segment -1)."""
        return word_scores(self.input, self.scores)


def word_scores(x: TokenizedInput, scores: Sequence[float] | np.ndarray) -> list[tuple[int, int, int, float]]:
    out: list[tuple[int, int, int, float]] = []
    current: int | None = None
    for i, w in enumerate(x.word_ids):
        seg, (start, end) = x.segment_ids[i], x.offsets[i]
        if w < 0 or w != current:
            out.append((seg, start, end, float(scores[i])))
            current = w if w >= 0 else None
        else:
            s0, a, _, total = out[-1]
            out[-1] = (s0, a, end, total + float(scores[i]))
    return out


def normalize(scores: np.ndarray, how: str) -> np.ndarray:
    """``none``, ``l1`` (divide by the sum of absolute values), ``max`` (by the largest absolute value) or
    ``minmax`` (to [0, 1]); a vector of zeros stays zeros."""
    s = np.asarray(scores, dtype=np.float64)
    if how == "none":
        return s
    if how == "l1":
        total = np.abs(s).sum()
        return s / total if total else s
    if how == "max":
        top = np.abs(s).max() if s.size else 0.0
        return s / top if top else s
    if how == "minmax":
        lo, hi = (s.min(), s.max()) if s.size else (0.0, 0.0)
        return (s - lo) / (hi - lo) if hi > lo else np.zeros_like(s)
    raise ValueError(f"normalize '{how}': expected none, l1, max or minmax")
