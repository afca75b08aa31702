"""s_iid in the task's configured metric: the vectorised forms against scikit-learn, and a store whose metric is not
accuracy giving that metric in every figure over seeds and every per-seed test (issue 52)."""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import DATA
from scipy import stats
from sklearn.metrics import f1_score

from beluga_core.analysis.refresh import refresh
from beluga_core.analysis.replicates.intervals import IidParts
from beluga_core.analysis.significance.tests_on_counts import IidCounts, randomization_test
from beluga_core.evaluation.metric_forms import (
    CLASS_F1,
    MACRO_F1,
    MEAN,
    MICRO_F1,
    MetricForm,
    class_parts,
    form_of,
    parts_of,
)
from beluga_core.evaluation.metrics import macro_f1
from tests.helpers import query
from tests.store_builder import LABELS, StoreBuilder, make_cases

K = 4            # classes; the last is relation's NA


def _sklearn(kind: str, gold: np.ndarray, pred: np.ndarray) -> float:
    if kind == MACRO_F1:
        return float(f1_score(gold, pred, average="macro", labels=np.union1d(gold, pred)))
    if kind == MICRO_F1:
        return float(f1_score(gold, pred, average="micro", labels=list(range(K - 1)), zero_division=0))
    return float(f1_score(gold, pred, average="binary", pos_label=1, zero_division=0)
                 if set(np.union1d(gold, pred)) <= {0, 1} else
                 f1_score(gold, pred, labels=[1], average="macro", zero_division=0))


def test_known_answers_by_hand() -> None:
    # gold 0 0 1 2, pred 0 1 1 1: class 0 TP 1 FN 1 → 2/3; class 1 TP 1 FP 2 → 1/2; class 2 FN 1 → 0.
    parts = class_parts(np.array([0, 0, 1, 2]), np.array([0, 1, 1, 1]), 3)
    sums = parts.sum(axis=0)
    assert MetricForm(MACRO_F1, 3).value(sums, 4) == pytest.approx(7 / 18)
    # Without class 2 (NA): TP 2, FP 2, FN 1 → 2·2 / (4 + 2 + 1).
    assert MetricForm(MICRO_F1, 3, na=2).value(sums, 4) == pytest.approx(4 / 7)
    assert MetricForm(CLASS_F1, 3, positive=1).value(sums, 4) == pytest.approx(1 / 2)
    assert MetricForm(MEAN).value(np.array([3.0]), 4) == pytest.approx(3 / 4)


@pytest.mark.parametrize("kind", [MACRO_F1, MICRO_F1, CLASS_F1])
def test_resampled_f1_equals_sklearn_on_fixed_draws(kind: str) -> None:
    rng = np.random.default_rng(7)
    n, rounds = 60, 200
    gold = rng.integers(0, K, size=(2, n))
    pred = np.where(rng.random((2, n)) < 0.6, gold, rng.integers(0, K, size=(2, n)))
    form = MetricForm(kind, K, positive=1, na=K - 1)
    cell = IidParts(np.stack([class_parts(gold[s], pred[s], K) for s in range(2)]), form)
    counts = rng.multinomial(n, np.full(n, 1 / n), size=rounds)
    drawn = cell.resampled(counts)                                   # (rounds, seeds): one product per seed
    for r in range(rounds):
        for s in range(2):
            g, p = np.repeat(gold[s], counts[r]), np.repeat(pred[s], counts[r])
            assert drawn[r, s] == pytest.approx(_sklearn(kind, g, p), abs=1e-12)
    assert cell.scores() == pytest.approx([_sklearn(kind, gold[s], pred[s]) for s in range(2)], abs=1e-12)


def test_the_forms_of_the_stored_metrics() -> None:
    assert form_of("accuracy", ["a", "b"]) == MetricForm(MEAN)
    assert form_of("macro_f1", ["a", "b", "c"]) == MetricForm(MACRO_F1, 3)
    assert form_of("f1", ["not", "dup"]) == MetricForm(CLASS_F1, 2, positive=1)
    assert form_of("micro_f1", ["r1", "r2", "NA"]) == MetricForm(MICRO_F1, 3, na=2)
    assert form_of("f1", None) == MetricForm(MEAN)        # reading: the mean per-question F1
    assert form_of("bleu", ["a"]) is None                 # a plugin's metric beluga cannot resample
    # Reading's F1 from the stored gold answers (JSON) and predicted text, as SQuAD's script scores it.
    parts = parts_of(MetricForm(MEAN), "f1", ['["the cat sat"]', '["a dog"]'], ["cat sat", "bird"], [False, False])
    assert parts is not None and parts[:, 0] == pytest.approx([1.0, 0.0])


def test_pseudo_values_average_to_the_metric_and_carry_its_variance() -> None:
    rng = np.random.default_rng(3)
    gold = rng.integers(0, K, 400)
    pred = np.where(rng.random(400) < 0.7, gold, rng.integers(0, K, 400))
    parts = class_parts(gold, pred, K)
    for form in (MetricForm(MACRO_F1, K), MetricForm(MICRO_F1, K, na=K - 1)):
        psi = form.pseudo_values(parts)
        assert psi.mean() == pytest.approx(float(form.value(parts.sum(axis=0), 400)), abs=1e-12)
        counts = rng.multinomial(400, np.full(400, 1 / 400), size=4000)
        boot = form.value(counts @ parts, 400).std()
        assert (counts @ psi / 400).std() == pytest.approx(boot, rel=0.08)   # the delta method, to first order


def test_the_paired_randomization_of_a_metric_matches_exact_enumeration() -> None:
    # 10 examples: every one of the 2^10 swap patterns enumerated gives the exact p of |Δ macro-F1|.
    gold = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    a = np.array([0, 1, 2, 0, 1, 1, 0, 1, 2, 0])
    b = np.array([0, 2, 2, 1, 1, 1, 2, 0, 2, 0])
    observed = macro_f1(a, gold) - macro_f1(b, gold)
    extreme = 0
    for swap in itertools.product((False, True), repeat=len(gold)):
        m = np.array(swap)
        extreme += abs(macro_f1(np.where(m, b, a), gold) - macro_f1(np.where(m, a, b), gold)) >= abs(observed) - 1e-12
    exact = extreme / 2 ** len(gold)
    unit = IidCounts(form=MetricForm(MACRO_F1, 3), parts_a=class_parts(gold, a, 3), parts_b=class_parts(gold, b, 3))
    result = randomization_test([unit], [], rounds=20_000, rng=np.random.default_rng(0))
    assert result.delta_iid == pytest.approx(observed)
    assert result.p_iid == pytest.approx(exact, abs=0.01)
    same = IidCounts(form=MetricForm(MACRO_F1, 3), parts_a=class_parts(gold, a, 3), parts_b=class_parts(gold, a, 3))
    assert randomization_test([same], [], rounds=100, rng=np.random.default_rng(0)).p_iid == 1.0


def _macro_store(path: Path) -> Path:
    """The toy suite, the IID baseline and iid-then-t at two seeds, the task's metric macro-F1 on 80 D_test examples
    of 3 classes where the minority class decides macro-F1 and accuracy says otherwise."""
    cases = make_cases(per_group=10)
    builder = StoreBuilder(path, cases)
    builder.writer.set_task_head("sentiment", "toy", list(LABELS))
    for seed in (1, 2):
        rng = random.Random(seed)
        gold = [str(rng.choice((0, 0, 0, 1, 1, 2))) for _ in range(80)]
        for config, scenario, hit in (("iid", "standard", 0.8), ("iid-then-t", "seen", 0.7)):
            pred = [g if rng.random() < hit else str(rng.randrange(3)) for g in gold]
            outcomes = {c.case_id: "pass" if rng.random() < 0.6 else "fail" for c in cases}
            builder.add(config, "vanilla", scenario, outcomes, [g == p for g, p in zip(gold, pred, strict=True)],
                        seed=seed, preds=pred, golds=gold, metric="macro_f1")
    return path


def test_a_macro_f1_store_gives_macro_f1_over_seeds_and_in_every_test(tmp_path: Path) -> None:
    store = _macro_store(tmp_path / "macro.duckdb")
    refresh(store, rounds=500)
    # Independently, from the raw rows: each seed's macro-F1 (scikit-learn), accuracy beside it.
    rows = query(store, """SELECT m.config, m.seed, p.gold, p.pred FROM iid_predictions p JOIN models m USING (model_id)
                           WHERE p.split = 'test' ORDER BY m.config, m.seed, p.example_idx""")
    per: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for config, seed, g, p in rows:
        per.setdefault((config, seed), ([], []))[0].append(int(g))
        per[(config, seed)][1].append(int(p))
    f1 = {k: float(f1_score(g, p, average="macro", labels=np.union1d(g, p))) for k, (g, p) in per.items()}
    acc = {k: float(np.mean(np.equal(g, p))) for k, (g, p) in per.items()}
    assert all(abs(f1[k] - acc[k]) > 0.01 for k in f1)               # accuracy would be another figure
    for config in ("iid", "iid-then-t"):
        values = [f1[(config, s)] for s in (1, 2)]
        mean, sd = float(np.mean(values)), float(np.std(values, ddof=1))
        half = stats.t.ppf(0.975, 1) * sd / math.sqrt(2)
        ((m, lo, hi),) = query(store, f"""SELECT mean, seed_lo, seed_hi FROM replicate_intervals
                                          WHERE config = '{config}' AND statistic = 's_iid' AND base_config IS NULL""")
        assert (m, lo, hi) == pytest.approx((mean, mean - half, mean + half), abs=1e-12)
    diffs = [f1[("iid-then-t", s)] - f1[("iid", s)] for s in (1, 2)]
    ((m,),) = query(store, """SELECT mean FROM replicate_intervals WHERE config = 'iid-then-t' AND statistic = 's_iid'
                              AND base_config = 'iid'""")
    assert m == pytest.approx(float(np.mean(diffs)), abs=1e-12)
    # Per seed: the test's s_iid is macro-F1 and its test the randomization test of macro-F1, not the sign test.
    for seed in (1, 2):
        ((s_iid, base, test, delta),) = query(store, f"""SELECT s_iid, base_s_iid, iid_test, delta_iid
                                                         FROM significance_tests WHERE scope = 'replicate'
                                                         AND seed = {seed}""")
        assert (s_iid, base) == pytest.approx((f1[("iid-then-t", seed)], f1[("iid", seed)]), abs=1e-12)
        assert test == "randomization" and delta == pytest.approx(diffs[seed - 1], abs=1e-12)


def test_a_metric_the_rows_do_not_reproduce_gets_no_interval_of_another(tmp_path: Path) -> None:
    store = _macro_store(tmp_path / "macro.duckdb")
    # A plugin's metric beluga cannot resample: no s_iid or G over seeds rather than accuracy's.
    con = duckdb.connect(str(store))
    try:
        con.execute("UPDATE iid_metrics SET metric = 'custom' WHERE metric = 'macro_f1'")
    finally:
        con.close()
    refresh(store, rounds=100)
    stats_ = {r[0] for r in query(store, "SELECT DISTINCT statistic FROM replicate_intervals WHERE grp = ''")}
    assert "s_suite" in stats_ and not stats_ & {"s_iid", "g"}
    assert {r[0] for r in query(store, "SELECT p_iid FROM significance_tests WHERE scope = 'replicate'")} == {None}


@pytest.mark.parametrize(("golden", "metric"), [("tiny-reading", "f1"), ("tiny-reading", "exact_match"),
                                                ("tiny-relation", "micro_f1"), ("tiny-relation", "macro_f1"),
                                                ("tiny-paraphrase", "f1"), ("tiny-classification", "macro_f1")])
def test_the_parts_of_real_runs_reproduce_their_stored_metric(golden: str, metric: str) -> None:
    """Every model of a shipped tiny run (the golden raw rows): the parts made from its stored D_test rows give the
    metric its task computed and stored, to 1e-9 (reading's F1 from the stored answers' text)."""
    from beluga_core.evaluation.metric_forms import model_parts, stored_form

    root = DATA / "golden" / golden
    con = duckdb.connect()
    try:
        heads = dict(con.execute(f"SELECT task, labels::VARCHAR FROM read_parquet('{root}/task_heads.parquet')")
                     .fetchall())
        rows = con.execute(f"""
            SELECT m.task, p.model_id, list(p.gold ORDER BY p.example_idx), list(p.pred ORDER BY p.example_idx),
                   list(p.correct ORDER BY p.example_idx), any_value(x.value)
            FROM read_parquet('{root}/iid_predictions.parquet') p
            JOIN read_parquet('{root}/models.parquet') m USING (model_id)
            JOIN read_parquet('{root}/iid_metrics.parquet') x
              ON x.model_id = p.model_id AND x.split = p.split AND x.metric = '{metric}'
            WHERE p.split = 'test' GROUP BY ALL""").fetchall()
    finally:
        con.close()
    assert rows
    for task, _, gold, pred, correct, value in rows:
        form = stored_form(metric, heads[task], True)
        assert form is not None
        assert model_parts(form, metric, gold, pred, correct, value) is not None
