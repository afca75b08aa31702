"""Hand-made result stores for the significance and report tests (written through StoreWriter)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from beluga_core.execution.results import IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.rows import CaseRow, SplitRows, SuiteRow
from beluga_core.store.writer import StoreWriter

SUITE = "toy"
# functionality -> (class, test type); the classes interleave (reports must still keep them together) and
# are not in alphabetical order (reports keep suite order).
FUNCTIONALITIES = {"f1": ("Vocabulary", "MFT"), "f2": ("Negation", "INV"), "f3": ("Vocabulary", "DIR"),
                   "f4": ("Negation", "MFT"), "f5": ("Negation", "INV")}
LABELS = ("0", "1", "2")


def make_cases(per_group: int = 20, gold: Mapping[str, str] | None = None) -> list[CaseRow]:
    """Cases of the toy suite; ``gold`` gives the gold label of some case ids (the rest have none)."""
    return [CaseRow(f"{f}-{j}", tt, {"class": cls, "functionality": f}, (gold or {}).get(f"{f}-{j}"))
            for f, (cls, tt) in FUNCTIONALITIES.items() for j in range(per_group)]


def suite_row(suite: str = SUITE) -> SuiteRow:
    return SuiteRow(suite, ("class", "functionality"), "functionality", "text", ("negative", "neutral", "positive"))


# A suite with a crossing level (as `beluga suite from-table --crossing target` writes one): functionalities, and a
# target group across them that some cases lack (their `groups` leave the level out). f3 has no case with a target,
# f4 has both kinds, f1 and f2 only cases with one. CROSSING_TARGETS: per functionality, how many of its cases have a
# target (the first ones, alternating t1 / t2), and how many do not.
CROSSING_SUITE = "hate"
CROSSING_LEVEL = "target"
CROSSING_TARGETS = {"f1": (20, 0), "f2": (20, 0), "f3": (0, 20), "f4": (20, 20)}


def crossing_cases() -> list[CaseRow]:
    """Cases ``f{k}-t{j}`` (with a target) and ``f{k}-n{j}`` (without) of the crossing suite."""
    cases = []
    for f, (with_target, without) in CROSSING_TARGETS.items():
        cases += [CaseRow(f"{f}-t{j}", "MFT", {"functionality": f, CROSSING_LEVEL: f"t{1 + j % 2}"})
                  for j in range(with_target)]
        cases += [CaseRow(f"{f}-n{j}", "MFT", {"functionality": f}) for j in range(without)]
    return cases


def crossing_suite_row(suite: str = CROSSING_SUITE) -> SuiteRow:
    return SuiteRow(suite, ("functionality", CROSSING_LEVEL), "functionality", "text", ("no", "yes"))


class StoreBuilder:
    """Writes models of one suite; a held-out scenario is split into one fold model per group."""

    split_id: str | None = None   # the split the models written name (record_test_split), else none

    def __init__(self, path: Path, cases: Sequence[CaseRow] | None = None, *, suite: str = SUITE,
                 row: SuiteRow | None = None) -> None:
        """``row``: the suite's header (default: the toy suite's levels under the name ``suite``)."""
        self.path = path
        self.suite = row.suite if row is not None else suite
        self.cases = list(cases) if cases is not None else make_cases()
        self.writer = StoreWriter(path)
        self.writer.ensure_suite(row if row is not None else suite_row(suite), self.cases)
        self.clock = datetime(2024, 6, 1)

    def record_test_split(self, split_id: str = "all-test") -> None:
        """Record a split that keeps every case in T_test, and give it to the models written from now on (the views
        read it to tell a crossing level's cases without a group from a fold not done)."""
        self.writer.record_split(SplitRows(split_id, self.suite, 1, (0.0, 0.0, 1.0), {},
                                           [(c.case_id, "test", True) for c in self.cases]))
        self.split_id = split_id

    def _tick(self) -> datetime:
        self.clock += timedelta(seconds=1)
        return self.clock

    def add(self, config: str, method: str, scenario: str, outcomes: Mapping[str, str],
            correct: Sequence[bool] | None = None, *, task: str = "sentiment", seed: int = 42,
            split_seed: int = 1, model_name: str = "toy-bert", preds: Sequence[str] | None = None,
            golds: Sequence[str] | None = None, case_preds: Mapping[str, str] | None = None,
            metric: str = "accuracy") -> list[str]:
        """One model (standard / seen) or one per group (held-out at level ``scenario``); returns model ids.
        ``metric``: the task's primary i.i.d. metric (accuracy, macro_f1, f1 of class 1, micro_f1 without the last
        class of ``LABELS``), computed from the D_test gold and predicted ids."""
        if scenario in ("standard", "seen"):
            folds: dict[str | None, list[str]] = {None: list(outcomes)}
        else:
            by_id = {c.case_id: c for c in self.cases}
            folds = {}
            for cid in outcomes:
                c = by_id[cid]
                group = c.test_type if scenario == "test_type" else c.groups.get(scenario)
                if group is not None:
                    folds.setdefault(group, []).append(cid)
        ids, results = [], []
        for group, cids in sorted(folds.items(), key=lambda kv: str(kv[0])):
            mid = f"{task}/{model_name}/{config}/{method}/{scenario}/{group}/{seed}/{split_seed}"
            iid: list[IIDResult] = []
            if correct is not None and group is None:
                n = len(correct)
                gold = list(golds) if golds is not None else [str(i % 2) for i in range(n)]
                pred = list(preds) if preds is not None else \
                    [g if ok else str(1 - int(g)) for g, ok in zip(gold, correct, strict=True)]
                iid = [IIDResult("test", gold, pred, np.asarray(correct, dtype=bool),
                                 iid_metric_values(metric, gold, pred, correct), metric)]
            record = ModelRecord(model_id=mid, task=task, suite=self.suite, model_name=model_name, config=config,
                                 method=method, scenario=scenario, heldout_group=group,
                                 heldout_level=None if group is None else scenario, seed=seed,
                                 split_seed=split_seed, split_id=self.split_id, finished_at=self._tick())
            result = JobResult(record, Outcomes.of(cids, [outcomes[c] for c in cids],
                                                   [(case_preds or {}).get(c) for c in cids]), iid)
            results.append(result)
            ids.append(mid)
        self.writer.commit_many(results)   # a scenario's folds in one transaction
        return ids


def iid_metric_values(metric: str, gold: Sequence[str], pred: Sequence[str],
                      correct: Sequence[bool]) -> dict[str, float]:
    """The stored i.i.d. metrics of a model, as a task computes them (beluga_core.evaluation.metrics)."""
    from beluga_core.evaluation.metrics import f1_of_class, macro_f1, micro_f1_excluding

    g, p = np.asarray([int(x) for x in gold]), np.asarray([int(x) for x in pred])
    values = {"accuracy": sum(correct) / len(correct)}
    if metric == "macro_f1":
        values["macro_f1"] = macro_f1(p, g)
    elif metric == "f1":
        values["f1"] = f1_of_class(p, g, 1)
    elif metric == "micro_f1":
        values["micro_f1"] = micro_f1_excluding(p, g, len(LABELS) - 1)
    return values


def random_outcomes(cases: Sequence[CaseRow], rng: random.Random,
                    weights: tuple[float, float, float] = (0.55, 0.35, 0.10)) -> dict[str, str]:
    return {c.case_id: rng.choices(("pass", "fail", "skip"), weights)[0] for c in cases}


def perturb(outcomes: Mapping[str, str], rng: random.Random, rate: float) -> dict[str, str]:
    """A copy with about ``rate`` of the outcomes redrawn."""
    return {cid: rng.choice(("pass", "fail", "skip")) if rng.random() < rate else o for cid, o in outcomes.items()}


def mft_gold(cases: list[CaseRow]) -> dict[str, str]:
    """Gold labels of the toy suite's MFT cases: a class id, or "not 0" (a not_eq expectation) for every fifth."""
    mft = [c for c in cases if c.test_type == "MFT"]
    return {c.case_id: "not 0" if i % 5 == 0 else str(i % 3) for i, c in enumerate(mft)}


def report_store(path: Path, *, analyse: bool = True, rounds: int = 500) -> dict[str, object]:
    """Baseline; iid-then-t a noisy copy; iid-plus-t right wherever the baseline is wrong, and degenerate:
    it predicts label 1 for every D_test example and every MFT case. Gold labels are in the store's cases
    (no suite file anywhere), label names in its suite and task head. The store of `beluga report`'s tests, both
    halves (tests/unit/analysis/test_report.py, tests/e2e/test_report_run.py)."""
    from beluga_core.analysis.significance import analyze_store

    b = StoreBuilder(path, make_cases(gold=mft_gold(make_cases())))
    b.writer.set_task_head("sentiment", b.suite, ["negative", "positive"])
    rng = random.Random(1)
    mft = [c for c in b.cases if c.test_type == "MFT"]
    run = b.writer.begin_run(path.with_name("bench.toml"), '[[tasks]]\nname = "sentiment"\nsuite = "gone.jsonl"\n')
    base = random_outcomes(b.cases, rng)
    correct = [rng.random() < 0.75 for _ in range(120)]
    golds = [str(i % 2) for i in range(120)]
    balanced = {c.case_id: str(i % 3) for i, c in enumerate(mft)}
    b.add("iid", "vanilla", "standard", base, correct, golds=golds, case_preds=balanced)
    noisy = perturb(base, rng, 0.3)
    better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
    ones = {c.case_id: "1" for c in mft}
    for scenario in ("seen", "functionality", "class"):
        b.add("iid-then-t", "vanilla", scenario, noisy, correct if scenario == "seen" else None, golds=golds,
              case_preds=balanced)
        b.add("iid-plus-t", "vanilla", scenario, better, [True] * 120 if scenario == "seen" else None,
              golds=golds, preds=["1"] * 120 if scenario == "seen" else None, case_preds=ones)
    b.writer.finish_run(run)
    if analyse:
        analyze_store(path, rounds=rounds, seed=0)
    return {"builder": b, "base": base, "run": run}


def known_store(path: Path, rounds: int | None = None) -> tuple[Path, dict[str, object]]:
    """The significance tests' store with known answers, analysed when ``rounds`` is given (seed 1): the baseline;
    'identical' (iid-then-t) = the baseline's outcomes and answers in every scenario; 'perfect' (iid-plus-t) right
    wherever the baseline is wrong (passes its failed cases, answers every example). Returns (path, what it was
    built from)."""
    from beluga_core.analysis.significance import analyze_store

    b = StoreBuilder(path)
    rng = random.Random(0)
    base = random_outcomes(b.cases, rng)
    correct = [rng.random() < 0.7 for _ in range(100)]
    b.add("iid", "vanilla", "standard", base, correct)
    for scenario in ("seen", "functionality", "class"):
        b.add("iid-then-t", "vanilla", scenario, base, correct if scenario == "seen" else None)
        better = {cid: "pass" if o == "fail" else o for cid, o in base.items()}
        b.add("iid-plus-t", "vanilla", scenario, better, [True] * 100 if scenario == "seen" else None)
    if rounds is not None:
        analyze_store(path, rounds=rounds, seed=1)
    return path, {"base": base, "correct": correct, "builder": b}


def copy_of(template: tuple[Path, dict[str, object]], folder: Path) -> tuple[Path, dict[str, object]]:
    """A fresh copy of a built store in ``folder`` for a test that writes to it, its builder writing to the copy
    (building and analysing once, then copying, saves ~2 s a test)."""
    import copy
    import shutil

    path, info = template
    target = folder / path.name
    shutil.copyfile(path, target)
    builder = copy.copy(info["builder"])
    assert isinstance(builder, StoreBuilder)
    builder.writer = StoreWriter(target)
    builder.path = target
    return target, {**info, "builder": builder}
