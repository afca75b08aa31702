"""What ``benchmarks/full.toml`` costs: the README's projection, from the dry run's own pricing.

Prices the plan (``beluga_core.orchestration.pricing``), with its grid search as configured and by successive
halving (``[grid] strategy = "halving"``), three ways each: on this machine, at the rates its calibration
measures (the executor's workers); on one H200, projected from the last measured GPU rates; and on 8 H200s of a
Ray cluster, one worker each. Prints per phase the trainings, examples × epochs, compute and wall time, and the
critical path, which no number of workers shortens.

The H200's rates are projected, not measured: benchmarks/gpu/RESULTS.md (2026-11-27, bf16, one worker) measured a
BERT-base-shaped model training at 992.3 examples/s on SST-2 sentences (``bench_fold --model bert-base-random``) and
the embedded MiniLM evaluating the whole sentiment suite (178,578 inputs) in 9.9 s. Each task's rates are those,
scaled by ``execution.calibration.pass_flops`` from the measured model and length to the task's model and mean
length (what the dry run tokenizes); AdamW's update is left out (at batch 16 on a GPU it is a small share). One
worker per GPU, as measured; several workers or packs per GPU would raise the rate (eight MiniLM workers reached
3.5× one's: README), so these are upper bounds on the wall time at those rates.

    python -m benchmarks.perf.projection                  # benchmarks/full.toml
    python -m benchmarks.perf.projection --config benchmarks/quick.toml
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from beluga_core.config.load import load_config
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.execution.calibration import model_config, pass_flops
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.execution.sizing import Workers
from beluga_core.execution.sizing.workers import Slot
from beluga_core.orchestration.pricing import Pricing, price, task_tokens
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.estimate import Rates, TaskRates, describe
from beluga_core.planning.plan import Plan
from benchmarks.harness import REPO, header, script_parser

# benchmarks/gpu/RESULTS.md, 2026-11-27, NVIDIA H200, bf16, one worker.
GPU_TRAIN_RATE = 992.3        # examples/s, BERT-base shape, SST-2 training sentences, batch 32
GPU_TRAIN_MODEL = "bert-base-uncased"
GPU_EVAL_RATE = 178_578 / 9.9  # inputs/s, embedded MiniLM, the whole sentiment suite
GPU_EVAL_MODEL = "embedded:minilm"


def _sst2_tokens() -> int:
    """Mean tokens of SST-2's training sentences (the GPU fold's data: its first 4,096), counted with MiniLM's
    tokenizer (BERT's uncased WordPiece vocabulary)."""
    import csv
    import lzma

    from beluga_core.data import BUILTIN_DATA
    from beluga_core.training.models import load_tokenizer

    with lzma.open(BUILTIN_DATA / "sst2" / "train.tsv.xz", "rt", encoding="utf-8") as f:
        rows = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        texts = [r["sentence"] for _, r in zip(range(4096), rows, strict=False)]
    tokenizer = load_tokenizer("embedded:minilm")
    return round(sum(len(tokenizer(t)["input_ids"]) for t in texts) / len(texts))


def _flops(model: str, tokens: int, train: bool) -> float:
    found = model_config(model, None, 2)
    if found is None:
        raise SystemExit(f"no config for {model} on this machine")
    c = found[0]
    layer = 4 * c.hidden_size * c.hidden_size + 2 * c.hidden_size * c.intermediate_size   # weights of a layer
    return pass_flops(layer, c.num_hidden_layers, c.hidden_size, tokens, train)


def projected_h200(plan: Plan, sst2_tokens: int) -> tuple[Rates, list[str]]:
    per_task: dict[str, TaskRates] = {}
    lines = []
    train_ref = _flops(GPU_TRAIN_MODEL, sst2_tokens, True)
    eval_ref = _flops(GPU_EVAL_MODEL, 18, False)   # the sentiment suite's mean, as the dry run counts it
    for tp in plan.tasks:
        tokens, _ = task_tokens(plan, tp)
        train = GPU_TRAIN_RATE * train_ref / _flops(tp.model, tokens, True)
        evaluate = GPU_EVAL_RATE * eval_ref / _flops(tp.model, tokens, False)
        per_task[tp.spec.name] = TaskRates({16: 1 / train}, 1 / evaluate, "projected")
        lines.append(f"task {tp.spec.name}: projected {train:,.0f} training examples/s, {evaluate:,.0f} inputs/s "
                     f"({tp.model}, {tokens} tokens; from the H200's {GPU_TRAIN_RATE} examples/s of BERT-base on "
                     f"{sst2_tokens}-token SST-2 sentences and MiniLM's {GPU_EVAL_RATE:,.0f} inputs/s, by FLOPs)")
    return Rates(per_task=per_task, fixed=0.1, fixed_source="0.1 s per job (as on the CPU)"), lines


def show(title: str, p: Pricing) -> None:
    print(f"\n{title} ({p.workers} worker(s))")
    print(f"  {'phase':<32} {'trainings':>10} {'examples × epochs':>20} {'compute':>14} {'critical path':>14} "
          f"{'wall':>14}")
    for ph in p.phases:
        if ph.trainings:
            print(f"  {ph.name:<32} {ph.trainings:>10,} {ph.examples:>20,.0f} {describe(ph.seconds):>14} "
                  f"{describe(ph.critical_path):>14} {describe(ph.wall):>14}")
    for line in p.sources:
        print(f"  - {line}")


def project_sweep(cfg: BenchmarkConfig, path: Path) -> None:
    """A sweep's points one after another, each pricing the jobs no earlier point has (the IID models once), on this
    machine, one H200 and 8 H200s; and the whole sweep's wall time on each."""
    from beluga_core.orchestration.sweep_plans import new_jobs_only, sweep_plans

    plans = sweep_plans(cfg.with_store_path(str(REPO / "runs" / "projection.duckdb")), path, allow_missing_tasks=True)
    h200 = projected_h200(plans[0], _sst2_tokens())
    machines = {"this machine, calibrated": None, "one H200, projected": Workers((Slot("cuda:0", 2),), "projected", 1),
                "8 H200s (Ray, one worker each), projected": Workers(tuple(Slot(f"cuda:{i}", 2) for i in range(8)),
                                                                       "projected", 8)}
    seen: set[str] = set()
    totals = dict.fromkeys(machines, 0.0)
    for plan in plans:
        assert plan.point is not None
        new = new_jobs_only(plan, seen)
        seen |= {j.id for j in plan.jobs}
        for machine, workers in machines.items():
            p = price(new, EXECUTORS.get(cfg.executor.name)(cfg.executor).workers(plan)) if workers is None \
                else price(new, workers, given=h200)
            show(f"point {plan.point.position + 1} ({plan.point.label}): {machine}", p)
            totals[machine] += p.total.wall
    print(f"\nthe whole sweep ({len(plans)} points, {len(seen):,} jobs, the points one after another):")
    for machine, wall in totals.items():
        print(f"  {machine}: {describe(wall)}")


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--config", type=Path, default=REPO / "benchmarks" / "full.toml")
    args = parser.parse_args()
    print(header("fp32"))
    path = args.config.resolve()
    cfg = load_config(path)
    if cfg.sweep:
        project_sweep(cfg, path)
        return
    plan = plan_with_stores(cfg.with_store_path(str(REPO / "runs" / "projection.duckdb")), path,
                            allow_missing_tasks=True)
    # The same plan searched by successive halving ([grid] strategy = "halving"), where it has a grid search.
    plans = {"full grid search": plan}
    if cfg.grid.enabled:
        halving = cfg.model_copy(update={"grid": cfg.grid.model_copy(update={"strategy": "halving"})})
        store = str(REPO / "runs" / "projection.duckdb")
        plans["successive halving"] = plan_with_stores(halving.with_store_path(store), path, allow_missing_tasks=True)
    workers = EXECUTORS.get(cfg.executor.name)(cfg.executor).workers(plan)
    h200 = projected_h200(plan, _sst2_tokens())
    eight = Workers(tuple(Slot(f"cuda:{i}", 2) for i in range(8)), "projected", 8)
    grid: dict[str, float] = {}
    for search, p in plans.items():
        show(f"{search}: this machine, calibrated", price(p, workers))
        show(f"{search}: one H200, projected", price(p, Workers((Slot("cuda:0", 2),), "projected", 1), given=h200))
        eighth = price(p, eight, given=h200)
        show(f"{search}: 8 H200s (Ray, one worker each), projected", eighth)
        grid[search] = next((ph.examples for ph in eighth.phases if ph.name == "grid points"), 0.0)
    if len(grid) == 2 and grid["successive halving"]:
        full, halved = grid["full grid search"], grid["successive halving"]
        print(f"\ngrid points' examples × epochs: full {full:,.0f}, halving {halved:,.0f}: {full / halved:.2f}× fewer")


if __name__ == "__main__":
    main()
