"""The rows the store writer takes from the layers above (suites, cases, splits) and the store's table list."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from beluga_core.core.constants import TEST_TYPE_LEVEL

TABLES = ("beluga_meta", "runs", "suites", "cases", "splits", "case_splits", "task_heads", "models",
          "iid_predictions", "iid_metrics", "outcomes", "g_exclusions", "grid_points", "grid_outcomes",
          "grid_metrics", "grid_selections", "significance_tests", "cross_outcomes", "cross_evaluations",
          "cross_maps", "cross_significance_tests", "iid_probs", "case_predictions", "case_specs",
          "regression_tests", "attribution_inputs", "attributions", "fewshot_pools", "probe_outcomes",
          "probe_predictions", "fewshot_rankings", "fewshot_candidates", "fewshot_results", "fewshot_groups",
          "fewshot_summary", "replicate_intervals")


def level_pointer(level: str) -> str:
    """The JSON pointer of a level's group in a ``cases.groups`` value (``/`` and ``~`` escaped)."""
    return "/" + level.replace("~", "~0").replace("/", "~1")


def canonical_json(value: Any) -> str | None:
    """Canonical text, so equal dicts compare equal as stored strings."""
    if value is None:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True)
class CaseRow:
    """One row of ``cases``: a case's test type, its group at every level, and its gold label."""

    case_id: str
    test_type: str
    groups: Mapping[str, str]
    gold: str | None = None

    def group(self, level: str) -> str:
        return self.test_type if level == TEST_TYPE_LEVEL else self.groups[level]


@dataclass(frozen=True)
class SuiteRow:
    """One row of ``suites``."""

    suite: str
    levels: tuple[str, ...]
    scoring_level: str
    input_kind: str
    label_space: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SplitRows:
    """A suite's split: its identity and every case's part (before the caps) and whether it was kept."""

    split_id: str
    suite: str
    seed: int
    ratios: tuple[float, float, float]
    caps: Mapping[str, Any]
    parts: Sequence[tuple[str, str, bool]]


def external_model_id(model_name: str, task: str, suite: str, split_seed: int | None = None,
                      seed: int | None = None) -> str:
    """Identity of an external evaluation: re-checking the same model on the same suite replaces it."""
    key = json.dumps(["external", model_name, task, suite, split_seed, seed])
    return "external-" + hashlib.sha256(key.encode()).hexdigest()[:24]
