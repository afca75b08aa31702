"""The task plugin kind (``beluga.tasks``): a problem with its i.i.d. data, model, encoding, training units,
predictions and metrics.

``ClassificationTask`` does all of it for a sequence classifier over any label set: subclass it and change
what differs. A task for another kind of model derives from ``Task`` (generic over its ``Encoder``) and
implements every abstract member (``beluga_core.contracts.tasks`` says what each one does).
"""

from __future__ import annotations

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.options import NoOptions, Options
from beluga_core.contracts.registries import TASKS
from beluga_core.contracts.tasks import (
    GroupOf,
    IIDScores,
    InputPredictions,
    Task,
    TaskSettings,
    Trainer,
    ValidationMetric,
)
from beluga_core.contracts.training import (
    IID_ENV,
    IID_STREAM,
    Batch,
    BatchOutput,
    Encoder,
    Logits,
    TrainSet,
    UnitInfo,
)
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.examples import Example, IIDData, IIDExample
from beluga_core.data.suite.suite_schema import Case, Input, SuiteHeader
from beluga_core.tasks.classification import ClassificationOptions, ClassificationTask

__all__ = [
    "IID_ENV",
    "IID_STREAM",
    "TASKS",
    "Batch",
    "BatchOutput",
    "BelugaError",
    "Case",
    "ClassificationOptions",
    "ClassificationTask",
    "Encoder",
    "Example",
    "FlatPredictions",
    "GroupOf",
    "IIDData",
    "IIDExample",
    "IIDScores",
    "Input",
    "InputPredictions",
    "Logits",
    "NoOptions",
    "Options",
    "SuiteHeader",
    "Task",
    "TaskSettings",
    "TrainSet",
    "Trainer",
    "UnitInfo",
    "ValidationMetric",
]
