"""The i.i.d. dataset D of a task: D_train, and D_val / D_test, the two seeded halves of its validation set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from beluga_core.data.suite.suite_schema import Input


class Example(Protocol):
    """What every i.i.d. example offers: its model input and its gold label (a class id, or an answer)."""

    @property
    def inputs(self) -> Input: ...
    @property
    def label(self) -> Any: ...


@dataclass(frozen=True)
class IIDExample:
    """A classification example: a text (or text pair) and its class id."""

    inputs: Input
    label: int


@dataclass
class IIDData:
    """D_train, D_val and D_test of one source; ``label_names`` name the class ids (empty for answers)."""

    train: Sequence[Example]
    val: Sequence[Example]
    test: Sequence[Example]
    source: str
    label_names: list[str]
