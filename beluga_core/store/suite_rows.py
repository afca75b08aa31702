"""A loaded suite and its split as the store's rows (``suites``, ``cases``, ``splits``, ``case_splits``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from beluga_core.data.splits import SuiteSplit
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case
from beluga_core.store.rows import CaseRow, SplitRows, SuiteRow

GoldOf = Callable[[Case, Sequence[str] | None], str | None]


def suite_rows(suite: Suite, gold_of: GoldOf) -> tuple[SuiteRow, list[CaseRow]]:
    """The suite's row and its cases' rows (pass the suite with corrections applied to store corrected test
    types); ``gold_of`` names each case's gold label (``evaluation.gold.case_gold``)."""
    h = suite.header
    space = tuple(h.label_space) if h.label_space is not None else None
    row = SuiteRow(h.name, tuple(h.levels), h.scoring_level, h.input_kind, space)
    return row, [CaseRow(c.id, c.test_type, dict(c.groups), gold_of(c, h.label_space)) for c in suite.cases]


def split_rows(suite: Suite, split: SuiteSplit, split_id: str, seed: int, ratios: tuple[float, float, float],
               caps: Mapping[str, Any]) -> SplitRows:
    return SplitRows(split_id, suite.header.name, seed, ratios, caps, split.records())
