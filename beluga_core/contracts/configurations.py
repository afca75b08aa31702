"""The training-configuration plugin kind: where training starts and what the suite step trains on.

A configuration is a list of steps in disguise: it starts from the pretrained model (``"plm"``) or from the
run's IID model (``"iid"``), and its step trains on i.i.d. data, suite cases, or both. A configuration that
sees no suite data is the baseline (trained once, with plain fine-tuning), unless it says otherwise
(``baseline = False``: an *update* of the i.i.d. model, one model per seed and method, trained with the run's
method on i.i.d. data alone and evaluated like the baseline).
"""

from __future__ import annotations

from typing import ClassVar, Literal


class TrainingConfiguration:
    """Base class; a plugin sets the class variables."""

    start: ClassVar[Literal["plm", "iid"]]
    uses_iid: ClassVar[bool]
    uses_suite: ClassVar[bool]
    # None: the baseline exactly when it sees no suite data.
    baseline: ClassVar[bool | None] = None
    required_attributes: ClassVar[tuple[str, ...]] = ("start", "uses_iid", "uses_suite")

    @classmethod
    def is_baseline(cls) -> bool:
        return not cls.uses_suite if cls.baseline is None else cls.baseline

    @classmethod
    def is_iid_update(cls) -> bool:
        """Trains on i.i.d. data alone with the run's method, and is not the baseline."""
        return not cls.uses_suite and not cls.is_baseline()
