"""The training-configuration plugin kind (``beluga.training_configs``): where a fold's training starts
(``start``: ``"plm"``, the pretrained model, or ``"iid"``, the run's IID model) and what its training step sees
(``uses_iid``, ``uses_suite``). A plugin only sets those class variables.
"""

from __future__ import annotations

from beluga_core.contracts.configurations import TrainingConfiguration
from beluga_core.contracts.registries import CONFIGURATIONS
from beluga_core.core.errors import BelugaError

__all__ = ["CONFIGURATIONS", "BelugaError", "TrainingConfiguration"]
