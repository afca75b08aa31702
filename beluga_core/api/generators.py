"""The generator plugin kind (``beluga.generators``): a rule that makes suite cases from source instances.

A generator implements ``perturb``: from one ``SourceInstance`` of the ``Source`` it yields ``Perturbed``
inputs, and beluga turns each into an MFT case (and, where the label is kept, an INV case). One that works
against a trained model (``requires_model``) reads it through ``TargetModel``: class probabilities,
``WordGradients``, token attributions as ``TokenScores``. Its options are one ``Options`` model (a strict
pydantic model), read typed from ``self.options``.
"""

from __future__ import annotations

from beluga_core.contracts.generators import (
    Generator,
    Perturbed,
    Source,
    SourceInstance,
    SourceKind,
    TargetModel,
    TokenScores,
    WordGradients,
)
from beluga_core.contracts.options import NoOptions, Options
from beluga_core.contracts.registries import GENERATORS
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.relation_instances import RelationInstance
from beluga_core.data.suite.suite_schema import Input

__all__ = [
    "GENERATORS",
    "BelugaError",
    "Generator",
    "Input",
    "NoOptions",
    "Options",
    "Perturbed",
    "RelationInstance",
    "Source",
    "SourceInstance",
    "SourceKind",
    "TargetModel",
    "TokenScores",
    "WordGradients",
]
