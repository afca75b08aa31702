"""The side-by-side dry runs (benchmarks.perf.dry_run_side_by_side, issue 57's first point) compare the two sides'
plans by the dry run's count of trainings."""

from __future__ import annotations

from benchmarks.perf.dry_run_side_by_side import trainings_line

OUTPUT = """┃ configuration       ┃ method    ┃ scenario      ┃ trainings ┃
│ iid-then-t          │ vanilla   │ seen          │        12 │
4761 trainings in all: 3627 scenario models + 1134 grid points (grid mode seen,
  examples: training examples × epochs
"""


def test_the_plans_are_compared_by_their_count_of_trainings() -> None:
    assert trainings_line(OUTPUT) == "4761 trainings in all: 3627 scenario models + 1134 grid points (grid mode seen,"
    assert trainings_line(OUTPUT.replace("4761", "4760")) != trainings_line(OUTPUT)
    assert trainings_line("no plan") == "(no count of trainings printed)"
