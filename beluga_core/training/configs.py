"""The four training configurations of BeLUGA (METHOD.md §2), as plugins.

A configuration says where training starts (the pretrained model or the IID model) and what the step that
sees suite data trains on; generalization methods act only in that step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal


@dataclass(frozen=True)
class TrainingConfiguration:
    """Base class; a plugin sets the class variables."""

    id: ClassVar[str]
    title: ClassVar[str]
    start: ClassVar[Literal["plm", "iid"]]
    uses_iid: ClassVar[bool]
    uses_suite: ClassVar[bool]

    @classmethod
    def is_baseline(cls) -> bool:
        return not cls.uses_suite


class IID(TrainingConfiguration):
    id = "iid"
    title = "IID"
    start = "plm"
    uses_iid = True
    uses_suite = False


class IIDThenT(TrainingConfiguration):
    id = "iid-then-t"
    title = "IID→T"
    start = "iid"
    uses_iid = False
    uses_suite = True


class IIDPlusT(TrainingConfiguration):
    id = "iid-plus-t"
    title = "IID+T"
    start = "plm"
    uses_iid = True
    uses_suite = True


class IIDThenIIDPlusT(TrainingConfiguration):
    id = "iid-then-iid-plus-t"
    title = "IID→(IID+T)"
    start = "iid"
    uses_iid = True
    uses_suite = True
