"""The ranking-signal plugin kind (``beluga.signals``): a number per model and probe case whose mean over a
few cases of an unseen group predicts how the models rank there (``beluga rank``).

A signal implements ``value``: it reads a ``ProbeCase`` — the outcome, class probabilities per input, and per
input the ``InputAttribution`` of the predicted label, ``Word`` by word — and has a fixed ``direction``. Its
options are one ``Options`` model (a strict pydantic model), read typed from ``self.options``.
"""

from __future__ import annotations

from beluga_core.contracts.options import NoOptions, Options
from beluga_core.contracts.registries import SIGNALS
from beluga_core.contracts.signals import InputAttribution, ProbeCase, Signal, Word
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Input

__all__ = ["SIGNALS", "BelugaError", "Input", "InputAttribution", "NoOptions", "Options", "ProbeCase", "Signal", "Word"]
