"""Run benchmarks/regression.toml at a forced precision and print its regression figures: accuracy, NFR and PFR of
every update against the old model on SST-2's D_test and on the sentiment suite's T_test cases, with 95 %
bootstrap intervals and randomization p-values, and a verdict on each of the regression paper's findings.

    python -m benchmarks.findings.bench_regression                     # fp32 forced, one run
    python -m benchmarks.findings.bench_regression --analyze STORE     # figures of an existing store, no run

Intervals: 2,000 seeded bootstrap rounds resampling the items (D_test examples; T_test cases) once per round for
every model, so that differences between models are paired. "holds" only where the interval of the difference
excludes 0; otherwise "not resolved at this size".
"""

from __future__ import annotations

import argparse
from pathlib import Path

import duckdb
import numpy as np

from beluga_core.analysis.regression.flips import centric_selection, nfr_randomization_test
from benchmarks.harness import REPO, Benchmark

ROUNDS = 2000
SEED = 0


def ci(x: np.ndarray) -> str:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


def verdict(x: np.ndarray, positive: bool = True) -> str:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return "holds" if (lo > 0 if positive else hi < 0) else "not resolved at this size"


class Items:
    """Per model, right (1) / wrong (0) / not evaluable (NaN) on the same items, resampled together."""

    def __init__(self, right: dict[str, np.ndarray]) -> None:
        self.right = right
        n = len(next(iter(right.values())))
        self.idx = np.random.default_rng(SEED).integers(0, n, size=(ROUNDS, n))

    def nfr(self, old: str, new: str) -> tuple[float, np.ndarray]:
        o, n = self.right[old], self.right[new]
        ok = ~np.isnan(o) & ~np.isnan(n)
        neg = np.where(ok, (o == 1) & (n == 0), 0).astype(float)
        point = neg[ok].mean()
        boot = neg[self.idx].sum(axis=1) / np.maximum(ok[self.idx].sum(axis=1), 1)
        return float(point), boot

    def pfr(self, old: str, new: str) -> tuple[float, np.ndarray]:
        return self.nfr(new, old)

    def acc(self, model: str) -> tuple[float, np.ndarray]:
        r = self.right[model]
        ok = ~np.isnan(r)
        right = np.where(ok, r, 0)
        return float(right[ok].mean()), right[self.idx].sum(axis=1) / np.maximum(ok[self.idx].sum(axis=1), 1)


def report(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    try:
        models = {r[0]: r[1] for r in con.execute(
            """SELECT model_id, config || '/' || method || coalesce('#' || seed, '') FROM models
               WHERE status = 'done' ORDER BY config, method, seed""").fetchall()}
        label_id = {v: k for k, v in models.items()}
        old = label_id["iid/vanilla#0"]
        seeds = sorted(int(label.split("#")[1]) for label in label_id if label.startswith("iid-update/vanilla#"))
        vanilla = [label_id[f"iid-update/vanilla#{s}"] for s in seeds]
        distill = [label_id[f"iid-update/distill#{s}"] for s in seeds]
        ensembles = sorted((k for k, v in models.items() if v.startswith("iid-update/ens")), key=models.__getitem__)
        print(f"\n{store}\nold model: iid/vanilla#0; {len(seeds)} seeds of each update; ensembles "
              f"{', '.join(models[e] for e in ensembles)} of iid-update/vanilla#{seeds[0]}…#{seeds[-1]} (vote, mean)")
        for source, title in (("iid", "SST-2 D_test"), ("suite", "sentiment T_test cases")):
            right = _right(con, source, [old, *vanilla, *distill, *ensembles])
            items = Items(right)
            n_items = len(right[old])
            print(f"\n{title} ({n_items} {'examples' if source == 'iid' else 'cases'}): accuracy / pass rate, "
                  "NFR, PFR against the old model (%, 95 % CI)")
            a_old = items.acc(old)
            print(f"  iid/vanilla#0 (old): {100 * a_old[0]:.1f} {ci(a_old[1])}")
            for mid in [*vanilla, *distill, *ensembles]:
                a, nf, pf = items.acc(mid), items.nfr(old, mid), items.pfr(old, mid)
                print(f"  {models[mid]}: {100 * a[0]:.1f} {ci(a[1])} · NFR {100 * nf[0]:.1f} {ci(nf[1])} · PFR "
                      f"{100 * pf[0]:.1f} {ci(pf[1])} · Δacc {100 * (a[0] - a_old[0]):+.1f} {ci(a[1] - a_old[1])}")
            _findings(items, old, vanilla, distill, ensembles, models, source)
        _centric(con, old, vanilla, models)
        _per_group(con, old, vanilla, distill, ensembles, models)
    finally:
        con.close()


def _right(con: duckdb.DuckDBPyConnection, source: str, ids: list[str]) -> dict[str, np.ndarray]:
    out = {}
    if source == "iid":
        for mid in ids:
            rows = con.execute("SELECT correct FROM iid_predictions WHERE model_id = ? AND split = 'test' "
                               "ORDER BY example_idx", [mid]).fetchall()
            out[mid] = np.array([float(r[0]) for r in rows])
        return out
    cases = [r[0] for r in con.execute("SELECT case_id FROM outcomes WHERE model_id = ? ORDER BY case_id",
                                       [ids[0]]).fetchall()]
    for mid in ids:
        got = dict(con.execute("SELECT case_id, outcome FROM outcomes WHERE model_id = ?", [mid]).fetchall())
        out[mid] = np.array([{"pass": 1.0, "fail": 0.0}.get(got.get(c, "skip"), np.nan) for c in cases])
    return out


def _findings(items: Items, old: str, vanilla: list[str], distill: list[str], ensembles: list[str],
              models: dict[str, str], source: str) -> None:
    single_nfr = np.mean([items.nfr(old, m)[1] for m in vanilla], axis=0)
    single_point = float(np.mean([items.nfr(old, m)[0] for m in vanilla]))
    rises = [m for m in vanilla if items.acc(m)[0] > items.acc(old)[0]]
    print("  findings:")
    if rises:
        pooled = np.mean([items.nfr(old, m)[1] for m in rises], axis=0)
        print(f"    NFR > 0 even when accuracy rises ({len(rises)} of {len(vanilla)} plain updates are more accurate "
              f"than the old model): their mean NFR {100 * np.mean([items.nfr(old, m)[0] for m in rises]):.1f} "
              f"{ci(pooled)}: {verdict(pooled)}")
    else:
        print(f"    NFR > 0 even when accuracy rises: no plain update is more accurate than the old model here "
              f"(mean NFR {100 * single_point:.1f} {ci(single_nfr)}, {verdict(single_nfr)} that it is > 0)")
    distill_nfr = np.mean([items.nfr(old, m)[1] for m in distill], axis=0)
    d_point = float(np.mean([items.nfr(old, m)[0] for m in distill]))
    gain = single_nfr - distill_nfr
    cost = np.mean([items.acc(m)[1] for m in vanilla], axis=0) - np.mean([items.acc(m)[1] for m in distill], axis=0)
    cost_point = float(np.mean([items.acc(m)[0] for m in vanilla]) - np.mean([items.acc(m)[0] for m in distill]))
    print(f"    distillation lowers NFR: mean NFR plain {100 * single_point:.1f} → distilled {100 * d_point:.1f}, "
          f"difference {100 * (single_point - d_point):+.1f} {ci(gain)}: {verdict(gain)}; accuracy cost "
          f"{100 * cost_point:+.1f} {ci(cost)}")
    for v, d in zip(vanilla, distill, strict=True):
        o, a, b = (items.right[x] for x in (old, v, d))
        ok = ~np.isnan(o) & ~np.isnan(a) & ~np.isnan(b)
        test = nfr_randomization_test(o[ok] == 1, a[ok] == 1, b[ok] == 1, rounds=10_000,
                                      rng=np.random.default_rng(SEED))
        print(f"      seed {models[v].split('#')[1]}: NFR {100 * test.nfr_a:.1f} (plain) vs {100 * test.nfr_b:.1f} "
              f"(distilled), paired randomization p = {test.p_value:.4f}")
    for ensemble in ensembles:
        e_point, e_boot = items.nfr(old, ensemble)
        note = " (its INV / DIR cases read vote shares as confidences)" if source == "suite" and \
            not models[ensemble].endswith("mean") else ""
        print(f"    ensembles lower NFR ({models[ensemble]}{note}): {100 * e_point:.1f} vs mean single "
              f"{100 * single_point:.1f}, difference {100 * (single_point - e_point):+.1f} "
              f"{ci(single_nfr - e_boot)}: {verdict(single_nfr - e_boot)}")


def _centric(con: duckdb.DuckDBPyConnection, old: str, vanilla: list[str], models: dict[str, str]) -> None:
    right = _right(con, "iid", [old, *vanilla])
    result = centric_selection({m: right[m] == 1 for m in vanilla}, SEED)
    second = np.asarray(sorted(set(range(len(right[old]))) - set(_first_half(len(right[old])))), dtype=np.int64)
    o = right[old][second] == 1

    def nfr(m: str) -> float:
        return float(np.mean(o & (right[m][second] == 0)))

    print(f"\ncentric selection among the {len(vanilla)} plain updates (half 1 selects, half 2 reports, "
          f"{result.n_report} examples): chosen {models[result.chosen]} (mean NFR from the others "
          f"{100 * result.report_nfr[result.chosen]:.1f} vs {100 * np.mean(list(result.report_nfr.values())):.1f} for "
          f"all); against the old model on half 2: chosen {100 * nfr(result.chosen):.1f}, mean single "
          f"{100 * np.mean([nfr(m) for m in vanilla]):.1f}; accuracy chosen "
          f"{100 * result.report_accuracy[result.chosen]:.1f}")


def _first_half(n: int) -> list[int]:
    from beluga_core.data.splits import halves

    return halves(n, SEED)[0]


def _per_group(con: duckdb.DuckDBPyConnection, old: str, vanilla: list[str], distill: list[str],
               ensembles: list[str], models: dict[str, str]) -> None:
    by: dict[str, dict[str, tuple[int, int]]] = {}
    for mid in [*vanilla, *distill, *ensembles]:
        for group, n, neg in con.execute("""SELECT c.scoring_group, count(*) FILTER (WHERE f.flip <> 'skip'),
                                                   count(*) FILTER (WHERE f.flip = 'negative')
                                            FROM flips_between(?, ?) f
                                            JOIN cases c ON c.suite = f.part AND c.case_id = f.item
                                            WHERE f.source = 'suite' GROUP BY ALL""", [old, mid]).fetchall():
            by.setdefault(group, {})[mid] = (n, neg)

    def pooled(group: str, ids: list[str]) -> float | None:
        got = [by[group][m] for m in ids if m in by[group]]
        n = sum(x[0] for x in got)
        return None if n == 0 else sum(x[1] for x in got) / n

    print("\nT_test NFR per functionality (%, pooled over seeds; the functionalities where plain updates flip most):")
    ranked = sorted(by, key=lambda g: -(pooled(g, vanilla) or 0))[:10]
    for g in ranked:
        cells = [pooled(g, ids) for ids in (vanilla, distill, *([e] for e in ensembles))]
        names = ["plain", "distilled", *(models[e].split("/")[1] for e in ensembles)]
        print(f"  {g}: " + " · ".join(f"{n} {_p(c)}" for n, c in zip(names, cells, strict=True)))


def _p(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


class Regression(Benchmark):
    config = REPO / "benchmarks" / "regression.toml"
    out = REPO / "runs" / "bench-regression"

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        report(store)


if __name__ == "__main__":
    Regression(__doc__ or "").main()
