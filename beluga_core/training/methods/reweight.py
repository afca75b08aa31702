"""reweight: DiagnoseRE's de-biased training against selection bias (its Q4, ``train_weighted.py``).

The selection-bias "rules" are, per relation r, the ``num_rules`` cue words of highest tf·idf
(``data.iid.cues.tfidf_rules``, the rules the ``cue-removal`` generator deletes), learned at the start of each
stage from the training set's own relation examples: its i.i.d. ones (D_train: the configurations iid-update,
iid-plus-t and the +IID stage), or, in a stage without i.i.d. relation examples, its suite MFT relation cases.
A JSON file ``rules`` ({relation: [words]}) replaces the learned rules. An example x with relation y weighs

    w(x) = base ** |{lower-cased context words of x} ∩ rules[y]|

(context words: the words outside both marked mentions that contain a letter; ``base`` = 0.5). Every epoch
draws N units (N = the training set's size) with replacement, unit i with probability w_i / Σ_j w_j, as torch's
``WeightedRandomSampler(w, N, replacement=True)``; each stream's draws are cut into batches of one loss type.
The released code built that sampler but never passed it to its ``DataLoader``, so its "de-biased" models were
trained on the ordinary shuffled data; beluga really samples by the weights.

Only relation instances are weighted: i.i.d. examples and suite MFT cases whose (first) input is a marked text
``[E1] head [/E1] … [E2] tail [/E2]`` and whose label names a relation. Every other unit (an INV or DIR pair, an
unmarked text, a case without a label) has exponent 0, weight 1. An epoch is as many updates as a plain pass
over the data has (``TrainSet.batches_per_epoch``); how many of them fall on each stream varies with the draw.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from pydantic import Field

from beluga_core.contracts.options import Options
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import Batch, TrainSet, UnitInfo
from beluga_core.core.constants import TEST_TYPE_LEVEL
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.cues import context_words, tfidf_rules
from beluga_core.data.iid.relation_instances import RelationInstance, from_marked
from beluga_core.training.methods.vanilla import Vanilla

Rules = dict[str, set[str]]


def relation_name(label: Any, names: Sequence[str]) -> str | None:
    """The relation a unit's label names: a class id (or its text) through the head's ``names``, or a name."""
    if isinstance(label, list):
        label = label[0] if label else None  # a case with one label per input: its first input's
    if label is None or isinstance(label, bool):
        return None
    if isinstance(label, int) or (isinstance(label, str) and label.isdigit()):
        i = int(label)
        return names[i] if 0 <= i < len(names) else str(label)
    return str(label)


def relation_instance(unit: UnitInfo, names: Sequence[str]) -> RelationInstance | None:
    """The unit as a relation instance, or None when it is not one (module docstring)."""
    if unit.source == "suite" and unit.groups.get(TEST_TYPE_LEVEL) != "MFT":
        return None
    relation = relation_name(unit.label, names)
    if relation is None or not isinstance(unit.text, str):
        return None
    try:
        return from_marked(unit.case_id or "", unit.text, relation)
    except BelugaError:  # no (or malformed) entity markers: not a relation input
        return None


def cue_count(r: RelationInstance, rules: Mapping[str, set[str]]) -> int:
    """How many distinct context words of ``r`` are cue words of its own relation."""
    cues = rules.get(r.relation, set())
    return len({w for _, w in context_words(r)} & cues)


def unit_weights(units: Sequence[UnitInfo], names: Sequence[str], rules: Mapping[str, set[str]],
                 base: float) -> list[float]:
    """base ** (cue words of its relation) for every relation instance; 1 for every other unit."""
    out = []
    for unit in units:
        r = relation_instance(unit, names)
        out.append(base ** cue_count(r, rules) if r is not None else 1.0)
    return out


def weighted_draw(weights: Sequence[float], n: int, generator: torch.Generator) -> list[int]:
    """``n`` positions drawn with replacement, position i with probability weights[i] / Σ weights (what
    ``torch.utils.data.WeightedRandomSampler(weights, n, replacement=True)`` yields)."""
    if n == 0:
        return []
    w = torch.as_tensor(list(weights), dtype=torch.double)
    picks: list[int] = torch.multinomial(w, n, replacement=True, generator=generator).tolist()
    return picks


def read_rules(path: str) -> Rules:
    """A rules file, {relation: [words]}, with lower-cased words."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BelugaError(f"[method.reweight] rules file {path}: {e}", field="method.reweight.rules") from e
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise BelugaError(f"[method.reweight] rules file {path}: expected a JSON object {{relation: [words]}}",
                          field="method.reweight.rules")
    return {str(k): {str(w).lower() for w in v} for k, v in data.items()}


class ReweightOptions(Options):
    """``[method.reweight]``."""

    base: float = Field(0.5, gt=0, le=1, description=(
        "An example weighs base ** (its context words among its relation's rules), a number in (0, 1]."))
    num_rules: int = Field(5, ge=1, description="Cue words learned per relation (the words of highest tf·idf).")
    rules: str | None = Field(None, min_length=1, description=(
        "A JSON file {relation: [words]} of rules to use instead of learned ones (None: learn them)."))


class Reweight(Vanilla):
    """Vanilla's AdamW updates on batches drawn with replacement by the de-biasing weights (module docstring)."""

    Options = ReweightOptions
    options: ReweightOptions

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        super().__init__(hparams)
        self.rules: Rules = {}
        self.weights: list[float] | None = None

    def learn(self, units: Sequence[UnitInfo], names: Sequence[str]) -> None:
        """The rules (learned, or read from the file) and every unit's weight, in ``units`` order."""
        instances = [(u, r) for u in units if (r := relation_instance(u, names)) is not None]
        if not instances:
            raise BelugaError("[method.reweight] de-biases relation classification: the training set has no relation "
                              "instance (a marked text [E1] head [/E1] … [E2] tail [/E2] labelled with its relation)",
                              field="method.reweight")
        path = self.options.rules
        if path is not None:
            self.rules = read_rules(path)
        else:
            # DiagnoseRE learned its rules on D_train; suite cases (perturbed, or cue-free by design) would blur
            # them, so they serve only where a stage trains without i.i.d. data.
            iid = [r for u, r in instances if u.source == "iid"]
            donors = iid or [r for _, r in instances]
            scored = tfidf_rules(donors, self.options.num_rules)
            self.rules = {relation: {w for w, _ in words} for relation, words in scored.items()}
        self.weights = unit_weights(units, names, self.rules, float(self.options.base))

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        self.learn(trainset.units(), trainer.task.head_labels or [])

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        weights = self.weights
        assert weights is not None, "start() learns the weights"
        assert len(weights) == trainset.n_examples, "start() saw another training set"
        generator = torch.Generator().manual_seed(rng.getrandbits(63))
        total = self.n_steps(trainset, batch_size, epochs)  # a plain pass's updates per epoch
        produced = 0
        while produced < total:
            picks = weighted_draw(weights, len(weights), generator)
            for batch in trainset.batches_of(rng, batch_size, picks):
                if produced >= total:
                    return
                produced += 1
                yield [batch]
