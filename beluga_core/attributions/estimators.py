"""The built-in attribution estimators (plugins of ``beluga.attributions``).

- ``ig``: integrated gradients (captum's ``IntegratedGradients``) of the objective with respect to the word
  embeddings or the embedding layer's output, from a zero or all-mask baseline; per token, the sum over embedding
  dimensions of (x − baseline) ⊙ the path-averaged gradient, signed or absolute. Presets:
  ``ig-diagnose`` (DiagnoseRE: word embeddings scaled from 0, 8 steps with both ends — captum's trapezoid rule
  over α = i/8, where the released code weighs the 9 points equally —, cross-entropy on the gold label, absolute,
  min–max normalised; its counterfactual generator's 0.2 threshold is defined on these scores) and ``tokig``
  (the few-shot paper's group: all-mask baseline, 300 left Riemann steps α = i/300, the predicted class's
  probability, signed).
- ``occlusion``: f(x) − f(x with token i masked), one token at a time (captum's ``FeatureAblation``).
- ``lime``: captum's ``Lime`` with the few-shot paper's group's choices: a sample switches k ~ U{1..d} random
  tokens to the mask token, kernel √exp(−d²/25²) on 100 × the cosine distance, ridge regression (α = 1).
- ``shap``: Kernel SHAP with its own sampler (complete coalition sizes while the budget allows, then sizes drawn
  ∝ (d − 1)/(s(d − s)) with paired complements) and weighted least squares without intercept on
  f(z) − f(∅), budget min(2d + 2¹¹, 2^d − 2).

The perturbation estimators treat non-special tokens as the features (special tokens stay, score 0). They draw
and build their samples on the CPU, from the seeded generator, whatever the model's device, and captum works on
the CPU with them: the objective moves each batch to the model and its scores back. So the samples, and the scores
up to the model's own rounding, are the same on a CPU and on a GPU (captum indexes its interpretable samples,
always on the CPU, with the feature mask: a mask on the GPU made every LIME call fail there).
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field, model_validator

from beluga_core.contracts.attributions import (
    Attribution,
    AttributionContext,
    AttributionOptions,
    Baseline,
    Normalization,
    Objective,
    Scale,
    Target,
    TokenizedInput,
)

Rule = Literal["riemann_left", "riemann_right", "riemann_middle", "riemann_trapezoid", "gausslegendre"]


class IGOptions(AttributionOptions):
    """``[attributions.options.ig]`` (and ``tokig``'s)."""

    steps: int = Field(300, ge=1, description=(
        "Points on the path from the baseline (a run's folds use 16 unless set; two or more with a Riemann rule)."))
    baseline: Baseline = Field("mask", description="The path's start: zeros, or the mask token's embedding.")
    scale: Scale = Field("word_embeddings", description=(
        "Where the path runs: the word embeddings, or the embedding layer's output."))
    aggregate: Literal["signed", "abs"] = Field("signed", description=(
        "A token's score: the sum over embedding dimensions, signed or of absolute values."))
    objective: Objective = Field("prob", description="What is explained: the target's probability, logit or loss.")
    rule: Rule = Field("riemann_left", description="captum's integration rule.")

    @model_validator(mode="after")
    def _points_for_the_rule(self) -> IGOptions:
        if self.steps < 2 and self.rule.startswith("riemann"):
            # captum's Riemann rules assert two points or more; said here, not as its traceback.
            raise ValueError(f"steps must be ≥ 2 with rule {self.rule} (one point: rule = 'gausslegendre')")
        return self


class IntegratedGradients(Attribution):
    Options = IGOptions
    options: IGOptions
    run_budget: ClassVar[dict[str, Any]] = {"steps": 16}
    spans: ClassVar[bool] = True
    name = "ig"

    def attribute(self, ctx: AttributionContext, x: TokenizedInput, target: Target,
                  rng: np.random.Generator) -> np.ndarray:
        from captum.attr import IntegratedGradients as CaptumIG

        o = self.options
        value, base = ctx.layer_input(x, o.scale, o.baseline)
        f = ctx.objective_from_layer(x, o.scale, target, o.objective)
        ig = CaptumIG(f)
        attr = ig.attribute(value, baselines=base, n_steps=o.steps, method=o.rule, internal_batch_size=min(o.steps, 64))
        per_token = attr[0].sum(-1) if o.aggregate == "signed" else attr[0].abs().sum(-1)
        return per_token.detach().cpu().double().numpy()


class IGDiagnoseOptions(IGOptions):
    """``[attributions.options.ig-diagnose]``: DiagnoseRE's integrated gradients as defaults."""

    steps: int = Field(9, ge=1, description="Points on the path (DiagnoseRE's 8 intervals, both ends).")
    baseline: Baseline = Field("zero", description="The path's start: zeros, or the mask token's embedding.")
    aggregate: Literal["signed", "abs"] = Field("abs", description=(
        "A token's score: the sum over embedding dimensions, signed or of absolute values."))
    objective: Objective = Field("ce", description="What is explained: the target's probability, logit or loss.")
    rule: Rule = Field("riemann_trapezoid", description="captum's integration rule.")
    target: Literal["predicted", "gold"] = Field("gold", description=(
        "The class explained: the model's prediction or the gold label."))
    normalize: Normalization = Field("minmax", description=(
        "How a vector of token scores is scaled (DiagnoseRE's threshold of 0.2 is on min-max scores)."))


class IGDiagnose(IntegratedGradients):
    Options = IGDiagnoseOptions
    options: IGDiagnoseOptions
    run_budget: ClassVar[dict[str, Any]] = {}
    name = "ig-diagnose"


class TokIG(IntegratedGradients):
    Options = IGOptions
    run_budget: ClassVar[dict[str, Any]] = {"steps": 16}
    name = "tokig"


def _features(x: TokenizedInput) -> np.ndarray:
    """Positions of the tokens that are features (every non-special token)."""
    return np.flatnonzero(~x.special)


def _cpu_ids(x: TokenizedInput) -> torch.Tensor:
    """``[1, tokens]`` ids of ``x`` on the CPU, where the perturbation estimators build their samples."""
    return torch.tensor([x.input_ids], dtype=torch.long)


class ObjectiveOptions(AttributionOptions):
    """``[attributions.options.occlusion]``."""

    objective: Objective = Field("prob", description="What is explained: the target's probability, logit or loss.")


class Occlusion(Attribution):
    Options = ObjectiveOptions
    options: ObjectiveOptions
    name = "occlusion"
    spans: ClassVar[bool] = True

    def attribute(self, ctx: AttributionContext, x: TokenizedInput, target: Target,
                  rng: np.random.Generator) -> np.ndarray:
        from captum.attr import FeatureAblation

        f = ctx.objective_from_ids(x, target, self.options.objective)
        features = _features(x)
        # Each feature token its own group; the special tokens one group more, whose score is dropped.
        mask = torch.full((1, len(x)), len(features), dtype=torch.long)
        mask[0, torch.as_tensor(features, dtype=torch.long)] = torch.arange(len(features))
        attr = FeatureAblation(f).attribute(_cpu_ids(x), baselines=ctx.mask_id, feature_mask=mask,
                                           perturbations_per_eval=32)
        out = attr[0].detach().cpu().double().numpy()
        out[x.special] = 0.0
        return out


def _masked(ctx: AttributionContext, x: TokenizedInput, keep: np.ndarray) -> torch.Tensor:
    """Rows of ``x``'s ids (on the CPU) with the features where ``keep`` is False replaced by the mask token."""
    features = _features(x)
    ids = np.tile(np.asarray(x.input_ids, dtype=np.int64), (len(keep), 1))
    for r, row in enumerate(keep):
        ids[r, features[~row]] = ctx.mask_id
    return torch.as_tensor(ids)


class LimeOptions(ObjectiveOptions):
    """``[attributions.options.lime]``."""

    samples: int = Field(5000, ge=2, description="Perturbed samples (a run's folds use 256 unless set).")
    kernel_width: float = Field(25.0, gt=0, description="The width of the similarity kernel.")


class Lime(Attribution):
    Options = LimeOptions
    options: LimeOptions
    name = "lime"
    run_budget: ClassVar[dict[str, Any]] = {"samples": 256}

    def attribute(self, ctx: AttributionContext, x: TokenizedInput, target: Target,
                  rng: np.random.Generator) -> np.ndarray:
        from captum._utils.models.linear_model import SkLearnRidge
        from captum.attr import Lime as CaptumLime

        features = _features(x)
        d = len(features)
        out = np.zeros(len(x))
        if d == 0:
            return out
        width = float(self.options.kernel_width)
        f = ctx.objective_from_ids(x, target, self.options.objective)
        generator = np.random.default_rng(rng.integers(2**63))

        def perturb(_inp: torch.Tensor, **_kwargs: Any) -> torch.Tensor:
            # Switch k ~ U{1..d} random features off; the special tokens' group (the last) always stays on.
            row = np.ones(d + 1, dtype=np.float32)
            k = int(generator.integers(1, d + 1))
            row[generator.choice(d, size=k, replace=False)] = 0.0
            return torch.from_numpy(row)[None]

        def similarity(_orig: Any, _pert: Any, interp: torch.Tensor, **_kwargs: Any) -> torch.Tensor:
            z = interp[0, :d].double()
            cos = float(z.sum()) / (math.sqrt(float(z.sum())) * math.sqrt(d)) if float(z.sum()) > 0 else 0.0
            distance = 100.0 * (1.0 - cos)
            return torch.tensor(math.sqrt(math.exp(-(distance ** 2) / width ** 2)))

        mask = torch.full((1, len(x)), d, dtype=torch.long)
        mask[0, torch.as_tensor(features, dtype=torch.long)] = torch.arange(d)
        lime = CaptumLime(f, interpretable_model=SkLearnRidge(alpha=1.0), similarity_func=similarity,
                          perturb_func=perturb)
        attr = lime.attribute(_cpu_ids(x), baselines=ctx.mask_id, feature_mask=mask,
                              n_samples=self.options.samples, perturbations_per_eval=32,
                              return_input_shape=False)
        out[features] = attr[0, :d].detach().cpu().double().numpy()
        return out


def shap_coalitions(d: int, budget: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Kernel SHAP's coalitions ``[m, d]`` (True: the feature is present) and their weights: every coalition of
    a size (and of its complement size) while the budget allows, in order of kernel mass; then sizes drawn ∝ the
    remaining sizes' mass, each sample with its complement, weighted equally to share that mass."""
    if d < 2:
        return np.zeros((0, d), dtype=bool), np.zeros(0)
    sizes = list(range(1, d))
    mass = np.array([(d - 1) / (s * (d - s)) for s in sizes])   # total kernel weight of all coalitions of size s
    mass /= mass.sum()
    rows: list[np.ndarray] = []
    weights: list[float] = []
    remaining = budget
    done: set[int] = set()
    for s in range(1, d // 2 + 1):
        pair = {s, d - s}
        count = sum(math.comb(d, t) for t in pair)
        if count > remaining:
            break
        for t in sorted(pair):
            per = mass[t - 1] / math.comb(d, t)
            for members in combinations(range(d), t):
                z = np.zeros(d, dtype=bool)
                z[list(members)] = True
                rows.append(z)
                weights.append(per)
        remaining -= count
        done |= pair
    left = [s for s in sizes if s not in done]
    if left and remaining >= 2:
        left_mass = mass[[s - 1 for s in left]]
        n_pairs = remaining // 2
        per = left_mass.sum() / (2 * n_pairs)
        draws = rng.choice(len(left), size=n_pairs, p=left_mass / left_mass.sum())
        for i in draws:
            z = np.zeros(d, dtype=bool)
            z[rng.choice(d, size=left[i], replace=False)] = True
            rows += [z, ~z]
            weights += [per, per]
    return np.array(rows, dtype=bool).reshape(len(rows), d), np.array(weights)


def shap_values(coalitions: np.ndarray, weights: np.ndarray, values: np.ndarray, empty: float) -> np.ndarray:
    """Weighted least squares without intercept of f(z) − f(∅) on the coalitions."""
    w = np.sqrt(weights)[:, None]
    solution, *_ = np.linalg.lstsq(coalitions.astype(np.float64) * w, (values - empty)[:, None] * w, rcond=None)
    return np.asarray(solution[:, 0])


class ShapOptions(ObjectiveOptions):
    """``[attributions.options.shap]``."""

    samples: int | None = Field(None, ge=2, description=(
        "Coalitions evaluated (default: min(2d + 2^11, 2^d - 2) for d tokens; a run's folds use 256 unless set)."))


class KernelShap(Attribution):
    Options = ShapOptions
    options: ShapOptions
    name = "shap"
    run_budget: ClassVar[dict[str, Any]] = {"samples": 256}

    def attribute(self, ctx: AttributionContext, x: TokenizedInput, target: Target,
                  rng: np.random.Generator) -> np.ndarray:
        features = _features(x)
        d = len(features)
        out = np.zeros(len(x))
        if d == 0:
            return out
        f = ctx.objective_from_ids(x, target, self.options.objective)
        with torch.no_grad():
            empty = float(f(_masked(ctx, x, np.zeros((1, d), dtype=bool)))[0])
            if d == 1:
                out[features] = float(f(_cpu_ids(x))[0]) - empty
                return out
            cap = 2 ** d - 2 if d < 60 else 2**62
            budget = self.options.samples
            budget = min(2 * d + 2**11, cap) if budget is None else min(budget, cap)
            coalitions, weights = shap_coalitions(d, budget, rng)
            values = f(_masked(ctx, x, coalitions)).detach().cpu().double().numpy()
        out[features] = shap_values(coalitions, weights, values, empty)
        return out
