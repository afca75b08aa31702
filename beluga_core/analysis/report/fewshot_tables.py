"""The report's few-shot ranking section: per stored ranking (`beluga rank`), each signal's ranking accuracy with its
interval, pairs used and excluded, ties, τ-b, top-1 and the paired difference from ACC; and a figure of pairwise
accuracy against each pair's true gap."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.analysis.ranking.over_seeds import NOTE as OVER_SEEDS_NOTE
from beluga_core.analysis.ranking.over_seeds import over_seeds
from beluga_core.analysis.ranking.save import interval, percent
from beluga_core.analysis.report.heatmap_figures import save_figure, slug

FEWSHOT_NOTE = ("Which model blind to a group will do best there, predicted from n of its cases (a probe drawn from "
                "the group's T_train ∪ T_val, which none of them trained on): per signal, the share of model pairs "
                "it orders as their pass rates on the group's T_test do (a tie counts as the ranking says), averaged "
                "over B probes, then over pairs and groups. Interval: 95 % two-stage bootstrap (groups, then probes). "
                "Δ vs ACC: on the same probes; an interval excluding 0 marks a real difference. Pairs with equal "
                "true pass rates are excluded. Near/far: pairs with a true gap at most / above the median.")
HEADER = ["signal", "accuracy % [95 % CI]", "pairs used / excl.", "ties %", "τ-b", "top-1 %", "Δ vs ACC [95 % CI]",
          "near / far %"]
# A replicated zoo (candidates trained with several seeds): each seed's candidates ranked among themselves.
SEEDS_HEADER = ["signal", "accuracy over seeds % [95 % t]", "seeds", "per seed %"]
SEEDS_NOTE = OVER_SEEDS_NOTE


@dataclass
class FewshotTable:
    title: str
    rows: list[list[str]]
    stale: bool
    png: Path | None = None
    svg: Path | None = None
    notes: list[str] = field(default_factory=list)
    seed_rows: list[list[str]] = field(default_factory=list)     # SEEDS_HEADER's rows; none with fewer than 2 seeds


def _ci(lo: Any, hi: Any) -> str:
    text = interval(lo, hi)
    return f" {text}" if text else ""


def build_fewshot(rows: list[dict[str, Any]], pairs: list[dict[str, Any]], out_dir: Path | None,
                  grid_on_seen: set[str] | None = None,
                  seeds: list[dict[str, Any]] | None = None) -> list[FewshotTable]:
    """One table per stored ranking; ``grid_on_seen``: tasks whose hyper-parameters were selected on the seen
    scenario's T_val (which holds part of every probe pool); ``seeds``: rows of ``fewshot_seed_accuracy``, whose
    rankings over two or more seeds get a second table, their accuracy over the seeds."""
    by_seeds = over_seeds(seeds or [])
    by_rank: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_rank[r["rank_id"]].append(r)
    pairs_by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in pairs:
        pairs_by[p["rank_id"]].append(p)
    out = []
    for rid, rs in by_rank.items():
        first = rs[0]
        what = f"level '{first['level']}'" if first["source"] == "store" else f"zoo ({first['level']})"
        title = (f"{first['task'] or ''} ({first['suite']}): {what}, n = {first['n']}, B = {first['bootstrap']}, "
                 f"seed {first['rng_seed']}, ties {first['ties']}")
        table_rows = []
        for r in sorted(rs, key=lambda x: (-(x["accuracy"] if x["accuracy"] is not None else -1), x["signal"])):
            diff = "" if r["diff_vs_acc"] is None else \
                f"{100 * r['diff_vs_acc']:+.1f}{_ci(r['diff_ci_low'], r['diff_ci_high'])}"
            tau = "—" if r["tau_b"] is None or np.isnan(r["tau_b"]) else f"{r['tau_b']:.2f}"
            table_rows.append([r["signal"], f"{percent(r['accuracy'])}{_ci(r['ci_low'], r['ci_high'])}",
                               f"{r['pairs_used']} / {r['pairs_excluded']}", percent(r["tie_rate"]), tau,
                               f"{percent(r['top1'])}{_ci(r['top1_ci_low'], r['top1_ci_high'])}", diff,
                               f"{percent(r['near_accuracy'])} / {percent(r['far_accuracy'])}"])
        table = FewshotTable(title, table_rows, any(bool(r["stale"]) for r in rs))
        for r in sorted(rs, key=lambda x: (-(x["accuracy"] if x["accuracy"] is not None else -1), x["signal"])):
            o = by_seeds.get((rid, r["signal"]))
            if o is not None:
                table.seed_rows.append([o.signal, o.text(), str(o.n_seeds), o.per_seed_text()])
        if first["source"] == "store" and first["task"] in (grid_on_seen or set()):
            table.notes.append("the candidates' hyper-parameters were selected on the seen scenario's T_val, which "
                               "includes each group's T_val cases — part of its probe pool")
        if table.stale:
            table.notes.append("stale: a candidate model was trained again since; run `beluga rank` again")
        if out_dir is not None and pairs_by.get(rid):
            table.png, table.svg = _gap_figure(pairs_by[rid], out_dir, slug("fewshot", rid), title)
        out.append(table)
    return out


def _gap_figure(pairs: list[dict[str, Any]], out_dir: Path, name: str, title: str) -> tuple[Path, Path]:
    """PA against the pair's true gap, for the baselines and the factor with the highest mean accuracy."""
    import matplotlib.pyplot as plt

    by_signal: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for p in pairs:
        if p["pa"] is not None:
            by_signal[p["signal"]].append((float(p["gap"]), float(p["pa"])))
    shown: list[str] = [s for s in ("acc", "conf", "conf-gt", "random") if s in by_signal]
    others = sorted((s for s in by_signal if s not in shown and not s.startswith("acc+")),
                    key=lambda s: -float(np.mean([v for _, v in by_signal[s]])))
    shown += others[:1]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for i, s in enumerate(shown):
        xy = np.array(by_signal[s])
        jitter = (i - len(shown) / 2) * 0.002
        ax.scatter(100 * xy[:, 0] + 100 * jitter, 100 * xy[:, 1], s=14, alpha=0.7, label=s)
    ax.axhline(50, color="#888", lw=0.8, ls="--")
    ax.set_xlabel("true gap between the pair's pass rates (points)")
    ax.set_ylabel("pairwise ranking accuracy (%)")
    ax.set_ylim(-3, 103)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, out_dir, name)
