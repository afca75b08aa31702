"""Few-shot ranking of the models blind to each held-out group (seed 002 inside BeLUGA), timed at a forced
precision: run a quick-rank config in a fresh store, then `beluga rank` every [fewshot] level with B = 500
probes of n = 10 cases, and print per signal the ranking accuracy (95 % two-stage bootstrap interval: groups,
then probes), pairs used / excluded, tie rate, Kendall τ-b, top-1 hit rate and the paired difference from ACC on
the same probes ("holds" only where its interval excludes 0), and whether RANDOM is within 50 ± 5.

    python -m benchmarks.findings.bench_fewshot para                # quick-rank-para.toml, fp32 forced
    python -m benchmarks.findings.bench_fewshot sentiment           # quick-rank-sentiment.toml, fp32 forced
    python -m benchmarks.findings.bench_fewshot para --analyze STORE   # the figures of an existing store, no run
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from rich.console import Console

from beluga_core.analysis.ranking.rank import REFERENCE, Ranking, rank_groups, signal_specs
from beluga_core.analysis.ranking.rank_inputs import load_store_groups
from beluga_core.analysis.ranking.save import save_ranking
from beluga_core.analysis.report.renderers.terminal_tables import print_ranking
from beluga_core.config.load import load_config
from beluga_core.store.reader import open_store
from benchmarks.harness import REPO, Benchmark, Run

CONFIGS = {"para": REPO / "benchmarks" / "quick-rank-para.toml",
           "sentiment": REPO / "benchmarks" / "quick-rank-sentiment.toml"}
N, B, SEED = 10, 500, 0


def verdicts(ranking: Ranking) -> list[str]:
    """Each signal against ACC on the same probes, and RANDOM against 50 %."""
    out = []
    for name, s in ranking.summaries.items():
        if name == REFERENCE or math.isnan(s.diff):
            continue
        lo, hi = s.diff_ci
        if lo > 0:
            word = "better than ACC (holds)"
        elif hi < 0:
            word = "worse than ACC (holds)"
        else:
            word = "not resolved against ACC"
        out.append(f"  {name}: {100 * s.accuracy:.1f} %, Δ {100 * s.diff:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] — "
                   f"{word}")
    random = ranking.summaries.get("random")
    if random is not None:
        within = abs(random.accuracy - 0.5) <= 0.05
        out.append(f"  RANDOM {100 * random.accuracy:.1f} % [{100 * random.ci[0]:.1f}, {100 * random.ci[1]:.1f}], tie "
                   f"rate {100 * random.tie_rate:.1f} %: {'within' if within else 'OUTSIDE'} 50 ± 5")
    return out


def analyze(store: Path, levels: list[str], console: Console) -> None:
    for level in levels:
        started = time.perf_counter()
        with open_store(store) as con:
            loaded = load_store_groups(con, level, None, str(store))
        methods = sorted({m for g in loaded.groups for m in g.methods()})
        specs, skipped = signal_specs(None, methods, {})
        ranking = rank_groups(level, loaded.groups, specs, n=N, bootstrap=B, seed=SEED)
        ranking.notes += loaded.notes
        save_ranking(store, ranking, source="store", task=loaded.task, suite=loaded.suite, split_id=loaded.split_id)
        seconds = time.perf_counter() - started
        print_ranking(ranking, console, title=f"level '{level}' ({loaded.task}; n = {N}, B = {B}, seed {SEED})",
                      skipped=skipped)
        truths = [c.truth for g in loaded.groups for c in g.candidates]
        console.print(f"true pass rates of the candidates: {100 * min(truths):.1f}–{100 * max(truths):.1f} %; "
                      f"ranking took {seconds:.1f} s", highlight=False)
        for line in verdicts(ranking):
            console.print(line, highlight=False)


class Fewshot(Benchmark):
    analyze_many = False
    full_help = True

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("which", choices=sorted(CONFIGS))

    def chosen(self, args: argparse.Namespace) -> Path:
        return CONFIGS[args.which]

    def store(self, args: argparse.Namespace, config: Path, i: int) -> Path:
        store = REPO / "runs" / f"bench-fewshot-{args.which}-{args.precision}.duckdb"
        for old in (store, store.with_name(store.name + ".wal")):
            old.unlink(missing_ok=True)
        return store

    def shown(self, args: argparse.Namespace, i: int, run: Run) -> None:
        print(run.printed.strip().splitlines()[-1] if run.printed.strip() else "")
        print(f"beluga run {self.chosen(args).name} (precision = {args.precision}): {run.wall:.1f} s from outside")

    def levels(self, args: argparse.Namespace) -> list[str]:
        return load_config(self.chosen(args)).fewshot_levels

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        analyze(store, self.levels(args), Console(width=190))

    def after(self, args: argparse.Namespace, runs: list[Run]) -> None:
        levels = self.levels(args)
        started = time.perf_counter()
        analyze(runs[0].store, levels, Console(width=190))
        print(f"ranking {', '.join(levels)}: {time.perf_counter() - started:.1f} s; run + ranking: "
              f"{runs[0].wall + time.perf_counter() - started:.1f} s (bar: 15 min = 900 s)")


if __name__ == "__main__":
    Fewshot(__doc__ or "").main()
