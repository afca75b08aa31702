"""Issue 52, must-show 1: what beluga prints and stores equals an independent recomputation from the raw rows.

The user's situation at tiny size (tests/data/crossing-macro-f1.toml): a grouped table of their own whose target level
crosses the functionalities and is empty for whole functionalities (HateCheck's target_ident), turned into a suite by
`beluga suite from-table --crossing target_ident`; three-class i.i.d. tweets with a rare hateful class, scored in
macro-F1; 2 seeds; vanilla and LoRA (its folds packed 2 at a time). Then the session's tiny relation store (micro-F1
without no_relation; one seed; in a copy, some wrong predictions turned into no_relation, see
``with_no_relation_predictions``) and paraphrase store (the duplicate class's F1; one seed).

The recomputation reads the raw tables only (models, outcomes, cases, iid_predictions, iid_metrics, task_heads,
g_exclusions) with plain numpy, scipy and scikit-learn; it imports nothing of beluga_core.analysis or
beluga_core.evaluation. What it recomputes, per seed and cell (configuration, method, scenario):

- s_T (mean of the scoring groups' pass rates), s_iid in the task's configured metric (scikit-learn), G;
- against the IID baseline, per seed: both sides on the T_test cases both scored (a crossing level's scenario scores
  only the cases with a target); the randomization tests' p-values are the stored ones (not redrawn here), and each
  mark must be p < 0.05 in the direction of the recomputed difference;
- over seeds: the mean, the seed-level t interval, the hierarchical interval and the case-bootstrap interval, with
  the resampling plan of docs/method.md ("Replicates") re-implemented here: per comparison a generator seeded from
  sha256 of its key, then within every scoring group (sorted by name; cases by id) a multinomial draw of its cases,
  then one of the D_test examples, the same draws for every seed and for both sides of a difference, the metric
  recomputed on each draw from its per-class TP / FP / FN counts (checked against scikit-learn on the drawn
  samples); draws that move nothing are no variation, and give no interval;
- `beluga power`'s variance components (method of moments), its power now and the counts it asks for, s_iid's
  components from per-example linearised values (pseudo-values) of the metric.

It is compared with the stored rows (to 1e-9) and with what `beluga analyze`, `beluga report` (terminal and Markdown)
and `beluga power` print (to printed precision). The last test shows the data tell the wrong recomputations apart:
accuracy for the metric, every case instead of the shared ones, other draws.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import random
import re
import shutil
import warnings
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from helpers import DATA, config_with, query, run_benchmark
from scipy import stats
from sklearn.metrics import f1_score

# Three stores trained (the relation one alone takes minutes on a busy 2-core machine) before the first test of each.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

BASELINE = ("iid", "vanilla", "standard")
LEVEL = "target_ident"
FIELDS = ("mean", "seed_lo", "seed_hi", "hier_lo", "hier_hi", "hier_df", "cases_lo", "cases_hi", "p_hier")
EFFECT, TARGET, ALPHA, MAX_SEEDS = 0.05, 0.8, 0.05, 1000

# ------------------------------------------------------------------------------------------------ the user's data

TARGETS = ("women", "immigrants", "muslims")
# functionality → (gold label, whether its cases name a target, templates). profanity and spam have no target at all.
FUNCTIONALITIES = {
    "derog": ("hateful", True, ("I really hate {t}, they are vile", "{t} are scum", "{t} are nice? no, vile")),
    "threat": ("hateful", True, ("we should hurt {t} soon", "I will hurt all {t}", "{t} had better hide")),
    "counter": ("none", True, ("saying {t} are vile is wrong", "I love my {t} friends", "hate against {t} is wrong")),
    "profanity": ("offensive", False, ("this damn {t} is so bloody annoying", "what the hell, {t}", "crap {t} again")),
    "spam": ("none", False, ("check out my {t} channel today", "nice {t} deals", "damn good {t} music")),
}
THINGS = ("game", "weather", "traffic", "phone")
LABELS = ("hateful", "none", "offensive")


def write_table(path: Path) -> None:
    """The user's grouped table: 28 rows per functionality, the target column empty for profanity and spam."""
    rows = []
    for name, (label, targeted, templates) in FUNCTIONALITIES.items():
        for i in range(28):
            target = TARGETS[i % 3] if targeted else ""
            rows.append({"case_id": f"{name}-{i:02d}", "functionality": name, "target_ident": target,
                         "test_case": templates[i % 3].format(t=target or THINGS[i % 4]) + f" #{i}",
                         "label_gold": label})
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def write_tweets(folder: Path) -> None:
    """Three-class i.i.d. data (train and dev, JSON Lines), the hateful class rare (about 8 %)."""
    folder.mkdir()
    rng = random.Random(7)
    words = {"hateful": ["hate", "vile", "hurt", "scum"], "offensive": ["damn", "bloody", "crap", "hell"],
             "none": ["nice", "lunch", "weather", "music", "friends", "game"]}
    filler = ["today", "with my friends", "at the park", "on the bus", "this morning", "again"]
    for name, n, hateful in (("train", 128, 10), ("dev", 96, 8)):
        rows = []
        for i in range(n):
            label = "hateful" if i < hateful else ("offensive" if i % 4 == 0 else "none")
            rows.append({"sentence": f"{rng.choice(words[label])} {rng.choice(filler)} {rng.choice(words['none'])}",
                         "label": label})
        rng.shuffle(rows)
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "label_names.txt").write_text("\n".join(LABELS) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------------------------------ the studies


@dataclass(frozen=True)
class Study:
    """A store after `beluga analyze --rounds 200`, and what the commands printed."""

    name: str
    store: Path
    metric: str                      # the task's configured i.i.d. metric, as stored
    analyze: str
    report: str
    report_md: str
    power: dict[str, str] = field(default_factory=dict)   # --statistic → printed (stores with ≥ 2 seeds)
    crossing: str | None = None


@contextlib.contextmanager
def _wide() -> Iterator[None]:
    """COLUMNS=200 while a command runs (rich reads it): printed tables do not depend on the terminal."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "200"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def cli(*argv: str | Path) -> str:
    """``beluga ARGV`` in this process; what it printed (a non-zero exit fails)."""
    from beluga_core.cli.app import main

    out, err, code = io.StringIO(), io.StringIO(), 0
    with _wide(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in argv])
        except SystemExit as exc:
            code = int(exc.code or 0)
    assert code == 0, f"beluga {' '.join(map(str, argv))}: exit {code}\n{out.getvalue()}{err.getvalue()}"
    return out.getvalue()


def analysed(name: str, store: Path, metric: str, work: Path, *, seeds: int, crossing: str | None = None,
             force: bool = False) -> Study:
    analyze = cli("analyze", store, "--rounds", "200", *(["--force"] if force else []))
    report = cli("report", store)
    cli("report", store, "--format", "md", "--out", work / "md")
    power = {s: cli("power", store, "--effect", str(EFFECT), "--statistic", s) for s in ("s_T", "G")} \
        if seeds >= 2 else {}
    return Study(name, store, metric, analyze, report, (work / "md" / "report.md").read_text(encoding="utf-8"), power,
                 crossing)


@pytest.fixture(scope="module")
def crossing(tmp_path_factory: pytest.TempPathFactory) -> Study:
    work = tmp_path_factory.mktemp("crossing")
    write_table(work / "table.csv")
    write_tweets(work / "tweets")
    printed = cli("suite", "from-table", work / "table.csv", "--text", "test_case", "--label", "label_gold", "--id",
                  "case_id", "--groups", f"functionality,{LEVEL}", "--crossing", LEVEL, "--labels", ",".join(LABELS),
                  "--out", work / "crossing.jsonl")
    assert "56 case(s) with no value kept" in " ".join(printed.split())
    config = config_with(DATA / "crossing-macro-f1.toml", work)
    store = work / "crossing-macro-f1.duckdb"
    run_benchmark(config, store)
    return analysed("crossing", store, "macro_f1", work, seeds=2, crossing=LEVEL)


def _copy(store: Path, work: Path) -> Path:
    """A copy of a session store (its fixture's tests must not see it written: `beluga analyze` writes)."""
    copy = work / store.name
    shutil.copyfile(store, copy)
    wal = store.with_name(store.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
    return copy


def store_metric_values(con: Any, model_id: str, gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> None:
    """A model's stored D_test metric values set to what its (changed) rows give, scikit-learn's: beluga resamples a
    metric only where its own formula reproduces the stored value."""
    for (metric,) in con.execute("SELECT metric FROM iid_metrics WHERE model_id = ? AND split = 'test'",
                                 [model_id]).fetchall():
        con.execute("UPDATE iid_metrics SET value = ? WHERE model_id = ? AND split = 'test' AND metric = ?",
                    [metric_value(metric, gold, pred, labels), model_id, metric])


def with_no_relation_predictions(store: Path) -> None:
    """The tiny relation model predicts one relation for every D_test sentence, and FewRel's D_test has no
    no_relation sentence: there micro-F1 without no_relation is accuracy, and no comparison could tell them apart.
    So, in the copy, some of the IID and seen models' wrong predictions become no_relation (each still wrong, so
    accuracy stays), and their stored metric values are set to what the rows now give (scikit-learn's; beluga
    resamples a metric only where its own formula reproduces the stored value)."""
    import duckdb

    con = duckdb.connect(str(store))
    try:
        ((labels,),) = con.execute("SELECT labels FROM task_heads").fetchall()
        labels = json.loads(labels)
        na = labels.index("no_relation")
        for config, scenario, every, offset in (("iid", "standard", 3, 1), ("iid-then-t", "seen", 2, 0)):
            ((mid,),) = con.execute("SELECT model_id FROM models WHERE status = 'done' AND config = ? AND scenario = ?",
                                    [config, scenario]).fetchall()
            con.execute("UPDATE iid_predictions SET pred = ? WHERE model_id = ? AND split = 'test' AND NOT correct "
                        "AND example_idx % ? = ?", [str(na), mid, every, offset])
            rows = con.execute("SELECT gold, pred FROM iid_predictions WHERE model_id = ? AND split = 'test' "
                               "ORDER BY example_idx", [mid]).fetchall()
            gold, pred = (np.array([int(r[i]) for r in rows]) for i in (0, 1))
            assert (pred == na).sum() > 10
            store_metric_values(con, mid, gold, pred, labels)
    finally:
        con.close()


def drawn(*key: object) -> float:
    """A uniform draw in [0, 1) fixed by ``key``: the same on every machine and run."""
    return int(hashlib.sha256("|".join(map(str, key)).encode()).hexdigest()[:12], 16) / 16**12


def with_drawn_rows(store: Path) -> None:
    """The crossing store's models are trained with a seed derived from their ids, which hash the absolute paths of
    its data (a temporary folder here), so what they predict, and so how many of its comparisons vary at all, changes
    from run to run. In the copy, every suite outcome (pass or fail) and every D_test prediction is drawn instead from
    a fixed hash of its cell, seed and case (or example), each cell passing and predicting right at a rate of its own,
    with the stored metric values set to what the rows now give: the same rows, and the same comparisons, whatever
    the training gave, with cells and seeds that differ."""
    import duckdb

    con = duckdb.connect(str(store))
    try:
        ((labels,),) = con.execute("SELECT labels FROM task_heads").fetchall()
        labels = json.loads(labels)
        models = con.execute("SELECT model_id, config, method, scenario, seed FROM models WHERE status = 'done'"
                             ).fetchall()
        drawn_outcomes: list[tuple[str, str, str]] = []        # (model, case, outcome)
        drawn_preds: list[tuple[str, int, str, bool]] = []     # (model, example, pred, correct)
        for mid, *key in models:
            cell, seed = key[:3], key[3]
            # A case (an example) passes (is predicted right) below its cell's and seed's threshold: the cells differ
            # by a shift of their own, the seeds by a smaller one, so that the cases are shared between them as a
            # trained model's are, and every comparison varies between the seeds.
            threshold = 0.55 + 0.2 * (drawn(*cell) - 0.5) + 0.12 * (drawn(*cell, seed) - 0.5)
            outcomes = con.execute("SELECT DISTINCT case_id FROM outcomes WHERE model_id = ? "
                                   "AND outcome IN ('pass', 'fail')", [mid]).fetchall()
            drawn_outcomes += [(mid, c, "pass" if drawn(c) < threshold else "fail") for (c,) in outcomes]
            rows = con.execute("SELECT example_idx, gold FROM iid_predictions WHERE model_id = ? AND split = 'test' "
                               "ORDER BY example_idx", [mid]).fetchall()
            if not rows:   # a fold not scored on D_test
                continue
            gold = np.array([int(g) for _, g in rows])
            pred = np.array([g if drawn("example", i) < threshold + 0.2
                             else (g + 1 + int(drawn("label", i) * (len(labels) - 1))) % len(labels)
                             for (i, _), g in zip(rows, gold, strict=True)])
            drawn_preds += [(mid, i, str(p), bool(p == g)) for (i, _), g, p in zip(rows, gold, pred, strict=True)]
            store_metric_values(con, mid, gold, pred, labels)
        # One UPDATE per table (an UPDATE per row took ~20 s of this fixture).
        con.register("drawn_outcomes", pa.table(list(zip(*drawn_outcomes, strict=True)),
                                                names=["model_id", "case_id", "outcome"]))
        con.execute("UPDATE outcomes SET outcome = d.outcome FROM drawn_outcomes d "
                    "WHERE outcomes.model_id = d.model_id AND outcomes.case_id = d.case_id")
        con.register("drawn_preds", pa.table(list(zip(*drawn_preds, strict=True)),
                                             names=["model_id", "example_idx", "pred", "correct"]))
        con.execute("UPDATE iid_predictions SET pred = d.pred, correct = d.correct FROM drawn_preds d "
                    "WHERE iid_predictions.model_id = d.model_id AND iid_predictions.split = 'test' "
                    "AND iid_predictions.example_idx = d.example_idx")
    finally:
        con.close()


@pytest.fixture(scope="module")
def drawn_rows(crossing: Study, tmp_path_factory: pytest.TempPathFactory) -> Study:
    work = tmp_path_factory.mktemp("drawn")
    store = _copy(crossing.store, work)
    with_drawn_rows(store)
    power = {s: cli("power", store, "--effect", str(EFFECT), "--statistic", s) for s in ("s_T", "G")}
    return Study("drawn_rows", store, crossing.metric, "", "", "", power, crossing.crossing)


@pytest.fixture(scope="module")
def relation(relation_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Study:
    work = tmp_path_factory.mktemp("relation")
    store = _copy(relation_store, work)
    with_no_relation_predictions(store)
    # --force: the intervals the run stored are of the rows before the change (their inputs' digest is the models').
    return analysed("relation", store, "micro_f1", work, seeds=1, force=True)


@pytest.fixture(scope="module")
def paraphrase(paraphrase_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Study:
    work = tmp_path_factory.mktemp("paraphrase")
    return analysed("paraphrase", _copy(paraphrase_store, work), "f1", work, seeds=1)


@pytest.fixture(params=["crossing", "relation", "paraphrase"])
def study(request: pytest.FixtureRequest) -> Study:
    return request.getfixturevalue(request.param)


# ------------------------------------------------------------------------------------------------ the raw rows

Key = tuple[str, str, str]            # (config, method, scenario)


@dataclass
class Raw:
    """A store's raw rows (one task, suite, model name, variant and split seed, as all three stores have)."""

    unit: tuple[Any, ...]                            # task, suite, model_name, variant, split_seed
    models: list[tuple[str, Key, int]]               # (model_id, key, seed) of the done models
    outcomes: dict[str, dict[str, str]]              # model_id → case_id → outcome
    group: dict[str, str]                            # case_id → scoring group
    level_cases: dict[str, set[str]]                 # crossing level → the cases with a group there
    excluded: set[str]
    predictions: dict[str, tuple[np.ndarray, np.ndarray]]   # model_id → (gold, pred) ids by example_idx
    stored: dict[str, dict[str, float]]              # model_id → metric → value on D_test
    primary: set[str]                                # the metrics stored as primary
    labels: list[str]
    suite_sizes: dict[str, int]                      # scoring group → cases in the suite


def read_raw(store: Path, level: str | None) -> Raw:
    units = query(store, "SELECT DISTINCT task, suite, model_name, variant, split_seed FROM models "
                         "WHERE status = 'done'")
    assert len(units) == 1, units
    task = units[0][0]
    models = [(mid, (c, m, s), seed) for mid, c, m, s, seed in query(
        store, "SELECT model_id, config, method, scenario, seed FROM models WHERE status = 'done'")]
    outcomes: dict[str, dict[str, str]] = defaultdict(dict)
    for mid, cid, outcome in query(store, "SELECT model_id, case_id, outcome FROM outcomes"):
        assert cid not in outcomes[mid]
        outcomes[mid][cid] = outcome
    scored = {c for o in outcomes.values() for c in o}
    group, level_cases = {}, defaultdict(set)
    for cid, grp, groups in query(store, "SELECT case_id, scoring_group, groups FROM cases"):
        if cid in scored:
            group[cid] = grp
            if level is not None and json.loads(groups).get(level) is not None:
                level_cases[level].add(cid)
    predictions: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for mid, gold, pred in query(store, "SELECT model_id, gold, pred FROM iid_predictions WHERE split = 'test' "
                                        "ORDER BY model_id, example_idx"):
        predictions[mid][0].append(int(gold))
        predictions[mid][1].append(int(pred))
    stored: dict[str, dict[str, float]] = defaultdict(dict)
    primary = set()
    for mid, metric, value, is_primary in query(store, "SELECT model_id, metric, value, is_primary FROM iid_metrics "
                                                       "WHERE split = 'test'"):
        stored[mid][metric] = value
        if is_primary:
            primary.add(metric)
    ((labels,),) = query(store, "SELECT labels FROM task_heads")
    return Raw(units[0], models, dict(outcomes), group, dict(level_cases),
               {g for t, g in query(store, "SELECT task, scoring_group FROM g_exclusions") if t == task},
               {m: (np.asarray(g), np.asarray(p)) for m, (g, p) in predictions.items()}, dict(stored), primary,
               json.loads(labels), dict(query(store, "SELECT scoring_group, count(*) FROM cases GROUP BY 1")))


# ------------------------------------------------------------------------------------------------ the metrics


def metric_value(metric: str, gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> float:
    """The i.i.d. metric of one model's D_test predictions, by scikit-learn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if metric == "accuracy":
            return float(np.mean(gold == pred))
        if metric == "macro_f1":    # over the classes in the gold labels or the predictions
            return float(f1_score(gold, pred, average="macro"))
        if metric == "f1":          # paraphrase: the F1 of class 1, 'duplicate'
            assert labels[1] == "duplicate"
            return float(f1_score(gold, pred, labels=[1], average="macro", zero_division=0))
        if metric == "micro_f1":    # relation: pooled over every class but no_relation
            na = labels.index("no_relation")
            return float(f1_score(gold, pred, labels=[k for k in range(len(labels)) if k != na], average="micro",
                                  zero_division=0))
    raise AssertionError(metric)


def resampled_metric(metric: str, gold: np.ndarray, pred: np.ndarray, labels: list[str],
                     counts: np.ndarray) -> np.ndarray:
    """(R,) the metric of each of R weighted samples of the examples (``counts``: R × N draws of each example),
    from the samples' per-class true-positive, false-positive and false-negative counts."""
    k = len(labels)
    w = np.asarray(counts, dtype=float)
    hit = gold == pred
    if metric == "accuracy":
        return (w @ hit) / w.sum(axis=1)
    gold_1, pred_1 = np.eye(k)[gold], np.eye(k)[pred]
    tp = w @ (gold_1 * hit[:, None])
    fp = w @ (pred_1 * ~hit[:, None])
    fn = w @ (gold_1 * ~hit[:, None])
    d = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        if metric == "macro_f1":
            present = d > 0
            return np.where(present, 2 * tp / np.where(present, d, 1), 0.0).sum(axis=1) / present.sum(axis=1)
        if metric == "f1":
            return np.where(d[:, 1] > 0, 2 * tp[:, 1] / np.where(d[:, 1] > 0, d[:, 1], 1), 0.0)
        if metric == "micro_f1":
            keep = np.arange(k) != labels.index("no_relation")
            t, dd = tp[:, keep].sum(axis=1), d[:, keep].sum(axis=1)
            return np.where(dd > 0, 2 * t / np.where(dd > 0, dd, 1), 0.0)
    raise AssertionError(metric)


def pseudo_values(metric: str, gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> np.ndarray:
    """(N,) each example's linearised contribution to the metric (the delta method): F + Σ ∂F/∂x̄ · (x_i − x̄) over
    its TP / FP / FN indicators x_i. With D_k = 2 TP_k + FP_k + FN_k (sums over the N examples), F1_k = 2 TP_k / D_k,
    ∂F1_k/∂TP_k = 2 (D_k − 2 TP_k) / D_k², ∂F1_k/∂FP_k = ∂F1_k/∂FN_k = −2 TP_k / D_k² (per sum; × N per mean)."""
    n, k = len(gold), len(labels)
    hit = gold == pred
    if metric == "accuracy":
        return hit.astype(float)
    x = np.concatenate([np.eye(k)[gold] * hit[:, None], np.eye(k)[pred] * ~hit[:, None],
                        np.eye(k)[gold] * ~hit[:, None]], axis=1)          # N × 3K: TP, FP, FN indicators
    tp, fp, fn = x[:, :k].sum(0), x[:, k:2 * k].sum(0), x[:, 2 * k:].sum(0)
    d = 2 * tp + fp + fn
    value = metric_value(metric, gold, pred, labels)
    grad = np.zeros((3, k))
    if metric == "micro_f1":
        keep = np.arange(k) != labels.index("no_relation")
        t, dd = tp[keep].sum(), d[keep].sum()
        if dd > 0:
            grad[0, keep] = 2 * (dd - 2 * t) / dd ** 2
            grad[1, keep] = grad[2, keep] = -2 * t / dd ** 2
    else:
        which = d > 0 if metric == "macro_f1" else (np.arange(k) == 1) & (d > 0)
        scale = 1 / which.sum() if metric == "macro_f1" else 1.0
        dw = np.where(which, d, 1.0)
        grad[0] = np.where(which, scale * 2 * (d - 2 * tp) / dw ** 2, 0.0)
        grad[1] = grad[2] = np.where(which, -scale * 2 * tp / dw ** 2, 0.0)
    return value + (x - x.mean(axis=0)) @ (grad.reshape(-1) * n)


def harmonic(a: Any, b: Any) -> Any:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        g = np.where(a + b == 0, 0.0, 2 * a * b / np.where(a + b == 0, 1.0, a + b))
    return np.where(np.isnan(a) | np.isnan(b), np.nan, g)


# ------------------------------------------------------------------------------------------------ cells


@dataclass(frozen=True)
class Way:
    """How to recompute: the right way by default; the others are the deliberately wrong ones the data must tell
    apart (the metric accuracy; a comparison on every case each side has; a difference drawn with the cell's key)."""

    metric: str | None = None
    shared: bool = True
    difference_key: str = "difference"
    salt: str = ""                 # appended to every generator's key: other draws


@dataclass
class Cell:
    """Per seed, a cell's outcomes on its cases (sorted by group, then id) and its s_iid model's D_test rows."""

    seeds: list[int]
    cases: list[tuple[str, str]]
    passed: np.ndarray            # S × C
    evaluable: np.ndarray         # S × C
    iid: list[tuple[np.ndarray, np.ndarray]] | None

    @property
    def groups(self) -> list[str]:
        return sorted({g for g, _ in self.cases})

    def take(self, seeds: list[int], cases: list[tuple[str, str]]) -> Cell:
        rows = [self.seeds.index(s) for s in seeds]
        where = {c: i for i, (_, c) in enumerate(self.cases)}
        cols = [where[c] for _, c in cases]
        return Cell(seeds, cases, self.passed[rows][:, cols], self.evaluable[rows][:, cols],
                    None if self.iid is None else [self.iid[i] for i in rows])


class Recomputation:
    """Every figure of one store, from its raw rows."""

    def __init__(self, raw: Raw, metric: str, way: Way = Way()) -> None:
        self.raw, self.way = raw, way
        self.metric = way.metric or metric
        self.keys = sorted({k for _, k, _ in raw.models})

    # -- per seed -------------------------------------------------------------------------------------------------
    def seeds(self, key: Key) -> list[int]:
        return sorted({s for _, k, s in self.raw.models if k == key})

    def outcomes(self, key: Key, seed: int) -> dict[str, str]:
        """A scenario key's outcomes: the union of its (fold) models'."""
        out: dict[str, str] = {}
        for mid, k, s in self.raw.models:
            if k == key and s == seed:
                assert not set(out) & set(self.raw.outcomes.get(mid, {}))
                out.update(self.raw.outcomes.get(mid, {}))
        return out

    def iid_model(self, config: str, method: str, seed: int) -> str | None:
        """The model s_iid comes from: the seen model of the configuration-method and seed, else its standard one."""
        for scenario in ("seen", "standard"):
            found = sorted(m for m, k, s in self.raw.models if k == (config, method, scenario) and s == seed)
            if found:
                return found[0]
        return None

    def s_iid(self, config: str, method: str, seed: int) -> float:
        mid = self.iid_model(config, method, seed)
        return float("nan") if mid is None else metric_value(self.metric, *self.raw.predictions[mid], self.raw.labels)

    def s_suite(self, outcomes: dict[str, str], cases: set[str] | None = None) -> float:
        """The mean of the scoring groups' pass rates (skips left out, G exclusions left out) over ``cases``."""
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for cid, outcome in outcomes.items():
            if (cases is None or cid in cases) and outcome != "skip" and self.raw.group[cid] not in self.raw.excluded:
                counts[self.raw.group[cid]][0] += outcome == "pass"
                counts[self.raw.group[cid]][1] += 1
        rates = [p / n for p, n in counts.values()]
        return sum(rates) / len(rates) if rates else float("nan")

    def per_seed(self, key: Key, seed: int, cases: set[str] | None = None) -> tuple[float, float, float]:
        """(s_T, s_iid, G) of a scenario key and seed, on ``cases`` (default: all it scored)."""
        s_t, s_i = self.s_suite(self.outcomes(key, seed), cases), self.s_iid(key[0], key[1], seed)
        return s_t, s_i, float(harmonic(s_t, s_i))

    def against_baseline(self, key: Key, seed: int) -> dict[str, float]:
        """The per-seed comparison with the IID baseline of the same seed, both on the cases both scored."""
        mine, base = self.outcomes(key, seed), self.outcomes(BASELINE, seed)
        shared = set(mine) & set(base) if self.way.shared else None
        s_t, s_i, g = self.per_seed(key, seed, shared)
        b_t, b_i, b_g = self.per_seed(BASELINE, seed, shared)
        return {"s_suite": s_t, "base_s_suite": b_t, "s_iid": s_i, "base_s_iid": b_i, "delta_iid": s_i - b_i,
                "g": g, "base_g": b_g, "delta_g": g - b_g}

    # -- cells ----------------------------------------------------------------------------------------------------
    def cell(self, key: Key) -> Cell:
        seeds = self.seeds(key)
        per_seed = [self.outcomes(key, s) for s in seeds]
        cases = sorted({(self.raw.group[c], c) for o in per_seed for c in o})
        passed = np.array([[o.get(c) == "pass" for _, c in cases] for o in per_seed], dtype=float)
        evaluable = np.array([[o.get(c) in ("pass", "fail") for _, c in cases] for o in per_seed], dtype=float)
        models = [self.iid_model(key[0], key[1], s) for s in seeds]
        iid = None if None in models else [self.raw.predictions[m] for m in models if m is not None]
        return Cell(seeds, cases, passed, evaluable, iid)

    def aligned(self, a: Cell, b: Cell) -> tuple[Cell, Cell]:
        """Both on their common seeds and on the cases both have (in a's order)."""
        seeds = [s for s in a.seeds if s in b.seeds]
        if not self.way.shared:
            return a.take(seeds, a.cases), b.take(seeds, b.cases)
        in_b = {c for _, c in b.cases}
        cases = [(g, c) for g, c in a.cases if c in in_b]
        return a.take(seeds, cases), b.take(seeds, cases)

    def statistics(self, cell: Cell, group_counts: list[np.ndarray] | None = None,
                   iid_counts: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each statistic per seed (S,) — or, given a plan's draws, per round and seed (R, S): s_suite, s_iid, g and
        every group's pass rate ('pass_rate:GROUP')."""
        groups = cell.groups
        passes, evals = [], []
        for i, grp in enumerate(groups):
            cols = [j for j, (g, _) in enumerate(cell.cases) if g == grp]
            if group_counts is None:
                passes.append(cell.passed[:, cols].sum(axis=1))
                evals.append(cell.evaluable[:, cols].sum(axis=1))
            else:
                passes.append(group_counts[i] @ cell.passed[:, cols].T)
                evals.append(group_counts[i] @ cell.evaluable[:, cols].T)
        p, e = np.stack(passes, axis=-1), np.stack(evals, axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            rates = np.where(e > 0, p / np.where(e > 0, e, 1), np.nan)
        scored = np.array([g not in self.raw.excluded for g in groups])
        ok = np.isfinite(rates) & scored
        with np.errstate(invalid="ignore", divide="ignore"):
            s_t = np.where(ok.sum(-1) > 0, np.where(ok, rates, 0).sum(-1) / np.maximum(ok.sum(-1), 1), np.nan)
        shape = s_t.shape
        if cell.iid is None:
            s_i = np.full(shape, np.nan)
        elif iid_counts is None:
            s_i = np.array([metric_value(self.metric, gold, pred, self.raw.labels) for gold, pred in cell.iid])
        else:
            s_i = np.stack([resampled_metric(self.metric, gold, pred, self.raw.labels, iid_counts)
                            for gold, pred in cell.iid], axis=1)
        out = {"s_suite": s_t, "s_iid": s_i, "g": harmonic(s_t, s_i)}
        out.update({f"pass_rate:{g}": rates[..., i] for i, g in enumerate(groups)})
        return out

    def plan(self, cell: Cell, rounds: int, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray | None]:
        """The draws: per group (sorted), how often each of its cases is drawn, then each D_test example (R × n)."""
        counts = []
        for grp in cell.groups:
            n = sum(g == grp for g, _ in cell.cases)
            counts.append(rng.multinomial(n, np.full(n, 1.0 / n), size=rounds))
        iid = None
        if cell.iid is not None:
            n = len(cell.iid[0][0])
            iid = rng.multinomial(n, np.full(n, 1.0 / n), size=rounds)
        return counts, iid


def interval_key(unit: tuple[Any, ...], key: Key, base: Key | None, what: str) -> str:
    """The comparison's key its generator is seeded from (docs/method.md, "Replicates")."""
    task, suite, model_name, variant, split_seed = unit
    return json.dumps([task, suite, model_name, key[0], key[1], variant, key[2], split_seed,
                       *(base or (None, None, None)), what, ""], ensure_ascii=False)


def generator(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng(np.random.SeedSequence([int(seed), *words]))


# ------------------------------------------------------------------------------------------------ intervals


# Per-seed values whose standard error is below this share of their size are equal but for float rounding (the same
# rational computed in another order): no spread between seeds.
SAME = 1e-12


def no_spread(v: np.ndarray) -> bool:
    return len(v) < 2 or v.std(ddof=1) / math.sqrt(len(v)) <= SAME * max(1.0, float(np.abs(v).max()))


def seed_interval(values: np.ndarray) -> dict[str, float | None]:
    """mean ± t(S−1) sd/√S; no bounds with one seed or no spread."""
    v = values[np.isfinite(values)]
    if not len(v):
        return {"mean": None, "seed_lo": None, "seed_hi": None}
    mean = float(v.mean())
    if no_spread(v):
        return {"mean": mean, "seed_lo": None, "seed_hi": None}
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return {"mean": mean, "seed_lo": mean - half, "seed_hi": mean + half}


def case_variance(draws: np.ndarray) -> float:
    """The case part of the seed mean's variance: the mean covariance of the seeds' columns (R × S) under the same
    draws (one seed: its variance). A column that never moves shares nothing: exactly 0."""
    d = draws[:, np.all(np.isfinite(draws), axis=0)]
    d = d[np.all(np.isfinite(d), axis=1)]
    if d.shape[0] < 2 or d.shape[1] == 0:
        return float("nan")
    s = d.shape[1]
    moving = np.ptp(d, axis=0) > 0
    if s == 1:
        return float(d[:, 0].var(ddof=1)) if moving[0] else 0.0
    pairs = [float(np.cov(d[:, i], d[:, j])[0, 1]) if moving[i] and moving[j] else 0.0
             for i in range(s) for j in range(s) if i != j]
    return max(sum(pairs) / len(pairs), 0.0)


def hierarchical_interval(values: np.ndarray, draws: np.ndarray) -> dict[str, float | None]:
    """mean ± t_df √(sd²/S + v_case), df by Welch–Satterthwaite (v_case counted as known); p of mean = 0."""
    none = {"hier_lo": None, "hier_hi": None, "hier_df": None, "p_hier": None}
    v = values[np.isfinite(values)]
    v_case = case_variance(draws)
    if not len(v) or not math.isfinite(v_case):
        return none
    mean = float(v.mean())
    seed_var = 0.0 if no_spread(v) else float(v.var(ddof=1)) / len(v)
    total = seed_var + v_case
    if total == 0:
        return none
    df = math.inf if seed_var == 0 else total ** 2 * (len(v) - 1) / seed_var ** 2
    dist = stats.norm if math.isinf(df) else stats.t(df)
    se = math.sqrt(total)
    half = dist.ppf(0.975) * se
    return {"hier_lo": mean - half, "hier_hi": mean + half, "hier_df": df, "p_hier": float(2 * dist.sf(abs(mean) / se))}


def cases_interval(mean_draws: np.ndarray, mean: float | None) -> dict[str, float | None]:
    d = mean_draws[np.isfinite(mean_draws)]
    if mean is None or not len(d):
        return {"cases_lo": None, "cases_hi": None}
    lo, hi = np.quantile(d, [0.025, 0.975])
    return {"cases_lo": float(lo), "cases_hi": float(hi)}


def kinds(values: np.ndarray, draws: np.ndarray, mean_draws: np.ndarray, *, difference: bool) -> dict[str, Any]:
    out = seed_interval(values)
    out.update(hierarchical_interval(values, draws))
    out.update(cases_interval(mean_draws, out["mean"]))
    if not difference:
        out["p_hier"] = None
    return out


def seed_mean(draws: np.ndarray) -> np.ndarray:
    """(R,) the mean over seeds of each round (seeds without a value left out)."""
    ok = np.isfinite(draws)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok.sum(1) > 0, np.where(ok, draws, 0).sum(1) / ok.sum(1), np.nan)


RowKey = tuple[Key, Key | None, str, str]     # (cell, base or None, statistic, group)


def interval_rows(rec: Recomputation, rounds: int, rng_seed: int) -> dict[RowKey, dict[str, Any]]:
    """Every cell's intervals (its groups' pass rates too) and each cell's difference from the IID baseline."""
    out: dict[RowKey, dict[str, Any]] = {}
    cells = {k: rec.cell(k) for k in rec.keys}
    for key, cell in cells.items():
        rng = generator(rng_seed, interval_key(rec.raw.unit, key, None, "cell") + rec.way.salt)
        counts, iid = rec.plan(cell, rounds, rng)
        now, drawn = rec.statistics(cell), rec.statistics(cell, counts, iid)
        for name, values in now.items():
            if name in ("s_iid", "g") and cell.iid is None:
                continue
            statistic, _, grp = name.partition(":")
            row = kinds(values, drawn[name], seed_mean(drawn[name]), difference=False)
            out[(key, None, statistic, grp)] = row | {"n_seeds": len(cell.seeds), "n_cases": len(cell.cases)}
        if key == BASELINE or BASELINE not in cells:
            continue
        a, b = rec.aligned(cell, cells[BASELINE])
        what = rec.way.difference_key
        rng = generator(rng_seed, interval_key(rec.raw.unit, key, BASELINE if what == "difference" else None, what)
                        + rec.way.salt)
        counts, iid = rec.plan(a, rounds, rng)
        now_a, now_b = rec.statistics(a), rec.statistics(b)
        same_cases = a.cases == b.cases
        drawn_a = rec.statistics(a, counts, iid)
        drawn_b = rec.statistics(b, counts, iid) if same_cases else rec.statistics(b, *rec.plan(b, rounds, rng))
        for statistic in ("s_suite", "s_iid", "g") if a.iid is not None and b.iid is not None else ("s_suite",):
            row = kinds(now_a[statistic] - now_b[statistic], drawn_a[statistic] - drawn_b[statistic],
                        seed_mean(drawn_a[statistic]) - seed_mean(drawn_b[statistic]), difference=True)
            out[(key, BASELINE, statistic, "")] = row | {"n_seeds": len(cell.seeds), "n_cases": len(cell.cases)}
    return out


def stored_intervals(store: Path) -> tuple[dict[RowKey, dict[str, Any]], int, int]:
    rows = query(store, f"""SELECT config, method, scenario, base_config, base_method, base_scenario, statistic, grp,
                                   n_seeds, n_cases, {', '.join(FIELDS)}, rounds, rng_seed
                            FROM replicate_intervals WHERE statistic IN ('s_suite', 's_iid', 'g', 'pass_rate')""")
    plans = {(r[-2], r[-1]) for r in rows}
    assert len(plans) == 1, plans
    ((rounds, rng_seed),) = plans
    out = {}
    for r in rows:
        base = None if r[3] is None else (r[3], r[4], r[5])
        out[((r[0], r[1], r[2]), base, r[6], r[7])] = {"n_seeds": r[8], "n_cases": r[9],
                                                       **dict(zip(FIELDS, r[10:10 + len(FIELDS)], strict=True))}
    return out, rounds, rng_seed


def close(a: Any, b: Any, tol: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isinf(a):
        return a == b
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(b)))


# ------------------------------------------------------------------------------------------------ printing


def signed(x: float) -> str:
    """A difference in points as printed ("+0.9", "-2.4"); a zero is "+0.0" whatever the sign of its rounding noise
    (a difference that is 0 may be computed as −1e-17 here and +1e-17 there)."""
    text = f"{100 * x:+.1f}"
    return "+0.0" if text == "-0.0" else text


def pct(v: float | None) -> str:
    return "—" if v is None else signed(v)


def bracket(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{signed(lo)}, {signed(hi)}]"


def unsigned_zero(text: str) -> str:
    """Printed text with "-0.0" read as "+0.0" (see ``signed``)."""
    return re.sub(r"-0\.0(?![0-9])", "+0.0", text)


def mark_of(lo: float | None, hi: float | None) -> str:
    """▲ / ▼ where an interval excludes 0."""
    if lo is None or hi is None:
        return ""
    return "▲" if lo > 0 else "▼" if hi < 0 else ""


def rich_rows(text: str, title: str) -> list[list[str]]:
    """The rows of the rich table printed after the line starting with ``title``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([unsigned_zero(c.strip()) for c in line.strip().strip("│").split("│")])
    return rows


def plain_table(text: str, title: str) -> tuple[list[str], list[list[str]]]:
    """The header and rows of a report table (columns two spaces apart) printed after the line ``title``."""
    lines = text.splitlines()
    start = lines.index(title)
    header = re.split(r"\s{2,}", lines[start + 1].strip())
    assert set(lines[start + 2].strip()) == {"─"}
    rows = []
    for line in lines[start + 3:]:
        if not line.startswith("iid") or line.split()[0].endswith(":"):     # the notes under it: "iid: the IID …"
            break
        rows.append(line.split())
    return header, rows


# ------------------------------------------------------------------------------------------------ the tests


def test_the_store_is_the_users_situation(crossing: Study) -> None:
    """A crossing level empty for whole groups, 2 seeds, vanilla and LoRA (packed), macro-F1, the report complete."""
    raw = read_raw(crossing.store, LEVEL)
    assert {s for _, _, s in raw.models} == {1, 2}
    assert {k for _, k, _ in raw.models} == {BASELINE, *(("iid-then-t", m, s) for m in ("vanilla", "lora")
                                                         for s in ("seen", "functionality", LEVEL))}
    assert raw.primary == {"macro_f1"} and raw.labels == list(LABELS)
    # Whole functionalities have no target: the target scenario scores 3 of the 5.
    rec = Recomputation(raw, "macro_f1")
    seen, held = rec.outcomes(("iid-then-t", "lora", "seen"), 1), rec.outcomes(("iid-then-t", "lora", LEVEL), 1)
    assert set(held) == set(seen) & raw.level_cases[LEVEL] and set(held) < set(seen)
    assert {raw.group[c] for c in seen} - {raw.group[c] for c in held} == {"profanity", "spam"}
    # LoRA's folds trained in packs of 2.
    packs = query(crossing.store, "SELECT pack, count(*) FROM models WHERE method = 'lora' AND pack IS NOT NULL "
                                  "GROUP BY 1")
    assert packs and {n for _, n in packs} == {2}
    assert "†" not in crossing.report    # every scenario complete


def test_per_seed_scores_are_the_configured_metric_recomputed(study: Study) -> None:
    """g_scores per seed: s_T from the outcomes, s_iid the task's metric by scikit-learn on the stored predictions (also
    equal to the stored metric value), G their harmonic mean."""
    raw = read_raw(study.store, study.crossing)
    assert study.metric in raw.primary
    rec = Recomputation(raw, study.metric)
    for mid, (gold, pred) in raw.predictions.items():
        assert raw.stored[mid][study.metric] == pytest.approx(metric_value(study.metric, gold, pred, raw.labels),
                                                              abs=1e-9)
    rows = query(study.store, "SELECT config, method, scenario, seed, s_suite, s_iid, g, iid_metric FROM g_scores")
    assert {(c, m, s, seed) for c, m, s, seed, *_ in rows} == {(*k, seed) for _, k, seed in raw.models}
    for config, method, scenario, seed, s_suite, s_iid, g, metric in rows:
        assert metric == study.metric
        expected = rec.per_seed((config, method, scenario), seed)
        assert all(close(x, y) for x, y in zip((s_suite, s_iid, g), expected, strict=True)), \
            (config, method, scenario, seed, (s_suite, s_iid, g), expected)


def test_the_metric_resampler_is_scikit_learns_metric_on_the_drawn_samples(study: Study) -> None:
    """The vectorised resampler of this test (per-class TP / FP / FN counts) against scikit-learn on fixed draws, each
    sample written out example by example."""
    raw = read_raw(study.store, study.crossing)
    rng = np.random.default_rng(5)
    for gold, pred in list(raw.predictions.values())[:2]:
        n = len(gold)
        counts = rng.multinomial(n, np.full(n, 1.0 / n), size=25)
        fast = resampled_metric(study.metric, gold, pred, raw.labels, counts)
        for r in range(len(counts)):
            take = np.repeat(np.arange(n), counts[r])
            assert fast[r] == pytest.approx(metric_value(study.metric, gold[take], pred[take], raw.labels), abs=1e-12)
        # The pseudo-values (power's s_iid components): their mean is the metric, and a small re-weighting of the
        # examples (weights summing to n) moves the metric by the weights' mean against them, to first order.
        pv = pseudo_values(study.metric, gold, pred, raw.labels)
        value = metric_value(study.metric, gold, pred, raw.labels)
        assert pv.mean() == pytest.approx(value, abs=1e-12)
        u = rng.standard_normal(n)
        u -= u.mean()
        eps = 1e-6
        moved = resampled_metric(study.metric, gold, pred, raw.labels, (1 + eps * u)[None, :])[0] - value
        assert moved == pytest.approx(eps * float(u @ (pv - value)) / n, abs=1e-10)


def test_per_seed_tests_against_the_baseline_are_on_the_cases_both_scored(study: Study) -> None:
    """The significance rows per seed (and the Avg. over scenarios): s_T of both sides on the cases both scored, s_iid
    in the metric, ΔG; every mark in the direction of the recomputed difference, and `beluga analyze`'s per-seed
    table the same figures."""
    raw = read_raw(study.store, study.crossing)
    rec = Recomputation(raw, study.metric)
    view = query(study.store, """SELECT scope, config, method, scenario, seed, s_iid, base_s_iid, delta_iid, g, base_g,
                                        delta_g, p_iid, p_g, iid_mark, g_mark, status FROM significance""")
    tests = {(r[0], r[1], r[2], r[3], r[4]): r[5:] for r in query(
        study.store, """SELECT scope, config, method, scenario, seed, s_suite, base_s_suite, g, base_g, delta_g, s_iid,
                               base_s_iid, delta_iid FROM significance_tests
                        WHERE (base_config, base_method, base_scenario) = ('iid', 'vanilla', 'standard')""")}
    arms = {(k, s) for _, k, s in raw.models if k != BASELINE}
    replicate = [r for r in view if r[0] == "replicate"]
    assert {((c, m, s), seed) for _, c, m, s, seed, *_ in replicate} == arms
    expected: dict[tuple[str, str, str, str | None, int], dict[str, float]] = {}
    for key, seed in arms:
        e = rec.against_baseline(key, seed)
        expected[("replicate", *key, seed)] = e
        expected[("mean_over_tasks", *key, seed)] = e
    for config, method in {k[:2] for k, _ in arms}:
        for seed in {s for k, s in arms if k[:2] == (config, method)}:
            scen = [expected[("replicate", config, method, s, seed)] for (c, m, s), sd in arms
                    if (c, m, sd) == (config, method, seed) and not s.startswith("only:")]
            avg = {f: float(np.mean([e[f] for e in scen])) for f in scen[0]}
            avg["delta_g"] = avg["g"] - avg["base_g"]
            expected[("mean_over_tasks", config, method, None, seed)] = avg
    assert {r[:5] for r in view} == set(expected)
    for scope, config, method, scenario, seed, *got in view:
        e = expected[(scope, config, method, scenario, seed)]
        s_iid, base_s_iid, delta_iid, g, base_g, delta_g, p_iid, p_g, iid_mark, g_mark, status = got
        assert status == "current"
        for name, value in zip(("s_iid", "base_s_iid", "delta_iid", "g", "base_g", "delta_g"),
                               (s_iid, base_s_iid, delta_iid, g, base_g, delta_g), strict=True):
            assert close(value, e[name]), (scope, config, method, scenario, seed, name, value, e[name])
        # A mark only below α, in the direction of the recomputed difference.
        for p, delta, mark in ((p_iid, e["delta_iid"], iid_mark), (p_g, e["delta_g"], g_mark)):
            want = None if p is None or p >= 0.05 or delta == 0 else "better" if delta > 0 else "worse"
            assert mark == want, (scope, config, method, scenario, seed, p, delta, mark)
        stored = tests[(scope, config, method, scenario, seed)]
        for name, value in zip(("s_suite", "base_s_suite", "g", "base_g", "delta_g", "s_iid", "base_s_iid",
                                "delta_iid"), stored, strict=True):
            assert close(value, e[name]), ("significance_tests", scope, config, method, scenario, seed, name, value,
                                           e[name])
    # `beluga analyze`: one row per arm and seed, Δ i.i.d. and ΔG to printed precision, marks by their sign.
    printed = rich_rows(study.analyze, "Against the IID baseline (its G_standard)")
    several = len({s for _, _, s in raw.models}) > 1
    symbol = {"better": " ▲", "worse": " ▼", None: ""}
    want = []
    for _, config, method, scenario, seed, *_, p_iid, p_g, iid_mark, g_mark, status in \
            sorted(replicate, key=lambda r: (r[1], r[2], r[3], r[4])):
        e = expected[("replicate", config, method, scenario, seed)]
        want.append([f"{config}/{method}", scenario, *([str(seed)] if several else []),
                     pct(e["delta_iid"]) + symbol[iid_mark], "—" if p_iid is None else f"{p_iid:.4f}",
                     pct(e["delta_g"]) + symbol[g_mark], "—" if p_g is None else f"{p_g:.4f}", status])
    assert printed == want


def test_intervals_over_seeds_are_the_same_plan_recomputed(study: Study) -> None:
    """Every stored interval of s_T, s_iid, G and the groups' pass rates, of every cell and of its difference from the
    IID baseline (on the cases both scored): the seed-level t, the hierarchical and the case-bootstrap intervals,
    recomputed with the same draws, equal to 1e-9; replicate_summary's verdicts are the seed-level t's at 2 seeds."""
    raw = read_raw(study.store, study.crossing)
    stored, rounds, rng_seed = stored_intervals(study.store)
    rec = Recomputation(raw, study.metric)
    expected = interval_rows(rec, rounds, rng_seed)
    assert set(stored) == set(expected)
    wrong = []
    for key, row in sorted(expected.items(), key=str):
        for name, value in row.items():
            if not close(stored[key][name], value):
                wrong.append(f"{key} {name}: stored {stored[key][name]!r}, recomputed {value!r}")
    assert not wrong, "\n".join(wrong)
    summary = query(study.store, """SELECT config, method, scenario, base_config IS NULL, statistic, grp, n_seeds,
                                           default_kind, lo, hi, seed_lo, seed_hi, cases_lo, cases_hi, ordering, status
                                    FROM replicate_summary WHERE statistic IN ('s_suite', 's_iid', 'g', 'pass_rate')""")
    for config, method, scenario, own, _, _, n, kind, lo, hi, s_lo, s_hi, c_lo, c_hi, ordering, status in summary:
        assert status == "current"
        # One seed: case variation only; 2 seeds: the seed-level t (issue 52: the hierarchical covers < 93.5 %).
        assert kind == {1: "cases", 2: "seed"}[n], (config, method, scenario, n, kind)
        assert (lo, hi) == ((c_lo, c_hi) if n == 1 else (s_lo, s_hi))
        if not own:
            assert ordering == (None if lo is None else "A > B" if lo > 0 else "A < B" if hi < 0 else "not resolved")


def _over_seeds_rows(rows: dict[RowKey, dict[str, Any]]) -> list[list[str]]:
    names = {"g": "G", "s_suite": "s_T", "s_iid": "s_iid"}
    words = {"▲": "higher: resolved", "▼": "lower: resolved", "": "not resolved"}
    out = []
    for (key, base, statistic, _), r in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][2])):
        if base is None or r["n_seeds"] < 2:
            continue
        assert r["n_seeds"] == 2
        out.append([f"{key[0]}/{key[1]}", key[2], names[statistic], str(r["n_seeds"]), pct(r["mean"]),
                    bracket(r["seed_lo"], r["seed_hi"]), bracket(r["hier_lo"], r["hier_hi"]),
                    words[mark_of(r["seed_lo"], r["seed_hi"])] + " (seed-level t)"])
    return out


def test_analyze_prints_the_recomputed_differences_over_seeds(crossing: Study) -> None:
    """`beluga analyze`'s table over seeds: Δ, the seed-level and hierarchical intervals and the ordering (the
    seed-level t's at 2 seeds) of every cell against the IID baseline, as recomputed, to printed precision."""
    raw = read_raw(crossing.store, LEVEL)
    _, rounds, rng_seed = stored_intervals(crossing.store)
    expected = interval_rows(Recomputation(raw, "macro_f1"), rounds, rng_seed)
    printed = rich_rows(crossing.analyze, "Against the IID baseline over seeds")
    assert printed == _over_seeds_rows(expected)


# -- Table 3 --------------------------------------------------------------------------------------------------------


def half(lo: float | None, hi: float | None) -> float | None:
    return None if lo is None or hi is None else (hi - lo) / 2


def table3(rec: Recomputation, rows: dict[RowKey, dict[str, Any]], significance: dict[tuple[Any, ...], Any],
           level: str | None) -> tuple[dict[tuple[str, str], dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """Table 3 as the report must print it: (G table, s_T table), (config, method) → column → cell text.

    Columns: i.i.d. (the seen model's s_iid, else the standard one's), G per scenario (the baseline, evaluated in the
    standard scenario only, shown from it: in a crossing level's column on the cases with a group there), 'seen
    (LEVEL cases)' (every configuration-method's seen scenario, the baseline's standard, on those cases), Avg. (the
    mean over the scenario columns). ±: half the default interval (the seed-level t with 2 seeds, the cases interval
    with 1), none for a figure on a crossing level's cases only. ▲ / ▼: with 2 seeds the seed-level t interval of the
    difference from the baseline excludes 0; with 1 seed the randomization test (stored p < 0.05) in the direction
    of the recomputed difference; kept only where the cell's value and the baseline's in its column agree."""
    pairs = sorted({k[:2] for k in rec.keys})
    scenarios = sorted({k[2] for k in rec.keys if k[2] != "standard" and not k[2].startswith("only:")})
    n_seeds = {k: len(rec.seeds(k)) for k in rec.keys}

    def pm(key: Key, statistic: str) -> float | None:
        r = rows.get((key, None, statistic, ""))
        if r is None:
            return None
        return half(r["seed_lo"], r["seed_hi"]) if r["n_seeds"] >= 2 else half(r["cases_lo"], r["cases_hi"])

    def diff_mark(key: Key, statistic: str) -> str:
        r = rows.get((key, BASELINE, statistic, ""))
        return "" if r is None else mark_of(r["seed_lo"], r["seed_hi"])

    def sig_mark(kind: str, key: tuple[Any, ...]) -> str:
        """The per-seed tests' common mark (1 seed: its test's), from the stored p and the recomputed sign."""
        marks = {significance[(*key, seed)][kind] for seed in rec.seeds(BASELINE)}
        return marks.pop() if len(marks) == 1 else ""

    def iid_mark(pair: tuple[str, str]) -> str | frozenset[str]:
        """The i.i.d. test's mark: the same two models in every scenario row of a seed, so one mark for them all; where
        the rows' tests disagree (test_the_iid_test_of_two_models_is_one_test), any of their marks."""
        marks = frozenset(v["iid"] for (c, m, s, _), v in significance.items() if (c, m) == pair and s is not None)
        return next(iter(marks)) if len(marks) == 1 else marks

    def avg_mark(pair: tuple[str, str]) -> str:
        """The Avg. column's mark (the report's AVG_RULE): with two or more seeds the seed-level t interval of the
        per-seed differences of the mean over scenarios from the baseline's (none where the seeds agree: no spread);
        with one seed its randomization test's."""
        if pair == BASELINE[:2]:
            return ""
        seeds = rec.seeds(BASELINE)
        if len(seeds) < 2:
            return sig_mark("g", (*pair, None))
        deltas = [float(np.mean([rec.against_baseline(k, seed)["delta_g"] for k in rec.keys
                                 if k[:2] == pair and not k[2].startswith("only:")])) for seed in seeds]
        interval = seed_interval(np.array(deltas))
        return mark_of(interval["seed_lo"], interval["seed_hi"])

    def mean_over_seeds(key: Key, fn: Any) -> float:
        return float(np.mean([fn(key, seed) for seed in rec.seeds(key)]))

    def restricted(key: Key, index: int) -> float:
        return mean_over_seeds(key, lambda k, s: rec.per_seed(k, s, rec.raw.level_cases[level])[index])

    values: dict[tuple[str, str], dict[str, tuple[float, float | None, Any]]] = defaultdict(dict)
    s_values: dict[tuple[str, str], dict[str, tuple[float, float | None]]] = defaultdict(dict)
    for pair in pairs:
        source = "seen" if (*pair, "seen") in rec.keys else "standard"
        values[pair]["i.i.d."] = (mean_over_seeds((*pair, source), lambda k, s: rec.per_seed(k, s)[1]),
                                  pm((*pair, source), "s_iid"),
                                  (diff_mark((*pair, source), "s_iid") if n_seeds[(*pair, source)] >= 2
                                   else iid_mark(pair)) if pair != BASELINE[:2] else "")
        for scenario in scenarios:
            own = (*pair, scenario) in rec.keys
            key = (*pair, scenario) if own else (*pair, "standard")
            if not own and scenario == level:     # the baseline on the crossing level's cases
                values[pair][scenario] = (restricted(key, 2), None, "")
                s_values[pair][scenario] = (restricted(key, 0), None)
                continue
            mark = ""
            if own and pair != BASELINE[:2]:
                mark = diff_mark(key, "g") if n_seeds[key] >= 2 else sig_mark("g", key)
            values[pair][scenario] = (mean_over_seeds(key, lambda k, s: rec.per_seed(k, s)[2]), pm(key, "g"), mark)
            s_values[pair][scenario] = (mean_over_seeds(key, lambda k, s: rec.per_seed(k, s)[0]), pm(key, "s_suite"))
        if level is not None:
            column = f"seen ({level} cases)"
            values[pair][column] = (restricted((*pair, source), 2), None, "")
            s_values[pair][column] = (restricted((*pair, source), 0), None)
        values[pair]["Avg."] = (float(np.mean([values[pair][s][0] for s in scenarios])), None, avg_mark(pair))
    # A mark must agree with the figures set side by side: the cell's value against the baseline's in its column.
    g_table: dict[tuple[str, str], dict[str, Any]] = {}
    s_table = {}
    for pair, columns in values.items():
        g_table[pair] = {}
        for column, (value, pm_, marks) in columns.items():
            base = values[BASELINE[:2]][column][0]
            texts = set()
            for mark in [marks] if isinstance(marks, str) else sorted(marks):
                if mark and (value == base or (value > base) != (mark == "▲")):
                    mark = ""
                texts.add(f"{100 * value:.1f}" + ("" if pm_ is None else f"±{100 * pm_:.1f}") + mark)
            g_table[pair][column] = texts.pop() if len(texts) == 1 else frozenset(texts)
        s_table[pair] = {column: f"{100 * v:.1f}" + ("" if p is None else f"±{100 * p:.1f}")
                         for column, (v, p) in s_values[pair].items()}
    return g_table, s_table


def significance_marks(store: Path, rec: Recomputation) -> dict[tuple[Any, ...], dict[str, str]]:
    """Per-seed test marks (▲ / ▼ / ''), from the stored p-values and the recomputed differences' signs."""
    out = {}
    for scope, config, method, scenario, seed, p_iid, p_g in query(
            store, "SELECT scope, config, method, scenario, seed, p_iid, p_g FROM significance"):
        if scope == "replicate":
            e = rec.against_baseline((config, method, scenario), seed)
        elif scenario is None:
            scen = [rec.against_baseline(k, seed) for k in rec.keys
                    if k[:2] == (config, method) and k != BASELINE and not k[2].startswith("only:")]
            e = {"delta_iid": scen[0]["delta_iid"], "delta_g": float(np.mean([x["delta_g"] for x in scen]))}
        else:
            continue
        out[(config, method, scenario, seed)] = {
            kind: "" if p is None or p >= 0.05 or e[d] == 0 else "▲" if e[d] > 0 else "▼"
            for kind, p, d in (("iid", p_iid, "delta_iid"), ("g", p_g, "delta_g"))}
    return out


def _read_terminal(report: str) -> tuple[dict[tuple[str, str], dict[str, str]], dict[tuple[str, str], dict[str, str]]]:
    """The terminal report's G and s_T tables: (config, method) → column → cell text."""
    out = []
    assert "Scenarios:" not in report     # wide enough for whole headers
    method = re.search(r"G per scenario \(%\); method (\S+)$", report, re.M)    # a store of one method names it
    for title in ("i.i.d. score, then G per scenario (%)", "s_T per scenario (%)"):
        line = next(x for x in report.splitlines() if title in x)
        header, rows = plain_table(report, line)
        with_method = header[1] == "method"
        assert with_method == (method is None)
        table = {}
        for row in rows:
            pair = (row[0], row[1]) if with_method else (row[0], method.group(1))  # type: ignore[union-attr]
            cells = row[2:] if with_method else row[1:]
            table[pair] = dict(zip(header[len(header) - len(cells):], cells, strict=True))
        out.append(table)
    return out[0], out[1]


def _read_markdown(md: str) -> dict[tuple[str, str], dict[str, str]]:
    lines = md.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("| configuration |"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip().replace("**", "").replace(" ", "") for c in line.strip("|").split("|")]
        table[(cells[0], cells[1])] = {re.sub(r"^G ", "", h): c for h, c in zip(header[2:], cells[2:], strict=True)}
    return table


def test_the_report_prints_the_recomputed_table(study: Study) -> None:
    """`beluga report` (terminal: G and s_T tables; Markdown: Table 3): every figure, ± and ▲ / ▼ as recomputed."""
    raw = read_raw(study.store, study.crossing)
    rec = Recomputation(raw, study.metric)
    _, rounds, rng_seed = stored_intervals(study.store)
    rows = interval_rows(rec, rounds, rng_seed)
    g_table, s_table = table3(rec, rows, significance_marks(study.store, rec), study.crossing)
    printed_g, printed_s = _read_terminal(study.report)
    assert same_table(printed_g, g_table), (printed_g, g_table)
    assert printed_s == s_table
    assert same_table(_read_markdown(study.report_md), g_table)


def same_table(printed: dict[tuple[str, str], dict[str, str]], expected: dict[tuple[str, str], dict[str, Any]]) -> bool:
    """Whether every printed cell is the expected text (or one of its alternatives: a set)."""
    if printed.keys() != expected.keys() or any(printed[k].keys() != expected[k].keys() for k in printed):
        return False
    return all(text == want if isinstance(want, str) else text in want
               for k in printed for text, want in ((printed[k][c], expected[k][c]) for c in printed[k]))


def test_the_iid_test_of_two_models_is_one_test(study: Study) -> None:
    """Every scenario row of a configuration-method and seed compares the same two models on D_test (its s_iid model
    and the baseline's), with the same Δ s_iid: one test, so one p and one mark. (The report's i.i.d. column takes its
    mark from one of those rows.)"""
    rows = query(study.store, "SELECT config, method, seed, scenario, delta_iid, p_iid, iid_mark FROM significance "
                              "WHERE scope = 'replicate'")
    tests: dict[tuple[str, str, int], dict[tuple[Any, ...], list[str]]] = defaultdict(lambda: defaultdict(list))
    for config, method, seed, scenario, delta, p, mark in rows:
        tests[(config, method, seed)][(round(delta, 12), p, mark)].append(scenario)
    split = {k: dict(v) for k, v in tests.items() if len(v) > 1}
    assert not split, f"the same two models' i.i.d. test gives several (Δ, p, mark) by scenario: {split}"


# -- power ----------------------------------------------------------------------------------------------------------


def above_rounding(a: float, b: float) -> float:
    """a − b, or 0 where it is within a billionth of the larger (a difference of mean squares equal but for float
    rounding is no component; beluga's power documents the same rule)."""
    return a - b if a - b > 1e-9 * max(abs(a), abs(b)) else 0.0


def anova(d: np.ndarray) -> tuple[float, float]:
    """(σ²_case, σ²_rest) of an S × n table of per-case differences: two-way random effects by moments."""
    s, n = d.shape
    if n < 2:
        return 0.0, 0.0
    grand = d.mean()
    ms_case = s * float(((d.mean(axis=0) - grand) ** 2).sum()) / (n - 1)
    if s < 2:
        return max(ms_case, 0.0), 0.0
    resid = d - d.mean(axis=0)[None, :] - d.mean(axis=1)[:, None] + grand
    ms_rest = float((resid ** 2).sum()) / ((s - 1) * (n - 1))
    return above_rounding(ms_case, ms_rest) / s, ms_rest


@dataclass(frozen=True)
class Parts:
    """Variance components of a difference; variance(S′, n′) = seed/S′ + rest/(G S′ n′) + case/(G n′)."""

    seed: float
    case: float
    rest: float
    groups: int
    cases: float
    per_seed_var: float
    rest_share: float

    def variance(self, seeds: float, cases: float) -> tuple[float, float]:
        seed_part = self.seed / seeds + self.rest / (self.groups * seeds * cases)
        return seed_part + self.case / (self.groups * cases), seed_part


@dataclass(frozen=True)
class GParts:
    """ΔG's: σ²_seed of the per-seed ΔG, Δs_T's case and rest parts (``suite``) and Δs_iid's over D_test's examples,
    weighted by G's partial derivatives at A's means (ga for s_T, gb for s_iid)."""

    seed: float
    suite: Parts
    iid_case: float
    iid_rest: float
    examples: float
    ga: float
    gb: float
    per_seed_var: float
    rest_share: float

    def variance(self, seeds: float, cases: float) -> tuple[float, float]:
        g = self.suite.groups
        seed_part = (self.seed / seeds + self.ga ** 2 * self.suite.rest / (g * seeds * cases)
                     + self.gb ** 2 * self.iid_rest / (seeds * self.examples))
        return seed_part + self.ga ** 2 * self.suite.case / (g * cases) + self.gb ** 2 * self.iid_case / \
            self.examples, seed_part


def parts_of(per_seed: np.ndarray, tables: list[np.ndarray]) -> Parts:
    comps = [anova(t) for t in tables]
    case, rest = float(np.mean([c for c, _ in comps])), float(np.mean([r for _, r in comps]))
    n, g = float(np.mean([t.shape[1] for t in tables])), len(tables)
    var = float(per_seed.var(ddof=1))
    return Parts(above_rounding(var, rest / (g * n)), case, rest, g, n, var, rest / (g * n))


def t_power(variance: float, seed_part: float, seeds: float, effect: float) -> float:
    """P(|T| > t_crit) of the two-stage test, T noncentral t, df by Welch–Satterthwaite (normal: df ∞)."""
    if variance <= 0:
        return 1.0
    ncp = abs(effect) / math.sqrt(variance)
    if seed_part <= 0 or seeds < 2 or math.isinf(seeds):
        z = stats.norm.ppf(1 - ALPHA / 2)
        return float(stats.norm.sf(z - ncp) + stats.norm.cdf(-z - ncp))
    df = variance ** 2 * (seeds - 1) / seed_part ** 2
    crit = stats.t.ppf(1 - ALPHA / 2, df)
    return float(stats.nct.sf(crit, df, ncp) + stats.nct.sf(crit, df, -ncp))


@dataclass
class PowerFigures:
    observed: float
    seeds: int
    cases: float
    groups: int
    flat: list[str]
    seed: Parts | GParts
    total_now: float
    power_now: float
    seed_lo: float
    seed_hi: float
    variance: Any                       # (parts with σ²_seed replaced, S′, n′) → (total, seed part)
    n_examples: int = 0


def power_figures(rec: Recomputation, key: Key, statistic: str) -> PowerFigures:
    """What `beluga power` computes for one cell against the IID baseline, paired by seed and case."""
    a, b = rec.aligned(rec.cell(key), rec.cell(BASELINE))
    groups = a.groups
    tables = []
    for grp in groups:
        if grp in rec.raw.excluded:
            continue
        cols = [j for j, (g, _) in enumerate(a.cases) if g == grp
                and a.evaluable[:, j].all() and b.evaluable[:, j].all()]
        if cols:
            tables.append(a.passed[:, cols] - b.passed[:, cols])
    sa, sb = rec.statistics(a), rec.statistics(b)
    suite = parts_of(sa["s_suite"] - sb["s_suite"], tables)
    flat = [] if suite.per_seed_var > 1e-24 else ["s_T"]
    if flat:
        suite = replace(suite, seed=0.0)
    observed = float(np.mean(sa["s_suite"] - sb["s_suite"]))
    s = len(a.seeds)

    def variance_t(p: Parts, seeds: float, cases: float) -> tuple[float, float]:
        return p.variance(seeds, cases)

    variance = variance_t
    n_examples = 0
    seed: Parts | GParts = suite
    if statistic == "G":
        assert a.iid is not None and b.iid is not None
        d = np.array([pseudo_values(rec.metric, *x, rec.raw.labels) - pseudo_values(rec.metric, *y, rec.raw.labels)
                      for x, y in zip(a.iid, b.iid, strict=True)])
        case_i, rest_i = anova(d)
        n_examples = d.shape[1]
        t_mean, i_mean = float(sa["s_suite"].mean()), float(sa["s_iid"].mean())
        den = (t_mean + i_mean) ** 2
        ga, gb = (2 * i_mean ** 2 / den, 2 * t_mean ** 2 / den) if den else (0.0, 0.0)
        observed = float(np.mean(sa["g"] - sb["g"]))
        # σ²_seed of ΔG itself: the per-seed ΔG's variance less each seed's own noise on G's scale.
        var_g = float((sa["g"] - sb["g"]).var(ddof=1))
        share = ga ** 2 * suite.rest / (suite.groups * suite.cases) + gb ** 2 * rest_i / n_examples
        flat = [] if var_g > 1e-24 else ["G"]
        seed = GParts(0.0 if flat else above_rounding(var_g, share), suite, case_i, rest_i, float(n_examples), ga, gb,
                      var_g, share)

        def variance_g(p: Parts | GParts, seeds: float, cases: float) -> tuple[float, float]:
            assert isinstance(p, GParts)
            return p.variance(seeds, cases)

        variance = variance_g
    total, seed_part = variance(seed, s, suite.cases)
    df = s - 1
    lo = max(df * seed.per_seed_var / stats.chi2.ppf(0.975, df) - seed.rest_share, 0.0)
    hi = max(df * seed.per_seed_var / stats.chi2.ppf(0.025, df) - seed.rest_share, 0.0)
    return PowerFigures(observed, s, suite.cases, len(tables), flat, seed, total,
                        t_power(total, seed_part, s, EFFECT), lo, hi, variance, n_examples)


def seeds_needed(f: PowerFigures, sigma: float, start: int) -> int | None:
    p: Parts | GParts = replace(f.seed, seed=sigma)
    for s in range(start, MAX_SEEDS + 1):
        if t_power(*f.variance(p, s, f.cases), s, EFFECT) >= TARGET:
            return s
    return None


def e2(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2e}"


@pytest.mark.parametrize("name", ["crossing", "drawn_rows"])
def test_power_prints_the_recomputed_components_and_answers(name: str, request: pytest.FixtureRequest) -> None:
    """`beluga power` for s_T and G: observed difference (on the cases both scored), σ² components by moments (s_iid's
    from the macro-F1 pseudo-values), σ²_seed's chi-square interval, power now, seeds needed (at its estimate and
    interval ends) and cases per group needed, or why none is given, each as recomputed. On the trained store (whatever
    its training gave: most of its comparisons may not vary at all) and on its copy with drawn rows, where every
    comparison reaches the estimated σ²_seed, its interval and the counts."""
    study: Study = request.getfixturevalue(name)
    raw = read_raw(study.store, LEVEL)
    rec = Recomputation(raw, "macro_f1")
    branches: set[str] = set()   # which of power's answers the lines took
    for statistic, printed in study.power.items():
        lines = {m.group(1): m.group(2) for m in re.finditer(r"^  (\S+) − iid/vanilla@standard \(\w+\): (.*)$", printed,
                                                             re.M)}
        keys = [k for k in rec.keys if k != BASELINE]
        assert set(lines) == {f"{c}/{m}@{s}" for c, m, s in keys}
        for key in keys:
            line, f = lines[f"{key[0]}/{key[1]}@{key[2]}"], power_figures(rec, key, statistic)
            where = (statistic, key, line)
            cases_word = "case" if round(f.cases) == 1 else "cases"
            assert unsigned_zero(line).startswith(f"observed {signed(f.observed)} points over {f.seeds} seeds × "
                                                  f"{f.cases:.0f} {cases_word} per group"), (where, f.observed)
            if f.total_now == 0:
                assert "no variation between the seeds or the cases" in line, where
                branches.add("no variation")
                continue
            if isinstance(f.seed, GParts):
                g = f.seed
                assert f"({f.groups} group(s)); components σ²_seed of ΔG " in line, where
                assert (f"of Δs_T σ²_case {g.suite.case:.2e}, σ²_rest {g.suite.rest:.2e}, of Δs_iid over D_test's "
                        f"{g.examples:.0f} examples σ²_case {g.iid_case:.2e}, σ²_rest {g.iid_rest:.2e} (ΔG = "
                        f"{g.ga:.2f} Δs_T + {g.gb:.2f} Δs_iid); power ") in line, where
            else:
                assert f"({f.groups} group(s)); components σ²_seed " in line, where
                assert f"σ²_case {f.seed.case:.2e}, σ²_rest {f.seed.rest:.2e}; power " in line, where
            if f.flat:
                assert (f"not estimable from {f.seeds} seeds (the per-seed differences of {' and '.join(f.flat)} are "
                        f"all equal)") in line, where
                assert f"power now at most {f.power_now:.0%}" in line, where
                assert "seeds needed: none estimated until the seeds differ: run another seed" in line, where
                branches.add("σ²_seed not estimable")
            else:
                assert (f"σ²_seed {f.seed.seed:.2e} [95 %: {f.seed_lo:.2e}, {e2(f.seed_hi)}], "
                        f"σ²_case" in line) or (f"σ²_seed of ΔG {f.seed.seed:.2e} [95 %: {f.seed_lo:.2e}, "
                                                f"{e2(f.seed_hi)}], of Δs_T" in line), where
                assert f"power now {f.power_now:.0%};" in line, where
                branches.add(f"σ²_seed of {statistic}")
                bound = t_power(f.variance(f.seed, math.inf, f.cases)[0], 0.0, math.inf, EFFECT)
                if bound < TARGET:
                    said = re.search(f"seeds needed at {f.cases:.0f} {cases_word} per group: unreachable: with any "
                                     r"number of seeds the power stays at most ([\d.]+)%", line)
                    assert said and bound <= float(said.group(1)) / 100 < TARGET, where
                    branches.add("seeds unreachable")
                else:
                    start = int(re.search(r"the seeds needed count from (\d+)", line).group(1))  # type: ignore[union-attr]
                    counts = ["more than 1,000" if n is None else f"{n:,}"
                              for n in (seeds_needed(f, sigma, start) for sigma in (f.seed.seed, f.seed_lo, f.seed_hi))]
                    assert (f"seeds needed at {f.cases:.0f} {cases_word} per group: {counts[0]} [{counts[1]}, "
                            f"{counts[2]}];") in line, where
                    branches.add("seeds counted")
            # Cases per group: the fewest reaching the power by trying every count, or no count below the bound.
            answer = re.search(r"cases per group needed at \d+ seeds: (unreachable: .*? at most ([\d.]+)%|(at least )?"
                               r"([\d,]+)|more than [\d,]+)", line)
            assert answer is not None, where
            powers = [t_power(*f.variance(f.seed, f.seeds, float(n)), f.seeds, EFFECT) for n in range(1, 2001)]
            if answer.group(2) is not None:   # no count reaches it: none of 1..2,000, a grid to 100,000, nor the limit
                far = [t_power(*f.variance(f.seed, f.seeds, n), f.seeds, EFFECT)
                       for n in [*np.geomspace(2000, 100_000, 200), math.inf]]
                assert max(powers + far) < TARGET and max(powers + far) <= float(answer.group(2)) / 100, where
                branches.add("cases unreachable")
            elif answer.group(4) is not None:
                n = int(answer.group(4).replace(",", ""))
                assert t_power(*f.variance(f.seed, f.seeds, float(n)), f.seeds, EFFECT) >= TARGET, where
                assert all(p < TARGET for p in powers[:n - 1]), where
                groups = [g for g in rec.cell(key).groups if g not in raw.excluded]
                assert (n > max(raw.suite_sizes[g] for g in groups)) == ("cannot be reached with this suite" in line)
                branches.add("cases counted")
            # At 2 seeds the verdicts are the seed-level t's, and power says so.
            assert "at 2 seeds beluga's verdicts are the seed-level t's, not this test's" in line, where
    if name == "drawn_rows":   # its rows are the same on every run: they reach every answer but "no variation"
        assert branches == {"σ²_seed of s_T", "σ²_seed of G", "σ²_seed not estimable", "seeds unreachable",
                            "seeds counted", "cases unreachable", "cases counted"}, branches


# -- the data tell the wrong recomputations apart -------------------------------------------------------------------


def test_the_data_tell_the_wrong_recomputations_apart(study: Study) -> None:
    """Each comparison above can fail: on these stores, accuracy for the configured metric, every case instead of the
    shared ones (the crossing store), and another draw (a difference drawn with its cell's key) change the stored and
    printed figures."""
    raw = read_raw(study.store, study.crossing)
    stored, rounds, rng_seed = stored_intervals(study.store)
    right = Recomputation(raw, study.metric)

    def differs(way: Way) -> list[tuple[RowKey, str]]:
        rows = interval_rows(Recomputation(raw, study.metric, way), rounds, rng_seed)
        return [(k, name) for k, row in rows.items() if k in stored for name, v in row.items()
                if not close(stored[k][name], v)]

    # Accuracy instead of the metric: per-seed s_iid, the intervals, and the report's table.
    accuracy = Recomputation(raw, study.metric, Way(metric="accuracy"))
    assert max(abs(right.s_iid(k[0], k[1], s) - accuracy.s_iid(k[0], k[1], s)) for _, k, s in raw.models) > 0.01
    assert any(stat == "s_iid" for (_, _, stat, _), _ in differs(Way(metric="accuracy")))
    printed_g, _ = _read_terminal(study.report)
    wrong_rows = interval_rows(accuracy, rounds, rng_seed)
    assert table3(accuracy, wrong_rows, significance_marks(study.store, accuracy), study.crossing)[0] != printed_g
    if study.crossing:
        # Every case on each side: the crossing level's differences move, per seed and over seeds, at printed precision.
        everywhere = Recomputation(raw, study.metric, Way(shared=False))
        moved = [abs(right.against_baseline(k, s)["delta_g"] - everywhere.against_baseline(k, s)["delta_g"])
                 for k in right.keys if k[2] == LEVEL for s in right.seeds(k)]
        assert max(moved) > 0.001, moved
        assert {k[0][2] for k, _ in differs(Way(shared=False)) if k[1] == BASELINE} == {LEVEL}
        assert _over_seeds_rows(interval_rows(everywhere, rounds, rng_seed)) != \
            rich_rows(study.analyze, "Against the IID baseline over seeds")
    # Other draws move hierarchical and cases intervals; in the crossing store, a difference drawn with its cell's own
    # key moves the difference's (its suite has several cases per group, the paraphrase slice one).
    assert any(name.startswith(("hier_", "cases_")) for _, name in differs(Way(salt="x")))
    if study.crossing:
        moved_draw = differs(Way(difference_key="cell"))
        assert any(k[1] == BASELINE and name.startswith(("hier_", "cases_")) for k, name in moved_draw), moved_draw
