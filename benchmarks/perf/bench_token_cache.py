"""Preprocessing cost per fold, first run against later runs: the on-disk token cache at work.

For every job of a config's plan (default: benchmarks/quick.toml, 148 trainings over the whole sentiment
suite) it times what a worker spends turning that job's inputs (its training cases, its evaluation cases,
its i.i.d. examples) into token ids, exactly through the worker's encoder. Each run is a fresh process, as
a new ``beluga run`` or a new worker would be:

- run 1, empty cache folder: the first fold tokenizes, later folds only what is new to them;
- run 2 and 3, same folder: every fold reads ids from disk (the first loads the index), nothing is
  tokenized;
- "no disk cache": what every new process paid before (each one tokenizes everything again).

    python -m benchmarks.perf.bench_token_cache [CONFIG] [--folds N] [--all-cases]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import header, script_parser

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]


def child(config: Path, cache: str | None, folds: int) -> None:
    from beluga_core.config.load import load_config
    from beluga_core.execution.step_runners import sample_examples
    from beluga_core.execution.worker import Worker
    from beluga_core.planning.plan import build_plan

    plan = build_plan(load_config(config), config.resolve())
    worker = Worker(plan, "cpu", Path(cache) if cache else None)
    cfg = plan.config
    t0 = time.perf_counter()
    for job in plan.jobs[:folds]:  # loading tokenizers and i.i.d. data: once per process, with or without cache
        worker.encoder(worker.tasks[job.task].task, job.model)
        worker.iid_data(job.task)
    setup = time.perf_counter() - t0
    times = []
    for job in plan.jobs[:folds]:
        state = worker.tasks[job.task]
        encoder = worker.encoder(state.task, job.model)
        iid = worker.iid_data(job.task)
        suite = state.plan.suite
        inputs = [x for cid in (*job.fold.train_ids, *job.fold.eval_ids) for x in suite.case(cid).inputs]
        if job.config == "iid":
            inputs += [ex.inputs for ex in sample_examples(iid.train, cfg.sizes.iid_train, cfg.split.seed, "iid_train")]
        else:
            inputs += [ex.inputs for ex in sample_examples(iid.train, cfg.sizes.iid_mix, cfg.split.seed, "iid_mix")]
        if job.score_iid:
            inputs += [ex.inputs for ex in sample_examples(iid.test, cfg.sizes.iid_test, cfg.split.seed, "iid_test")]
        t0 = time.perf_counter()
        encoder.encode_many(inputs)
        times.append(time.perf_counter() - t0)
    disks = [getattr(e, "_disk", None) for e in worker._encoders.values()]
    index = sum(d.load_seconds for d in disks if d is not None)
    print(json.dumps({"setup": setup, "times": times, "index": index}))


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("config", nargs="?", default=str(ROOT / "benchmarks" / "quick.toml"))
    ap.add_argument("--folds", type=int, default=10_000, help="only the first N jobs of the plan")
    ap.add_argument("--all-cases", action="store_true",
                    help="the config with suite_{train,val,test}_per_group = 0: every suite case, as in the paper")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(Path(args.config), args.child[0] or None, int(args.child[1]))
        return
    cache = tempfile.mkdtemp(prefix="beluga-token-bench-")
    if args.all_cases:
        text = re.sub(r"^(suite_(train|val|test)_per_group) = \d+", r"\1 = 0", Path(args.config).read_text(),
                      flags=re.M)
        args.config = str(Path(args.config).with_name(".all-cases-" + Path(args.config).name))
        Path(args.config).write_text(text)
    print(header(None))
    print(f"config: {args.config}; load: {subprocess.check_output(['uptime'], text=True).strip()}")
    rows = []
    try:
        for label, folder in (("run 1 (empty cache)", cache), ("run 2 (cache on disk)", cache),
                              ("run 3 (cache on disk)", cache), ("no disk cache (before)", "")):
            command = [sys.executable, "-m", "benchmarks.perf.bench_token_cache", str(Path(args.config).resolve()),
                       "--child", folder, str(args.folds)]
            out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
            got = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((label, got["setup"], got["times"], got["index"]))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if args.all_cases:
            Path(args.config).unlink()
    n = len(rows[0][2])
    print(f"\n{n} folds; seconds spent turning each fold's inputs into token ids (the worker's encoder), after "
          "loading tokenizer and i.i.d. data (once per process, with or without the cache)")
    print("| run | loading tokenizer + i.i.d. data | of which reading the cache index | first fold | "
          "later folds: median | later folds: max | all folds (+ index) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, setup, times, index in rows:
        later = times[1:] or [0.0]
        print(f"| {label} | {setup:.2f} | {index:.2f} | {times[0]:.2f} | {statistics.median(later):.4f} | "
              f"{max(later):.3f} | {sum(times) + index:.2f} |")
    print(f"load after: {subprocess.check_output(['uptime'], text=True).strip()}")


if __name__ == "__main__":
    main()
