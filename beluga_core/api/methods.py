"""The generalization-method plugin kind (``beluga.methods``): how a training stage updates the model.

A method implements ``update`` (one optimisation step over a list of batches, as DomainBed's
``Algorithm.update``) and gets the stage's ``Trainer``; its ``Options`` (a subclass of ``Options``, a strict
pydantic model: each field's type, default, bounds and description) are its hyper-parameters, validated at config
load and read typed from ``self.options``. A method that draws one batch per environment (irm, group-dro, fish)
derives from ``EnvironmentMethod``.
"""

from __future__ import annotations

from beluga_core.contracts.methods import TRAINING_KEYS, EnvironmentMethod, Method, Stage
from beluga_core.contracts.options import NoOptions, Options
from beluga_core.contracts.registries import METHODS
from beluga_core.contracts.tasks import Trainer
from beluga_core.contracts.training import IID_ENV, Batch, BatchOutput, EnvSampler, TrainSet, UnitInfo
from beluga_core.core.errors import BelugaError

__all__ = [
    "IID_ENV",
    "METHODS",
    "TRAINING_KEYS",
    "Batch",
    "BatchOutput",
    "BelugaError",
    "EnvSampler",
    "EnvironmentMethod",
    "Method",
    "NoOptions",
    "Options",
    "Stage",
    "TrainSet",
    "Trainer",
    "UnitInfo",
]
