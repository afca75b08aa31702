"""Classification: a sequence classifier over a label set, for single texts or text pairs.

``ClassificationTask`` implements the task contract for any classifier; the ``classification`` plugin is it
unchanged: its head is the suite's label space, its inputs the suite's input kind, its i.i.d. data any
labelled table (``[[tasks]] options`` name the columns), and its metrics accuracy and macro-F1. ``sentiment``
and ``paraphrase`` are small specialisations (a fixed binary head; the three-way mapping of sentiment).

Training targets are read off each case's expectation, in the head's classes:

- ``eq`` (the label, or a fixed value): one-hot; ``if_label`` rules apply to the inputs they name.
- ``not_eq`` (and an ``if_label`` rule of that kind): the set S of accepted classes, trained with
  −log Σ_{c ∈ S} p(c) — any accepted class is right.
- directional (``monotonic``, ``score_monotonic``): the comparison and the classes it concerns come from the
  expectation's parameters (``label``, ``score.plus`` / ``score.minus``, ``increasing``), never from label
  names; a case's ``loss_params`` may state them explicitly instead (``{"comparison": "not_more",
  "classes": [...]}`` in the suite's class ids).

The suite's label space must equal the i.i.d. data's label names, up to ``[[tasks]] label_map`` (i.i.d.
name → suite name); i.i.d. label ids are renumbered to the suite's order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.losses import ClassLoss, PairLoss
from beluga_core.contracts.options import NoOptions, Options, PluginOptions
from beluga_core.contracts.tasks import (
    GroupOf,
    IIDScores,
    InputPredictions,
    Task,
    TaskSettings,
    Trainer,
    ValidationMetric,
)
from beluga_core.contracts.training import IID_ENV, IID_STREAM, Batch, BatchOutput, UnitInfo
from beluga_core.core.constants import TEST_TYPE_LEVEL
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.classification_data import load_classification_iid
from beluga_core.data.iid.examples import Example, IIDData, IIDExample
from beluga_core.data.suite.suite_schema import Case, Input, SuiteHeader
from beluga_core.evaluation.evaluate import kind_class
from beluga_core.evaluation.metrics import accuracy, f1_of_class, macro_f1
from beluga_core.training.encode import Encoder
from beluga_core.training.models import load_sequence_classifier
from beluga_core.training.predict import predict_probs
from beluga_core.training.trainset import PairUnit, SingleUnit, TrainSet, loss_kind


class ClassificationOptions(Options):
    """The ``options`` of a ``classification`` task: which columns of the i.i.d. data to read."""

    text_field: str | None = Field(None, min_length=1, description=(
        "The text column (default: sentence, or text for a suite of text pairs)."))
    text_pair_field: str | None = Field(None, min_length=1, description=(
        "The second text's column, for a suite of text pairs (default: text_pair)."))
    label_field: str | None = Field(None, min_length=1, description="The label column (default: label).")


Target = tuple[np.ndarray, bool]  # a target over the head's classes, and whether it is a set of accepted classes


class ClassificationTask(Task[Encoder]):
    """A sequence classifier; subclasses fix the head (``fixed_head``), the i.i.d. columns and the metrics."""

    packs: ClassVar[bool] = True

    metrics: ClassVar[tuple[str, ...]] = ("accuracy", "macro_f1")
    primary_metric: ClassVar[str] = "accuracy"
    # The head's classes; None: the suite's label space.
    fixed_head: ClassVar[tuple[str, ...] | None] = None
    # i.i.d. columns; None: read from the options, or "sentence"/"text" (and "text_pair") by default.
    text_fields: ClassVar[tuple[str, ...] | None] = None
    label_fields: ClassVar[tuple[str, ...]] = ("label",)

    Options: ClassVar[type[PluginOptions] | None] = ClassificationOptions

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A task whose i.i.d. columns are fixed reads none of ClassificationOptions' columns: it takes no options.
        if cls.text_fields is not None and "Options" not in cls.__dict__ and cls.Options is ClassificationOptions:
            cls.Options = NoOptions
            cls.defaults = {}

    # -- set-up ------------------------------------------------------------------------------------------
    def configure(self, settings: TaskSettings) -> None:
        # The label map is this task's (a suite's labels onto its head); the base checks the metric and options.
        super().configure(TaskSettings(settings.iid_metric, settings.options))
        self.settings = settings

    def use_suite(self, header: SuiteHeader) -> None:
        if header.input_kind not in ("text", "text_pair"):
            raise BelugaError(f"task '{self.name}' classifies texts or text pairs; suite '{header.name}' has "
                              f"{header.input_kind} inputs")
        if not header.label_space:
            raise BelugaError(f"task '{self.name}' needs a suite with a label_space; suite '{header.name}' "
                              "declares none")
        fixed = self.fixed_head
        if fixed is not None and len(header.label_space) != len(fixed) and not self.maps_suite(header):
            raise BelugaError(f"task '{self.name}' has a head over {list(fixed)}; suite '{header.name}' has "
                              f"labels {header.label_space}")
        super().use_suite(header)

    def maps_suite(self, header: SuiteHeader) -> bool:
        """Whether the task maps a suite label space other than its head's (three-way sentiment)."""
        return False

    @property
    def head_labels(self) -> list[str]:
        if self.fixed_head is not None:
            return list(self.fixed_head)
        if self.suite is None or not self.suite.label_space:
            raise BelugaError(f"task '{self.name}': the head is the suite's label space; no suite is set")
        return list(self.suite.label_space)

    @property
    def suite_labels(self) -> list[str]:
        return list(self.suite.label_space or []) if self.suite is not None else self.head_labels

    @property
    def suite_matches_head(self) -> bool:
        return len(self.suite_labels) == len(self.head_labels)

    # -- data ----------------------------------------------------------------------------------------------
    def iid_columns(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(text columns, label column alternatives) of the i.i.d. data."""
        if self.text_fields is not None:
            return self.text_fields, self.label_fields
        pair = self.suite is not None and self.suite.input_kind == "text_pair"
        o = self.options if isinstance(self.options, ClassificationOptions) else ClassificationOptions()
        first = o.text_field or ("text" if pair else "sentence")
        texts = (first, o.text_pair_field or "text_pair") if pair else (first,)
        return texts, (o.label_field,) if o.label_field else self.label_fields

    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        texts, labels = self.iid_columns()
        data = load_classification_iid(source, text_fields=texts, label_field=labels, eval_seed=eval_seed)
        return self._renumbered(data)

    def _renumbered(self, data: IIDData) -> IIDData:
        """The i.i.d. data with label ids in the head's order, or a clear error when the label sets differ."""
        head = self.head_labels
        mapped = [self.settings.label_map.get(n, n) for n in data.label_names]
        numeric = all(n.isdigit() for n in data.label_names) and not self.settings.label_map
        if numeric and len(mapped) <= len(head):
            return data  # class ids without names: taken as the head's ids
        if mapped == head:
            return IIDData(data.train, data.val, data.test, data.source, head)
        if sorted(mapped) != sorted(head) or len(set(mapped)) != len(mapped):
            what = "the suite's label space" if self.fixed_head is None else f"task '{self.name}''s head"
            raise BelugaError(f"{what} {head} and the i.i.d. labels of {data.source} {data.label_names}"
                              + (f" (after label_map: {mapped})" if self.settings.label_map else "")
                              + (" differ; make [[tasks]] label_map name every i.i.d. label once (i.i.d. name = suite "
                                 "name)" if self.settings.label_map else
                                 " differ; declare [[tasks]] label_map = {i.i.d. name = suite name, …}"),
                              field="label_map")
        order = [head.index(m) for m in mapped]

        def renumber(examples: Sequence[Example]) -> list[IIDExample]:
            return [IIDExample(ex.inputs, order[ex.label]) for ex in examples]

        return IIDData(renumber(data.train), renumber(data.val), renumber(data.test), data.source, head)

    # -- targets ---------------------------------------------------------------------------------------------
    def class_id(self, value: Any, case: Case) -> int:
        """A suite label (a class id or name) as a suite class id."""
        labels = self.suite_labels
        if isinstance(value, bool):
            raise BelugaError(f"case '{case.id}': label {value!r} is not a class id")
        if isinstance(value, str) and value in labels:
            return labels.index(value)
        if isinstance(value, int | str) and str(value).lstrip("-").isdigit() and 0 <= int(value) < len(labels):
            return int(value)
        raise BelugaError(f"case '{case.id}': label {value!r} is not one of the suite's classes {labels}")

    def head_class(self, suite_class: int, case: Case) -> int:
        """The head class of a suite class (the same id unless the task maps label spaces)."""
        return suite_class

    def head_target(self, label: int) -> np.ndarray:
        """One-hot target over the head for an i.i.d. label."""
        target = np.zeros(len(self.head_labels), dtype=np.float32)
        target[int(label)] = 1.0
        return target

    def eq_target(self, suite_class: int, case: Case) -> Target:
        return self.head_target(self.head_class(suite_class, case)), False

    def not_eq_target(self, suite_class: int, case: Case) -> Target:
        """Every class but ``suite_class``, as a set of accepted classes."""
        mask = np.ones(len(self.head_labels), dtype=np.float32)
        mask[self.head_class(suite_class, case)] = 0.0
        return mask, True

    def if_label_applies(self) -> bool:
        """Whether ``if_label`` rules of eq expectations shape training targets."""
        return True

    def mft_items(self, case: Case) -> list[tuple[Input, Target]]:
        """(input, target) of every input a case trains on with a single-input loss.

        Perturbation tests trained that way (the QQP suite's DIRs) contribute their perturbed inputs only,
        since their expectation judges those.
        """
        exp = case.expectation
        params = exp.params()
        labels = case.label if isinstance(case.label, list) else [case.label] * len(case.inputs)
        rules: Mapping[str, Any] = (params.get("if_label") or {}) if self.if_label_applies() else {}
        targets: list[Target] = []
        for lab in labels:
            rule = rules.get(str(lab)) if lab is not None else None
            kind = rule["kind"] if rule else kind_class(exp.kind).train_as
            value = (rule.get("value") if rule else params.get("value"))
            if kind == "eq":
                gold = value if value is not None else lab
                if gold is None:
                    raise BelugaError(f"case '{case.id}': an eq expectation needs a label to train on")
                targets.append(self.eq_target(self.class_id(gold, case), case))
            elif kind == "not_eq":
                targets.append(self.not_eq_target(self.class_id(value if value is not None else lab, case), case))
            else:
                raise BelugaError(f"case '{case.id}': a single-input loss cannot train a case judged by "
                                  f"'{exp.kind}' (the kind sets no train_as); give the case a pair loss")
        items = list(zip(case.inputs, targets, strict=True))
        if exp.agg == "all_except_first" and len(items) > 1:
            items = items[1:]
        return items

    def pair_params(self, case: Case) -> dict[str, Any]:
        """The pair loss's parameters: a directional comparison from the expectation, in head classes."""
        explicit = case.loss_params
        if explicit.get("comparison") in ("not_more", "not_less", "not_less_confident", "not_more_confident"):
            classes = [self.head_class(self.class_id(c, case), case) for c in explicit.get("classes", [])]
            return {**explicit, "classes": classes} if classes else dict(explicit)
        exp = case.expectation
        p = exp.params()
        if exp.kind == "monotonic":
            if p.get("label") is None:
                return {"comparison": "not_less_confident" if p.get("increasing", True) else "not_more_confident"}
            cls = self.head_class(self.class_id(p["label"], case), case)
            return {"comparison": "not_less" if p.get("increasing", True) else "not_more", "classes": [cls]}
        if exp.kind == "score_monotonic":
            score = p["score"]
            # score = p[plus] − p[minus] must not fall (rise): the minus (plus) classes may not gain mass.
            side, other = ("minus", "plus") if p.get("increasing", True) else ("plus", "minus")
            comparison = "not_more"
            if not score.get(side):
                side, comparison = other, "not_less"
            return {"comparison": comparison,
                    "classes": sorted({self.head_class(self.class_id(c, case), case) for c in score[side]})}
        return dict(explicit)

    # -- training ------------------------------------------------------------------------------------------
    def build_trainset(self, cases: Sequence[Case], iid: Sequence[Example], env_level: str | None,
                       group_of: GroupOf | None = None) -> TrainSet:
        """Units from suite cases (by their loss) and i.i.d. examples (their own stream, mft loss).

        ``group_of(case, level)`` names a case's environment at ``env_level`` (environment methods).
        """
        streams: dict[str, list[SingleUnit | PairUnit]] = defaultdict(list)
        losses: dict[str, str] = {}
        if iid:
            losses[IID_STREAM] = "mft"
            streams[IID_STREAM] = [
                SingleUnit(((ex.inputs, self.head_target(ex.label)),), IID_ENV,
                           UnitInfo("iid", ex.inputs, ex.label, {}, IID_ENV)) for ex in iid]
        for case in cases:
            # A case with no group at a crossing env_level: the environment of those without one.
            env = (group_of(case, env_level) or "") if env_level and group_of else ""
            info = UnitInfo("suite", case.inputs[0], case.label, {**case.groups, TEST_TYPE_LEVEL: case.test_type},
                            env, case.id)
            losses[case.loss] = case.loss
            if loss_kind(case.loss) == "single":
                items = self.mft_items(case)
                if not items:
                    continue
                units = [(x, t) for x, (t, _) in items]
                label_set = items[0][1][1]
                if any(is_set != label_set for _, (_, is_set) in items):
                    raise BelugaError(f"case '{case.id}': its inputs mix label sets and single labels")
                if case.test_type == "MFT":
                    streams[case.loss] += [SingleUnit((u,), env, info, label_set) for u in units]
                else:
                    streams[case.loss].append(SingleUnit(tuple(units), env, info, label_set))
            elif len(case.inputs) >= 2:  # a pair loss needs an original and a perturbation
                streams[case.loss].append(PairUnit(case.inputs[0], tuple(case.inputs[1:]), self.pair_params(case),
                                                   env, info))
        return TrainSet(dict(streams), losses)

    def batch_outputs(self, trainer: Trainer, batches: Sequence[Batch]) -> list[BatchOutput]:
        """One forward pass over all the batches' inputs (the rows of a batch do not see each other, so only
        padding and dropout masks differ from separate passes)."""
        logits = trainer.logits([x for b in batches for x in b.inputs])
        out, start = [], 0
        for b in batches:
            out.append(self._output(trainer, b, logits[start:start + len(b)]))
            start += len(b)
        return out

    def _output(self, trainer: Trainer, batch: Batch, logits: torch.Tensor) -> BatchOutput:
        loss = trainer.loss_fn(batch.loss)
        if isinstance(loss, ClassLoss):
            assert batch.targets is not None
            sets = None if batch.label_sets is None else torch.as_tensor(batch.label_sets, device=trainer.device)
            rows = loss.per_row(logits, torch.as_tensor(batch.targets, device=trainer.device), sets)
        elif isinstance(loss, PairLoss):
            k = len(batch.inputs) // 2
            rows = loss.per_row(logits[:k], logits[k:], batch.params)
        else:
            raise BelugaError(f"loss '{batch.loss}' ({type(loss).__name__}) is neither a ClassLoss nor a PairLoss; "
                              f"a classification task cannot train with it")
        return BatchOutput(loss.reduce(rows), rows, logits)

    # -- prediction ----------------------------------------------------------------------------------------
    def to_suite_probs(self, head_probs: np.ndarray) -> np.ndarray:
        """Head probabilities → probabilities in the suite's label space (the same by default)."""
        return head_probs

    def make_encoder(self, tokenizer: Any, max_length: int) -> Encoder:
        return Encoder(tokenizer, max_length)

    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: Mapping[str, Any] | None = None) -> torch.nn.Module:
        return load_sequence_classifier(model_name, len(self.head_labels), dropout=dropout, seed=seed,
                                        config_overrides=dict(config_overrides or {}))

    def predict_cases(self, model: torch.nn.Module, encoder: Encoder, cases: Sequence[Case],
                      device: torch.device) -> FlatPredictions:
        flat = [x for c in cases for x in c.inputs]
        probs = self.to_suite_probs(predict_probs(model, encoder, flat, device))
        return FlatPredictions.from_arrays(probs=probs, lengths=[len(c.inputs) for c in cases])

    def predict_iid(self, model: torch.nn.Module, encoder: Encoder, examples: Sequence[Example],
                    device: torch.device) -> InputPredictions:
        probs = predict_probs(model, encoder, [ex.inputs for ex in examples], device)
        pred = probs.argmax(axis=1)
        return InputPredictions([str(int(p)) for p in pred], probs.max(axis=1), probs)

    def iid_metrics(self, pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
        values = {"accuracy": lambda: accuracy(pred, gold), "macro_f1": lambda: macro_f1(pred, gold),
                  "f1": lambda: f1_of_class(pred, gold, 1)}
        return {name: values[name]() for name in self.metrics}

    def score_iid(self, examples: Sequence[Example], predictions: InputPredictions, split: str) -> IIDScores:
        assert predictions.probs is not None
        pred = predictions.probs.argmax(axis=1)
        gold = np.array([int(ex.label) for ex in examples], dtype=np.int64)
        return IIDScores(split, [str(int(g)) for g in gold], list(predictions.labels), pred == gold,
                         self.iid_metrics(pred, gold), self.metric)

    def validation_metrics(self, model: torch.nn.Module, encoder: Encoder, cases: Sequence[Case],
                           predictions: FlatPredictions, device: torch.device) -> list[ValidationMetric]:
        """With F1 among the task's metrics (QQP), the MFT F1 over each case's first input against its label;
        the store's ``grid_test_type_scores`` view averages it with the MFT pass rate, as the reference's
        selection objective does."""
        if "f1" not in self.metrics or predictions.probs is None:
            return []
        first = predictions.probs[predictions.offsets[:-1]].argmax(axis=1)
        mft = [i for i, c in enumerate(cases) if c.test_type == "MFT" and isinstance(c.label, int)]
        if not mft:
            return []
        gold = np.array([cases[i].label for i in mft])
        return [ValidationMetric("MFT", "f1", f1_of_class(first[mft], gold, 1))]
