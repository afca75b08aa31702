"""Run benchmarks/quick-s2lct.toml at a forced precision and print, per S²LCT capability, the pass rate on
CheckList's template cases of its functionality beside the pass rate on the real sentences of the capability,
and the draft paper's qualitative claims, each with a 95 % bootstrap interval (2,000 seeded rounds; source
sentences resampled, so the cases one sentence yields stay together) and "holds" only where the interval of the
difference excludes 0.

    python -m benchmarks.findings.bench_s2lct                      # fp32 forced, one run, then the figures
    python -m benchmarks.findings.bench_s2lct --analyze STORE      # the figures of an existing store, no run

Figures:
1. Per capability (lc) and model — the IID model (SST-2 only), IID→T seen (trained on every functionality's
   templates) and IID→T with the capability's functionality held out — templates vs real sentences, and the
   difference.
2. S²LCT's claims, on the IID model (an SST-2 classifier, as the models the paper tested): negation and neutral
   capabilities (LC1, LC4–LC7) fail far more than sentiment-laden adjectives (LC2) and question-yes (LC9): the
   failure rate of each such capability minus that of LC2 and of LC9, and the mean over the five minus the mean
   over the two.
3. Does training on templates transfer to real sentences? Per capability, the seen model's and the held-out
   fold's real-sentence pass rate minus the IID model's, paired over the same sentences.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np

from benchmarks.findings.bench_relation import verdict
from benchmarks.harness import REPO, Benchmark

CONFIG = REPO / "benchmarks" / "quick-s2lct.toml"
ROUNDS = 2000
SEED = 0
HARD = ("LC1", "LC4", "LC5", "LC6", "LC7")      # neutral and negation capabilities
EASY = ("LC2", "LC9")                           # sentiment-laden adjectives, question-yes
MODELS = (("iid", "standard"), ("iid-then-t", "seen"), ("iid-then-t", "functionality"))

Units = dict[str, tuple[int, int]]               # unit → (passes, evaluable cases)


def boot(units: Units, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution of the pooled pass rate, resampling units."""
    v = np.array(list(units.values()), dtype=float)
    idx = rng.integers(0, len(v), size=(ROUNDS, len(v)))
    return v[idx, 0].sum(axis=1) / v[idx, 1].sum(axis=1)


def paired_boot(a: Units, b: Units, rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """Difference of pass rates a − b over the units both have, resampling those units together."""
    keys = sorted(a.keys() & b.keys())
    va = np.array([a[k] for k in keys], dtype=float)
    vb = np.array([b[k] for k in keys], dtype=float)
    idx = rng.integers(0, len(keys), size=(ROUNDS, len(keys)))
    point = va[:, 0].sum() / va[:, 1].sum() - vb[:, 0].sum() / vb[:, 1].sum()
    return float(point), va[idx, 0].sum(axis=1) / va[idx, 1].sum(axis=1) - vb[idx, 0].sum(axis=1) / vb[idx, 1].sum(
        axis=1)


def ci(x: np.ndarray, scale: float = 100.0) -> tuple[float, float]:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return float(scale * lo), float(scale * hi)


def fmt(point: float, x: np.ndarray) -> str:
    lo, hi = ci(x)
    return f"{100 * point:5.1f} [{lo:5.1f}, {hi:5.1f}]"


def read(store: Path) -> tuple[dict[tuple[str, str, str, str], Units], dict[str, str], dict[str, str]]:
    """(config, scenario, lc, side) → units; lc name → id; lc name → functionality."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("""
            SELECT config, scenario, eval_group, mapped_group, side, unit,
                   count(*) FILTER (WHERE outcome = 'pass'), count(*) FILTER (WHERE outcome <> 'skip')
            FROM cross_alignment_cases WHERE method = 'vanilla' AND mapped_level = 'functionality'
            GROUP BY ALL ORDER BY ALL""").fetchall()   # a fixed unit order: the same store, the same intervals
        ids = dict(con.execute("""
            SELECT DISTINCT json_extract_string(spec, '$.groups.lc'), json_extract_string(spec, '$.meta.note.lc')
            FROM case_specs WHERE suite = 's2lct-sentiment'""").fetchall())
    finally:
        con.close()
    out: dict[tuple[str, str, str, str], Units] = defaultdict(dict)
    mapped: dict[str, str] = {}
    for config, scenario, lc, functionality, side, unit, n_pass, n_eval in rows:
        if n_eval:
            out[(config, scenario, lc, side)][unit] = (int(n_pass), int(n_eval))
        mapped[lc] = functionality
    return out, ids, mapped


def report(store: Path) -> None:
    rng = np.random.default_rng(SEED)
    data, ids, mapped = read(store)
    names = sorted(ids, key=lambda n: int(ids[n][2:]))
    print("\n1. Pass rate (%) on the functionality's templates (T_test) vs the capability's real sentences "
          "[95 % interval]; Δ = templates − real ('holds': the templates pass more often)")
    for lc in names:
        print(f"   {ids[lc]} {lc}  →  {mapped.get(lc)}")
        for config, scenario in MODELS:
            t, e = data.get((config, scenario, lc, "template")), data.get((config, scenario, lc, "eval"))
            if not t or not e:
                print(f"      {config}/{scenario}: not evaluated")
                continue
            bt, be = boot(t, rng), boot(e, rng)
            pt = sum(p for p, _ in t.values()) / sum(n for _, n in t.values())
            pe = sum(p for p, _ in e.values()) / sum(n for _, n in e.values())
            lo, hi = ci(bt - be)
            print(f"      {config + '/' + scenario:<26} templates {fmt(pt, bt)} (n {sum(n for _, n in t.values())})"
                  f" · real {fmt(pe, be)} (n {sum(n for _, n in e.values())}, {len(e)} sentences)"
                  f" · Δ {100 * (pt - pe):+5.1f} [{lo:+.1f}, {hi:+.1f}] {verdict(bt - be)}")
    by_id = {ids[n]: n for n in names}
    iid = {lc: data.get(("iid", "standard", lc, "eval"), {}) for lc in names}
    print("\n2. S²LCT's claims on the IID model: failure rate (%) of a negation / neutral capability minus that of "
          "LC2 and LC9")
    fails = {i: boot(iid[by_id[i]], rng) for i in HARD + EASY if by_id.get(i) in iid and iid[by_id[i]]}
    rate = {i: 1 - sum(p for p, _ in iid[by_id[i]].values()) / sum(n for _, n in iid[by_id[i]].values())
            for i in fails}
    for h in HARD:
        if h not in fails:
            continue
        parts = []
        for easy_id in EASY:
            if easy_id not in fails:
                continue
            d = (1 - fails[h]) - (1 - fails[easy_id])
            lo, hi = ci(d)
            parts.append(f"− {easy_id} ({100 * rate[easy_id]:.1f}): {100 * (rate[h] - rate[easy_id]):+5.1f} "
                         f"[{lo:+.1f}, {hi:+.1f}] {verdict(d)}")
        lo_h, hi_h = ci(1 - fails[h])
        print(f"   {h} fails {100 * rate[h]:5.1f} [{lo_h:.1f}, {hi_h:.1f}]; " + "; ".join(parts))
    hard = [h for h in HARD if h in fails]
    easy = [e for e in EASY if e in fails]
    if hard and easy:
        d = np.mean([1 - fails[h] for h in hard], axis=0) - np.mean([1 - fails[e] for e in easy], axis=0)
        point = float(np.mean([rate[h] for h in hard]) - np.mean([rate[e] for e in easy]))
        lo, hi = ci(d)
        print(f"   mean over {', '.join(hard)} − mean over {', '.join(easy)}: {100 * point:+5.1f} "
              f"[{lo:+.1f}, {hi:+.1f}] {verdict(d)}")
    print("\n3. Real-sentence pass rate (%) after training on templates, minus the IID model's (paired over the "
          "same sentences)")
    for lc in names:
        parts = []
        for config, scenario in MODELS[1:]:
            e = data.get((config, scenario, lc, "eval"))
            if not e or not iid[lc]:
                continue
            point, d = paired_boot(e, iid[lc], rng)
            lo, hi = ci(d)
            parts.append(f"{scenario} {100 * point:+5.1f} [{lo:+.1f}, {hi:+.1f}] {verdict(d)}")
        print(f"   {ids[lc]:<5} " + "; ".join(parts))


class S2LCT(Benchmark):
    out = REPO / "runs" / "bench-s2lct"
    analyze_many = False
    run_line = "run: {wall:.1f} s from outside; {own}"

    def chosen(self, args: argparse.Namespace) -> Path:
        return CONFIG

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        report(store)


if __name__ == "__main__":
    S2LCT(__doc__ or "").main()
