"""Training units batched per loss (docs/method.md, "Losses").

Every mini-batch holds one loss type; i.i.d. examples form their own batches (mft loss); batch types are
interleaved in proportion to their number of batches. A pair batch of size b holds b/2 originals and one
perturbation each, the perturbation drawn afresh every time the case is visited.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from beluga_core.contracts.registries import LOSSES
from beluga_core.contracts.training import Batch, BatchKind, UnitInfo
from beluga_core.data.suite.suite_schema import Input


@dataclass(frozen=True)
class SingleUnit:
    """One single-input item; with several choices one is drawn per visit (perturbation tests trained with a
    single-input loss). ``label_set``: the targets are masks of accepted classes, not distributions."""

    choices: tuple[tuple[Input, Any], ...]
    env: str
    info: UnitInfo
    label_set: bool = False


@dataclass(frozen=True)
class PairUnit:
    """An original with its perturbations; one perturbation is drawn per visit."""

    original: Input
    perturbed: tuple[Input, ...]
    params: dict[str, Any]
    env: str
    info: UnitInfo


# Units are sorted by length within windows of this many batches, so a batch pads little while the order
# stays random (as HF's group_by_length; padding to the longest of a random batch wastes ~2-3x on SST-2).
LENGTH_WINDOW = 50


@dataclass
class TrainSet:
    """Units per stream (``iid`` or a loss name) with the loss each stream trains with."""

    streams: dict[str, list[SingleUnit | PairUnit]]
    losses: dict[str, str]
    length_of: Callable[[Input], int] | None = None
    # What building the set left out and why (counts), recorded with the model in the store.
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def n_examples(self) -> int:
        return sum(len(units) for units in self.streams.values())

    def envs(self) -> list[str]:
        return sorted({u.env for units in self.streams.values() for u in units})

    def units(self) -> list[UnitInfo]:
        """Every unit's text, label and groups, stream by stream (for samplers and re-weighting)."""
        return [u.info for units in self.streams.values() for u in units]

    def batches_per_epoch(self, batch_size: int, by_env: bool = False) -> int:
        return sum(len(chunk) for chunk in self._chunks(random.Random(0), batch_size, by_env, shuffle=False))

    def units_per_env_batch(self, batch_size: int) -> dict[str, float]:
        """Each environment's mean units per batch when its batches are drawn (``EnvSampler``)."""
        units: dict[str, int] = defaultdict(int)
        batches: dict[str, int] = defaultdict(int)
        for per_stream in self._chunks(random.Random(0), batch_size, by_env=True, shuffle=False):
            for _, chunk in per_stream:
                units[chunk[0].env] += len(chunk)
                batches[chunk[0].env] += 1
        return {env: units[env] / batches[env] for env in sorted(units)}

    def _chunks(self, rng: random.Random, batch_size: int, by_env: bool,
                shuffle: bool = True) -> list[list[tuple[str, list[SingleUnit | PairUnit]]]]:
        out = []
        for stream, units in self.streams.items():
            size = rows_per_batch(self.losses[stream], batch_size)
            groups: dict[str, list[SingleUnit | PairUnit]] = defaultdict(list)
            for u in units:
                groups[u.env if by_env else ""].append(u)
            chunks = []
            for env in sorted(groups):
                order = list(groups[env])
                if shuffle:
                    rng.shuffle(order)
                    if self.length_of is not None:
                        order = self._length_grouped(order, size)
                chunks += [(stream, order[i:i + size]) for i in range(0, len(order), size)]
            out.append(chunks)
        return out

    def _length_grouped(self, units: list[SingleUnit | PairUnit], size: int) -> list[SingleUnit | PairUnit]:
        length_of = self.length_of
        assert length_of is not None
        window = size * LENGTH_WINDOW
        out: list[SingleUnit | PairUnit] = []
        for start in range(0, len(units), window):
            part = units[start:start + window]
            part.sort(key=lambda u: length_of(u.choices[0][0] if isinstance(u, SingleUnit) else u.original))
            out += part
        return out

    def inputs(self) -> Iterator[Input]:
        for units in self.streams.values():
            for u in units:
                if isinstance(u, SingleUnit):
                    yield from (x for x, _ in u.choices)
                else:
                    yield u.original
                    yield from u.perturbed

    def epoch(self, rng: random.Random, batch_size: int, by_env: bool = False) -> list[Batch]:
        chunks = [c for per_stream in self._chunks(rng, batch_size, by_env) for c in per_stream]
        rng.shuffle(chunks)  # interleaves batch types in proportion to their counts
        return [self._realise(stream, units, rng) for stream, units in chunks]

    def batches_of(self, rng: random.Random, batch_size: int, picks: Sequence[int]) -> list[Batch]:
        """The batches of the units at ``picks`` (positions in ``units()``; a position may repeat): each stream's
        picked units, in the order picked, cut into batches of its loss's size; batch types interleaved as
        ``epoch`` interleaves them. The caller's order is the randomness, so only length grouping reorders."""
        flat = [(stream, u) for stream, units in self.streams.items() for u in units]
        per_stream: dict[str, list[SingleUnit | PairUnit]] = defaultdict(list)
        for i in picks:
            stream, unit = flat[i]
            per_stream[stream].append(unit)
        chunks = []
        for stream, order in per_stream.items():
            size = rows_per_batch(self.losses[stream], batch_size)
            if self.length_of is not None:
                order = self._length_grouped(order, size)
            chunks += [(stream, order[i:i + size]) for i in range(0, len(order), size)]
        rng.shuffle(chunks)
        return [self._realise(stream, units, rng) for stream, units in chunks]

    def batches(self, rng: random.Random, batch_size: int, epochs: float, by_env: bool = False) -> Iterator[Batch]:
        """``epochs`` passes (fractional allowed: the last pass stops early)."""
        per_epoch = self.batches_per_epoch(batch_size, by_env)
        total = math.ceil(epochs * per_epoch)
        produced = 0
        while produced < total:
            for batch in self.epoch(rng, batch_size, by_env):
                if produced >= total:
                    return
                produced += 1
                yield batch

    def env_sampler(self, rng: random.Random, batch_size: int) -> EnvSampler:
        """Batches drawn per environment, for methods that pick environments step by step."""
        return EnvSampler(self, rng, batch_size)

    def _realise(self, stream: str, units: Sequence[SingleUnit | PairUnit], rng: random.Random) -> Batch:
        loss = self.losses[stream]
        infos = [u.info for u in units]
        envs = [u.env for u in units]
        singles = [u for u in units if isinstance(u, SingleUnit)]
        if singles:
            picked = [u.choices[rng.randrange(len(u.choices))] if len(u.choices) > 1 else u.choices[0]
                      for u in singles]
            sets = np.array([u.label_set for u in singles], dtype=bool)
            return Batch(stream, loss, "single", [x for x, _ in picked],
                         targets=np.stack([t for _, t in picked]).astype(np.float32), envs=envs,
                         label_sets=sets if sets.any() else None, units=infos)
        pairs = [u for u in units if isinstance(u, PairUnit)]
        drawn = [(u.original, u.perturbed[rng.randrange(len(u.perturbed))]) for u in pairs]
        return Batch(stream, loss, "pair", [o for o, _ in drawn] + [p for _, p in drawn],
                     params=[u.params for u in pairs], envs=envs, units=infos)


class EnvSampler:
    """Endless env-homogeneous batches, each environment cycling through its own shuffled passes.

    A batch holds units of one environment and one stream (so one loss type, and a pair loss keeps its
    originals-then-perturbations layout); within an environment, batch types are interleaved in proportion
    to their counts, as ``TrainSet.epoch`` does over the whole set.
    """

    def __init__(self, trainset: TrainSet, rng: random.Random, batch_size: int) -> None:
        self.trainset = trainset
        self.rng = rng
        self.batch_size = batch_size
        self._units: dict[str, dict[str, list[SingleUnit | PairUnit]]] = defaultdict(lambda: defaultdict(list))
        for stream, units in trainset.streams.items():
            for u in units:
                self._units[u.env][stream].append(u)
        self.envs: list[str] = sorted(self._units)
        self._queue: dict[str, list[tuple[str, list[SingleUnit | PairUnit]]]] = {e: [] for e in self.envs}

    def _refill(self, env: str) -> None:
        chunks = []
        for stream, units in self._units[env].items():
            size = rows_per_batch(self.trainset.losses[stream], self.batch_size)
            order = list(units)
            self.rng.shuffle(order)
            if self.trainset.length_of is not None:
                order = self.trainset._length_grouped(order, size)
            chunks += [(stream, order[i:i + size]) for i in range(0, len(order), size)]
        self.rng.shuffle(chunks)
        self._queue[env] = chunks

    def next(self, env: str) -> Batch:
        """The next batch of ``env`` (a new shuffled pass over its units when the last one is used up)."""
        if not self._queue[env]:
            self._refill(env)
        stream, units = self._queue[env].pop()
        return self.trainset._realise(stream, units, self.rng)


def loss_kind(loss_name: str) -> BatchKind:
    """What one row of the loss is: ``single`` or ``pair``."""
    return LOSSES.get(loss_name).kind


def rows_per_batch(loss_name: str, batch_size: int) -> int:
    """Units per batch: ``batch_size`` inputs, or half as many pairs (an original and a perturbation each)."""
    return batch_size if loss_kind(loss_name) == "single" else max(1, batch_size // 2)
