"""The training-configuration plugin kind: where training starts and what the suite step trains on.

A configuration is a list of steps in disguise: it starts from the pretrained model (``"plm"``) or from the
run's IID model (``"iid"``), and its step trains on i.i.d. data, suite cases, or both; generalization
methods act only in a step that sees suite data. A configuration that sees no suite data is the baseline.
"""

from __future__ import annotations

from typing import ClassVar, Literal


class TrainingConfiguration:
    """Base class; a plugin sets the class variables."""

    start: ClassVar[Literal["plm", "iid"]]
    uses_iid: ClassVar[bool]
    uses_suite: ClassVar[bool]
    required_attributes: ClassVar[tuple[str, ...]] = ("start", "uses_iid", "uses_suite")

    @classmethod
    def is_baseline(cls) -> bool:
        return not cls.uses_suite
