"""``beluga run CONFIG [--store PATH] [--dry-run]``.

Long: the dry run prints one section per thing a run will do (folds, grid, cross suites, kept rows, attributions,
few-shot pools, evaluation steps, checkpoints, data availability), each reading the plan its own way; they are
the command's output, kept beside it, and each is a short function.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from beluga_core.attributions.compute import is_perturbation
from beluga_core.config.load import attribution_options, load_config, with_config_line
from beluga_core.config.tiny import tiny_config
from beluga_core.contracts.registries import ATTRIBUTIONS, CONFIGURATIONS, METHODS
from beluga_core.core.constants import ONLY_PREFIX
from beluga_core.core.errors import BelugaError
from beluga_core.core.io import human_size
from beluga_core.data.availability import hub_status, iid_availability, model_availability, unreachable_hub_names
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.execution.scheduling import describe_job
from beluga_core.execution.sizing import Workers
from beluga_core.execution.worker import keeps_weights
from beluga_core.orchestration.coordinator import (
    iid_scoring,
    note_task_mismatch,
    probe_pools_of,
    required_evaluations,
    run_plan,
)
from beluga_core.orchestration.selection.criteria import check_criterion
from beluga_core.orchestration.settings_guard import check_settings
from beluga_core.orchestration.teachers import plan_run
from beluga_core.planning.estimate import Rates, describe, seconds, stored_probability_bytes, training_examples
from beluga_core.planning.grid_cost import grid_costs
from beluga_core.planning.grid_space import method_hparams
from beluga_core.planning.jobs import Fold, Job, JobKind, JobSpec
from beluga_core.planning.packs import Packs, why_not_packed
from beluga_core.planning.plan import Plan, TaskPlan, make_task
from beluga_core.planning.steps import Step, steps_label
from beluga_core.store.connection import DEFAULT_LOCK_TIMEOUT_S
from beluga_core.store.reader import done_ids, failed_ids, measured_train_rate, recorded_pack_size
from beluga_core.training.checkpoints import checkpoint_bytes, checkpointable, describe_interval
from beluga_core.training.models import meta_classifier, parameter_count


def _scenario_label(fold: Fold) -> str:
    """The config's name of a fold's scenario: only:LEVEL for the only:LEVEL=g models."""
    return f"{ONLY_PREFIX}{fold.trained_level}" if fold.trained_level is not None else fold.scenario


def _fold_counts(tp: TaskPlan) -> Counter[tuple[str, str, str]]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for job in tp.jobs:
        counts[(job.config, job.method, _scenario_label(job.fold))] += 1
    for pending in tp.pending:  # folds whose hyper-parameters the grid search has yet to choose
        counts[(pending.config, pending.method, _scenario_label(pending.fold))] += 1
    return counts


def print_plan(plan: Plan, console: Console, done: set[str] | None = None, rates: Rates | None = None,
               failed: set[str] | None = None, workers: Workers | None = None,
               footprints: Footprints | None = None, packs: Packs | None = None) -> None:
    """The dry run's plan; with ``done`` / ``failed`` (the ids of a store's done and failed jobs), what of it
    is done, what will run and what failed, per job kind; with ``workers``, how many jobs run at once and why;
    ``footprints``: ``method_footprints`` of the plan (computed when not given); ``packs``: which trainings
    train together (``[executor] pack``)."""
    done = done or set()
    rates = rates or Rates()
    cfg = plan.config
    n_folds = n_seen = n_strict = 0
    for tp in plan.tasks:
        counts = _fold_counts(tp)
        finished: Counter[tuple[str, str, str]] = Counter()
        for job in tp.jobs:
            finished[(job.config, job.method, _scenario_label(job.fold))] += job.id in done
        table = Table(title=f"task {tp.spec.name}: suite {tp.suite.header.name} "
                            f"({len(tp.suite.cases):,} cases; T_train {len(tp.split.train):,} / "
                            f"T_val {len(tp.split.val):,} / T_test {len(tp.split.test):,} used); model {tp.model}",
                      title_justify="left")
        for col in ("configuration", "method", "scenario", "trainings"):
            table.add_column(col, justify="right" if col == "trainings" else "left")
        if done:
            table.add_column("done", justify="right")
        for (config, method, scenario), n in counts.items():
            row = [config, method, scenario, str(n)]
            if done:
                row.append(str(finished[(config, method, scenario)]))
            table.add_row(*row)
        table.add_row("total", "", "", str(sum(counts.values())), *( [str(sum(finished.values()))] if done else []),
                      style="bold")
        console.print(table)
        n_folds += sum(counts.values())
        for level, groups in tp.skipped_groups.items():
            if groups:
                console.print(f"  held-out {level}: no fold for {len(groups)} group(s) without T_test cases: "
                              f"{', '.join(groups[:5])}{' …' if len(groups) > 5 else ''}")
        if cfg.grid.enabled:
            seen, strict = _print_grid(plan, tp, console)
            n_seen += seen
            n_strict += strict
        _print_starts(tp, console)
        _print_cross_cost(plan, tp, console, rates)
        _print_kept(plan, tp, console)
        _print_attributions(plan, tp, console, rates)
        _print_fewshot(plan, tp, console)
        _print_steps(plan, tp, console)
        _print_checkpoints(plan, tp, console, rates, workers)
        _print_availability(tp, console)
    _print_methods(plan, console, footprints)
    n_grid = n_seen if cfg.grid.mode == "seen" else n_strict
    total = n_folds + n_grid
    if cfg.grid.enabled:
        other, other_grid = ("strict", n_strict) if cfg.grid.mode == "seen" else ("seen", n_seen)
        console.print(f"[bold]{total} trainings in all[/]: {n_folds} scenario models + {n_grid} grid points "
                      f"(grid mode {cfg.grid.mode}, criterion {cfg.grid.criterion}); grid mode {other} would "
                      f"train {n_folds + other_grid}")
    else:
        console.print(f"[bold]{total} trainings in all[/]")
    if workers is not None:
        console.print(workers.line(), highlight=False, markup=False, soft_wrap=True)
    if packs is not None:
        _print_packs(plan, packs, console)
    _print_status(plan, console, done, failed or set())


def _print_packs(plan: Plan, packs: Packs, console: Console, listed: int = 5) -> None:
    """How ``[executor] pack`` groups the trainings: the packs (the first ``listed`` by their members), and why
    the others train alone."""
    setting = plan.config.executor.pack
    jobs = plan.jobs + plan.grid_jobs
    head = f"packs ([executor] pack = {setting}"
    if packs.size <= 1:
        if setting != 1 or any(why_not_packed(j) is None for j in jobs):
            why = f": {packs.note or packs.why}" if packs.note or packs.why else ""
            console.print(f"{head}): none, every training alone{why}", highlight=False, markup=False,
                          soft_wrap=True)
        return
    groups = packs.groups(jobs)
    alone: Counter[str] = Counter()
    for job in jobs:
        if len(packs.of(job.id)) == 1:
            alone[why_not_packed(job) or "no other training shares its base, start and hyper-parameters"] += 1
    if setting == "auto" and packs.why:   # the line the run prints too
        console.print(f"packs: up to {packs.size} members ({packs.why})", highlight=False, markup=False,
                      soft_wrap=True)
    text = (f"{head}, up to {packs.size} members): {packs.summary(jobs)}; a pack's members share the task, base "
            "model, start weights (the pretrained model or one parent), method and hyper-parameters but the learning "
            "rate, and packs are as even as the size allows")
    text += "".join(f"; {n} alone: {why}" for why, n in alone.items())
    if plan.pending:
        text += (f"; the {sum(len(tp.pending) for tp in plan.tasks)} trainings that wait for the grid search pack "
                 "once it has chosen their hyper-parameters")
    console.print(text, highlight=False, markup=False, soft_wrap=True)
    by_id = {j.id: j for j in jobs}
    for group in groups[:listed]:
        console.print("  pack: " + ", ".join(describe_job(by_id[m]) for m in group), highlight=False,
                      markup=False, soft_wrap=True)
    if len(groups) > listed:
        console.print(f"  … and {len(groups) - listed} more pack(s)", highlight=False)


Footprints = dict[str, dict[str, tuple[int, int]]]


def method_footprints(plan: Plan) -> Footprints:
    """Per model of the run and method: (parameters it trains, parameters of the model), from the method's
    ``prepare`` on the model built on the meta device (no weights read). A ``BelugaError`` there is the method not
    fitting the model (lora's target modules it lacks): raised, so that the run stops before anything trains."""
    out: Footprints = {}
    for name in sorted({tp.model for tp in plan.tasks}):
        base = meta_classifier(name, plan.config.model.config_overrides)
        if base is None:
            continue
        total = sum(p.numel() for p in base.parameters())
        for method in plan.config.methods:
            model = copy.deepcopy(base)
            plugin = METHODS.get(method)(method_hparams(plan.config, method))
            try:
                plugin.prepare(model)
            except BelugaError:
                raise
            except Exception:   # a plugin whose prepare needs real weights: nothing to count
                continue
            out.setdefault(name, {})[method] = (sum(p.numel() for p in model.parameters() if p.requires_grad), total)
    return out


def _print_methods(plan: Plan, console: Console, footprints: Footprints | None) -> None:
    """Each method's own hyper-parameters (its defaults and ``[method.NAME]``), as its jobs get them unless a grid
    search chooses some (lora's rank and target modules, lp's learning rate), and what part of the model it
    trains."""
    footprints = method_footprints(plan) if footprints is None else footprints
    for method in plan.config.methods:
        hp = method_hparams(plan.config, method)
        parts = [", ".join(f"{k} = {'unset' if v is None else json.dumps(v)}" for k, v in hp.items())] if hp else []
        for model, sizes in footprints.items():
            if method in sizes:
                trained, total = sizes[method]
                parts.append(f"trains {trained:,} of {model}'s {total / 1e6:.1f}M parameters"
                             + (f" ({100 * trained / total:.2g} %)" if trained < total else ""))
        if parts:
            console.print(f"  method {escape(method)}: {escape('; '.join(parts))}", highlight=False)


def _print_status(plan: Plan, console: Console, done: set[str], failed: set[str]) -> None:
    """Per job kind: planned, already done, failed (retried by this run) and to run."""
    variant = f" (variant {plan.config.variant!r})" if plan.config.variant else ""
    console.print(f"store: {plan.store_path()}{variant}", highlight=False)
    by_kind: dict[JobKind, list[str]] = {member: [] for member in JobKind}
    for job in [*plan.jobs, *plan.grid_jobs]:
        by_kind[job.kind].append(job.id)
    waiting = {JobKind.FOLD: len(plan.pending)}  # the folds a grid search has yet to choose hyper-parameters for
    for kind, ids in by_kind.items():
        label, pending = kind.plural, waiting.get(kind, 0)
        if not ids and not pending:
            continue
        n_done = sum(i in done for i in ids)
        n_failed = sum(i in failed and i not in done for i in ids)
        later = f" (+ {pending} once the grid search has chosen their hyper-parameters)" if pending else ""
        console.print(f"  {label}: {len(ids) + pending} planned, {n_done} done, {n_failed} failed (retried), "
                      f"{len(ids) - n_done} to run{later}", highlight=False)


def _print_grid(plan: Plan, tp: TaskPlan, console: Console) -> tuple[int, int]:
    """The grid table of one task; returns its trainings in seen and in strict mode."""
    costs = grid_costs(plan, tp)
    table = Table(title=f"task {tp.spec.name}: grid search (selected by {plan.config.grid.criterion} on T_val; "
                        f"mode {plan.config.grid.mode})", title_justify="left")
    for col in ("configuration", "method searched", "points", "seen mode", "strict mode"):
        table.add_column(col, justify="left" if col in ("configuration", "method searched") else "right")
    for c in costs:
        table.add_row(c.config, c.method, str(c.points), str(c.seen), str(c.strict))
    seen, strict = sum(c.seen for c in costs), sum(c.strict for c in costs)
    table.add_row("total", "", "", str(seen), str(strict), style="bold")
    console.print(table)
    reusing = [m for m in plan.config.methods if METHODS.get(m).reuses]
    for m in reusing:
        console.print(f"  {m}: no search of its own; reuses the choices of "
                      f"{' and '.join(METHODS.get(m).reuses)}")
    return seen, strict


def _print_starts(tp: TaskPlan, console: Console) -> None:
    """Where the jobs of the configurations that start from a model of another store start."""
    for config, start in tp.starts.items():
        n = sum(1 for j in (*tp.jobs, *tp.grid_jobs, *tp.pending) if j.config == config)
        console.print(f"  {escape(config)}: its {n} job(s) start from {escape(start.describe())} "
                      f"({escape(start.source)})", highlight=False)


def _print_cross_cost(plan: Plan, tp: TaskPlan, console: Console, rates: Rates) -> None:
    """What the eval suites and the only:LEVEL scenarios add: trainings, evaluation passes, an estimated time."""
    cfg = plan.config
    specs: list[JobSpec] = [*(j for j in tp.jobs if not j.is_iid_model), *tp.pending]
    n_inputs = {c.id: len(c.inputs) for c in tp.suite.cases}
    only = [s for s in specs if s.fold.trained_level is not None]
    if not only and not tp.evals:
        return
    train = sum(training_examples(cfg, s, sum(n_inputs[c] for c in s.fold.train_ids)) for s in only)
    only_eval = sum(n_inputs[c] for s in only for c in s.fold.eval_ids)
    if only:
        levels = sorted({f"{ONLY_PREFIX}{s.fold.trained_level}" for s in only})
        console.print(f"  {', '.join(levels)}: {len(only)} more trainings (one per group and configuration-method"
                      f"-seed), each evaluated on all {len(tp.split.test):,} T_test cases: "
                      f"{describe(seconds(rates, train, only_eval))}", highlight=False, emoji=False)
    models = [*tp.jobs, *tp.pending]
    for ep in tp.evals:
        eval_inputs = {c.id: len(c.inputs) for c in ep.suite.cases}
        passes = [ep.eval_ids(m.fold) for m in models]
        n_pass = sum(1 for ids in passes if ids)
        n_in = sum(eval_inputs[c] for ids in passes for c in ids)
        mapped = "; ".join(f"{lvl}: {len(m):,} cases mapped, {ep.how.get(lvl, '?')}" for lvl, m in ep.maps.items())
        unmapped = [lvl for lvl in cfg.heldout_levels if lvl not in ep.maps]
        console.print(f"  eval suite [bold]{escape(ep.name)}[/] ({len(ep.case_ids):,} of {len(ep.suite.cases):,} "
                      f"cases evaluated): {n_pass} evaluation passes, {n_in:,} inputs, "
                      f"{describe(seconds(rates, 0, n_in))}", highlight=False)
        if mapped:
            console.print(f"    held-out folds see the cases mapped to their group — {escape(mapped)}",
                          highlight=False)
        if unmapped:
            console.print(f"    no mapping at {', '.join(unmapped)}: those folds are not evaluated on it",
                          highlight=False)
    console.print(f"  (times: {rates.source}, {rates.train:.0f} training examples/s, {rates.eval:.0f} inputs/s)",
                  highlight=False)


def _print_kept(plan: Plan, tp: TaskPlan, console: Console) -> None:
    """What ``[store] keep_probabilities`` and ``keep_weights`` will take on disk."""
    spec = plan.config.store_spec
    jobs = tp.jobs  # the models: grid points keep nothing
    kept = [j for j in jobs if keeps_weights(plan.config, j)]
    labels = make_task(tp.spec, tp.suite).head_labels if tp.unavailable is None else None
    n_classes = len(tp.suite.header.label_space or labels or [""])
    if spec.keep_probabilities:
        n_inputs = {c.id: len(c.inputs) for c in tp.suite.cases}
        eval_inputs = sum(len(ep.suite.case(c).inputs) for ep in tp.evals for j in jobs for c in ep.eval_ids(j.fold))
        n_test = plan.config.sizes.iid_test or None
        cases, iid = stored_probability_bytes(jobs, n_inputs, n_test, n_classes, eval_inputs)
        iid_text = f"{human_size(iid)} of i.i.d. probabilities" if iid is not None else \
            "i.i.d. probabilities of every D_test example (\\[sizes] iid_test = 0: all of it)"
        console.print(f"  \\[store] keep_probabilities: ≈ {human_size(cases)} of per-input suite predictions, "
                      f"{iid_text} (uncompressed)", highlight=False)
    params = parameter_count(tp.model, plan.config.model.config_overrides, max(2, n_classes)) if kept else None
    weights = "" if params is None else \
        f", ≈ {human_size(4 * params * len(kept))} ({params / 1e6:.1f}M parameters each)"
    console.print(f"  \\[store] keep_weights = \"{spec.keep_weights}\": {len(kept)} model(s) kept beside the store"
                  f"{weights}", highlight=False)


def _print_checkpoints(plan: Plan, tp: TaskPlan, console: Console, rates: Rates, workers: Workers | None) -> None:
    """Each job's checkpoint interval (``[executor] checkpoint_every``), per configuration and method, and the disk
    the checkpoints in flight take in the run's cache."""
    cfg = plan.config
    interval = cfg.executor.checkpoint_interval
    if interval.mode == "off":
        console.print("  checkpoints: off (\\[executor] checkpoint_every = \"off\"): a killed run restarts the folds "
                      "in progress", highlight=False)
        return
    n_inputs = {c.id: len(c.inputs) for c in tp.suite.cases}
    table = Table(title=f"task {tp.spec.name}: checkpoints inside a job (\\[executor] checkpoint_every = "
                        f"\"{interval}\")", title_justify="left")
    for col in ("configuration", "method", "jobs", "interval"):
        table.add_column(col, justify="right" if col == "jobs" else "left")
    labels = make_task(tp.spec, tp.suite).head_labels if tp.unavailable is None else None
    params = parameter_count(tp.model, cfg.model.config_overrides, max(2, len(tp.suite.header.label_space or labels
                                                                                or [""])))
    # What a save writes, so that "auto" plans no more saves than their cost justifies (checkpoints.auto_interval).
    size = checkpoint_bytes(params) if params is not None else None
    groups: dict[tuple[str, str], list[str]] = {}
    suite_inputs: dict[int, int] = {}   # per training-id tuple (folds share them): its suite inputs
    for spec in [*tp.jobs, *tp.grid_jobs, *tp.pending]:
        hparams = spec.hparams if isinstance(spec, Job) else {}
        if not checkpointable(METHODS.get(spec.method)(hparams.get("method", {})), hparams):
            what = f"off: method {spec.method} does not say what its state is (Method.state_attributes)"
        else:
            ids = spec.fold.train_ids
            if id(ids) not in suite_inputs:
                suite_inputs[id(ids)] = sum(n_inputs[c] for c in ids)
            what = describe_interval(interval, seconds(rates, training_examples(cfg, spec, suite_inputs[id(ids)]), 0),
                                     size)
        groups.setdefault((spec.config, spec.method), []).append(what)
    for (config, method), whats in groups.items():
        counts = Counter(whats)
        table.add_row(config, method, str(len(whats)),
                      escape("; ".join(w if n == len(whats) else f"{n}: {w}" for w, n in counts.most_common())))
    console.print(table)
    if all(w.startswith(("off", "none")) for whats in groups.values() for w in whats):
        console.print("  checkpoints: none written (no job saves one; see the table)", highlight=False)
        return
    if params is not None and size is not None:
        slots = (workers.count if workers is not None else None) or 1
        console.print(f"  checkpoints: ≈ {human_size(size)} each ({params / 1e6:.1f}M parameters: weights and AdamW's "
                      f"moments), one per job in flight, two while a save replaces the last: ≈ "
                      f"{human_size(2 * size * slots)} in {escape(str(plan.store_path()))}.cache/checkpoints at most "
                      f"with {slots} job(s) in flight; deleted as each job's result is stored", highlight=False)


def _print_attributions(plan: Plan, tp: TaskPlan, console: Console, rates: Rates) -> None:
    """How many inputs each model attributes in the run, and what that costs."""
    spec = plan.config.attributions
    if not spec.methods:
        return
    jobs = [*tp.jobs, *tp.pending]
    counts = []
    words = 0.0
    fewshot = plan.config.fewshot
    for job in jobs:
        cases = [tp.suite.case(c) for c in job.fold.eval_ids] if spec.cases != "none" else []
        if isinstance(spec.cases, list):
            names = set(spec.cases)
            cases = [c for c in cases if names & {*c.groups.values(), c.test_type}]
        inputs = [x for c in cases for x in (c.inputs[:1] if spec.inputs == "first" else c.inputs)]
        inputs = inputs[:spec.cap_per_fold] if spec.cap_per_fold else inputs
        if fewshot.attribute:  # its probe pool's inputs, attributed too
            pool = [tp.suite.case(c) for c in tp.pool_of(job)]
            inputs += [x for c in pool for x in (c.inputs[:1 + fewshot.perturbations] if is_perturbation(c)
                                                 else c.inputs[:1])]
        n = len(inputs)
        counts.append(n)
        words += sum(len(" ".join([x] if isinstance(x, str) else list(x)).split()) for x in inputs)
    total = sum(counts)
    tokens = 1.3 * words / max(total, 1) + 3   # word pieces per input, special tokens included
    forwards = 0.0
    for name in spec.methods:
        o = attribution_options(plan.config, name, run=True)
        o = {**ATTRIBUTIONS.get(name).defaults, **o}
        if "steps" in o:
            forwards += 3 * int(o["steps"])              # a forward and a backward pass per step
        elif "samples" in o:
            forwards += float(o["samples"] or min(2 * tokens + 2048, 2 ** tokens - 2))
        else:
            forwards += tokens                            # one forward per occluded token
    upper = " at most" if spec.cases == "failing" else ""
    pools = " + \\[fewshot] probe pools" if fewshot.enabled and fewshot.attribute else ""
    console.print(f"  \\[attributions] {', '.join(spec.methods)}:{upper} {min(counts, default=0)}–"
                  f"{max(counts, default=0)} inputs per model, {total:,} in all (cases: "
                  f"{spec.cases if isinstance(spec.cases, str) else ', '.join(spec.cases)}, {spec.inputs} input, cap "
                  f"{spec.cap_per_fold}{pools}): {describe(total * forwards / rates.eval)} "
                  f"(≈ {forwards:,.0f} forward passes per input)", highlight=False)


def _print_fewshot(plan: Plan, tp: TaskPlan, console: Console) -> None:
    """The probe pools: per level, their sizes and how many models are ranked on each group."""
    if not tp.pools:
        return
    jobs = [*tp.jobs, *tp.pending]
    iid = sum(1 for j in jobs if CONFIGURATIONS.get(j.config).is_baseline())
    for level in plan.config.fewshot_levels:
        sizes = [len(ids) for (lv, _), ids in tp.pools.items() if lv == level]
        folds = [sum(1 for j in jobs if j.fold.heldout_level == level and j.fold.heldout_group == g)
                 for (lv, g) in tp.pools if lv == level]
        console.print(f"  \\[fewshot] {level}: {len(sizes)} groups, probe pools of {min(sizes, default=0)}–"
                      f"{max(sizes, default=0)} cases (T_train ∪ T_val), {min(folds, default=0) + iid}–"
                      f"{max(folds, default=0) + iid} candidate models per group (its folds + {iid} IID); "
                      f"`beluga rank STORE --level {level}` ranks them", highlight=False)


def _print_steps(plan: Plan, tp: TaskPlan, console: Console) -> None:
    """What each job's model is evaluated on: a row per job kind and distinct step list, with how many jobs run
    it and their scenarios. Jobs share a handful of step lists, so the table stays a few rows for a run of
    thousands of jobs, where a line per job would bury the rest of the plan."""
    groups: dict[tuple[JobKind, tuple[Step, ...]], list[str]] = {}
    for kind, fold, steps in tp.planned_steps(plan.config):
        groups.setdefault((kind, steps), []).append(_scenario_label(fold))
    if not groups:
        return
    table = Table(title=f"task {tp.spec.name}: evaluation steps, in the order each model runs them",
                  title_justify="left")
    for col in ("jobs", "scenarios", "count", "steps"):
        table.add_column(col, justify="right" if col == "count" else "left")
    order = list(JobKind)
    for (kind, steps), scenarios in sorted(groups.items(), key=lambda g: order.index(g[0][0])):
        table.add_row(kind.plural, escape(", ".join(dict.fromkeys(scenarios))), str(len(scenarios)),
                      escape(steps_label(steps)))
    console.print(table)


def _print_availability(tp: TaskPlan, console: Console) -> None:
    if tp.unavailable:
        console.print(f"  [yellow]task plugin '{tp.spec.name}' is not importable[/] ({escape(tp.unavailable)}); the "
                      "folds above are counted from the suite, but the run needs the plugin", highlight=False)
    for what, (ok, how) in ((f"i.i.d. data {tp.spec.iid}", iid_availability(tp.spec.iid)),
                            (f"model {tp.model}", model_availability(tp.model))):
        # Every hub name says what the run will do with it; a dry run itself never downloads.
        status = hub_status((ok, how))
        if status is not None:
            colour = "green" if ok else "yellow"
            console.print(f"  {escape(what)}: [{colour}]{escape(status)}[/]", highlight=False)
        elif not ok:
            console.print(f"  [yellow]{escape(what)}[/]: {escape(how)}", highlight=False)


def run(
    config: Path = typer.Argument(..., help="Benchmark config (TOML)."),
    store: Path | None = typer.Option(None, "--store", help="Result store; overrides the config's `store`."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the plan; train nothing."),
    variant: str | None = typer.Option(
        None, "--variant", help="Name this run's settings as a variant of their own (overrides the config's "
        "`variant`): its models never share a view row with another variant's, and a store refuses a re-run with "
        "changed settings unless it names one."),
    lock_timeout: float = typer.Option(
        DEFAULT_LOCK_TIMEOUT_S, "--lock-timeout", min=0,
        help="Seconds a commit waits for a reader that holds the store open (a report, a duckdb CLI) before "
             "the run stops; finished folds stay committed and re-running resumes."),
    tiny: bool = typer.Option(False, "--tiny", help=(
        "Run the config at the smallest sizes to check that it works end to end (minutes on a CPU for most "
        "configs): every task, configuration, method, scenario kind, executor and option kept; sizes, one group "
        "per held-out level, one layer and one epoch; a hub model or dataset replaced by the offline stand-in "
        "(said so). Results go to STORE.tiny.duckdb unless --store says; their numbers mean nothing.")),
) -> None:
    """Train and evaluate every fold of a benchmark config; results go to a DuckDB store."""
    console = Console()
    cfg = load_config(config)
    changes: list[str] = []  # recorded with the run (runs.config_changes), beside the config it runs
    if tiny:
        try:
            cfg, notes = tiny_config(cfg)
        except BelugaError as exc:
            raise with_config_line(exc, config.resolve()) from None
        for note in notes:
            console.print(f"[bold]--tiny[/]: {escape(note)}", highlight=False)
        changes += [f"--tiny: {note}" for note in notes]
    if store is not None:
        cfg = cfg.with_store_path(str(store.resolve()))
        changes.append(f"--store {store.resolve()}")
    if variant is not None:
        cfg = cfg.with_variant(variant)
        changes.append(f"--variant {variant}")
    path = config.resolve()
    try:
        EXECUTORS.require(cfg.executor.name, field="executor.name")
        if cfg.grid.enabled:
            check_criterion(cfg.grid.criterion)
    except BelugaError as exc:
        raise with_config_line(exc, path) from None
    plan = plan_run(cfg, path, allow_missing_tasks=dry_run, config_changes=changes)
    try:
        footprints = method_footprints(plan)
    except BelugaError as exc:
        raise with_config_line(exc, path) from None
    if dry_run:
        store_path = plan.store_path()
        have = store_path.exists()
        done = done_ids(store_path, required_evaluations(plan), probe_pools_of(plan), iid_scoring(plan)) \
            if have else set()
        executor = EXECUTORS.get(cfg.executor.name)(cfg.executor)
        if have and cfg.executor.pack == "auto" and executor.trains_packs:   # the size the run would keep
            executor.pack_size(plan, plan.jobs + plan.grid_jobs, recorded_pack_size(store_path))
        print_plan(plan, console, done, rates=Rates.measured(measured_train_rate(store_path)),
                   failed=failed_ids(store_path) if have else set(), workers=executor.workers(plan),
                   footprints=footprints, packs=executor.packs_of(plan, plan.jobs + plan.grid_jobs))
        note_task_mismatch(plan, console)
        check_settings(plan)
        return
    _require_hub_names(plan, path)
    run_plan(plan, console, lock_timeout=lock_timeout)


def _require_hub_names(plan: Plan, config_path: Path) -> None:
    """Fail before the first training, naming the field, when a hub model or dataset is neither cached nor
    downloadable now (a run would otherwise stop at the first fold that needs it, perhaps hours in)."""
    needed: list[tuple[str, str, tuple[bool, str]]] = []
    for i, tp in enumerate(plan.tasks):
        needed.append((f"tasks.{i}.iid", tp.spec.iid, iid_availability(tp.spec.iid)))
        field = (f"model.task_models.{tp.spec.name}" if tp.spec.name in plan.config.model.task_models
                 else "model.name")
        needed.append((field, tp.model, model_availability(tp.model)))
    problems = unreachable_hub_names(needed)
    if problems:
        field, name, why = problems[0]
        more = f" (and {len(problems) - 1} more: {', '.join(n for _, n, _ in problems[1:])})" if problems[1:] else ""
        raise with_config_line(BelugaError(
            f"'{name}' is {why}{more}. Connect once so that it is downloaded, or name a local path, a builtin: "
            "dataset or embedded:minilm", source=config_path, field=field), config_path)
