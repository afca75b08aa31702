"""The benchmarks' speed verdicts (the harness's) come from the paired interval of the ratio, never from medians
(issue 55): known answers, computed by hand."""

from __future__ import annotations

import pytest

from benchmarks import harness


def test_the_paired_ratio_by_hand() -> None:
    # logs of 1.1, 1.2, 1.0: mean 0.0925439, sd 0.0911924, se 0.0526500, t(0.975, 2) = 4.302653, half 0.226532.
    ratio, lo, hi = harness.paired_ratio([1.1, 1.2, 1.0], [1.0, 1.0, 1.0])
    assert (ratio, lo, hi) == pytest.approx((1.09696, 0.87460, 1.37588), abs=5e-5)


def test_a_verdict_follows_the_interval_not_the_medians() -> None:
    # Medians 1.1 against 1.0, but the interval holds 1: not resolved.
    assert harness.speed_verdict([1.1, 1.2, 1.0], [1.0, 1.0, 1.0], "x").endswith("→ not resolved")
    assert harness.speed_verdict([1.5, 1.6, 1.55], [1.0, 1.02, 0.98], "x").endswith("→ faster")
    assert harness.speed_verdict([0.5, 0.6, 0.55], [1.0, 1.02, 0.98], "x").endswith("→ slower")
    # Pairing matters: the same values, each run's packed rate over the alone rate of its own repeat.
    assert harness.speed_verdict([2.0, 1.0, 1.5], [1.9, 0.95, 1.45], "x").endswith("→ faster")
    # Too few runs for an interval: no verdict at all.
    short = harness.speed_verdict([1.5, 1.6], [1.0, 1.0], "x")
    assert "no verdict" in short and "faster" not in short and "slower" not in short
