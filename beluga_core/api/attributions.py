"""The attribution plugin kind (``beluga.attributions``): one score per token of an input.

An estimator implements ``attribute``: it gets an ``AttributionContext`` (the frozen model and the
``Objective`` — a class probability, a logit, a cross-entropy; a span's start + end logit — as a function of
token ids, or of the values at a ``Scale``: the word embeddings or the embedding layer's output, with a
``Baseline``), the ``TokenizedInput`` and the ``Target``. beluga normalises the scores, sums them per word and
stores them. Its options are one ``AttributionOptions`` subclass (``target``, ``normalize`` and ``seed`` are every
estimator's), checked when a config is read and read typed from ``self.options``.
"""

from __future__ import annotations

from beluga_core.contracts.attributions import (
    Attribution,
    AttributionContext,
    AttributionOptions,
    Baseline,
    Objective,
    Scale,
    Target,
    TokenizedInput,
)
from beluga_core.contracts.registries import ATTRIBUTIONS
from beluga_core.core.errors import BelugaError

__all__ = [
    "ATTRIBUTIONS",
    "Attribution",
    "AttributionContext",
    "AttributionOptions",
    "Baseline",
    "BelugaError",
    "Objective",
    "Scale",
    "Target",
    "TokenizedInput",
]
