"""Successive halving (``[grid] strategy = "halving"``): a grid search as rungs of the plan.

The budget is epochs. The epochs axis leaves the searched axes, and its values become the rungs' budgets: at rung
0 every point trains to the smallest epoch count and is scored on T_val; the best ``1/reduction`` of them (by the
run's criterion, ties broken as selection breaks them) go on to the next epoch count, from the state the rung left,
and so on to the largest, among whose points the selection is made. Every point trains with the schedule of the
largest budget (``epochs`` in its hyper-parameters is that budget), so a rung's model is the same model at an
earlier step: rung r of a point stops after the updates of ``epochs_r`` epochs.

Synchronous by design: a rung's jobs exist once the previous rung has finished and been ranked (``promote``), so
their ids follow from the stored scores alone, a resumed run forms the same rungs, and every executor makes the
same choices. An asynchronous scheduler (ASHA, optuna's pruners) decides by completion order and would not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.planning.jobs import Job, JobSpec, SelectionKey

# The key of a rung job's hyper-parameters that says where its training stops and from where it goes on.
HALVING_KEY = "halving"


@dataclass(frozen=True)
class Rung:
    """Where a rung job's training stands: its rung, the epochs it stops after, and those its state was promoted
    at (0: it trains from its start model; a method that cannot checkpoint always does)."""

    index: int
    epochs: float
    from_epochs: float = 0.0

    def hparam(self) -> dict[str, Any]:
        return {"rung": self.index, "epochs": self.epochs, "from_epochs": self.from_epochs}


def rung_of(hparams: Mapping[str, Any]) -> Rung | None:
    """The rung of a job with hyper-parameters ``hparams`` (None: not a rung of a halving search)."""
    h = hparams.get(HALVING_KEY)
    if not h:
        return None
    return Rung(int(h["rung"]), float(h["epochs"]), float(h.get("from_epochs", 0.0)))


def budgets(epochs: Sequence[Any], where: str) -> tuple[float, ...]:
    """The rungs' epoch budgets: the epochs axis' values, sorted, each once; two at least."""
    values = sorted({float(e) for e in epochs})
    if len(values) < 2 or values[0] <= 0:
        raise BelugaError(f"[grid] strategy = \"halving\" spends epochs as its budget: the epochs axis needs two or "
                          f"more distinct positive values (the rungs), got {list(epochs)}", field=where)
    return tuple(values)


def kept(n: int, reduction: int) -> int:
    """How many of a rung's ``n`` points go on to the next: the top ``1/reduction``, rounded up."""
    return max(1, math.ceil(n / reduction)) if n else 0


def rung_sizes(n: int, n_rungs: int, reduction: int) -> list[int]:
    """The points each rung trains, for ``n`` points at rung 0."""
    sizes = [n]
    while len(sizes) < n_rungs:
        sizes.append(kept(sizes[-1], reduction))
    return sizes


@dataclass
class HalvingSearch:
    """One search of a (task, configuration, method, scope): its points (each with the largest budget as its
    epochs), the rungs' budgets, and the rung jobs made so far (``rungs[r]``: rung r's, in point order)."""

    key: SelectionKey
    spec: JobSpec
    points: list[dict[str, Any]]
    budgets: tuple[float, ...]
    reduction: int
    resumes: bool   # the method saves its state, so a promoted point goes on from it (else trains again from 0)
    rungs: list[list[Job]] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        return rung_sizes(len(self.points), len(self.budgets), self.reduction)

    @property
    def complete(self) -> bool:
        """Whether its last rung's jobs exist (no promotion left)."""
        return len(self.rungs) == len(self.budgets)

    def rung(self, index: int) -> Rung:
        before = self.budgets[index - 1] if index and self.resumes else 0.0
        return Rung(index, self.budgets[index], before)

    def final_jobs(self) -> list[Job]:
        """The jobs selection chooses among: the last rung's, once it exists."""
        return self.rungs[-1] if self.complete else []

    def stops(self) -> dict[str, int]:
        """Point (as its job's ``point`` JSON key) → the last rung it reached so far."""
        out: dict[str, int] = {}
        for r, jobs in enumerate(self.rungs):
            for j in jobs:
                out[_point_key(j.point)] = r
        return out


def _point_key(point: Mapping[str, Any] | None) -> str:
    return repr(sorted((point or {}).items()))
