"""Significance of differences against the IID baseline and between configuration-methods (docs/method.md,
"Significance").

Tests run in Python (scipy / numpy) and are stored with their provenance in the ``significance_tests``
table; the ``significance`` view serves them next to live scores and marks stale rows (docs/reference/store.md).
"""

from __future__ import annotations

from beluga_core.analysis.significance.comparison_tests import (
    ALPHA,
    DEFAULT_ROUNDS,
    DEFAULT_SEED,
    AnalysisSummary,
    analyze_store,
    compare,
    parse_config_method,
)
from beluga_core.analysis.significance.tests_on_counts import (
    IidCounts,
    Stratum,
    SuiteCounts,
    randomization_test,
    sign_test,
)

__all__ = [
    "ALPHA",
    "DEFAULT_ROUNDS",
    "DEFAULT_SEED",
    "AnalysisSummary",
    "IidCounts",
    "Stratum",
    "SuiteCounts",
    "analyze_store",
    "compare",
    "parse_config_method",
    "randomization_test",
    "sign_test",
]
