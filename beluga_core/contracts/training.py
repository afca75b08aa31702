"""What crosses the boundary between the training loop, tasks, losses and methods.

A task turns cases and i.i.d. examples into a ``TrainSet`` of units; the set yields ``Batch``es; a method
asks the trainer (``contracts.tasks.Trainer``) for their losses and applies the update. Methods and tasks see
the training set only through the protocols below, so the loop's implementation can change without breaking
a plugin.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch

from beluga_core.data.suite.suite_schema import Input

BatchKind = Literal["single", "pair"]
# The i.i.d. examples of a training set form their own stream (and environment) under this name.
IID_STREAM = "iid"
IID_ENV = "iid"


@dataclass(frozen=True)
class UnitInfo:
    """What a training unit is, for samplers and re-weighting: its text, gold label and groups.

    ``source`` is ``"iid"`` for an i.i.d. example and ``"suite"`` for a suite case; ``text`` is the example's
    input or the case's (original) input; ``label`` the gold label (a class id, an answer string, or None for
    a case without one); ``groups`` the case's group at every suite level plus ``test_type`` (empty for i.i.d.
    examples); ``env`` the environment the unit belongs to for environment methods.
    """

    source: Literal["iid", "suite"]
    text: Input
    label: Any
    groups: Mapping[str, str]
    env: str
    case_id: str | None = None


@dataclass
class Batch:
    """One mini-batch: one loss, one kind of unit.

    ``single`` batches hold one input per row with its target in ``targets`` (``[B, C]`` float targets for
    classifiers: a distribution, or a 0/1 mask of allowed classes where ``label_sets`` marks the row);
    ``pair`` batches hold the k originals, then their k perturbations, with one loss-parameter dict per pair
    in ``params``. ``units`` describes each row (single) or pair (pair).
    """

    stream: str
    loss: str
    kind: BatchKind
    inputs: list[Input]
    targets: np.ndarray | None = None
    params: list[dict[str, Any]] = field(default_factory=list)
    envs: list[str] = field(default_factory=list)
    label_sets: np.ndarray | None = None
    units: list[UnitInfo] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def n_rows(self) -> int:
        """Rows of ``BatchOutput.row_losses``: inputs of a single batch, pairs of a pair batch."""
        return len(self.inputs) if self.kind == "single" else len(self.inputs) // 2


Logits = torch.Tensor | tuple[torch.Tensor, ...]


@dataclass
class BatchOutput:
    """A batch's training loss, one loss per row (``Batch.n_rows``), and the model outputs the loss saw.

    ``loss`` is what the step minimises (for every built-in task, the mean of ``row_losses`` weighted as the
    task's loss weighs its terms); ``logits`` is ``[B, C]`` for classifiers (pair batches: originals, then
    perturbations) and ``(start, end)`` for span models.
    """

    loss: torch.Tensor
    row_losses: torch.Tensor
    logits: Logits


class Encoder(Protocol):
    """Tokenizes inputs once and pads batches; tasks may return their own (reading's windows)."""

    max_length: int

    def encode_many(self, inputs: Iterator[Input] | Sequence[Input]) -> None: ...
    def length(self, x: Input) -> int: ...
    def collate(self, inputs: Sequence[Any]) -> dict[str, torch.Tensor]: ...


class EnvSampler(Protocol):
    """Endless env-homogeneous batches (one loss type each), for methods that pick environments."""

    envs: list[str]

    def next(self, env: str) -> Batch: ...


class TrainSet(Protocol):
    """The units of one training stage, batched per loss; what a method's ``steps`` iterate."""

    notes: dict[str, Any]
    # Set by the loop before batching: units are length-grouped within windows (less padding).
    length_of: Callable[[Input], int] | None

    @property
    def n_examples(self) -> int: ...
    def inputs(self) -> Iterator[Input]: ...
    def envs(self) -> list[str]: ...
    def units(self) -> list[UnitInfo]: ...
    def batches_per_epoch(self, batch_size: int, by_env: bool = False) -> int: ...
    def units_per_env_batch(self, batch_size: int) -> dict[str, float]: ...
    def batches(self, rng: random.Random, batch_size: int, epochs: float, by_env: bool = False) -> Iterator[Batch]: ...
    # One pass over the units at ``picks`` (positions in ``units()``, repeats allowed), for methods that
    # choose the units themselves (reweight's weighted draw with replacement).
    def batches_of(self, rng: random.Random, batch_size: int, picks: Sequence[int]) -> list[Batch]: ...
    def env_sampler(self, rng: random.Random, batch_size: int) -> EnvSampler: ...
