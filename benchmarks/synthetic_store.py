"""A synthetic result store shaped like a `beluga run benchmarks/quick.toml` store, for benchmarks and the
report screenshot when no real store is at hand.

It uses the real sentiment suite's case ids, functionalities, classes and test types (read from the shipped
suite file), and invents outcomes: each T_test case and D_test example has a latent difficulty u ~ U(0, 1),
shared by all models, and a model passes / answers correctly when u is below its own rate, so models are
paired and correlated as real ones are. One configuration (iid-then-t) is made degenerate on D_test.
"""

from __future__ import annotations

import gzip
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from beluga_core.data.suite.suite_files import resolve_suite_path
from beluga_core.execution.results import IIDResult, JobResult, ModelRecord, Outcomes
from beluga_core.store.rows import CaseRow, SuiteRow
from beluga_core.store.writer import StoreWriter

CONFIGS = {  # config → (suite pass-rate shift per scenario, D_test accuracy)
    "iid-then-t": ({"seen": 0.30, "functionality": 0.10, "class": 0.04, "test_type": -0.08}, 0.55),
    "iid-plus-t": ({"seen": 0.28, "functionality": 0.12, "class": 0.06, "test_type": 0.02}, 0.83),
    "iid-then-iid-plus-t": ({"seen": 0.29, "functionality": 0.13, "class": 0.07, "test_type": 0.03}, 0.84),
}
SCENARIOS = ("seen", "functionality", "class", "test_type")
CONFIG_TEXT = 'name = "synthetic"\n[[tasks]]\nname = "sentiment"\nsuite = "builtin:sentiment"\niid = "builtin:sst2"\n'


def sentiment_cases(per_group: int | None, seed: int = 123,
                    share: float = 0.25) -> tuple[list[CaseRow], dict[str, str]]:
    """``per_group`` T_test cases per functionality of the shipped sentiment suite (all when it has fewer; None:
    ``share`` of each, as a full-size T_test), and each MFT case's gold label id ("not 0": not negative)."""
    by_group: dict[str, list[tuple[CaseRow, str | None]]] = defaultdict(list)
    with gzip.open(resolve_suite_path("builtin:sentiment"), "rt", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            r = json.loads(line)
            exp = r["expectation"]
            gold = None
            if r["test_type"] == "MFT":
                target = r.get("label") if exp.get("target") == "label" else exp.get("value", r.get("label"))
                gold = f"not {target}" if exp["kind"] == "not_eq" else str(target)
            row = CaseRow(r["id"], r["test_type"], r["groups"], gold)
            by_group[row.group("functionality")].append((row, gold))
    rng = random.Random(seed)
    cases, golds = [], {}
    for rows in by_group.values():
        k = max(1, round(share * len(rows))) if per_group is None else min(per_group, len(rows))
        for row, gold in rng.sample(rows, k):
            cases.append(row)
            if gold is not None:
                golds[row.case_id] = gold
    return cases, golds


def build_synthetic_store(path: Path, *, per_group: int | None = 20, n_iid: int = 436, seed: int = 0,
                          configs: tuple[str, ...] = tuple(CONFIGS), scenarios: tuple[str, ...] = SCENARIOS,
                          seeds: tuple[int, ...] = (42,)) -> int:
    """Write the store; returns the number of models (per training seed of ``seeds``: 1 + configs × folds, 148 for
    the quick shape). A further seed shifts every case's difficulty, so that the seeds' outcomes differ."""
    cases, golds = sentiment_cases(per_group)
    writer = StoreWriter(path)
    writer.ensure_suite(SuiteRow("sentiment", ("class", "functionality"), "functionality", "text",
                                 ("negative", "neutral", "positive")), cases)
    writer.set_task_head("sentiment", "sentiment", ["negative", "positive"])
    run_id = writer.begin_run("synthetic.toml", CONFIG_TEXT, device="cpu")
    rng = np.random.default_rng(seed)
    u_case = rng.random(len(cases))
    u_iid = rng.random(n_iid)
    gold_iid = rng.integers(0, 2, n_iid)
    base_rate = {g: rng.uniform(0.15, 0.95) for g in dict.fromkeys(c.group("functionality") for c in cases)}
    skip = rng.random(len(cases)) < 0.05

    def outcomes(shift: float, idx: list[int], k: int) -> list[tuple[str, str, str | None]]:
        out = []
        for i in idx:
            c = cases[i]
            passed = (u_case[i] + 0.137 * k) % 1.0 < min(max(base_rate[c.group("functionality")] + shift, 0.0), 1.0)
            outcome = "skip" if skip[i] else ("pass" if passed else "fail")
            gold = golds.get(c.case_id)
            pred = None
            if gold is not None:
                ok = gold[4:] if gold.startswith("not ") else gold
                right = "2" if gold.startswith("not ") else ok
                pred = right if passed else ("1" if right != "1" else "0")
            out.append((c.case_id, outcome, pred))
        return out

    def predictions(accuracy: float, degenerate: bool) -> list[tuple[str, int, str, str, bool]]:
        rows = []
        for i in range(n_iid):
            gold = str(gold_iid[i])
            pred = "0" if degenerate and u_iid[i] < 0.95 else (gold if u_iid[i] < accuracy else str(1 - gold_iid[i]))
            rows.append(("test", i, gold, pred, pred == gold))
        return rows

    def commit(config: str, scenario: str, shift: float, accuracy: float | None, group: str | None,
               idx: list[int], k: int, model_seed: int) -> None:
        iid = []
        if accuracy is not None:
            preds = predictions(accuracy, config == "iid-then-t")
            iid = [IIDResult("test", [p[2] for p in preds], [p[3] for p in preds],
                             np.array([p[4] for p in preds], dtype=bool),
                             {"accuracy": sum(p[4] for p in preds) / n_iid}, "accuracy")]
        outs = outcomes(shift, idx, k)
        suffix = "" if k == 0 else f"-s{model_seed}"   # the first seed's ids as they always were
        record = ModelRecord(model_id=f"syn-{config}-{scenario}-{group}{suffix}", task="sentiment", suite="sentiment",
                             model_name="synthetic-minilm", config=config, method="vanilla", scenario=scenario,
                             heldout_level=None if group is None else scenario, heldout_group=group,
                             seed=model_seed, split_seed=123)
        results.append(JobResult(record, Outcomes.of([o[0] for o in outs], [o[1] for o in outs],
                                                     [o[2] for o in outs]), iid))

    everything = list(range(len(cases)))
    results: list[JobResult] = []   # committed together: one transaction, not one per model
    n = 0
    for k, model_seed in enumerate(seeds):
        commit("iid", "standard", 0.0, 0.82, None, everything, k, model_seed)
        n += 1
        for config in configs:
            shifts, accuracy = CONFIGS[config]
            for scenario in scenarios:
                if scenario == "seen":
                    commit(config, "seen", shifts["seen"], accuracy, None, everything, k, model_seed)
                    n += 1
                    continue
                folds: dict[str, list[int]] = defaultdict(list)
                for i, c in enumerate(cases):
                    folds[c.test_type if scenario == "test_type" else c.groups[scenario]].append(i)
                for group, idx in folds.items():
                    commit(config, scenario, shifts[scenario], None, group, idx, k, model_seed)
                    n += 1
    writer.commit_many(results, run_id)
    writer.finish_run(run_id)
    return n
