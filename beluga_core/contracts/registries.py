"""The registry of each plugin kind (entry-point namespace → base class); executors have theirs in
``beluga_core.execution.executors``."""

from __future__ import annotations

from typing import Any

from beluga_core.contracts.attributions import Attribution
from beluga_core.contracts.configurations import TrainingConfiguration
from beluga_core.contracts.expectations import ExpectationKind
from beluga_core.contracts.generators import Generator
from beluga_core.contracts.losses import Loss
from beluga_core.contracts.methods import Method
from beluga_core.contracts.signals import Signal
from beluga_core.contracts.tasks import Task
from beluga_core.core.registry import Registry

TASKS: Registry[Task[Any]] = Registry("task", "beluga.tasks", Task)
LOSSES: Registry[Loss] = Registry("loss", "beluga.losses", Loss)
CONFIGURATIONS: Registry[TrainingConfiguration] = Registry(
    "training configuration", "beluga.training_configs", TrainingConfiguration)
METHODS: Registry[Method] = Registry("method", "beluga.methods", Method)
EXPECTATIONS: Registry[ExpectationKind] = Registry("expectation kind", "beluga.expectations", ExpectationKind)
ATTRIBUTIONS: Registry[Attribution] = Registry("attribution", "beluga.attributions", Attribution)
GENERATORS: Registry[Generator] = Registry("generator", "beluga.generators", Generator)
SIGNALS: Registry[Signal] = Registry("ranking signal", "beluga.signals", Signal)
