"""The base class a generalization-method plugin implements.

A method adjusts the model and optimizer and performs one update from a list of mini-batches, as
DomainBed's ``Algorithm.update(minibatches)``. Adding a method is one subclass plus one entry point in
``beluga.methods``; its ``Options`` (a strict pydantic model, ``contracts.options``) are its hyper-parameters,
each overridable from ``[method.NAME]`` and read typed from ``self.options``. (An older plugin's ``defaults``
dict still works, unchecked, with a warning when it loads.)

An option named like a ``[training]`` key (``TRAINING_KEYS``: learning rate, batch size, epochs, weight
decay, …) overrides that key for the method's suite step: the plan copies it into the stage's
hyper-parameters, which is what the optimizer and the batcher read (l2's ``weight_decay``, lp's
``learning_rate``). A grid search may vary it like any other hyper-parameter.

A job trains in one or more **stages** (``stages``): each stage gets a fresh optimizer and schedule and
starts from the weights the previous one left (lp-ft: linear probing, then full fine-tuning). A stage's method
may change the model's structure in ``prepare`` (lora's adapters) if ``finish`` restores it.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import torch

from beluga_core.contracts.options import DeclaresOptions, PluginOptions, validate_options
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import Batch, TrainSet

TRAINING_KEYS = ("learning_rate", "batch_size", "epochs", "weight_decay", "warmup_ratio", "max_grad_norm")
# Keys of a job's hyper-parameters that are not training hyper-parameters of its (first) stage.
NON_STAGE_KEYS = ("method", "stages")

Stage = tuple["Method", dict[str, Any]]


def method_name(cls: type) -> str:
    """A method class's name in messages: its ``name`` attribute where it has one (lora), else the class's."""
    name = getattr(cls, "name", None)
    return name if isinstance(name, str) else cls.__name__.lower()


def stage_part(hp: dict[str, Any]) -> dict[str, Any]:
    """The training hyper-parameters of a job's hyper-parameter dict (without the method's own part)."""
    return {k: v for k, v in hp.items() if k not in NON_STAGE_KEYS}


class Method(DeclaresOptions, ABC):
    """Base of every method plugin: ``update`` is the one member a method must implement (one optimisation
    step, as DomainBed's ``Algorithm.update``); everything else has a default (``vanilla``: plain AdamW)."""

    # ``Options`` (``DeclaresOptions``): the method's hyper-parameters, a strict pydantic model whose defaults are
    # the job's (``defaults`` is derived from it). None: a plugin written before Options, whose ``defaults`` dict is
    # taken unchecked.
    # Methods that need one batch per environment ask for env-homogeneous batches; their ``env_level``
    # hyper-parameter (None: the suite's scoring level) names the level whose groups are the environments.
    needs_environments: ClassVar[bool] = False
    # Grid-search axes of the method's own; each replaces the config's axis of that name (lp's learning
    # rates). ``[grid.methods.NAME]`` in a config replaces these in turn.
    grid_axes: ClassVar[dict[str, list[Any]]] = {}
    # Methods whose selected hyper-parameters this one reuses, one per stage, instead of a grid search of
    # its own (lp-ft: lp's for stage 1, vanilla's for stage 2). The plan passes their hyper-parameters in
    # the job's ``stages`` entry.
    reuses: ClassVar[tuple[str, ...]] = ()

    # What a checkpoint inside a job must carry of the method (``state_dict``): the names of the attributes that
    # change between updates (group-dro's environment weights, irm's step count), () for a method whose updates
    # leave nothing of its own behind. None, the default, is "unknown": jobs of the method train without
    # checkpoints (a killed run restarts them) rather than resume with a state the checkpoint missed. A method
    # whose state is more than attributes overrides ``state_dict`` and ``load_state_dict`` instead. A subclass
    # inherits its base's tuple as it is: one with state of its own must name its base's attributes too
    # (``state_attributes = Base.state_attributes + ("mine",)``; a subclass of vanilla starts from its ()).
    state_attributes: ClassVar[tuple[str, ...] | None] = None
    # Whether jobs of this method can train as members of a pack (``[executor] pack``, ``training.packed_training``):
    # its trainable parameters are LoRA adapters on a frozen body and the head, its update the plain one (vanilla's).
    packs: ClassVar[bool] = False

    def __init__(self, hparams: dict[str, Any] | None = None) -> None:
        self.hp: dict[str, Any] = {**self.defaults, **(hparams or {})}
        # The typed options (a subclass annotates ``options`` with its own Options class); ``hp`` keeps the
        # values as the config wrote them, which the job's id hashes.
        self.options: PluginOptions | None = None
        if self.Options is not None:
            fields = self.Options.model_fields
            self.options = validate_options(self.Options, {k: v for k, v in self.hp.items() if k in fields},
                                            f"method.{method_name(type(self))}")

    @classmethod
    def checkpointable(cls) -> bool:
        """Whether the method says what its state is, so that its jobs can resume from checkpoints."""
        return cls.state_attributes is not None or cls.state_dict is not Method.state_dict

    def state_dict(self) -> dict[str, Any] | None:
        """The method's state after an update: tensors and JSON values (numbers, strings, lists, dicts), read
        into a checkpoint and given back to ``load_state_dict`` after ``start`` when the job resumes. None: the
        method does not say (see ``state_attributes``)."""
        if self.state_attributes is None:
            return None
        return {name: getattr(self, name) for name in self.state_attributes}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take back what ``state_dict`` gave (tensors on the trainer's device), after ``start``."""
        for name, value in state.items():
            setattr(self, name, value)

    def stages(self, hp: dict[str, Any]) -> list[Stage]:
        """The (method, training hyper-parameters) of each stage of a job with hyper-parameters ``hp``."""
        return [(self, stage_part(hp))]

    def teacher_sources(self) -> tuple[str, ...]:
        """The other models this method loads through ``trainer.teacher`` ("iid": the run's IID model of the
        job's task and seed), so that a run trains those before the job starts."""
        return ()

    def model_overrides(self) -> dict[str, Any]:
        """Keyword arguments for building the model (``task.build_model``), e.g. dropout probabilities."""
        return {}

    def prepare(self, model: torch.nn.Module) -> None:
        """Adjust the model before the optimizer is built (e.g. freeze the encoder, add adapters). Called once per
        stage with the model the stage trains; a checkpoint's weights are loaded after it."""

    def finish(self, model: torch.nn.Module) -> None:
        """Called once the stage ends, also when it fails: leave the model with the architecture ``prepare``
        found, since the weights that are kept, exported, evaluated and loaded into the next job are a plain
        model's (lora and ia3 merge their adapters into the weights they adapt and remove them)."""

    def weight_decay(self, base: float) -> float:
        return base

    def start(self, trainer: Trainer, trainset: TrainSet, n_steps: int) -> None:
        """Called once per stage before the first update (state that depends on the data or the length)."""

    def steps(self, trainset: TrainSet, rng: random.Random, batch_size: int, epochs: float) -> Iterator[list[Batch]]:
        """The mini-batches of each update; by default one interleaved batch per step."""
        for batch in trainset.batches(rng, batch_size, epochs, by_env=self.needs_environments):
            yield [batch]

    def n_steps(self, trainset: TrainSet, batch_size: int, epochs: float) -> int:
        """How many updates ``steps`` yields."""
        return math.ceil(epochs * trainset.batches_per_epoch(batch_size, self.needs_environments))

    def optimizer_steps(self, n_steps: int) -> int:
        """Optimizer steps in ``n_steps`` updates: the length of the learning-rate schedule."""
        return n_steps

    @abstractmethod
    def update(self, trainer: Trainer, batches: list[Batch]) -> torch.Tensor:
        """One optimisation step over ``batches`` (what ``steps`` yields); returns the detached loss (no host
        sync: logging reads it rarely)."""


class EnvironmentMethod(Method):
    """Base of methods that draw batches per environment (irm, group-dro, fish).

    One "epoch" is the number of updates that visits as many units (examples; a pair counts once) as one
    pass over the data (docs/method.md, "Generalization methods"): the units an update visits on average are
    its batches per update times the mean batch of an environment drawn uniformly. Counting batches instead
    would undercount where environments are small: a step drawing a one-case functionality visits one unit,
    not a batch's worth.
    The step count is the nearest whole number (at least 1); rounding up would make irm, whose steps take a
    batch from every environment, visit up to twice the data. An environment's batch holds units of that
    environment only, and one loss type.
    """

    needs_environments: ClassVar[bool] = True
    # Batches one update draws; None: one per environment (irm).
    batches_per_update: ClassVar[int | None] = 1

    def _per_update(self, n_envs: int) -> int:
        return self.batches_per_update or n_envs

    def n_steps(self, trainset: TrainSet, batch_size: int, epochs: float) -> int:
        per_batch = trainset.units_per_env_batch(batch_size)
        if not per_batch or epochs <= 0:
            return 0
        per_update = self._per_update(len(per_batch)) * sum(per_batch.values()) / len(per_batch)
        return max(1, math.floor(epochs * trainset.n_examples / per_update + 0.5))
