"""Like for like at crossing levels (issue 52); the marks of every renderer: tests/e2e/test_crossing_run.py.

A crossing level's scenario (a level some cases have no group at: `crossing_levels`) scores only the cases with a group
there, so every figure set beside it is computed on those cases too: its Δ, test and interval against the IID baseline,
the baseline's G and s_T in its column, and the seen scenario's on the same cases. The hand-made store below is the one
that printed "ΔG −2.2 ▲" (the issue's "−0.8 ▲"): a scenario whose difference from the baseline is negative over every
case and positive, significantly, on the cases it scores.

Its outcomes are laid out so that every figure is a fraction by hand (CROSSING_TARGETS in store_builder): per
functionality 20 cases with a target (f1, f2, f4; f3 none) and 20 without (f3, f4). A model passes a case with a target
iff its index j < the threshold of its plan, one without iff its index k < the other threshold.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from crossing_stores import ROUNDS, TASK, crossing_store, g, partial_store
from helpers import query
from scipy import stats

from beluga_core.analysis.refresh import refresh
from beluga_core.analysis.replicates.intervals import Replicates, aligned, difference_intervals

# ------------------------------------------------------------------------------------------------ known answers

# s_T by hand (PLAN): over every case, and on the cases with a target (f1, f2, f4; f3 has none).
S_ALL = {"iid": (0.5 + 0.5 + 1.0 + 30 / 40) / 4, "lora": (0.8 + 0.8 + 0.3 + 22 / 40) / 4, "weak": 0.6}
S_TARGET = {"iid": 0.5, "lora": 0.8, "weak": 0.6}                  # the seen (standard) scenario on target cases
S_HELD = {"lora": 0.65, "weak": 0.35}                              # the target scenario
S_IID = {"iid": 0.8, "lora": 0.8, "weak": 0.6}


@pytest.fixture(scope="module")
def one_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = crossing_store(tmp_path_factory.mktemp("one") / "s.duckdb")
    refresh(path, rounds=ROUNDS)
    return path


def _dicts(store: Path, sql: str) -> list[dict]:
    import duckdb

    con = duckdb.connect(str(store), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def test_the_crossing_level_and_the_seen_and_standard_scores_on_its_cases(one_seed: Path) -> None:
    assert query(one_seed, "SELECT * FROM crossing_levels") == [(TASK, "hate", "target")]
    rows = {(r["config"], r["cases_of"]): r for r in _dicts(one_seed, """
        SELECT * FROM g_scores_on_cases WHERE scenario IN ('seen', 'standard')""")}
    # Every case, as g_scores has them; on the target cases: 60 of the 100, in 3 of the 4 functionalities.
    for config in ("iid", "lora", "weak"):
        every, target = rows[(config, None)], rows[(config, "target")]
        assert (every["s_suite"], every["n_cases"], every["n_groups"]) == (pytest.approx(S_ALL[config]), 100, 4)
        assert (target["s_suite"], target["n_cases"], target["n_groups"]) == (pytest.approx(S_TARGET[config]), 60, 3)
        assert target["g"] == pytest.approx(g(S_TARGET[config], S_IID[config]))
    # Held-out scenarios have no restricted rows; the plain views are the every-case rows.
    assert query(one_seed, """SELECT count(*) FROM g_scores_on_cases
                              WHERE cases_of IS NOT NULL AND scenario = 'target'""") == [(0,)]
    assert query(one_seed, "SELECT count(*) FROM g_scores") == \
        query(one_seed, "SELECT count(*) FROM g_scores_on_cases WHERE cases_of IS NULL")
    rates = {r[0]: r[1] for r in query(one_seed, """SELECT scoring_group, pass_rate FROM pass_rates_on_cases
                                                   WHERE config = 'iid' AND cases_of = 'target'""")}
    assert rates == {"f1": 0.5, "f2": 0.5, "f4": 0.5}


def test_the_difference_and_test_against_the_baseline_are_on_the_shared_cases(one_seed: Path) -> None:
    sig = {(r["config"], r["scenario"]): r
           for r in _dicts(one_seed, "SELECT * FROM significance WHERE scope = 'replicate'")}
    lora = sig[("lora", "target")]
    # Over every case the baseline's G would be g(0.6875, 0.8) = 0.7395 and ΔG −2.2; on the 60 shared cases it is +10.2.
    assert lora["base_g"] == pytest.approx(g(S_TARGET["iid"], S_IID["iid"]))
    assert lora["g"] == pytest.approx(g(S_HELD["lora"], S_IID["lora"]))
    assert lora["delta_g"] == pytest.approx(g(0.65, 0.8) - g(0.5, 0.8)) and lora["delta_g"] > 0
    assert (lora["g_mark"], lora["status"]) == ("better", "current") and lora["p_g"] < 0.05
    weak = sig[("weak", "target")]
    assert weak["delta_g"] == pytest.approx(g(0.35, 0.6) - g(0.5, 0.8)) and weak["g_mark"] == "worse"
    # A scenario of every case against the baseline over every case, as before.
    assert sig[("lora", "seen")]["delta_g"] == pytest.approx(g(S_ALL["lora"], 0.8) - g(S_ALL["iid"], 0.8))
    # The stored test is of the same difference, on the same 60 cases.
    (test,) = _dicts(one_seed, """SELECT * FROM significance_tests WHERE scope = 'replicate' AND config = 'lora'
                                  AND scenario = 'target'""")
    assert (test["n_cases"], test["s_suite"], test["base_s_suite"]) == (60, pytest.approx(0.65), pytest.approx(0.5))
    assert test["delta_g"] == pytest.approx(lora["delta_g"], abs=1e-12)
    # The Avg. (both scenarios, one task) is the mean of the two differences, as its pooled test's.
    (avg,) = _dicts(one_seed, """SELECT * FROM significance WHERE scope = 'mean_over_tasks' AND config = 'lora'
                                 AND scenario IS NULL""")
    expected = (lora["delta_g"] + sig[("lora", "seen")]["delta_g"]) / 2
    assert avg["delta_g"] == pytest.approx(expected)
    (pooled,) = _dicts(one_seed, """SELECT delta_g FROM significance_tests WHERE scope = 'mean_over_tasks'
                                    AND config = 'lora' AND scenario IS NULL""")
    assert pooled["delta_g"] == pytest.approx(expected)


def test_table3_shows_the_baseline_and_seen_on_the_crossing_levels_cases(one_seed: Path) -> None:
    rows = {(r["kind"], r["config"], r["scenario"]): r for r in _dicts(one_seed, "SELECT * FROM table3")}
    base = rows[("g", "iid", "target")]
    assert (base["value"], base["s_suite"], base["source_scenario"]) == \
        (pytest.approx(g(0.5, 0.8)), pytest.approx(0.5), "standard")
    assert rows[("g", "iid", "seen")]["value"] == pytest.approx(g(S_ALL["iid"], 0.8))   # every case, as before
    assert rows[("g", "lora", "target")]["s_suite"] == pytest.approx(S_HELD["lora"])
    for config in ("iid", "lora", "weak"):
        seen = rows[("cases", config, "target")]
        assert (seen["value"], seen["s_suite"]) == (pytest.approx(g(S_TARGET[config], S_IID[config])),
                                                    pytest.approx(S_TARGET[config]))
        assert seen["source_scenario"] == ("standard" if config == "iid" else "seen")
    # The baseline's Avg. is the mean of its columns (the target one on the target cases).
    assert rows[("avg", "iid", None)]["value"] == pytest.approx((g(S_ALL["iid"], 0.8) + g(0.5, 0.8)) / 2)
    # Beside each other on the same cases, seen is above the held-out targets (0.8 against 0.65), the reverse of
    # every case's seen (0.6125) against them.
    assert rows[("cases", "lora", "target")]["s_suite"] > rows[("g", "lora", "target")]["s_suite"] > S_ALL["lora"]


def test_the_reports_place_and_explain_the_restricted_columns(one_seed: Path, tmp_path: Path) -> None:
    from beluga_core.analysis.report.g_table_data import Column, build_g_table, crossing_notes
    from beluga_core.analysis.report.heatmap_figures import heatmaps
    from beluga_core.analysis.report.report_data import read_report_data
    from beluga_core.analysis.report.sections.worst_groups import worst_groups_of

    data = read_report_data(one_seed)
    table = build_g_table(data)
    assert [c.label for c in table.task_columns(TASK)] == ["i.i.d.", "G seen", "G target", "G seen (target cases)"]
    seen_on_target = Column(TASK, "seen", "target")
    assert table.cell(("lora", "vanilla"), seen_on_target).value == pytest.approx(0.8)
    assert table.cell(("lora", "vanilla"), seen_on_target).mark is None       # not a comparison with the baseline
    # The baseline's restricted figures carry no ± (the stored intervals are over every case).
    assert table.cell(("iid", "vanilla"), Column(TASK, "target")).pm is None
    assert table.cell(("iid", "vanilla"), Column(TASK, "seen")).pm is not None
    assert table.cell(("lora", "vanilla"), Column(TASK, "target")).mark == "better"
    (note,) = crossing_notes(table)
    assert note.startswith("target: a crossing level") and "'seen (target cases)'" in note
    maps = {h.scenario: h for h in heatmaps(data)}
    target, seen = maps["target"], maps["seen"]
    assert target.cases_of == "target" and seen.cases_of is None
    i = target.rows.index(("iid", "vanilla"))
    assert target.values[i, 0] == pytest.approx(0.5)
    assert list(target.values[i, 1:]) == pytest.approx([0.5, 0.5, float("nan"), 0.5], nan_ok=True)
    assert list(seen.values[seen.rows.index(("iid", "vanilla")), 1:]) == pytest.approx([0.5, 0.5, 1.0, 0.75])
    worst = worst_groups_of(data, [target])
    assert worst[(TASK, "hate", "target")][("iid", "vanilla")].value == pytest.approx(0.5)


def test_intervals_over_seeds_pair_the_shared_cases(tmp_path: Path) -> None:
    store = crossing_store(tmp_path / "s.duckdb", (42, 43, 44))
    refresh(store, rounds=ROUNDS)
    diff = {r["statistic"]: r for r in _dicts(store, """SELECT * FROM replicate_summary WHERE config = 'lora'
                                                        AND scenario = 'target' AND base_config = 'iid'""")}
    # lora's f2 threshold 13, 14, 15: s_T 0.65, 0.6667, 0.6833 on the 60 cases with a target, the baseline 0.5 there.
    s_held = np.array([(0.65 + (13 + i) / 20 + 0.65) / 3 for i in range(3)])
    for statistic, per_seed in (("s_suite", s_held - 0.5), ("g", np.array([g(s, 0.8) - g(0.5, 0.8) for s in s_held]))):
        row = diff[statistic]
        assert row["n_cases"] == 60 and row["n_seeds"] == 3
        half = stats.t.ppf(0.975, 2) * per_seed.std(ddof=1) / math.sqrt(3)
        assert (row["mean"], row["seed_lo"], row["seed_hi"]) == pytest.approx(
            (per_seed.mean(), per_seed.mean() - half, per_seed.mean() + half))
        assert row["ordering"] == "A > B"
    # Over every case the old pairing gave lora's 0.65–0.68 against the baseline's 0.6875: a "lower" verdict.
    assert diff["s_suite"]["mean"] > 0


def _rep(case_ids: list[str], groups: list[str], passed: list[list[int]]) -> Replicates:
    names = tuple(sorted(set(groups)))
    p = np.array(passed, dtype=float)
    return Replicates(tuple(range(len(passed))), names, np.array([names.index(x) for x in groups]), p,
                      np.ones_like(p), None, case_ids=tuple(case_ids))


def test_aligned_keeps_the_cases_both_cells_have() -> None:
    # A: a crossing level's scenario, cases a1, a2 (group f1) and b1 (f2); B: the baseline, those and c1 (f3).
    a = _rep(["a1", "a2", "b1"], ["f1", "f1", "f2"], [[1, 1, 1], [1, 0, 1]])
    b = _rep(["a1", "a2", "b1", "c1"], ["f1", "f1", "f2", "f3"], [[0, 1, 0, 1], [0, 0, 0, 1]])
    xa, xb = aligned(a, b)
    assert xa.case_ids == xb.case_ids == ("a1", "a2", "b1") and xa.groups == xb.groups == ("f1", "f2")
    assert xb.passed.tolist() == [[0, 1, 0], [0, 0, 0]]
    # s_T: A (1 + 1) / 2 and (0.5 + 1) / 2; B on the same cases (0.5 + 0) / 2 and 0: differences 0.75, 0.75 (the
    # union would have counted B's c1 and given 1 − 0.5 = 0.5 and 0.75 − 0.333 = 0.417).
    assert (xa.per_seed("s_suite") - xb.per_seed("s_suite")).tolist() == pytest.approx([0.75, 0.75])
    ivs = difference_intervals(a, b, ["s_suite"], 200, np.random.default_rng(0))
    assert ivs["s_suite"]["seed"].mean == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no case"):
        aligned(a, _rep(["z"], ["f9"], [[1], [1]]))


def test_a_held_out_scenario_with_folds_missing_is_compared_on_the_cases_it_has(tmp_path: Path) -> None:
    """Not a crossing level, the same rule: the Δ beside a test is the tested one; Table 3, whose baseline figure is
    over every case, drops a mark its two figures contradict."""
    from beluga_core.analysis.report.g_table_data import Column, build_g_table
    from beluga_core.analysis.report.report_data import read_report_data

    store = partial_store(tmp_path / "s.duckdb")
    refresh(store, rounds=ROUNDS)
    (row,) = _dicts(store, "SELECT * FROM significance WHERE scope = 'replicate' AND scenario = 'functionality'")
    # On f1 and f2: 0.5 against 0.2 (over every case the baseline's 0.62 would make it −0.12).
    assert row["delta_g"] == pytest.approx(g(0.5, 0.8) - g(0.2, 0.8))
    assert row["g_mark"] == "better" and row["p_g"] < 0.05
    (test,) = _dicts(store, """SELECT delta_g, n_cases FROM significance_tests WHERE scope = 'replicate'
                               AND scenario = 'functionality'""")
    assert (test["n_cases"], test["delta_g"]) == (40, pytest.approx(row["delta_g"], abs=1e-12))
    table = build_g_table(read_report_data(store, figures=False))
    cell = table.cell(("part", "vanilla"), Column("sentiment", "functionality"))
    base = table.cell(("iid", "vanilla"), Column("sentiment", "functionality"))
    assert cell.partial and cell.value == pytest.approx(g(0.5, 0.8)) and base.value == pytest.approx(g(0.62, 0.8))
    assert cell.mark is None
