"""The coordinator of ``beluga run``: resumes from the store, drives an executor, and is the only writer."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from beluga_core.analysis.refresh import refresh_after_run
from beluga_core.analysis.regression.ensemble import EnsembleSpec, build_ensemble
from beluga_core.analysis.report.renderers.terminal import print_g_table
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import sorted_ids_digest
from beluga_core.data.suite.suite_files import case_json
from beluga_core.evaluation.gold import case_gold
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.execution.results import JobResult, Outcomes
from beluga_core.execution.scheduling import JobFailure, JobsFailed
from beluga_core.execution.worker import cache_dir_for, job_record, weights_path
from beluga_core.generators.suite_build import GENERATED_AGAINST
from beluga_core.orchestration.pricing import price
from beluga_core.orchestration.progress import ETA_COLUMN, RichProgress
from beluga_core.orchestration.selection.select import promote_rungs, select_for_plan
from beluga_core.orchestration.selection.show import print_selection
from beluga_core.orchestration.settings_guard import check_settings
from beluga_core.planning.estimate import describe, job_costs
from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, make_task
from beluga_core.planning.steps import Attributions
from beluga_core.store.connection import DEFAULT_LOCK_TIMEOUT_S
from beluga_core.store.reader import done_ids, recorded_pack_size
from beluga_core.store.run_liveness import RunLock, discard_lock, running_runs
from beluga_core.store.suite_rows import split_rows, suite_rows
from beluga_core.store.writer import StoreWriter
from beluga_core.training.checkpoint_file import FolderCheckpoints, checkpoint_folder, rung_folder
from beluga_core.training.models import pick_device
from beluga_core.training.precision import machine_line


def record_plan(plan: Plan, writer: StoreWriter) -> None:
    """What the store needs before any model: the suites and their cases (with gold labels), the splits, the
    tasks' head labels and the G exclusions."""
    cfg = plan.config
    sizes = cfg.sizes
    caps = {"train": sizes.suite_train_per_group, "val": sizes.suite_val_per_group,
            "test": sizes.suite_test_per_group, "test_of": dict(sizes.suite_test_per_group_of)}
    for tp in plan.tasks:
        writer.ensure_suite(*suite_rows(tp.suite, case_gold))
        writer.record_split(split_rows(tp.suite, tp.split, tp.split_id, cfg.split.seed, cfg.split.ratios, caps))
        kept = {*tp.split.train, *tp.split.val, *tp.split.test}
        writer.record_case_specs(tp.suite.header.name, [(c.id, case_json(c)) for c in tp.suite.cases if c.id in kept])
        writer.set_task_head(tp.spec.name, tp.suite.header.name, make_task(tp.spec, tp.suite).head_labels)
        if tp.pools:
            writer.record_pools(tp.split_id, tp.suite.header.name, tp.pools)
        if tp.spec.g_exclude:
            writer.set_g_exclusions(tp.spec.name, tp.spec.g_exclude)
        for ep in tp.evals:
            writer.ensure_suite(*suite_rows(ep.suite, case_gold))
            writer.record_case_specs(ep.name, [(cid, case_json(ep.suite.case(cid))) for cid in ep.case_ids])
            writer.set_task_head(tp.spec.name, ep.name, make_task(tp.spec, ep.suite).head_labels)
            writer.set_cross_maps(tp.spec.name, tp.suite.header.name, ep.name, ep.maps)
    models = [j.id for j in plan.jobs if not j.is_grid_point]
    if plan.point is not None:
        writer.record_sweep_point(sweep_point_row(plan), models)
    else:
        # A model a sweep point stored (the same settings, so the same id) counts for this run's variant too.
        writer.record_shared_models(cfg.variant, models)


def sweep_point_row(plan: Plan) -> dict[str, Any]:
    """The ``sweep_points`` row of a sweep point's plan (migration 20)."""
    assert plan.point is not None
    point, cfg = plan.point, plan.config
    return {"variant": point.variant, "sweep": cfg.name, "base_variant": cfg.variant, "position": point.position,
            "axis": point.axis, "value": point.value, "values": point.values, "capped": plan.capped}


def required_evaluations(plan: Plan) -> dict[str, dict[str, str]]:
    """Per scenario-model job id, the eval suites it must be evaluated on, with the digest of their cases."""
    return {job.id: tp.eval_digests(job.fold) for tp in plan.tasks if tp.evals for job in tp.jobs}


def iid_scoring(plan: Plan) -> dict[str, tuple[str, str]]:
    """Per IID model job id, the suite and the T_test cases (``sorted_ids_digest``) it must be scored on."""
    return {j.id: (tp.suite.header.name, sorted_ids_digest(j.fold.eval_ids))
            for tp in plan.tasks for j in tp.jobs if j.is_iid_model}


def probe_pools_of(plan: Plan) -> dict[str, tuple[str, ...]]:
    """Per job id, the [fewshot] probe cases its model must have predicted."""
    return {j.id: tp.pool_of(j) for tp in plan.tasks if tp.pools for j in tp.jobs}


def _note_unattributed(finished: list[Job], writer: StoreWriter, cache_dir: Path, plan: Plan,
                       console: Console) -> None:
    """Say which finished models the ``[attributions]`` of this run will not reach: a model attributes while it
    trains (a fold's weights are discarded after it), so one finished without them keeps lacking them."""
    methods = plan.config.attributions.methods
    if not methods or not finished:
        return
    have = writer.attributed_ids(methods)
    lacking = [j for j in finished if j.id not in have]
    if not lacking:
        return
    kept = sum(1 for j in lacking if weights_path(cache_dir, j.id).exists())
    console.print(f"[yellow]{len(lacking)} of the {len(finished)} models already in the store have no stored "
                  f"attributions of {', '.join(methods)}[/] (they finished before [attributions] named them, or none "
                  f"of their cases was selected). Attributions are computed while a model trains, so this run does "
                  f"not add them; {kept} of them kept their weights and `beluga explain` can attribute those; the "
                  f"others get them when trained again: delete their rows from `models` (the next run re-trains "
                  f"them to the same results) or run into a new store.", soft_wrap=True, highlight=False)


def note_task_mismatch(plan: Plan, console: Console) -> None:
    """What a run (and its dry run) says of each task before training: a suite declaring another task, and i.i.d.
    data one label dominates while G's i.i.d. score is accuracy."""
    for tp in plan.tasks:
        if tp.task_note:
            console.print(f"[yellow]note:[/] {escape(tp.task_note)}", soft_wrap=True, highlight=False)
        if tp.iid_note:
            console.print(f"[yellow]warning:[/] {escape(tp.iid_note)}", soft_wrap=True, highlight=False)


def generated_against_lines(plan: Plan) -> list[str]:
    """Of each suite generated against a model (attacks, counterfactual masking, CDA), whether this run's models
    are scored on it adaptively (the attacked model is one of them) or by transfer (every other model). Each case
    says which model it was generated against (meta ``generated_against``), so a suite put together from several
    generated ones gets a line per model; a suite whose cases lack it falls back on its header (``source.model``)."""
    ids = {j.id for j in plan.jobs}
    lines = []
    for tp in plan.tasks:
        header = tp.suite.header.source.get("model") if isinstance(tp.suite.header.source, dict) else None
        counts: Counter[str] = Counter()
        for case in tp.suite.cases:
            against = case.meta.get(GENERATED_AGAINST)
            if isinstance(against, str):
                counts[against] += 1
        if not counts:
            if not isinstance(header, dict):
                continue
            counts[str(header.get("model_id") or "")] = len(tp.suite.cases)
        names = {str(header.get("model_id")): str(header.get("name", "a model"))} if isinstance(header, dict) else {}
        several = len(counts) > 1 or sum(counts.values()) < len(tp.suite.cases)
        for model_id, n in sorted(counts.items()):
            name = names.get(model_id) or (f"model {model_id}" if model_id else "a model")
            which = f"{n:,} of its cases were" if several else "it was"
            started = sorted({j.config for j in plan.jobs if j.start_model and j.start_model == model_id})
            if model_id and model_id in ids:
                how = (f"{'they score' if several else 'its cases score'} that model adaptively and every other "
                       "model of the run by transfer")
            elif started:
                how = (f"the models of {', '.join(started)} start from that model ([training.configurations] start) "
                       "and train on its own attacks (adaptive); every other model here is scored on them by transfer")
            else:
                how = "that model is not one of this run's, so every model here is scored on them by transfer"
            lines.append(f"suite '{tp.suite.header.name}': {which} generated against {name}: {how}.")
    return lines


def _note_generated_against(plan: Plan, console: Console) -> None:
    for line in generated_against_lines(plan):
        console.print(line, soft_wrap=True, highlight=False, markup=False)


def run_plan(plan: Plan, console: Console, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT_S,
             calibrate: bool = False) -> Path:
    """Run what the store lacks of ``plan`` (complete: ``orchestration.teachers.plan_with_stores``). A reader holding
    the store open makes each commit wait (saying every 10 s who holds it) up to ``lock_timeout`` seconds; then the
    run stops with what it finished committed. The run is priced first (``orchestration.pricing``; ``calibrate``:
    the rates measured again): the estimate is recorded with it and its progress lines' ETA weighs jobs by it."""
    started = time.perf_counter()
    store_path = plan.store_path()
    store_path.parent.mkdir(parents=True, exist_ok=True)
    writer = StoreWriter(store_path, lock_timeout=lock_timeout,
                         on_wait=lambda message: console.print(f"[yellow]{message}[/]", soft_wrap=True))
    check_settings(plan)
    cache_dir = cache_dir_for(store_path)
    _note_generated_against(plan, console)
    note_task_mismatch(plan, console)
    record_plan(plan, writer)
    executor = EXECUTORS.get(plan.config.executor.name)(plan.config.executor)
    workers = executor.workers(plan)
    console.print(workers.line(), highlight=False, markup=False, soft_wrap=True)
    record = workers.record()
    if executor.trains_packs and plan.config.executor.pack != 1:
        # Measured once, before the run is recorded: both phases pack alike, and a resumed run of an "auto" size
        # keeps the size its store recorded, so that it forms the packs the interrupted run did.
        recorded = recorded_pack_size(store_path) if plan.config.executor.pack == "auto" else None
        packing = executor.pack_size(plan, plan.jobs + plan.grid_jobs, recorded)
        console.print(f"packs: up to {packing.size} members ({packing.why})", highlight=False, markup=False,
                      soft_wrap=True)
        if packing.final:
            record["pack"] = packing.record()
    pricing = price(plan, workers, store=store_path if store_path.exists() else None,
                    done=frozenset(done_ids(store_path, required_evaluations(plan), probe_pools_of(plan),
                                            iid_scoring(plan))), refresh=calibrate)
    record["estimate"] = pricing.record()
    console.print(f"estimate: {describe(pricing.total.wall)} with {pricing.workers} worker(s), "
                  f"{describe(pricing.total.seconds)} of compute ({pricing.sources[0]})", highlight=False,
                  markup=False, soft_wrap=True)
    weight = job_costs(plan, pricing.rates)
    run_id = writer.begin_run(plan.config_path, plan.config_path.read_text(encoding="utf-8"),
                              device=plan.config.executor.device, executor=record,
                              effective_config=plan.config.model_dump(mode="json", by_alias=True),
                              config_changes=plan.config_changes)

    checkpoints = FolderCheckpoints(checkpoint_folder(cache_dir))
    # The run's lock, held while this process lives (its heartbeat touches the file): a run killed outright reads as
    # interrupted (store.run_liveness). Released, and its file removed, in the `finally` below.
    run_lock = RunLock(store_path, run_id).acquire()
    record_dead_runs(writer, console)

    def on_result(result: JobResult) -> None:
        try:
            writer.commit(result, run_id)
        except BelugaError as exc:  # the store stayed locked past the lock timeout
            raise BelugaError(f"{exc.message}. The models finished before this one are in the store; run the "
                              "same command again to resume", source=exc.source) from exc
        if result.resumed_from:
            r = result.record
            console.print(f"job {result.id[:12]} ({r.config}/{r.method}, seed {r.seed}) resumed from its checkpoint "
                          f"at {result.resumed_from}",
                          highlight=False, soft_wrap=True)
        if result.record.status == "done":  # a failed job keeps its checkpoint: a later run resumes it
            checkpoints.discard(result.id)

    def on_failure(failure: JobFailure) -> None:
        on_result(failed_result(plan, failure))

    def run_phase(jobs: list[Job], what: str) -> None:
        # A done model that lacks an evaluation on an eval suite of its task (added since, or with another
        # mapping or sample), or its [fewshot] probe predictions, runs again: same id, same numbers, plus those.
        done = done_ids(store_path, required_evaluations(plan), probe_pools_of(plan), iid_scoring(plan))
        todo = [j for j in jobs if j.id not in done]
        for job_id in checkpoints.job_ids() & done:  # a run killed between a commit and the removal left it
            checkpoints.discard(job_id)
        # A child whose parent finished in an earlier run needs the parent's weights; without them the parent
        # is trained again (deterministically, so its stored results do not change).
        by_id = {j.id: j for j in plan.jobs}
        needed = {r for j in todo for r in j.requires if r in done}
        retrain = [by_id[p] for p in sorted(needed) if not weights_path(cache_dir, p).exists()]
        todo = retrain + todo
        waiting = checkpoints.job_ids() & {j.id for j in todo}
        resuming = f" ({len(waiting)} from their checkpoints)" if waiting else ""
        console.print(f"{len(jobs)} trainings planned{what}, {len(jobs) - len(todo) + len(retrain)} already in "
                      f"{store_path}; running {len(todo)}{resuming}")
        attributing = [j for j in jobs if j.step(Attributions) is not None and j.id in done]
        _note_unattributed(attributing, writer, cache_dir, plan, console)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn(ETA_COLUMN), console=console, transient=False) as bar:
            packs = executor.packs_of(plan, jobs)
            if packs.size > 1 and todo:
                console.print(f"packs of this phase: {packs.summary(jobs)}", highlight=False, markup=False)
            progress = RichProgress(bar, len(todo), costs={j.id: weight(j).seconds for j in todo})
            executor.run(plan, todo, on_result, progress, str(cache_dir), on_failure,
                         packs=packs)

    status = "failed"
    failed: JobsFailed | None = None
    try:
        if plan.pending:
            # Phase 1: IID models and grid points (a halving search's first rung, then each next rung); then
            # selection; phase 2: the folds with the chosen values.
            rung0 = " at the first rung of halving" if plan.halving else ""
            run_phase(plan.jobs + plan.grid_jobs, f" before selection ({len(plan.grid_jobs)} grid points{rung0})")
            run_rungs(plan, writer.path, FolderCheckpoints(rung_folder(cache_dir)), run_phase, console)
            new = select_and_resolve(plan, writer, run_id, console)
            check_settings(plan, new)
            run_phase(new, " with the selected hyper-parameters")
        else:
            run_phase(plan.jobs, "")
        status = "done"
    except JobsFailed as exc:  # recorded in the store: what finished is reported before the run says so
        failed = exc
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        try:
            if status == "done":
                writer.finish_run(run_id, status)
            else:
                # The store may be what stopped the run (still held by a reader): try briefly, else the run stays
                # recorded as 'running', as a killed run's does, and reads as interrupted once this process is gone.
                writer.store.lock_timeout = min(lock_timeout, 5.0)
                with contextlib.suppress(BelugaError):
                    writer.finish_run(run_id, status)
        finally:
            run_lock.release()
            executor.close()
        console.print(f"wall time: {time.perf_counter() - started:.1f} s ({status}); store: {store_path}",
                      soft_wrap=True)
        exe = plan.config.executor
        console.print(machine_line(exe.precision, pick_device(exe.device)) + (" · deterministic" if exe.deterministic
                                                                               else ""),
                      highlight=False, soft_wrap=True)
    build_ensembles(plan, store_path, run_id, console)
    refresh_after_run(store_path, console)
    print_g_table(store_path, console, plan.point.variant if plan.point is not None else plan.config.variant)
    if failed is not None:
        raise failed
    return store_path


def record_dead_runs(writer: StoreWriter, console: Console) -> None:
    """Record the store's runs whose coordinator died (SIGKILL, the OOM killer, a power loss: recorded 'running') as
    interrupted, at the last time each was alive, and say so; a store held by a reader past the lock timeout leaves
    them for the next run."""
    try:
        with writer.connection() as con:
            dead = [r for r in running_runs(con, writer.path) if not r.running]
        changed = set(writer.record_interrupted({r.run_id: r.last_alive for r in dead}))
    except BelugaError:
        return
    for r in dead:
        if r.run_id in changed:
            discard_lock(writer.path, r.run_id)
            console.print(f"run {r.run_id} {'was' if r.certain else 'was probably'} interrupted ({r.why}; last alive "
                          f"{r.last_alive:%Y-%m-%d %H:%M:%S} UTC): recorded as interrupted", highlight=False,
                          markup=False, soft_wrap=True)


def failed_result(plan: Plan, failure: JobFailure) -> JobResult:
    """The store row of a job that failed on every attempt: what it is, its error, traceback, attempts, worker."""
    job = failure.job
    record = job_record(plan.task_plan(job.task), job, status="failed", error=failure.error,
                        error_type=failure.error_type, traceback=failure.traceback, attempts=failure.attempts,
                        worker=failure.worker, started_at=failure.started_at, finished_at=failure.finished_at,
                        device=plan.config.executor.device)
    return JobResult(record, Outcomes.of([], []))


def build_ensembles(plan: Plan, store: Path, run_id: str, console: Console) -> None:
    """The config's ``[[ensembles]]``, (re)built from the run's models; deterministic ids, so a resumed run
    replaces them."""
    for spec in plan.config.ensembles:
        ids = build_ensemble(store, EnsembleSpec(spec.name, tuple(spec.members), spec.rule), run_id=run_id)
        console.print(f"ensemble {spec.name} ({spec.rule} of {', '.join(spec.members)}): {len(ids)} model row(s)",
                      highlight=False)


def run_rungs(plan: Plan, store: Path, states: FolderCheckpoints, run_phase: Callable[[list[Job], str], None],
              console: Console) -> None:
    """A halving search's rungs after the first, each promoted from the stored scores of the one before
    (``planning.halving``); the state a rung kept is dropped once the next rung has gone on from it."""
    while any(not s.complete for s in plan.halving):
        before = [j for s in plan.halving if not s.complete for j in s.rungs[-1]]
        new, ranked = promote_rungs(store, plan)
        promoted = {j.resume_from for j in new}
        for job in before:
            if job.id not in promoted:
                states.discard(job.id)
        epochs = sorted({r.epochs for r in map(rung_of, (j.hparams for j in new)) if r is not None})
        to = ", ".join(f"{e:g}" for e in epochs)
        print_selection(ranked, plan.config.grid.criterion, console,
                        title=f"halving: the points that go on to {to} epochs (ranked at the rung before)")
        check_settings(plan, new)
        run_phase(new, f" at the next rung of halving ({to} epochs)")
        for job in before:
            states.discard(job.id)


def select_and_resolve(plan: Plan, writer: StoreWriter, run_id: str, console: Console) -> list[Job]:
    """Choose among the finished grid points by the config's criterion; return the fold jobs that now exist."""
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
