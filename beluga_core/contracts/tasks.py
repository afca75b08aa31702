"""The task plugin kind: a problem with its i.i.d. data, model, encoding, losses, predictions and metrics.

The core never sees logits: it asks the task to build the model and the training set, to compute batch
losses, and to predict — suite predictions in the suite's label space (what the expectations judge) and
i.i.d. predictions, which the task scores itself. That is what lets an extractive-QA task sit beside the
classifiers without special cases in the core.

``ClassificationTask`` (``beluga_core.api.tasks``) implements all of this for sequence classifiers over any
label set; a new task usually subclasses it. A task for another kind of model subclasses ``Task`` and
implements the abstract members; the registry rejects a task plugin that leaves one out, naming it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np
import torch

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.losses import Loss
from beluga_core.contracts.options import DeclaresOptions, NoOptions, PluginOptions, validate_options
from beluga_core.contracts.training import Batch, BatchOutput, Encoder, Logits, TrainSet
from beluga_core.core.errors import BelugaError, did_you_mean
from beluga_core.data.iid.examples import Example, IIDData
from beluga_core.data.suite.suite_schema import Case, Input, SuiteHeader


@dataclass(frozen=True)
class TaskSettings:
    """A config's settings for one task (``[[tasks]]``): the i.i.d. metric G uses, task-specific options,
    and how i.i.d. label names map onto the suite's (``label_map``)."""

    iid_metric: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    label_map: Mapping[str, str] = field(default_factory=dict)


@dataclass
class InputPredictions:
    """Predictions for a list of inputs: one predicted label per input (a class id as text, or an answer),
    its confidence, and for classifiers the class probabilities ``[n, C]``."""

    labels: list[str]
    confidence: np.ndarray
    probs: np.ndarray | None = None


@dataclass
class IIDScores:
    """A model's i.i.d. results on one split: per example (index, gold, prediction, correct) and metrics."""

    split: str
    gold: list[str]
    pred: list[str]
    correct: np.ndarray
    metrics: dict[str, float]
    primary: str


@dataclass(frozen=True)
class ValidationMetric:
    """A task-specific T_val score of one test type (hyper-parameter selection). A row named ``objective``
    replaces the test type's pass rate in the reference selection criterion."""

    test_type: str
    metric: str
    value: float | None


# A case's group at a level; None where a crossing level leaves the case without one.
GroupOf = Callable[[Case, str], str | None]
# The encoder type a task makes and then receives back (a classifier's token encoder, reading's windows).
EncoderT = TypeVar("EncoderT", bound=Encoder)


class Trainer(Protocol):
    """What a method (and a task's loss code) may use of the training loop for one stage: one per training stage,
    as ``beluga_core.api.methods.Trainer``.

    A method computes losses through it (``batch_loss``, ``batch_output``, ``loss_groups``), updates the model
    through it (``backward_and_step``, or ``zero_grad`` and ``step`` for a method that takes two backward passes per
    update, like SAM) and may load other models as frozen teachers (``teacher``). Everything else is read-only but
    ``logit_transform``.
    """

    # Read-only to a method (properties, so the loop may hold narrower types); only the transform is set.
    @property
    def model(self) -> torch.nn.Module:
        """The ``torch.nn.Module`` being trained (read-only: a method changes its weights only through updates)."""

    @property
    def device(self) -> torch.device:
        """The ``torch.device`` the model and the batches are on."""

    @property
    def hp(self) -> Mapping[str, Any]:
        """The stage's hyper-parameters: ``learning_rate``, ``batch_size``, ``epochs``, ``weight_decay``,
        ``warmup_ratio``, ``max_grad_norm``, and the method's own under ``method``."""

    @property
    def task(self) -> Task[Any]:
        """The task plugin (its ``features(encoder, inputs, device)`` turns inputs into model inputs)."""

    @property
    def encoder(self) -> Encoder:
        """The task's encoder for this model (tokenizer and length cap)."""

    # A function every loss's logits pass through, or None: the one member a method may set (IRM's dummy scale).
    logit_transform: Callable[[torch.Tensor], torch.Tensor] | None

    def loss_fn(self, name: str) -> Loss:
        """The loss plugin a suite case's ``loss`` names (``mft``, ``inv``, ``dir``, …), configured for this task."""

    def logits(self, inputs: list[Any]) -> torch.Tensor:
        """The model's logits for a list of inputs, with gradients."""

    def batch_loss(self, batch: Batch) -> torch.Tensor:
        """The scalar loss of a batch (the mean over its rows)."""

    def batch_output(self, batch: Batch) -> BatchOutput:
        """The loss of a batch with its per-row losses and the logits they came from (``loss``, ``row_losses``,
        ``logits``)."""

    def loss_groups(self, batches: Sequence[Batch]) -> Iterator[list[torch.Tensor]]:
        """The losses of many small batches from few forward passes (the rows of different batches never see each
        other)."""

    def backward_and_step(self, loss: torch.Tensor) -> None:
        """``zero_grad()``, ``loss.backward()`` and ``step()`` in one call."""

    def zero_grad(self) -> None:
        """Clear the gradients (a method that takes two backward passes per update, like SAM, calls it itself)."""

    def step(self) -> None:
        """Clip the gradients to ``max_grad_norm``, then step the optimizer and the learning-rate schedule."""

    def teacher(self, source: str = "iid") -> torch.nn.Module:
        """Another model as a frozen module in eval mode: ``"iid"`` (the run's IID model of this task and seed),
        ``"iid#N"`` (seed N's), or a ``store:STORE#SELECTOR`` / ``path:DIR`` source the method's
        ``teacher_sources()`` declared."""


class Task(DeclaresOptions, ABC, Generic[EncoderT]):
    """Base of every task plugin.

    Class attributes: ``metrics`` (i.i.d. metric names, G uses ``primary_metric`` unless the config picks
    another), ``grid_axes`` (hyper-parameter search axes of the task's own, e.g. reading's batch sizes),
    ``offline_iid`` (a shipped i.i.d. dataset that stands in for a hub dataset in ``beluga run --tiny``; None:
    the task has none, and a tiny run of a config naming a hub dataset stops), ``tiny_options`` (upper bounds
    a tiny run puts on numeric options, e.g. reading's window length), ``Options`` (the ``options`` of its
    ``[[tasks]]`` entry, a strict pydantic model, ``contracts.options``: checked when the config is read, the
    validated instance in ``self.options`` after ``configure``; a task that overrides ``configure`` and declares no
    Options is a plugin written before them, which reads ``settings.options`` itself).
    """

    metrics: ClassVar[tuple[str, ...]]
    primary_metric: ClassVar[str]
    grid_axes: ClassVar[dict[str, list[Any]]] = {}
    offline_iid: ClassVar[str | None] = None
    tiny_options: ClassVar[dict[str, int]] = {}
    # Whether ``batch_outputs`` fuses several batches into one forward pass (rows must not see each other);
    # the trainer then groups small environment batches (irm) into few passes.
    fuses_batches: ClassVar[bool] = True
    # Whether members of a pack (``[executor] pack``) can train this task's models: its model is a transformers
    # model with a head over ``base_model``'s output, and ``batch_outputs`` asks ``trainer.logits`` once per batch
    # with that batch's inputs (the pack computes the base's pass for every member at once and hands each member
    # its rows).
    packs: ClassVar[bool] = False
    required_attributes: ClassVar[tuple[str, ...]] = ("metrics", "primary_metric")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "configure" in cls.__dict__ and "Options" not in cls.__dict__ and cls.Options is NoOptions:
            cls.Options = None   # it reads its options itself, as tasks did before Options

    def __init__(self) -> None:
        self.name: str = type(self).__name__
        self.metric: str = self.primary_metric
        self.suite: SuiteHeader | None = None
        self.settings = TaskSettings()
        # The task's validated options (its defaults until ``configure``); a subclass annotates it with its own
        # Options class.
        self.options: PluginOptions | None = self.Options() if self.Options is not None else None

    # -- set-up ------------------------------------------------------------------------------------------
    def configure(self, settings: TaskSettings) -> None:
        """Take a config's settings; the default takes an ``iid_metric`` among ``metrics`` and no options."""
        if settings.iid_metric is not None and settings.iid_metric not in self.metrics:
            hint = did_you_mean(settings.iid_metric, self.metrics)
            raise BelugaError(f"task '{self.name}' computes no i.i.d. metric '{settings.iid_metric}'"
                              + (hint or f"; choose one of {', '.join(self.metrics)}"), field="iid_metric")
        if self.Options is not None:
            self.options = validate_options(self.Options, settings.options, "options")
        elif settings.options:
            raise BelugaError(f"task '{self.name}' takes no options (got {sorted(settings.options)})",
                              field="options")
        if settings.label_map:
            raise BelugaError(f"task '{self.name}' takes no label_map", field="label_map")
        self.metric = settings.iid_metric or self.primary_metric
        self.settings = settings

    def use_suite(self, header: SuiteHeader) -> None:
        """The suite the task's models are judged by (its label space, input kind)."""
        self.suite = header

    @property
    def head_labels(self) -> list[str] | None:
        """Names of the model head's classes, in id order (None for span models)."""
        return None

    @property
    def num_labels(self) -> int | None:
        """How many classes the model head has (None for span models)."""
        labels = self.head_labels
        return None if labels is None else len(labels)

    # -- data and model ------------------------------------------------------------------------------------
    @abstractmethod
    def load_iid(self, source: str, eval_seed: int) -> IIDData:
        """D_train and the seeded halves D_val / D_test of the validation set of ``source``."""

    @abstractmethod
    def make_encoder(self, tokenizer: Any, max_length: int) -> EncoderT:
        """The encoder (tokenization, padding) of this task's inputs."""

    @abstractmethod
    def build_model(self, model_name: str, *, seed: int = 0, dropout: float | None = None,
                    config_overrides: Mapping[str, Any] | None = None) -> torch.nn.Module:
        """The model: pretrained weights of ``model_name`` with a head initialised from ``seed``."""

    # -- training ------------------------------------------------------------------------------------------
    @abstractmethod
    def build_trainset(self, cases: Sequence[Case], iid: Sequence[Example], env_level: str | None,
                       group_of: GroupOf | None = None) -> TrainSet:
        """Training units from suite cases (by their loss) and i.i.d. examples."""

    @abstractmethod
    def batch_outputs(self, trainer: Trainer, batches: Sequence[Batch]) -> list[BatchOutput]:
        """Loss, per-row losses and logits of each batch (a task may fuse them into one forward pass; the
        rows of a batch do not see each other)."""

    # -- prediction ----------------------------------------------------------------------------------------
    @abstractmethod
    def predict_cases(self, model: torch.nn.Module, encoder: EncoderT, cases: Sequence[Case],
                      device: torch.device) -> FlatPredictions:
        """Predictions for every input of ``cases`` in the suite's label space (what expectations judge)."""

    @abstractmethod
    def predict_iid(self, model: torch.nn.Module, encoder: EncoderT, examples: Sequence[Example],
                    device: torch.device) -> InputPredictions:
        """Predictions for i.i.d. examples, in the i.i.d. data's label space."""

    @abstractmethod
    def score_iid(self, examples: Sequence[Example], predictions: InputPredictions, split: str) -> IIDScores:
        """Per-example correctness and the i.i.d. metrics of ``predictions``."""

    def validation_metrics(self, model: torch.nn.Module, encoder: EncoderT, cases: Sequence[Case],
                           predictions: FlatPredictions, device: torch.device) -> list[ValidationMetric]:
        """Task-specific T_val scores per test type for hyper-parameter selection (pass rates are computed
        by the store's views); none by default."""
        return []

    # -- model internals (attributions, adversarial search) ------------------------------------------------
    def features(self, encoder: EncoderT, inputs: Sequence[Input], device: torch.device) -> dict[str, torch.Tensor]:
        """The model's input tensors for ``inputs`` (``input_ids``, ``attention_mask``, …) on ``device``."""
        return {k: v.to(device) for k, v in encoder.collate(list(inputs)).items()}

    def input_embeddings(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model's input (word) embedding layer."""
        get = getattr(model, "get_input_embeddings", None)
        if get is None:
            raise BelugaError(f"task '{self.name}': the model has no get_input_embeddings()")
        layer: torch.nn.Module = get()
        return layer

    def forward_embeddings(self, model: torch.nn.Module, features: Mapping[str, torch.Tensor],
                           embeddings: torch.Tensor) -> Logits:
        """The model's outputs with ``embeddings`` in place of the word embeddings of ``features``."""
        rest = {k: v for k, v in features.items() if k != "input_ids"}
        logits: torch.Tensor = model(inputs_embeds=embeddings, **rest).logits
        return logits


def first_labels(predictions: FlatPredictions) -> list[str]:
    """Each case's prediction on its first input, as the store keeps it (a class id as text, or an answer)."""
    first = predictions.offsets[:-1]
    if predictions.probs is not None:
        return [str(int(p)) for p in predictions.probs[first].argmax(axis=1)]
    assert predictions.answers is not None
    return [str(a) for a in predictions.answers[first]]
