"""Where a fold's time goes outside its optimisation steps (issue 57): the quick run's folds, one worker in this
process as the multi executor runs them (1 torch thread), each timed from the job's start to its commit in the store
and split into

  - steps: the method's updates (forward, backward, optimizer step, schedule);
  - eval passes: the model's forward passes over what it is scored on (``predict_probs``);
  - fixed: the rest, the fold's fixed cost (start weights, training set, encoding, optimizer, the rows of its result,
    the commit).

Prints the medians per fold, and with --profile the fixed part's largest items (cProfile, cumulative, with steps and
eval passes taken out by their own entries).

    python -m benchmarks.perf.fold_profile                   # quick.toml's first 24 folds after the IID model
    python -m benchmarks.perf.fold_profile --folds 48 --profile
    python -m benchmarks.perf.fold_profile --store-rows 5000000   # as if the store already held a big run

--store-rows N pads the store's outcomes table with N rows of other (made-up) models before the timed folds, as a long
run's store holds them (full.toml's 3,627 models score thousands of cases each): a commit whose checks scan the
table grows with it. Run the script in a clone of an older commit to profile that code (benchmarks.perf.
quick_side_by_side does, before and after).

The IID model trains on 512 sentences instead of quick.toml's 8,000 (its weights shape no fold's cost; it is trained
first, outside the figures); everything else is quick.toml's, fp32.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import torch

from beluga_core.config.load import load_config
from beluga_core.contracts.registries import METHODS
from beluga_core.execution.worker import Worker, cache_dir_for
from beluga_core.orchestration.coordinator import record_plan
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.store.writer import StoreWriter
from beluga_core.tasks import classification
from benchmarks.harness import REPO, forced_config, header, script_parser

CONFIG = REPO / "benchmarks" / "quick.toml"


class Clock:
    """Seconds spent inside wrapped callables, reset per fold."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        return timed


def _pad_outcomes(store: Path, rows: int) -> None:
    """``rows`` outcome rows of made-up models (ids no models row has, so no view reads them), on the suite's cases."""
    con = duckdb.connect(str(store))
    try:
        con.execute("""INSERT INTO outcomes
                       SELECT 'padding-' || (i // n), c.suite, c.case_id, 'pass', NULL
                       FROM range(?) r(i), (SELECT count(*) AS n FROM cases) k,
                            (SELECT suite, case_id, row_number() OVER (ORDER BY suite, case_id) - 1 AS k FROM cases) c
                       WHERE c.k = i % n""", [rows])
        (total,) = con.execute("SELECT count(*) FROM outcomes").fetchall()[0]
        print(f"store padded: {total:,} outcome rows")
    finally:
        con.close()


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--folds", type=int, default=24, help="folds timed (default: 24)")
    parser.add_argument("--profile", action="store_true", help="print the fixed part's largest items (cProfile)")
    parser.add_argument("--store-rows", type=int, default=0,
                        help="outcome rows of other models in the store before the timed folds (default: 0)")
    args = parser.parse_args()
    print(header("fp32"))
    torch.set_num_threads(1)
    forced = forced_config(args.config.resolve(), "fp32")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "profile.duckdb"
            cfg = load_config(forced).with_store_path(str(store))
            cfg = cfg.model_copy(update={"sizes": cfg.sizes.model_copy(update={"iid_train": 512})})
            plan = plan_with_stores(cfg, forced)
            writer = StoreWriter(store)
            record_plan(plan, writer)
            run_id = writer.begin_run(forced, forced.read_text(encoding="utf-8"))
            worker = Worker(plan.for_workers(), device="cpu", cache_dir=cache_dir_for(store))
            iid = [j for j in plan.jobs if j.is_iid_model]
            folds = [j for j in plan.jobs if not j.is_iid_model][: args.folds]
            for job in iid:
                writer.commit(worker.run(job), run_id)
            if args.store_rows:
                _pad_outcomes(store, args.store_rows)
            steps, passes = Clock(), Clock()
            for name in {j.method for j in folds}:
                method = METHODS.get(name)
                method.update = steps.wrap(method.update)  # type: ignore[method-assign]
            classification.predict_probs = passes.wrap(classification.predict_probs)
            profiler = cProfile.Profile() if args.profile else None
            rows = []
            for job in folds:
                steps.seconds = passes.seconds = 0.0
                start = time.perf_counter()
                if profiler is not None:
                    profiler.enable()
                result = worker.run(job)
                trained = time.perf_counter()
                writer.commit(result, run_id)
                if profiler is not None:
                    profiler.disable()
                wall = time.perf_counter() - start
                rows.append((wall, steps.seconds, passes.seconds, time.perf_counter() - trained))
    finally:
        forced.unlink(missing_ok=True)
    walls, step_s, pass_s, commit_s = (list(c) for c in zip(*rows, strict=True))
    fixed = [w - s - p for w, s, p, _ in rows]
    print(f"{len(rows)} folds of {args.config.name} (configurations "
          f"{', '.join(sorted({j.config for j in folds}))}), median per fold:")
    for label, values in (("wall (start to commit)", walls), ("steps", step_s), ("eval passes", pass_s),
                          ("fixed = wall - steps - eval passes", fixed), ("  of which the commit", commit_s)):
        print(f"  {label:<36} {statistics.median(values):6.3f} s   (mean {statistics.fmean(values):.3f})")
    print(f"fixed_per_fold_s: {statistics.median(fixed):.3f}")
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(45)
        print(out.getvalue())


if __name__ == "__main__":
    main()
