"""The dry run's estimate against the run: a config run from a new store at a forced precision (fp32 unless said),
then its recorded estimate (what ``beluga run`` priced at its start, ``orchestration.pricing``) set against what it
took: the run's wall time, and per phase the stored train and eval seconds of its jobs.

The ratio is actual / estimate, so 1.3 means the run took 30 % longer than estimated; ``--bar`` is the factor the
estimate must be within, either way (the issue's: 1.5 for the quick run, 2 for quick-lora and quick-relation).

    python -m benchmarks.perf.estimate_vs_actual                                  # quick.toml, bar 1.5
    python -m benchmarks.perf.estimate_vs_actual --config benchmarks/quick-lora.toml --bar 2
    python -m benchmarks.perf.estimate_vs_actual --analyze runs/estimates/quick-fp32-….duckdb

The estimate uses the rates the run found when it started: its store's own finished trainings if it resumed, else
this machine's calibration (cached in the user's cache folder; the line says whether it was measured then), so run
it from a new store on an idle machine.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from beluga_core.orchestration.progress import duration
from beluga_core.stored_models.export import store_info
from benchmarks.harness import REPO, Benchmark, Run


def within(ratio: float, bar: float) -> bool:
    """Whether actual / estimate is within a factor ``bar`` of 1, either way."""
    return 1 / bar <= ratio <= bar


class EstimateVsActual(Benchmark):
    config = REPO / "benchmarks" / "quick.toml"
    out = REPO / "runs" / "estimates"
    analyze_many = True

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--bar", type=float, default=1.5, help="the factor the estimate must be within")

    def shown(self, args: argparse.Namespace, i: int, run: Run) -> None:
        print(f"{run.wall:.1f} s from outside; {run.line('estimate:')}; {run.line('wall time:')}", flush=True)

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        runs = store_info(store)["estimates"]
        if not runs:
            raise SystemExit(f"{store}: no run recorded an estimate")
        e = runs[-1]
        print(f"{store.name}: run {e['run_id']} ({e['status']}), {e['workers']} worker(s)")
        for line in e["sources"]:
            print(f"  rates: {line}")
        if e["wall"] is None:
            raise SystemExit("the run has not finished")
        ratio = e["wall"] / e["estimated_wall"]
        print(f"  wall: estimated {duration(e['estimated_wall'])}, took {duration(e['wall'])}: actual / estimate "
              f"{ratio:.2f} → {'within' if within(ratio, args.bar) else 'NOT within'} ×{args.bar:g}")
        for p in e["phases"]:
            if p["estimated"]:
                print(f"  {p['name']}: {p['trainings']} trainings, compute estimated {duration(p['estimated'])}, "
                      f"took {duration(p['took'])} ({p['done']} done): {p['took'] / p['estimated']:.2f}")


if __name__ == "__main__":
    EstimateVsActual(__doc__ or "").main()
