"""Ranking accuracy over seeds (a replicated zoo: every candidate trained with several seeds): each seed's candidates
ranked among themselves (view fewshot_seed_accuracy), and the mean and seed-level t interval over the seeds
(analysis/ranking/over_seeds.py) — on a hand-made 3-seed store with probe pools (no training), through `beluga rank`
and the report, against hand-computed values and a recomputation from the store's raw rows."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import query, run_cli

from beluga_core.analysis.ranking.over_seeds import over_seeds, read_over_seeds
from beluga_core.analysis.replicates.intervals import t_interval
from beluga_core.execution.results import JobResult, ModelRecord, Outcomes, ProbeResult
from beluga_core.store.reader import open_store
from beluga_core.store.rows import CaseRow, SplitRows, SuiteRow
from beluga_core.store.writer import StoreWriter

SUITE = "seeds-toy"
LEVEL = "topic"
SPLIT = "split-1"
GROUPS = ("g1", "g2")
N_POOL, N_TEST = 3, 4                # per group: pool cases (T_train ∪ T_val) and T_test cases (truths in quarters)
CANDIDATES = (("iid", "standard"), ("iid-then-t", LEVEL), ("iid-plus-t", LEVEL))
# Per seed and group, per candidate (iid, iid-then-t, iid-plus-t): how many of the group's 4 T_test cases it passes
# (its truth) and whether it passes every pool case (1) or none (0), so that its ACC is the same on every probe and
# each pair's PA is 1 (ordered as the truth), 0 (reversed), 0.5 (tied) whatever the probes.
PLAN: dict[int, dict[str, tuple[tuple[int, int], ...]]] = {
    1: {"g1": ((1, 0), (2, 1), (3, 1)), "g2": ((1, 0), (2, 0), (3, 1))},
    2: {"g1": ((1, 1), (2, 0), (3, 1)), "g2": ((1, 0), (1, 0), (3, 1))},
    3: {"g1": ((3, 0), (2, 0), (1, 1)), "g2": ((1, 0), (2, 1), (3, 1))},
}
# By hand, (iid, then-t), (iid, plus-t), (then-t, plus-t):
# seed 1: g1 truths ¼ ½ ¾, ACC 0 1 1: 1, 1, ½ (tie) → 5/6; g2 ¼ ½ ¾, ACC 0 0 1: ½, 1, 1 → 5/6; seed 1: 5/6.
# seed 2: g1 ¼ ½ ¾, ACC 1 0 1: 0, ½, 1 → 1/2; g2 ¼ ¼ ¾ (the first pair's truths are equal: excluded), ACC 0 0 1:
#         1, 1 → 1; seed 2: (1/2 + 1) / 2 = 3/4.
# seed 3: g1 ¾ ½ ¼, ACC 0 0 1: ½, 0, 0 → 1/6; g2 ¼ ½ ¾, ACC 0 1 1: 5/6; seed 3: (1/6 + 5/6) / 2 = 1/2.
PER_SEED = {1: 5 / 6, 2: 3 / 4, 3: 1 / 2}
PAIRS = {1: 6, 2: 5, 3: 6}
# Over the seeds: mean 25/36; deviations 5/36, 2/36, −7/36, so sd = √(78 / 2) / 36 = √39 / 36 = 0.1734722;
# se = sd / √3 = 0.1001542; t(0.975, 2) = 4.302653: half width 0.4309289.
MEAN = 25 / 36
HALF = 4.302653 * math.sqrt(39) / 36 / math.sqrt(3)


def _case(cid: str, group: str) -> CaseRow:
    return CaseRow(cid, "MFT", {LEVEL: group})


def _spec(cid: str, group: str) -> tuple[str, str]:
    return cid, json.dumps({"id": cid, "groups": {LEVEL: group}, "test_type": "MFT", "loss": "mft",
                            "inputs": [f"sentence {cid}"], "label": "pos", "expectation": {"kind": "label"}})


def fewshot_store(path: Path, seeds: tuple[int, ...] = (1, 2, 3)) -> Path:
    """The level ``topic`` (g1, g2) held out; per seed the IID model and an iid-then-t and an iid-plus-t fold per
    group, with outcomes on the group's T_test cases and probe outcomes on its pool as ``PLAN`` says."""
    pool = {g: [f"{g}-p{j}" for j in range(N_POOL)] for g in GROUPS}
    test = {g: [f"{g}-t{j}" for j in range(N_TEST)] for g in GROUPS}
    writer = StoreWriter(path)
    writer.ensure_suite(SuiteRow(SUITE, (LEVEL,), LEVEL, "text", ("neg", "pos")),
                        [_case(c, g) for g in GROUPS for c in (*pool[g], *test[g])])
    writer.record_split(SplitRows(SPLIT, SUITE, 1, (0.5, 0.0, 0.5), {},
                                  [(c, "train", True) for g in GROUPS for c in pool[g]]
                                  + [(c, "test", True) for g in GROUPS for c in test[g]]))
    writer.record_pools(SPLIT, SUITE, {(LEVEL, g): pool[g] for g in GROUPS})
    writer.record_case_specs(SUITE, [_spec(c, g) for g in GROUPS for c in pool[g]])
    results = []
    for seed in seeds:
        for k, (config, scenario) in enumerate(CANDIDATES):
            for group in (None,) if scenario == "standard" else GROUPS:
                groups = GROUPS if group is None else (group,)
                truth = {g: PLAN[seed][g][k][0] for g in groups}
                probe = {g: "pass" if PLAN[seed][g][k][1] else "fail" for g in groups}
                tested = [c for g in groups for c in test[g]]
                pooled = [c for g in groups for c in pool[g]]
                record = ModelRecord(model_id=f"{config}/{scenario}/{group}/{seed}", task="sentiment", suite=SUITE,
                                     model_name="toy", config=config, method="vanilla", scenario=scenario,
                                     heldout_level=None if group is None else LEVEL, heldout_group=group, seed=seed,
                                     split_seed=1, split_id=SPLIT)
                outcomes = Outcomes.of(tested, ["pass" if j < truth[c.split("-")[0]] else "fail"
                                                for c in tested for j in [int(c.split("-t")[1])]])
                probes = ProbeResult(Outcomes.of(pooled, [probe[c.split("-")[0]] for c in pooled]), None)
                results.append(JobResult(record, outcomes, probes=probes))
    writer.commit_many(results)
    return path


def _rank(capsys: pytest.CaptureFixture[str], store: Path, *extra: str) -> str:
    code, out, err = run_cli(capsys, "rank", store, "--level", LEVEL, "--signals", "acc", "--n", "2",
                             "--bootstrap", "20", "--seed", "0", *extra)
    assert code == 0, out + err
    return " ".join(out.split())


def test_each_seeds_candidates_ranked_among_themselves_known_answer(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = fewshot_store(tmp_path / "s.duckdb")
    out = _rank(capsys, store)
    # The view: per seed, the hand-computed accuracy over that seed's pairs, on both groups.
    rows = query(store, "SELECT seed, accuracy, pairs, n_groups, stale FROM fewshot_seed_accuracy WHERE signal = 'acc' "
                        "ORDER BY seed")
    assert [(s, n, g, st) for s, _, n, g, st in rows] == [(1, 6, 2, False), (2, 5, 2, False), (3, 6, 2, False)]
    assert [a for _, a, *_ in rows] == pytest.approx([PER_SEED[1], PER_SEED[2], PER_SEED[3]], abs=1e-12)
    # Over the seeds: the project's seed-level t interval, by hand.
    with open_store(store) as con:
        ((_, signal), o), = read_over_seeds(con).items()
    assert signal == "acc" and o.seeds == ("1", "2", "3") and o.pairs == (6, 5, 6)
    assert (o.interval.mean, o.interval.lo, o.interval.hi) == pytest.approx((MEAN, MEAN - HALF, MEAN + HALF), abs=1e-6)
    assert o.interval.df == 2
    # `beluga rank` prints it under its ranking table (percent, one decimal): 69.4 [26.4, 112.5] over 3 seeds.
    assert "Ranking accuracy over 3 seeds" in out
    assert "69.4 [26.4, 112.5]" in out and "1: 83.3, 2: 75.0, 3: 50.0" in out
    # The pooled ranking ranks every candidate of a group against every other, across seeds too: 9 per group.
    ((pooled_pairs,),) = query(store, "SELECT pairs_used FROM fewshot_accuracy WHERE signal = 'acc'")
    assert pooled_pairs > sum(PAIRS.values())


def test_the_over_seed_figures_recomputed_from_the_raw_rows(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """From the raw tables only (outcomes, probe_outcomes, models, cases): each candidate's truth and its ACC on the
    pool (every probe case the same), each same-seed pair's PA (1, 0 or ½ for a tie), per group then per seed, then
    mean ± t(2)·sd/√3 — none of it through beluga's ranking code or views."""
    store = fewshot_store(tmp_path / "s.duckdb")
    _rank(capsys, store)
    models = {m: (seed, config) for m, seed, config in query(store, "SELECT model_id, seed, config FROM models")}
    truth = {(m, g): p / n for m, g, p, n in query(store, f"""
        SELECT o.model_id, c.groups->>'{LEVEL}', count(*) FILTER (WHERE o.outcome = 'pass'), count(*)
        FROM outcomes o JOIN cases c USING (suite, case_id) GROUP BY ALL""")}
    acc = {(m, g): p / n for m, g, p, n in query(store, f"""
        SELECT o.model_id, c.groups->>'{LEVEL}', count(*) FILTER (WHERE o.outcome = 'pass'), count(*)
        FROM probe_outcomes o JOIN cases c USING (suite, case_id) GROUP BY ALL""")}
    per_group: dict[tuple[int, str], list[float]] = defaultdict(list)
    for g in GROUPS:
        blind = sorted(m for m in models if (m, g) in truth and (m, g) in acc)
        for i, a in enumerate(blind):
            for b in blind[i + 1:]:
                if models[a][0] != models[b][0] or truth[(a, g)] == truth[(b, g)]:
                    continue
                want = truth[(a, g)] > truth[(b, g)]
                pa = 0.5 if acc[(a, g)] == acc[(b, g)] else float((acc[(a, g)] > acc[(b, g)]) == want)
                per_group[(models[a][0], g)].append(pa)
    per_seed: dict[int, list[float]] = defaultdict(list)
    for (seed, _), pas in sorted(per_group.items()):
        per_seed[seed].append(sum(pas) / len(pas))
    by_hand = [sum(v) / len(v) for _, v in sorted(per_seed.items())]
    assert by_hand == pytest.approx([PER_SEED[s] for s in (1, 2, 3)], abs=1e-12)
    mean = sum(by_hand) / 3
    sd = math.sqrt(sum((x - mean) ** 2 for x in by_hand) / 2)
    half = 4.302653 * sd / math.sqrt(3)
    with open_store(store) as con:
        (o,) = read_over_seeds(con).values()
    assert (o.interval.mean, o.interval.lo, o.interval.hi) == pytest.approx((mean, mean - half, mean + half), abs=1e-6)
    # The stored pairs beluga ranked are these pairs, with these PAs.
    stored = sorted((r[0], round(r[1], 12)) for r in query(store, """
        SELECT grp, pa FROM fewshot_results r JOIN models a ON a.model_id = r.model_a
        JOIN models b ON b.model_id = r.model_b WHERE a.seed = b.seed AND signal = 'acc'"""))
    assert stored == sorted((g, round(p, 12)) for (_, g), pas in per_group.items() for p in pas)


def test_the_report_shows_it_beside_the_ranking(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from beluga_core.analysis.report.fewshot_tables import SEEDS_HEADER, build_fewshot
    from beluga_core.analysis.report.report_data import read_report_data

    store = fewshot_store(tmp_path / "s.duckdb")
    _rank(capsys, store)
    data = read_report_data(store)
    (table,) = build_fewshot(data.fewshot, data.fewshot_pairs, None, data.grid_on_seen, data.fewshot_seeds)
    assert table.seed_rows == [["acc", "69.4 [26.4, 112.5]", "3", "1: 83.3, 2: 75.0, 3: 50.0"]]
    assert SEEDS_HEADER[1] == "accuracy over seeds % [95 % t]"
    code, _, err = run_cli(capsys, "report", store, "--format", "md", "--out", tmp_path / "r")
    assert code == 0, err
    md = next((tmp_path / "r").rglob("*.md")).read_text(encoding="utf-8")
    assert "| acc | 69.4 [26.4, 112.5] | 3 | 1: 83.3, 2: 75.0, 3: 50.0 |" in md
    assert "each seed's candidates ranked among themselves" in md


def test_one_seed_gives_no_figure_over_seeds_and_no_save_says_where_it_is(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    one = fewshot_store(tmp_path / "one.duckdb", seeds=(2,))
    out = _rank(capsys, one)
    assert "Few-shot ranking on level 'topic'" in out and "Ranking accuracy over" not in out
    assert [r[0] for r in query(one, "SELECT seed FROM fewshot_seed_accuracy")] == [2]
    with open_store(one) as con:
        assert read_over_seeds(con) == {}
    three = fewshot_store(tmp_path / "three.duckdb")
    out = _rank(capsys, three, "--no-save")
    assert "trained with 3 seeds" in out and "without --no-save" in out
    assert query(three, "SELECT count(*) FROM fewshot_rankings") == [(0,)]


def test_over_seeds_leaves_out_a_seed_without_a_figure_and_reuses_the_t_interval() -> None:
    base = {"rank_id": "r", "signal": "acc", "attribution": "", "split_seed": 1, "model_name": "m", "variant": "",
            "stale": False}
    rows = [base | {"seed": 1, "accuracy": 0.5, "pairs": 3}, base | {"seed": 2, "accuracy": 0.7, "pairs": 3},
            base | {"seed": 3, "accuracy": None, "pairs": 2},      # every pair excluded (ties = exclude)
            base | {"seed": 1, "accuracy": 0.9, "pairs": 1, "signal": "conf"}]
    got = over_seeds(rows)
    assert set(got) == {("r", "acc")}                              # conf has one seed with a figure: no interval
    assert got[("r", "acc")].interval == t_interval([0.5, 0.7]) and got[("r", "acc")].seeds == ("1", "2")
    # Two draws of one seed under two variants are two replicates, labelled apart.
    two = over_seeds([base | {"seed": 1, "accuracy": 0.5, "pairs": 3},
                      base | {"seed": 1, "accuracy": 0.6, "pairs": 3, "variant": "b"}])
    assert two[("r", "acc")].seeds == ("1", "1~b")
