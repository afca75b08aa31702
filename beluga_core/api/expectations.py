"""The expectation-kind plugin kind (``beluga.expectations``): pass, fail or skip for each case of a batch.

A kind's parameters are a pydantic model (``Params``, deriving from ``KindParams``; ``KeepIf`` is CheckList's
``slice_orig``), validated when the suite is loaded. A kind judged input by input derives from
``PerInputKind`` and implements ``input_results``; any other implements ``ExpectationKind.evaluate``. Both
return ``PASS`` / ``FAIL`` / ``SKIP`` codes (``results_from`` builds them from boolean arrays).
"""

from __future__ import annotations

from beluga_core.contracts.expectations import (
    FAIL,
    NO_CLASS,
    PASS,
    SKIP,
    CaseBatch,
    ExpectationKind,
    FlatPredictions,
    KeepIf,
    KindParams,
    PerInputKind,
    results_from,
)
from beluga_core.contracts.registries import EXPECTATIONS
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Case, Expectation

__all__ = [
    "EXPECTATIONS",
    "FAIL",
    "NO_CLASS",
    "PASS",
    "SKIP",
    "BelugaError",
    "Case",
    "CaseBatch",
    "Expectation",
    "ExpectationKind",
    "FlatPredictions",
    "KeepIf",
    "KindParams",
    "PerInputKind",
    "results_from",
]
