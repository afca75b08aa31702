"""Counterfactual cases made by masking what a model relied on, and the entity-only de-biased set (DiagnoseRE's
Q3 and Q5).

**IG counterfactual masking** (``ig-contrast``; the released ``Q3/counterfactual.py``): the model's tokens are
attributed with the ``ig-diagnose`` preset (word embeddings scaled from 0, cross-entropy on the gold label,
absolute, min–max normalised per input); candidates are tokens that are not special, not an entity marker, do
not start with one of ``[ , . ; _ | ( ) : ' " ! ? - #`` or a backtick (which also drops every ``##``
continuation piece) and are not stop words; those scoring at least ``threshold`` (0.2) are ranked and the top
``k`` (1 and 2 by default) are masked. Only instances the model classifies correctly, and for relations with a
gold label other than NA, are masked. Masking deletes the chosen words (the released code deleted the chosen
pieces and padded; a chosen piece here is always a word's first, and its whole word goes, so that no orphan
continuation is left in the text). A relation case is an MFT case labelled NA — with its evidence gone, no
relation should be predicted — and, for every task, a DIR case ``[original, masked]``: the confidence in the
gold label must not rise. The released code's candidate filter lacks a comma between ``')'`` and ``':'``, so
those two characters were never excluded; beluga excludes them, as intended. Stop words are scikit-learn's
English list (see ``generators.adversarial``).

**Counterfactual data augmentation** (``cda``; the paper's Algorithm 1): the same masking over the *training*
data — run over D_train against the IID model, the twin of every training sentence (or of ``--sample N`` of
them, a seeded selection), labelled NA, a training case pinned to T_train. The paper masks every x in X; the
released code only those the model classifies correctly (``only_correct = true``). Attributions default to
``ig-diagnose`` (9 integrated-gradient points per sentence); ``attribution_options`` sets a cheaper budget
(EXTENSIONS.md, "CDA over D_train").

**Entity-only de-biased set** (``entity-only-debiased``; ``Q5/select_debiased.py``): the original instances
whose entity-only version (the two marked mentions alone) the model misclassifies — instances the model cannot
solve from the names alone, so a model relying on names does worse on them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field, PositiveInt

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance, TargetModel
from beluga_core.contracts.options import Options
from beluga_core.contracts.registries import ATTRIBUTIONS
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.relation_instances import NA_LABEL, mention_words
from beluga_core.generators.attacks.adversarial import STOP_WORDS, predicted_classes
from beluga_core.generators.perturbations.entity_perturbations import only_entity

EXCLUDED_FIRST = frozenset("[,.;_|()':\"!?-#`")


def select_tokens(tokens: Sequence[str], word_of: Sequence[int], scores: np.ndarray, *, k: int,
                  threshold: float, keep_words: frozenset[int] | set[int] = frozenset()) -> list[int]:
    """Positions of the (at most) ``k`` best-scoring candidate tokens with a score ≥ ``threshold``, best first
    (ties: the earlier token); tokens of the words ``keep_words`` (entity mentions) are never candidates."""
    candidates = [i for i, (t, w) in enumerate(zip(tokens, word_of, strict=True))
                  if w >= 0 and w not in keep_words and t and t[0] not in EXCLUDED_FIRST
                  and t.lower() not in STOP_WORDS and float(scores[i]) >= threshold]
    return sorted(candidates, key=lambda i: (-float(scores[i]), i))[:k]


class MaskingOptions(Options):
    """The options of the generators that mask a model's most important tokens (ig-contrast, cda)."""

    k: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] = Field(
        default_factory=lambda: [1, 2], description="How many top tokens are masked: one k or a list of them.")
    threshold: float = Field(0.2, ge=0, le=1, description=(
        "A token is a candidate only with an attribution ≥ this (on min–max normalised scores)."))
    na_label: str = Field(NA_LABEL, min_length=1, description=(
        "The label of masked relation cases (no relation evidence left)."))
    attribution: str = Field("ig-diagnose", min_length=1, description=(
        "The attribution plugin that scores the tokens, towards the gold label."))

    @property
    def ks(self) -> list[int]:
        return sorted({self.k} if isinstance(self.k, int) else set(self.k))


def masked_variants(model: TargetModel, instance: SourceInstance, ks: Sequence[int], options: MaskingOptions,
                    attribution_options: Mapping[str, Any]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Per k in ``ks``: ``instance``'s text with the words of its top-k candidate tokens deleted (attributed
    towards its gold label by ``options.attribution`` with ``attribution_options``), and a note of the masked
    tokens and their scores; a k with no candidate above the threshold yields nothing."""
    assert isinstance(instance.input, str)
    ts = model.attribute(instance.input, instance.label, options.attribution, dict(attribution_options))
    words = instance.input.split()
    keep = mention_words(words)
    for k in ks:
        chosen = select_tokens(ts.tokens, ts.word_of, ts.scores, k=k, threshold=options.threshold,
                               keep_words=keep)
        if not chosen:
            continue
        drop = {ts.word_of[i] for i in chosen}
        masked = " ".join(w for i, w in enumerate(words) if i not in drop)
        yield k, masked, {"masked": [ts.tokens[i] for i in chosen],
                          "scores": [round(float(ts.scores[i]), 4) for i in chosen]}


class IGContrast(Generator):
    family: ClassVar[str] = "counterfactual"
    perturbations: ClassVar[tuple[str, ...]] = ("contrast-k1", "contrast-k2")
    kinds = ("text", "relation")
    invariant: ClassVar[bool] = False
    requires_model: ClassVar[bool] = True
    Options = MaskingOptions
    options: MaskingOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.ks = self.options.ks
        self.relation = False
        self.predicted: dict[str, int] = {}
        self.counts = {"correct": 0, "masked": 0, "no candidate": 0}

    def prepare(self, source: Source, seed: int) -> None:
        model = self.target
        self.relation = source.kind == "relation"
        if self.relation and self.options.na_label not in source.label_space:
            raise ValueError(f"counterfactual relation cases are labelled '{self.options.na_label}', which is not "
                             f"in the source's label space (give na_label=…)")
        self.predicted = predicted_classes(model, source.instances)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        model = self.target
        if instance.label not in model.labels or self.predicted.get(instance.id) != model.labels.index(instance.label):
            return
        if self.relation and instance.label == self.options.na_label:
            return
        self.counts["correct"] += 1
        made = False
        for k, masked, note in masked_variants(model, instance, self.ks, self.options, {}):
            made = True
            if self.relation:
                yield Perturbed(f"contrast-k{k}", masked, label=self.options.na_label, note=note,
                                dir_twin=True)
            else:
                yield Perturbed(f"contrast-k{k}", masked, note=note, dir_twin=True, mft=False)
        self.counts["masked" if made else "no candidate"] += 1

    def report(self) -> list[tuple[str, str, float]]:
        return [(f"instances {what}", "count", float(n)) for what, n in self.counts.items()]


class CDAOptions(MaskingOptions):
    k: PositiveInt | Annotated[list[PositiveInt], Field(min_length=1)] = Field(
        1, description="How many top tokens are masked: one k or a list of them.")
    attribution_options: dict[str, Any] = Field(default_factory=dict, description=(
        "The attribution plugin's options, e.g. {\"steps\": 2} (checked by its Options)."))
    only_correct: bool = Field(False, description="Twin only the training sentences the model classifies right.")


class CounterfactualAugmentation(Generator):
    """``cda``: DiagnoseRE's counterfactual data augmentation (Algorithm 1) — the masked twin of every training
    sentence, labelled NA, as training data. Run it over D_train (``--source builtin:fewrel16#train``) against
    the IID model; its cases are pinned to T_train (``split_part``), so a config trains on D_train plus exactly
    these twins (``only:family=cda`` with ``iid-plus-t``: retrained from the pretrained model)."""

    family: ClassVar[str] = "cda"
    perturbations: ClassVar[tuple[str, ...]] = ("cda-k1", "cda-k2")
    kinds = ("relation",)
    invariant: ClassVar[bool] = False
    requires_model: ClassVar[bool] = True
    training_data: ClassVar[bool] = True
    Options = CDAOptions
    options: CDAOptions

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.ks = self.options.ks
        try:   # unknown attribution or options: said now, not at the first sentence
            ATTRIBUTIONS.get(self.options.attribution)(dict(self.options.attribution_options))
        except BelugaError as exc:   # the option's key with it: "options.attribution_options.steps"
            if exc.field and exc.field.startswith("attributions.options."):
                raise BelugaError(exc.message, field=".".join(["options", "attribution_options",
                                                               *exc.field.split(".")[3:]])) from None
            raise BelugaError(exc.message, field="options.attribution") from None
        self.predicted: dict[str, int] | None = None
        self.counts = {"twinned": 0, "no candidate": 0, "skipped (NA)": 0, "skipped (misclassified)": 0}

    def prepare(self, source: Source, seed: int) -> None:
        model = self.target
        if self.options.na_label not in source.label_space:
            raise ValueError(f"CDA twins are labelled '{self.options.na_label}', which is not in the source's "
                             "label space (give na_label=…)")
        missing = sorted({x.label for x in source.instances} - set(model.labels))
        if missing:
            raise ValueError(f"the model has no class for the source's label(s) {', '.join(missing)}: its "
                             "attributions are towards the gold label")
        self.predicted = predicted_classes(model, source.instances) if self.options.only_correct else None

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        model = self.target
        if instance.label == self.options.na_label:
            self.counts["skipped (NA)"] += 1      # no relation evidence to remove
            return
        if self.predicted is not None and self.predicted.get(instance.id) != model.labels.index(instance.label):
            self.counts["skipped (misclassified)"] += 1
            return
        made = False
        for k, masked, note in masked_variants(model, instance, self.ks, self.options,
                                                self.options.attribution_options):
            made = True
            yield Perturbed(f"cda-k{k}", masked, label=self.options.na_label, note=note)
        self.counts["twinned" if made else "no candidate"] += 1

    def report(self) -> list[tuple[str, str, float]]:
        return [(f"instances {what}", "count", float(n)) for what, n in self.counts.items()]


class EntityOnlyDebiased(Generator):
    family: ClassVar[str] = "semantic-bias"
    perturbations: ClassVar[tuple[str, ...]] = ("de-biased",)
    kinds = ("relation",)
    invariant: ClassVar[bool] = False
    requires_model: ClassVar[bool] = True

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.wrong: set[str] = set()
        self.n = 0

    def prepare(self, source: Source, seed: int) -> None:
        model = self.target
        inputs = []
        for x in source.instances:
            assert x.relation is not None  # a relation source: every instance has its structure
            inputs.append(only_entity(x.relation).marked_text())
        probs = model.probabilities(inputs) if inputs else np.zeros((0, len(model.labels)))
        self.wrong = {x.id for x, p in zip(source.instances, probs, strict=True)
                      if model.labels[int(np.argmax(p))] != x.label}
        self.n = len(source.instances)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        if instance.id in self.wrong:
            yield Perturbed("de-biased", instance.input, note={"entity_only_wrong": True})

    def report(self) -> list[tuple[str, str, float]]:
        return [("share whose entity-only version the model gets wrong", "instances",
                 len(self.wrong) / self.n if self.n else 0.0)]
