"""Run benchmarks/quick-cross.toml at a forced precision and print its cross-suite and only:class figures with
95 % bootstrap confidence intervals.

    python -m benchmarks.findings.bench_cross                     # fp32 forced, one run
    python -m benchmarks.findings.bench_cross --analyze STORE     # figures of an existing store, no run

Figures (2,000 seeded bootstrap rounds; every interval resamples cases within their groups, groups fixed, as s
averages groups with equal weight):
  - per configuration · scenario, s on the eval suite (sst2-phenomena) at the scenario's basis (all eval cases,
    or those mapped to the held-out groups), its G, and s minus the IID baseline's s on the same eval cases
    (paired: both resampled together);
  - per class of only:class, what training on that class alone did against the IID model, on its own class and
    on the other classes (mean over them), each a paired difference on the same T_test cases.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np

from benchmarks.findings.bench_quick import ROUNDS, SEED, ci
from benchmarks.harness import REPO, Benchmark, Run

Cases = dict[str, dict[str, float]]   # group → case id → 1 pass / 0 fail


def _cases(rows: list[tuple[str, str, bool]]) -> Cases:
    out: Cases = defaultdict(dict)
    for group, case_id, passed in rows:
        out[group][case_id] = float(passed)
    return dict(out)


def paired(a: Cases, b: Cases | None, rng: np.random.Generator) -> tuple[float, np.ndarray, float, np.ndarray]:
    """(s(a), its bootstrap, s(a) − s(b), its bootstrap) over the groups and cases both have (all of a's when b
    is None), resampling the same cases for both."""
    groups = sorted(g for g in a if b is None or a[g].keys() & b.get(g, {}).keys())
    sa = np.empty((ROUNDS, len(groups)))
    sd = np.empty((ROUNDS, len(groups)))
    pa, pd = [], []
    for j, g in enumerate(groups):
        ids = sorted(a[g] if b is None else a[g].keys() & b[g].keys())
        va = np.array([a[g][i] for i in ids])
        vb = np.array([b[g][i] for i in ids]) if b is not None else np.zeros(len(ids))
        idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
        sa[:, j] = va[idx].mean(axis=1)
        sd[:, j] = sa[:, j] - vb[idx].mean(axis=1)
        pa.append(va.mean())
        pd.append(va.mean() - vb.mean())
    return float(np.mean(pa)), sa.mean(axis=1), float(np.mean(pd)), sd.mean(axis=1)


def report(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    rng = np.random.default_rng(SEED)
    try:
        print(f"\n{store}")
        keys = con.execute("""SELECT DISTINCT config, scenario, mapped_level, eval_suite, g FROM cross_scores
                              WHERE mapped_level IS NULL OR mapped_level = scenario
                              ORDER BY config <> 'iid', config, scenario""").fetchall()

        def cross(config: str, scenario: str, basis: str | None, eval_suite: str) -> Cases:
            return _cases(con.execute("""SELECT eval_group, case_id, outcome = 'pass' FROM cross_case_bases
                                         WHERE config = ? AND scenario = ? AND mapped_level IS NOT DISTINCT FROM ?
                                           AND eval_suite = ? AND outcome <> 'skip'""",
                                      [config, scenario, basis, eval_suite]).fetchall())

        print("  configuration · scenario (basis): s on the eval suite [95 % CI] · G · s − IID baseline's s on the "
              "same cases [95 % CI]")
        for config, scenario, basis, eval_suite, g in keys:
            a = cross(config, scenario, basis, eval_suite)
            base = None if (config, scenario) == ("iid", "standard") else cross("iid", "standard", basis, eval_suite)
            s, s_boot, d, d_boot = paired(a, base, rng)
            delta = "" if base is None else f" · {d:+.3f} {ci(d_boot)}"
            print(f"  {eval_suite}: {config} · {scenario} ({basis or 'all cases'}): {s:.3f} {ci(s_boot)} · "
                  f"G {g:.3f}{delta}")
        own_rows = con.execute("""
            SELECT m.trained_group, c.groups->>'class', c.scoring_group, o.case_id, o.outcome = 'pass'
            FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE m.status = 'done' AND m.trained_level = 'class' AND o.outcome <> 'skip'""").fetchall()
        iid_rows = con.execute("""
            SELECT c.groups->>'class', c.scoring_group, o.case_id, o.outcome = 'pass'
            FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE m.status = 'done' AND m.config = 'iid' AND m.scenario = 'standard' AND o.outcome <> 'skip'
            """).fetchall()
        if own_rows:
            iid_by_class: dict[str, Cases] = defaultdict(lambda: defaultdict(dict))
            for cls, group, cid, passed in iid_rows:
                iid_by_class[cls][group][cid] = float(passed)
            by_model: dict[str, dict[str, Cases]] = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
            for trained, cls, group, cid, passed in own_rows:
                by_model[trained][cls][group][cid] = float(passed)
            print("  only:class — trained on one class alone, minus the IID model, on the same T_test cases:")
            for trained in sorted(by_model):
                own = paired(by_model[trained][trained], iid_by_class[trained], rng)
                others = [paired(by_model[trained][c], iid_by_class[c], rng) for c in sorted(by_model[trained])
                          if c != trained]
                other_point = float(np.mean([o[2] for o in others]))
                other_boot = np.mean([o[3] for o in others], axis=0)
                print(f"    {trained}: own class {own[0]:.3f} ({own[2]:+.3f} {ci(own[3])}); other classes "
                      f"{other_point:+.3f} {ci(other_boot)}")
    finally:
        con.close()


class Cross(Benchmark):
    config = REPO / "benchmarks" / "quick-cross.toml"
    out = REPO / "runs" / "bench-cross"

    def shown(self, args: argparse.Namespace, i: int, run: Run) -> None:
        super().shown(args, i, run)
        printed = run.printed
        print(printed[printed.index("sentiment (sentiment) evaluated on"):] if "evaluated on" in printed else printed)

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        report(store)


if __name__ == "__main__":
    Cross(__doc__ or "").main()
