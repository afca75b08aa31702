"""The coordinator of ``beluga run``: resumes from the store, drives an executor, and is the only writer."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from beluga_core import registry
from beluga_core.plan import Job, Plan
from beluga_core.store.writer import StoreWriter, case_rows
from beluga_core.worker import JobResult


class RichProgress:
    """Fold k of n with an ETA, and the steps of the fold in progress."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.folds = progress.add_task("folds", total=total)
        self.steps = progress.add_task("", total=1, visible=False)

    def job_started(self, job: Job) -> None:
        label = job.config if job.config == "iid" else f"{job.config}/{job.method}/{job.scenario}"
        if job.kind == "grid":
            label = f"grid {job.config}/{job.method} " + ",".join(f"{k}={v:g}" if isinstance(v, float) else
                                                                  f"{k}={v}" for k, v in (job.point or {}).items())
        if job.fold.heldout_group:
            label += f": {job.fold.heldout_group[:40]}"
        self.progress.update(self.steps, description=label, completed=0, total=1, visible=True)

    def job_step(self, job: Job, phase: str, step: int, total: int) -> None:
        if phase == "eval":
            label = self.progress.tasks[self.steps].description.split(" [")[0]
            self.progress.update(self.steps, description=f"{label} [eval]")
            return
        self.progress.update(self.steps, completed=step, total=max(total, 1))

    def job_finished(self, job: Job) -> None:
        self.progress.advance(self.folds)


def cache_dir_for(store: Path) -> Path:
    return store.with_name(store.name + ".cache")


def run_plan(plan: Plan, console: Console) -> Path:
    started = time.perf_counter()
    store_path = plan.store_path()
    store_path.parent.mkdir(parents=True, exist_ok=True)
    writer = StoreWriter(store_path)
    cache_dir = cache_dir_for(store_path)
    for tp in plan.tasks:
        writer.ensure_cases(tp.suite.header.name, case_rows(tp.suite))
        if tp.spec.g_exclude:
            writer.set_g_exclusions(tp.spec.name, tp.spec.g_exclude)
    done = writer.done_model_ids() | writer.done_grid_ids()
    run_id = writer.begin_run(plan.config_path, plan.config_path.read_text(encoding="utf-8"),
                              device=plan.config.executor.device)
    executor_cls = registry.get("executor", plan.config.executor.name)
    executor = executor_cls(plan.config.executor)

    def on_result(result: JobResult) -> None:
        if result.job.kind == "grid":
            writer.commit_grid_point(grid_point_row(result, run_id),
                                     outcomes=[(r["case_id"], r["outcome"], r["pred"]) for r in result.outcomes],
                                     metrics=result.grid_metrics)
            return
        writer.commit_model({**result.model_row, "run_id": run_id, "model_name": result.job.model},
                            iid_predictions=[(r["split"], r["example_idx"], r["gold"], r["pred"], r["correct"])
                                             for r in result.iid_predictions],
                            iid_metrics=[(r["split"], r["metric"], r["value"], r["is_primary"])
                                         for r in result.iid_metrics],
                            outcomes=[(r["case_id"], r["outcome"], r["pred"]) for r in result.outcomes])

    def run_phase(jobs: list[Job], what: str) -> None:
        todo = [j for j in jobs if j.id not in done]
        # A child whose parent finished in an earlier run needs the parent's weights; without them the parent
        # is trained again (deterministically, so its stored results do not change).
        by_id = {j.id: j for j in plan.jobs}
        needed = {j.parent_id for j in todo if j.parent_id and j.parent_id in done}
        retrain = [by_id[p] for p in sorted(needed) if not (cache_dir / f"{p}.pt").exists()]
        todo = retrain + todo
        console.print(f"{len(jobs)} trainings planned{what}, {len(jobs) - len(todo) + len(retrain)} already in "
                      f"{store_path}; running {len(todo)}")
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TimeRemainingColumn(), console=console, transient=False) as bar:
            executor.run(plan, todo, on_result, RichProgress(bar, len(todo)), str(cache_dir))

    status = "failed"
    try:
        if plan.pending:
            # Phase 1: IID models and grid points; then selection; phase 2: the folds with the chosen values.
            run_phase(plan.jobs + plan.grid_jobs, f" before selection ({len(plan.grid_jobs)} grid points)")
            new = select_and_resolve(plan, writer, run_id, console)
            run_phase(new, " with the selected hyper-parameters")
        else:
            run_phase(plan.jobs, "")
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        writer.finish_run(run_id, status)
        console.print(f"wall time: {time.perf_counter() - started:.1f} s ({status}); store: {store_path}")
    from beluga_core.significance.analyze import refresh_after_run

    refresh_after_run(store_path, console)
    from beluga_core.report.terminal import print_g_table

    print_g_table(store_path, console)
    return store_path


def grid_point_row(result: JobResult, run_id: str) -> dict[str, Any]:
    """The ``grid_points`` row of a finished grid job (the worker fills a ``models``-shaped row)."""
    row = result.model_row
    job = result.job
    return {
        "grid_id": job.id, "run_id": run_id, "task": job.task, "suite": row["suite"], "model_name": job.model,
        "config": job.config, "method": job.method, "seed": job.seed, "split_seed": row["split_seed"],
        "scope_level": job.fold.heldout_level, "scope_group": job.fold.heldout_group, "point": job.point or {},
        "hparams": row["hparams"], "parent_model_id": job.parent_id, "status": row["status"],
        "error": row["error"], "started_at": row["started_at"], "finished_at": row["finished_at"],
        "train_seconds": row["train_seconds"], "eval_seconds": row["eval_seconds"],
        "n_train_iid": row["n_train_iid"], "n_train_suite": row["n_train_suite"],
        "n_val_suite": len(job.fold.eval_ids), "device": row["device"],
    }


def select_and_resolve(plan: Plan, writer: StoreWriter, run_id: str, console: Console) -> list[Job]:
    """Choose among the finished grid points by the config's criterion; return the fold jobs that now exist."""
    from beluga_core.grid.selection import select_for_plan
    from beluga_core.grid.show import print_selection

    chosen, ranked = select_for_plan(writer.path, plan)
    criterion = plan.config.grid.criterion
    writer.record_selections([{**{k: r.key[k] for k in ("task", "config", "method", "scope_level", "scope_group")},
                               "criterion": criterion, "grid_id": r.grid_id, "value": r.value,
                               "n_points": r.n_points} for r in ranked], run_id=run_id)
    print_selection(ranked, criterion, console)
    new, left = plan.resolve(chosen)
    if left:
        console.print(f"[yellow]{len(left)} fold(s) wait for a selection none of whose grid points finished "
                      "(they run once their grid points are done)[/]")
    return new
