"""Time a benchmark config end to end at a forced precision, check that repeated runs agree, and print its
figures with 95 % bootstrap confidence intervals.

    python -m benchmarks.findings.bench_quick                                  # quick.toml, fp32, twice
    python -m benchmarks.findings.bench_quick --precision bf16 --runs 2        # on a CPU with native bf16
    python -m benchmarks.findings.bench_quick --config benchmarks/quick-3class.toml --runs 1
    python -m benchmarks.findings.bench_quick --analyze runs/a.duckdb runs/b.duckdb   # figures of stores, no run

Each run is `beluga run CONFIG --store NEW` in a fresh store (a copy of the config with `[executor] precision`
set), timed from outside; the run's own printed wall time and the precision / CPU line it prints are shown
beside it. Stores "agree" when every model's per-case outcomes, i.i.d. predictions and the g_scores view are
equal (a store written by another beluga version compares the same way: model ids are job ids).

The confidence intervals resample with a fixed seed: s_T by resampling each scoring group's evaluated T_test
cases with replacement (groups fixed, as s_T weighs them equally), the i.i.d. accuracy by resampling D_test
examples; 2,000 rounds.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import duckdb
import numpy as np

from benchmarks.harness import REPO, Benchmark, Run, new_store

ROUNDS = 2000
SEED = 0


def facts(store: Path) -> dict[str, list[tuple[object, ...]]]:
    """What two runs must agree on."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        return {
            "outcomes": con.execute("SELECT model_id, case_id, outcome FROM outcomes ORDER BY ALL").fetchall(),
            "iid_predictions": con.execute("SELECT model_id, split, example_idx, pred FROM iid_predictions "
                                           "ORDER BY ALL").fetchall(),
            # Exact: the views read the same bits on every read (migration 17; before it DuckDB's parallel AVG
            # added a view's floats in another order from one read to the next, and this rounded to 12 places).
            "g_scores": con.execute("SELECT task, config, method, scenario, s_suite, s_iid, g FROM g_scores "
                                    "ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def bootstrap(values_by_group: list[np.ndarray], rng: np.random.Generator) -> np.ndarray:
    """s_T (mean of group pass rates) for ROUNDS resamples of each group's cases."""
    rates = np.empty((ROUNDS, len(values_by_group)))
    for j, v in enumerate(values_by_group):
        rates[:, j] = v[rng.integers(0, len(v), size=(ROUNDS, len(v)))].mean(axis=1)
    return rates.mean(axis=1)


def ci(samples: np.ndarray) -> str:
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return f"[{lo:.3f}, {hi:.3f}]"


Outcomes = dict[str, dict[str, float]]  # scoring group → case id → 1 pass / 0 fail


def scenario_cases(con: duckdb.DuckDBPyConnection, seed: int) -> dict[tuple[str, str, str], Outcomes]:
    """(task, config, scenario) → the evaluated (not skipped) cases' outcomes, per scoring group, of one seed."""
    rows = con.execute("""
        SELECT m.task, m.config, m.scenario, c.scoring_group, o.case_id, o.outcome = 'pass'
        FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
        WHERE m.status = 'done' AND o.outcome <> 'skip' AND m.seed = $seed
          AND c.scoring_group NOT IN (SELECT scoring_group FROM g_exclusions x WHERE x.task = m.task)
        ORDER BY ALL""", {"seed": seed}).fetchall()
    out: dict[tuple[str, str, str], Outcomes] = {}
    for task, config, scenario, group, case_id, passed in rows:
        out.setdefault((task, config, scenario), {}).setdefault(group, {})[case_id] = float(passed)
    return out


def paired_difference(a: Outcomes, b: Outcomes, rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """s_T(a) − s_T(b) over the groups and cases both evaluated, resampling the same cases for both."""
    groups = sorted(g for g in a.keys() & b.keys() if a[g].keys() & b[g].keys())
    diffs = np.empty((ROUNDS, len(groups)))
    point = []
    for j, g in enumerate(groups):
        ids = sorted(a[g].keys() & b[g].keys())
        va, vb = np.array([a[g][i] for i in ids]), np.array([b[g][i] for i in ids])
        idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
        diffs[:, j] = va[idx].mean(axis=1) - vb[idx].mean(axis=1)
        point.append(va.mean() - vb.mean())
    return float(np.mean(point)), diffs.mean(axis=1)


def report(store: Path) -> None:
    """Each seed's figures on its own: one training run's draw, with intervals over cases only (a store of several
    seeds: `beluga analyze` gives the figures over seeds)."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        seeds = [s for (s,) in con.execute("SELECT DISTINCT seed FROM models ORDER BY seed").fetchall()]
        print(f"\n{store}")
        for seed in seeds:
            if len(seeds) > 1:
                print(f" seed {seed} (one training run: case variation only)")
            report_seed(con, seed)
    finally:
        con.close()


def report_seed(con: duckdb.DuckDBPyConnection, seed: int) -> None:
    rng = np.random.default_rng(SEED)
    iid = con.execute("""
        SELECT m.task, m.config, list(p.correct ORDER BY p.example_idx)
        FROM iid_predictions p JOIN models m USING (model_id)
        WHERE m.status = 'done' AND p.split = 'test' AND m.scenario IN ('standard', 'seen') AND m.seed = $seed
        GROUP BY ALL ORDER BY ALL""", {"seed": seed}).fetchall()
    accuracy = {}
    for task, config, correct in iid:
        c = np.asarray(correct, dtype=float)
        accuracy[(task, config)] = c.mean()
        boot = c[rng.integers(0, len(c), size=(ROUNDS, len(c)))].mean(axis=1)
        print(f"  {task} {config}: i.i.d. accuracy on D_test {c.mean():.3f} {ci(boot)} (n = {len(c)})")
    cases = scenario_cases(con, seed)
    g_rows = con.execute("SELECT task, config, scenario, s_suite, s_iid, g FROM g_scores WHERE seed = $seed "
                         "ORDER BY ALL", {"seed": seed}).fetchall()
    print("  task · configuration · scenario: s_T [95 % CI] (groups) · s_iid · G")
    worst = 0.0
    for task, config, scenario, s_t, s_iid, g in g_rows:
        groups = [np.array(list(v.values())) for _, v in sorted(cases.get((task, config, scenario), {}).items())]
        interval = ci(bootstrap(groups, rng)) if groups else "[—]"
        print(f"  {task} · {config} · {scenario}: {s_t:.3f} {interval} ({len(groups)}) · "
              f"{s_iid:.3f} · {g:.3f}")
        # The same figures from the raw tables (outcomes, cases, i.i.d. predictions), not the views.
        mine_t = float(np.mean([v.mean() for v in groups]))
        mine_iid = accuracy[(task, config)]
        mine_g = 2 * mine_t * mine_iid / (mine_t + mine_iid)
        worst = max(worst, abs(mine_t - s_t), abs(mine_iid - s_iid), abs(mine_g - g))
    print(f"  s_T, s_iid and G recomputed from the raw tables: largest difference from g_scores {worst:.1e}"
          " (s_iid as accuracy: right where accuracy is the primary metric)")
    # seen − standard within each suite configuration: the same T_test cases, so resampled in pairs.
    for task, config in sorted({(t, c) for t, c, *_ in g_rows if c != "iid"}):
        seen, standard = cases.get((task, config, "seen")), cases.get((task, "iid", "standard"))
        if seen and standard:
            point, diff = paired_difference(seen, standard, rng)
            print(f"  {task} · {config}: s_seen − s_standard = {point:+.3f} {ci(diff)} "
                  f"(cases evaluated in both)")
    missing = con.execute("""
        SELECT p.config, p.scenario, count(*) FROM pass_rates p
        WHERE p.scenario NOT IN ('standard', 'seen') AND p.pass_rate IS NULL AND p.seed = $seed
        GROUP BY ALL""", {"seed": seed}).fetchall()
    print("  every scoring group has a pass rate in every held-out scenario" if not missing else
          f"  groups without a pass rate: {missing}")


class Quick(Benchmark):
    config = REPO / "benchmarks" / "quick.toml"
    out = REPO / "runs" / "bench-quick"

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--runs", type=int, default=2)
        parser.add_argument("--compare", type=Path, nargs="*", default=[],
                            help="stores (e.g. of another beluga version) that must agree with the runs")

    def runs(self, args: argparse.Namespace) -> int:
        return int(args.runs)

    def store(self, args: argparse.Namespace, config: Path, i: int) -> Path:
        return new_store(args.out, config, args.precision, f"-{i}")

    def shown(self, args: argparse.Namespace, i: int, run: Run) -> None:
        own = re.search(r"wall time: ([\d.]+) s", run.printed)
        print(f"run {i + 1}: {run.wall:.1f} s from outside, {own.group(1) if own else '?'} s printed by beluga run "
              f"({run.line('precision ')})", flush=True)

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        report(store)

    def after(self, args: argparse.Namespace, runs: list[Run]) -> None:
        stores = [run.store for run in runs]
        reference = facts(stores[0])
        for other in [*stores[1:], *args.compare]:
            same = facts(other)
            verdict = "identical" if same == reference else \
                "DIFFERENT: " + ", ".join(k for k in reference if reference[k] != same[k])
            print(f"{other.name} against {stores[0].name}: {verdict}")
        for store in stores[:1]:
            report(store)


if __name__ == "__main__":
    Quick(__doc__ or "").main()
