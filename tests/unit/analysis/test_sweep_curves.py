"""The sweep curve (``sweep_curve`` / ``sweep_curve_seeds`` views, ``analysis.sweeps.curves``) on a hand-made store
whose swept effect is planted: known answers, computed here by hand from the planted counts, not by beluga."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from helpers import query
from store_builder import FUNCTIONALITIES, make_cases, suite_row

from beluga_core.analysis.report.section import Table
from beluga_core.analysis.report.sections.curves import curve_sections
from beluga_core.analysis.significance.multiplicity import holm
from beluga_core.analysis.sweeps.curves import read_curves
from beluga_core.execution.results import IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.writer import StoreWriter

SEEDS = (1, 2, 3)
# The planted effect: per point (T_train cases per group), how many of a group's 20 T_test cases the seen model
# passes; the functionality folds (every group held out) pass 4 fewer, the class fold (only the class Negation held
# out: f2, f4, f5, as `[sizes] groups_per_level` samples) 2 fewer; seed k passes k − 2 more in every group. The IID
# baseline passes BASELINE of a group's 20, unevenly, so that its s_T on Negation's cases (0.7, 0.5, 0.5: 17/30) is
# not its s_T on all cases (0.54): a comparison with the class scenario must use the former. Every model gets 6 of
# 10 D_test examples right.
POINTS = {2: 12, 8: 16}
VARIANT = {2: "suite_train_per_group-2", 8: "suite_train_per_group-8"}
BASELINE = {"f1": 4, "f2": 14, "f3": 16, "f4": 10, "f5": 10}
NEGATION = ("f2", "f4", "f5")
BASE_ALL, BASE_NEGATION = 0.54, 17 / 30
T_975_2 = 4.302652729911275   # the 97.5 % quantile of t with 2 degrees of freedom


def _outcomes(group: str, n_pass: int) -> dict[str, str]:
    return {f"{group}-{j}": "pass" if j < n_pass else "fail" for j in range(20)}


def _g(s: float, s_iid: float) -> float:
    return 2 * s * s_iid / (s + s_iid)


class _Writer:
    def __init__(self, path: Path) -> None:
        self.writer = StoreWriter(path)
        self.writer.ensure_suite(suite_row(), make_cases())
        self.clock = datetime(2024, 6, 1)

    def add(self, mid: str, config: str, scenario: str, group: str | None, seed: int, variant: str,
            outcomes: dict[str, str], iid_correct: int | None = None) -> str:
        self.clock += timedelta(seconds=1)
        iid = []
        if iid_correct is not None:
            correct = [i < iid_correct for i in range(10)]
            gold = [str(i % 2) for i in range(10)]
            pred = [g if ok else str(1 - int(g)) for g, ok in zip(gold, correct, strict=True)]
            iid = [IIDResult("test", gold, pred, np.asarray(correct), {"accuracy": iid_correct / 10}, "accuracy")]
        record = ModelRecord(model_id=mid, task="sentiment", suite="toy", model_name="toy-bert", config=config,
                             method="vanilla", scenario=scenario, heldout_group=group,
                             heldout_level=None if group is None else scenario, seed=seed, split_seed=1,
                             variant=variant, finished_at=self.clock)
        ids = list(outcomes)
        self.writer.commit_many([JobResult(record, Outcomes.of(ids, [outcomes[c] for c in ids],
                                                               [None] * len(ids)), iid)])
        return mid


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("curve") / "curve.duckdb"
    w = _Writer(path)
    groups = list(FUNCTIONALITIES)
    # The IID baseline: one model per seed, written under the first point's variant and shared by both points.
    iid = [w.add(f"iid-{k}", "iid", "standard", None, k, VARIANT[2],
                 {c: o for g in groups for c, o in _outcomes(g, BASELINE[g]).items()}, iid_correct=6) for k in SEEDS]
    for value, n in POINTS.items():
        ids = list(iid)
        for k in SEEDS:
            d = k - 2
            ids.append(w.add(f"seen-{value}-{k}", "iid-then-t", "seen", None, k, VARIANT[value],
                             {c: o for g in groups for c, o in _outcomes(g, n + d).items()}, iid_correct=6))
            for g in groups:
                ids.append(w.add(f"fn-{value}-{k}-{g}", "iid-then-t", "functionality", g, k, VARIANT[value],
                                 _outcomes(g, n - 4 + d)))
            ids.append(w.add(f"cls-{value}-{k}", "iid-then-t", "class", "Negation", k, VARIANT[value],
                             {c: o for g in NEGATION for c, o in _outcomes(g, n - 2 + d).items()}))
        w.writer.record_sweep_point({"variant": VARIANT[value], "sweep": "planted", "base_variant": "",
                                     "position": list(POINTS).index(value), "axis": "sizes.suite_train_per_group",
                                     "value": value, "values": {"sizes.suite_train_per_group": value},
                                     "capped": {}}, ids)
    return path


def _mean_sd(xs: list[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


# Per scenario: the passes of a group at point n (seed offset added apart), and the baseline's s_T on its cases.
SCENARIOS = {"seen": (0, BASE_ALL), "functionality": (-4, BASE_ALL), "class": (-2, BASE_NEGATION)}


def test_the_curve_view_has_the_planted_scores_at_every_point(store: Path) -> None:
    rows = {(r[0], r[1], r[2]): r[3:] for r in query(store, """
        SELECT value, config, scenario, n_seeds, s_suite, s_iid, g, g_sd, n_paired, delta_g, delta_g_sd
        FROM sweep_curve""")}
    for value, n in POINTS.items():
        # The shared IID baseline counts at both points, once per seed.
        n_seeds, s_t, s_iid, g, g_sd, *_ = rows[(value, "iid", "standard")]
        assert (n_seeds, s_t, s_iid) == (3, pytest.approx(BASE_ALL), pytest.approx(0.6))
        assert g == pytest.approx(_g(BASE_ALL, 0.6)) and g_sd == pytest.approx(0.0, abs=1e-12)
        for scenario, (offset, base_t) in SCENARIOS.items():
            per_seed = [_g((n + offset + k - 2) / 20, 0.6) for k in SEEDS]
            mean, sd = _mean_sd(per_seed)
            n_seeds, s_t, s_iid, g, g_sd, n_paired, delta, delta_sd = rows[(value, "iid-then-t", scenario)]
            assert n_seeds == 3 and n_paired == 3
            assert s_t == pytest.approx((n + offset) / 20) and s_iid == pytest.approx(0.6)
            assert g == pytest.approx(mean) and g_sd == pytest.approx(sd)
            # Against the baseline on the scenario's own cases: Negation's for the class fold.
            assert delta == pytest.approx(mean - _g(base_t, 0.6)) and delta_sd == pytest.approx(sd)


def _t_p(diffs: list[float]) -> float:
    from scipy import stats

    m, s = _mean_sd(diffs)
    return float(2 * stats.t.sf(abs(m) / (s / math.sqrt(len(diffs))), len(diffs) - 1))


def test_the_curve_intervals_verdicts_and_holm_follow_the_planted_effect(store: Path) -> None:
    curves = read_curves(store)
    seen8 = next(r for r in curves.rows if r.value == 8 and r.config == "iid-then-t" and r.scenario == "seen")
    per_seed = [_g((16 + k - 2) / 20, 0.6) for k in SEEDS]
    mean, sd = _mean_sd(per_seed)
    assert seen8.g.lo == pytest.approx(mean - T_975_2 * sd / math.sqrt(3))
    assert seen8.g.hi == pytest.approx(mean + T_975_2 * sd / math.sqrt(3))
    # Per point: the three scenarios against the baseline, s_iid against it (a difference of 0), and the chain
    # seen > functionality > class (5 functionalities, 2 classes): 6 tests, 12 in all, Holm over the 12.
    assert curves.n_tests == {"planted": 12}
    verdicts = {(v.value, v.kind, v.a, v.b): v for v in curves.verdicts}
    raw = {}
    for value, n in POINTS.items():
        for scenario, (offset, base_t) in SCENARIOS.items():
            raw[(value, "baseline", scenario, "IID baseline")] = _t_p(
                [_g((n + offset + k - 2) / 20, 0.6) - _g(base_t, 0.6) for k in SEEDS])
        # seen − functionality on every case; functionality − class on Negation's cases, where the functionality
        # folds pass n − 4 + d and the class fold n − 2 + d. G is not linear in s_T: the differences vary by seed.
        raw[(value, "order", "seen", "functionality")] = _t_p(
            [_g((n + k - 2) / 20, 0.6) - _g((n - 4 + k - 2) / 20, 0.6) for k in SEEDS])
        raw[(value, "order", "functionality", "class")] = _t_p(
            [_g((n - 4 + k - 2) / 20, 0.6) - _g((n - 2 + k - 2) / 20, 0.6) for k in SEEDS])
        raw[(value, "iid", "s_iid", "IID baseline")] = 1.0
    assert set(verdicts) == set(raw)
    keys = sorted(raw)
    adjusted = dict(zip(keys, holm([raw[k] for k in keys]), strict=True))
    for key, v in verdicts.items():
        assert v.diff.p == pytest.approx(raw[key], abs=1e-12), key
        assert v.p_holm == pytest.approx(adjusted[key], abs=1e-12), key
        expected = "not resolved" if adjusted[key] >= 0.05 else ("holds" if v.diff.mean > 0 else "reversed")
        assert v.verdict == expected, key
    # The planted orderings: seen above functionality, functionality below class (on Negation's cases).
    assert verdicts[(2, "order", "seen", "functionality")].verdict == "holds"
    assert verdicts[(2, "order", "functionality", "class")].verdict == "reversed"


def test_every_mark_agrees_with_its_verdict_and_interval(store: Path) -> None:
    (section,) = curve_sections(read_curves(store), None)
    verdict_table = next(b for b in section.blocks if isinstance(b, Table) and b.title.startswith("Verdicts"))
    header = verdict_table.header
    for row in verdict_table.rows:
        delta, interval, verdict = (row[header.index(h)] for h in ("Δ (points)", "95 % interval", "verdict"))
        if delta.mark == "better":
            assert verdict.text == "holds" and delta.text.startswith("+")
            assert float(interval.text.strip("[]").split(",")[0]) > 0
        elif delta.mark == "worse":
            assert verdict.text == "reversed" and delta.text.startswith("-")
        else:
            assert verdict.text not in ("holds", "reversed")


def test_holm_known_answer() -> None:
    # Sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 → made non-decreasing: 0.06 for the last.
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []
