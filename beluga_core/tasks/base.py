"""What the core asks of a task plugin, and the shared implementation for classification tasks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from beluga_core.errors import BelugaError
from beluga_core.expectations.base import FlatPredictions
from beluga_core.suite.schema import Case, Input
from beluga_core.tasks.iid_data import IIDData, IIDExample, load_classification_iid
from beluga_core.training.batches import Batch, TrainSet, build_trainset
from beluga_core.training.encode import Encoder
from beluga_core.training.model import load_sequence_classifier
from beluga_core.training.predict import predict_probs

if TYPE_CHECKING:
    from beluga_core.config.schema import TaskSpec
    from beluga_core.training.loop import Trainer


def configure_task(task: Any, spec: TaskSpec) -> None:
    """Hand a config's task settings (``iid_metric``, ``options``) to a task plugin, which checks them.

    A plugin without ``configure`` takes no settings: setting any for it is an error, not silently ignored.
    """
    if hasattr(task, "configure"):
        task.configure(spec)
    elif spec.iid_metric is not None or spec.options:
        raise BelugaError(f"task '{spec.name}' takes no iid_metric or options", field="tasks")


def check_iid_metric(task_name: str, metrics: Sequence[str], wanted: str | None) -> str | None:
    """``wanted`` if the task computes it (None stays None); otherwise a ``BelugaError`` naming the choices."""
    if wanted is not None and wanted not in metrics:
        raise BelugaError(f"task '{task_name}' computes no i.i.d. metric '{wanted}'; choose one of "
                          f"{', '.join(metrics)}", field="iid_metric")
    return wanted


class ClassificationTask:
    """A task whose model is a sequence classifier over ``head_labels``.

    What the core asks of any task plugin: ``load_iid``, ``make_encoder``, ``build_model``,
    ``build_trainset``, ``batch_loss``, ``predict_cases`` (suite predictions the expectations read) and
    ``score_iid``. Subclasses set the class variables; a task whose suite speaks another label space
    (three-way sentiment on a binary model) overrides ``to_suite_probs`` and ``label_target``; a task with
    another kind of model (extractive QA) overrides the model-facing methods.
    """

    name: ClassVar[str]
    head_labels: ClassVar[list[str]]
    text_fields: ClassVar[tuple[str, ...]]
    builtin_iid: ClassVar[dict[str, Path]] = {}
    metrics: ClassVar[tuple[str, ...]] = ("accuracy",)
    primary_metric: ClassVar[str] = "accuracy"
    # Grid-search axes of the task's own, replacing the config's [grid] axes of the same name (reading's
    # batch sizes); ``[grid.tasks.NAME]`` replaces these in turn.
    grid_axes: ClassVar[dict[str, list[Any]]] = {}

    def __init__(self) -> None:
        self.suite_labels: list[str] | None = None

    def configure(self, spec: TaskSpec) -> None:
        """Take a config's settings: ``iid_metric`` picks the metric G uses; classification takes no options."""
        self.primary_metric = check_iid_metric(self.name, self.metrics, spec.iid_metric) or self.primary_metric
        if spec.options:
            raise BelugaError(f"task '{self.name}' takes no options (got {sorted(spec.options)})",
                              field="options")

    @property
    def num_labels(self) -> int:
        return len(self.head_labels)

    def use_suite(self, label_space: list[str] | None) -> None:
        """Tell the task which label space the suite it is judged by speaks."""
        self.suite_labels = label_space

    @property
    def suite_matches_head(self) -> bool:
        return self.suite_labels is None or len(self.suite_labels) == self.num_labels

    # -- data ---------------------------------------------------------------------------------------
    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        return load_classification_iid(source, text_fields=self.text_fields, eval_seed=eval_seed,
                                       builtin=self.builtin_iid)

    # -- suite ↔ head ------------------------------------------------------------------------------
    def to_suite_probs(self, head_probs: np.ndarray) -> np.ndarray:
        """Head probabilities → probabilities in the suite's label space (identity by default)."""
        return head_probs

    def label_target(self, label: Any) -> np.ndarray:
        """Training target over the head for a suite label."""
        return self.head_target(label)

    def head_target(self, label: Any) -> np.ndarray:
        """One-hot target over the head for an i.i.d. label."""
        target = np.zeros(self.num_labels, dtype=np.float32)
        try:
            target[int(label)] = 1.0
        except (ValueError, IndexError, TypeError):
            raise BelugaError(f"task '{self.name}': label {label!r} is not a class id 0..{self.num_labels - 1}") \
                from None
        return target

    def not_label_target(self, value: Any) -> np.ndarray:
        """Target for 'anything but ``value``': uniform over the other classes."""
        target = np.full(self.num_labels, 1.0 / (self.num_labels - 1), dtype=np.float32)
        target[int(value)] = 0.0
        return target

    def mft_items(self, case: Case) -> list[tuple[Input, np.ndarray]]:
        """(input, target) pairs a case contributes to the mft loss, read off its expectation.

        Perturbation tests trained with the mft loss (the QQP suite's DIRs) contribute their perturbed
        inputs only, since their expectation judges those.
        """
        exp = case.expectation
        params = exp.params()
        inputs = list(case.inputs)
        labels: list[Any]
        if exp.kind == "eq":
            if "value" in params and params["value"] is not None:
                labels = [params["value"]] * len(inputs)
            elif isinstance(case.label, list):
                labels = list(case.label)
            else:
                labels = [case.label] * len(inputs)
            if any(lab is None for lab in labels):
                raise BelugaError(f"case '{case.id}': an eq expectation needs a label to train on")
            targets = [self.label_target(lab) for lab in labels]
        elif exp.kind == "not_eq":
            targets = [self.not_label_target(params["value"])] * len(inputs)
        else:
            raise BelugaError(f"case '{case.id}': the mft loss cannot derive a target from a '{exp.kind}' "
                              "expectation; give the case another loss")
        items = list(zip(inputs, targets, strict=True))
        if exp.agg == "all_except_first" and len(items) > 1:
            items = items[1:]
        return items

    # -- metrics -------------------------------------------------------------------------------------
    def iid_metrics(self, pred: np.ndarray, gold: np.ndarray) -> dict[str, float]:
        out = {"accuracy": float((pred == gold).mean()) if len(gold) else float("nan")}
        if "f1" in self.metrics:
            tp = float(((pred == 1) & (gold == 1)).sum())
            denom = float((pred == 1).sum() + (gold == 1).sum())
            out["f1"] = 2 * tp / denom if denom else 0.0
        return out

    # -- model -----------------------------------------------------------------------------------------
    def make_encoder(self, tokenizer: Any, max_length: int) -> Encoder:
        return Encoder(tokenizer, max_length)

    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: dict[str, Any] | None = None) -> torch.nn.Module:
        return load_sequence_classifier(model_name, self.num_labels, dropout=dropout, seed=seed,
                                        config_overrides=config_overrides)

    def build_trainset(self, cases: Sequence[Case], iid: Sequence[IIDExample], env_level: str | None,
                       group_of: Callable[[Case, str], str] | None = None) -> TrainSet:
        return build_trainset(self, cases, iid, env_level, group_of)

    def batch_loss(self, trainer: Trainer, batch: Batch) -> torch.Tensor:
        return self._loss(trainer, batch, trainer.logits(batch.inputs))

    def batch_losses(self, trainer: Trainer, batches: Sequence[Batch]) -> list[torch.Tensor]:
        """Each batch's ``batch_loss`` from one forward pass over all their inputs (the rows of a batch do
        not see each other, so only padding and dropout masks differ from separate passes)."""
        logits = trainer.logits([x for b in batches for x in b.inputs])
        out, start = [], 0
        for b in batches:
            out.append(self._loss(trainer, b, logits[start:start + len(b)]))
            start += len(b)
        return out

    def _loss(self, trainer: Trainer, batch: Batch, logits: torch.Tensor) -> torch.Tensor:
        loss = trainer.loss_fn(batch.loss)
        if batch.kind == "single":
            return loss(logits, torch.as_tensor(batch.targets, device=trainer.device))
        k = len(batch.inputs) // 2
        if batch.params and "comparison" in batch.params[0]:
            return loss(logits[:k], logits[k:], [p["comparison"] for p in batch.params])
        return loss(logits[:k], logits[k:])

    def predict_cases(self, model: torch.nn.Module, encoder: Encoder, cases: Sequence[Case],
                      device: torch.device) -> tuple[FlatPredictions, list[str]]:
        """Suite-space predictions for every input of ``cases``, and each case's first predicted label."""
        flat = [x for c in cases for x in c.inputs]
        probs = self.to_suite_probs(predict_probs(model, encoder, flat, device))
        preds = FlatPredictions.from_arrays(probs=probs, lengths=[len(c.inputs) for c in cases])
        first = probs[preds.offsets[:-1]].argmax(axis=1)
        return preds, [str(int(p)) for p in first]

    def score_iid(self, model: torch.nn.Module, encoder: Encoder, examples: Sequence[IIDExample],
                  device: torch.device) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Per-example rows (split, example_idx, gold, pred, correct) and the metrics on D_test."""
        probs = predict_probs(model, encoder, [ex.inputs for ex in examples], device)
        pred = probs.argmax(axis=1)
        gold = np.array([ex.label for ex in examples])
        rows = [{"split": "test", "example_idx": i, "gold": str(int(g)), "pred": str(int(p)), "correct": bool(p == g)}
                for i, (p, g) in enumerate(zip(pred, gold, strict=True))]
        metrics = [{"split": "test", "metric": name, "value": value, "is_primary": name == self.primary_metric}
                   for name, value in self.iid_metrics(pred, gold).items()]
        return rows, metrics
