"""The report's regression section: negative and positive flip rates per configuration-method-scenario against
each model's old model, with 95 % bootstrap intervals (from the ``regression_summary`` view's counts), and NFR
per scoring group as a heatmap."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from beluga_core.analysis.regression.flips import count_interval, rng_for
from beluga_core.analysis.replicates.intervals import HIERARCHICAL_MIN_SEEDS
from beluga_core.analysis.report.heatmap_figures import MatrixFigure, slug
from beluga_core.core.constants import pair_order, scenario_order

REGRESSION_NOTE = ("Each model against its old model: its recorded parent (an IID→T fold's IID model, an ensemble's "
                   "baseline) or else the IID baseline of its seed. NFR: share of the paired items the old model got "
                   "right and the new one wrong; PFR the reverse; Δacc = PFR − NFR. D_test: i.i.d. test examples "
                   "(held-out folds only with score_folds_on_iid_test); suite: T_test cases, skipped ones left out. "
                   "Replicates pooled; 95 % intervals from 2,000 seeded bootstrap rounds over the items, except the "
                   "suite rates of a cell with two or more seeds: their mean over seeds, with the interval over "
                   f"seeds, then cases (the seed-level t with fewer than {HIERARCHICAL_MIN_SEEDS} seeds, where that "
                   "one covers below 93.5 %).")
VOTE_NOTE = ("† a vote ensemble: its probability vectors are vote shares, which INV and DIR expectations read as "
             "confidences.")


@dataclass
class RegressionLine:
    task: str
    config: str
    method: str
    scenario: str
    values: dict[str, tuple[float | None, float | None, dict[str, tuple[float, float]]]]  # source → nfr, pfr, CI
    vote_share: bool = False
    seeds: int = 0     # suite rates: the mean over this many seeds with the interval over seeds (0: pooled)


def build_regression(data: Any) -> tuple[list[RegressionLine], list[MatrixFigure]]:
    rows = data.regression
    lines: dict[tuple[str, str, str, str], RegressionLine] = {}
    for r in rows:
        if r["scoring_group"] is not None or (r["source"] == "iid" and r["part"] != "test"):
            continue
        key = (r["task"], r["config"], r["method"], r["scenario"])
        line = lines.setdefault(key, RegressionLine(*key, {}, (r["config"], r["method"]) in data.vote_share))
        ci = count_interval(int(r["n"]), int(r["n_neg"]), int(r["n_pos"]), rng_for(0, *key, r["source"]))
        line.values[r["source"]] = (r["nfr"], r["pfr"], ci)
    # With seeds as replicates the suite rates are the mean over seeds with the interval over seeds, then cases.
    over_seeds = {(r["task"], r["config"], r["method"], r["scenario"], r["statistic"]): r for r in data.replicates
                  if r["statistic"] in ("nfr", "pfr") and r["base_config"] is None and r["status"] == "current"
                  and r["n_seeds"] >= 2}
    for key, line in lines.items():
        nfr, pfr = over_seeds.get((*key, "nfr")), over_seeds.get((*key, "pfr"))
        if nfr is not None and pfr is not None and "suite" in line.values:
            line.values["suite"] = (nfr["mean"], pfr["mean"], {"nfr": (nfr["lo"], nfr["hi"]),
                                                               "pfr": (pfr["lo"], pfr["hi"])})
            line.seeds = int(nfr["n_seeds"])
    ordered = []
    for task in sorted({k[0] for k in lines}):
        for pair in pair_order({(k[1], k[2]) for k in lines if k[0] == task}):
            for scenario in scenario_order({k[3] for k in lines if k[:3] == (task, *pair)}):
                ordered.append(lines[(task, *pair, scenario)])
    figures = []
    by_task: dict[tuple[str, str], dict[tuple[str, str, str], dict[str, float | None]]] = defaultdict(dict)
    for r in rows:
        if r["source"] == "suite" and r["scoring_group"] is not None:
            by_task[(r["task"], r["suite"])].setdefault((r["config"], r["method"], r["scenario"]), {})[
                r["scoring_group"]] = r["nfr"]
    for (task, suite), per_row in sorted(by_task.items()):
        groups = sorted({g for v in per_row.values() for g in v})
        keys = [k for k in (line_key for line_key in ((ln.config, ln.method, ln.scenario) for ln in ordered
                                                      if ln.task == task)) if k in per_row]
        values = np.array([[np.nan if per_row[k].get(g) is None else per_row[k][g] for g in groups] for k in keys],
                          dtype=float).reshape(len(keys), len(groups))
        figures.append(MatrixFigure(slug("nfr", task, suite), f"{task} ({suite}): negative flip rate per scoring "
                                    "group (%), against each model's old model", [f"{c}/{m} · {s}" for c, m, s in keys],
                                    groups, values, "scoring group", "configuration/method · scenario",
                                    colormap="Reds", label="negative flip rate (%)"))
    return ordered, figures
