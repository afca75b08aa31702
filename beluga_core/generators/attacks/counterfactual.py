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

**Entity-only de-biased set** (``entity-only-debiased``; ``Q5/select_debiased.py``): the original instances
whose entity-only version (the two marked mentions alone) the model misclassifies — instances the model cannot
solve from the names alone, so a model relying on names does worse on them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

from beluga_core.contracts.generators import Generator, Perturbed, Source, SourceInstance
from beluga_core.data.iid.relation_instances import NA_LABEL
from beluga_core.generators.attacks.adversarial import STOP_WORDS, predicted_classes
from beluga_core.generators.perturbations.entity_perturbations import only_entity

EXCLUDED_FIRST = frozenset("[,.;_|()':\"!?-#`")


def select_tokens(tokens: Sequence[str], word_of: Sequence[int], scores: np.ndarray, *, k: int,
                  threshold: float) -> list[int]:
    """Positions of the (at most) ``k`` best-scoring candidate tokens with a score ≥ ``threshold``, best first
    (ties: the earlier token)."""
    candidates = [i for i, (t, w) in enumerate(zip(tokens, word_of, strict=True))
                  if w >= 0 and t and t[0] not in EXCLUDED_FIRST and t.lower() not in STOP_WORDS
                  and float(scores[i]) >= threshold]
    return sorted(candidates, key=lambda i: (-float(scores[i]), i))[:k]


class IGContrast(Generator):
    family: ClassVar[str] = "counterfactual"
    perturbations: ClassVar[tuple[str, ...]] = ("contrast-k1", "contrast-k2")
    kinds = ("text", "relation")
    invariant: ClassVar[bool] = False
    requires_model: ClassVar[bool] = True
    defaults: ClassVar[dict[str, Any]] = {"k": [1, 2], "threshold": 0.2, "na_label": NA_LABEL,
                                          "attribution": "ig-diagnose"}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        ks = self.options["k"]
        ks = [ks] if isinstance(ks, int) and not isinstance(ks, bool) else ks
        if not isinstance(ks, list) or not ks or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 1
                                                         for k in ks):
            raise ValueError(f"k must be a positive integer or a list of them, got {self.options['k']!r}")
        self.ks: list[int] = sorted(set(ks))
        t = self.options["threshold"]
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t <= 1:
            raise ValueError(f"threshold must be in [0, 1] (on min–max normalised scores), got {t!r}")
        self.relation = False
        self.predicted: dict[str, int] = {}
        self.counts = {"correct": 0, "masked": 0, "no candidate": 0}

    def prepare(self, source: Source, seed: int) -> None:
        model = self.target
        self.relation = source.kind == "relation"
        if self.relation and self.options["na_label"] not in source.label_space:
            raise ValueError(f"counterfactual relation cases are labelled '{self.options['na_label']}', which is not "
                             f"in the source's label space (give na_label=…)")
        self.predicted = predicted_classes(model, source.instances)

    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        model = self.target
        if instance.label not in model.labels or self.predicted.get(instance.id) != model.labels.index(instance.label):
            return
        if self.relation and instance.label == self.options["na_label"]:
            return
        assert isinstance(instance.input, str)
        self.counts["correct"] += 1
        ts = model.attribute(instance.input, instance.label, str(self.options["attribution"]), {})
        words = instance.input.split()
        made = False
        for k in self.ks:
            chosen = select_tokens(ts.tokens, ts.word_of, ts.scores, k=k, threshold=float(self.options["threshold"]))
            if not chosen:
                continue
            drop = {ts.word_of[i] for i in chosen}
            masked = " ".join(w for i, w in enumerate(words) if i not in drop)
            note = {"masked": [ts.tokens[i] for i in chosen], "scores": [round(float(ts.scores[i]), 4) for i in chosen]}
            made = True
            if self.relation:
                yield Perturbed(f"contrast-k{k}", masked, label=str(self.options["na_label"]), note=note,
                                dir_twin=True)
            else:
                yield Perturbed(f"contrast-k{k}", masked, note=note, dir_twin=True, mft=False)
        self.counts["masked" if made else "no candidate"] += 1

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
