"""What ``beluga run --dry-run`` shows, as a value: built once from the plan and the store's state by
``summarize_plan``, formatted by the CLI (``beluga_core.cli.run_cmd``). Each section is the plan read one way
(folds, grid, start models, cross-suite cost, kept rows, attributions, few-shot pools, evaluation steps,
checkpoints, hub names, method footprints, packs, job status); the value holds numbers, rows and the sentences
the layers below already write (an interval, a pack's members), never markup, so a test reads it without rich.

Long: one dataclass per section and the function that fills it, side by side; they are one reading of the plan,
and splitting them would only spread its parts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from beluga_core.attributions.compute import is_perturbation
from beluga_core.config.load import attribution_options
from beluga_core.contracts.registries import ATTRIBUTIONS, CONFIGURATIONS, METHODS
from beluga_core.core.constants import ONLY_PREFIX
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.execution.scheduling import describe_job
from beluga_core.execution.sizing import Workers
from beluga_core.execution.worker import keeps_weights
from beluga_core.orchestration.coordinator import iid_scoring, probe_pools_of, required_evaluations
from beluga_core.orchestration.preflight import Footprints, HubName, hub_names, method_footprints
from beluga_core.orchestration.pricing import Pricing, price
from beluga_core.orchestration.selection.select import replay_choices
from beluga_core.planning.estimate import (
    Rates,
    fold_rows,
    seconds,
    stored_probability_bytes,
    training_examples,
)
from beluga_core.planning.grid_cost import GridCost, grid_costs
from beluga_core.planning.grid_space import method_hparams
from beluga_core.planning.jobs import Fold, Job, JobKind, JobSpec
from beluga_core.planning.pack_groups import Packs, why_not_packed
from beluga_core.planning.plan import Plan, TaskPlan, make_task
from beluga_core.planning.steps import Step, steps_label
from beluga_core.store.opened import StoreHandle
from beluga_core.store.reader import done_ids, failed_ids, recorded_pack_size
from beluga_core.training.checkpoint_interval import checkpoint_bytes, describe_interval
from beluga_core.training.checkpoints import checkpointable
from beluga_core.training.models import parameter_count


@dataclass(frozen=True)
class StoreState:
    """What the run's store already holds: its done and failed job ids; and the rates the plan is priced at
    (``orchestration.pricing``, which fits them to the store's finished trainings)."""

    done: frozenset[str] = frozenset()
    failed: frozenset[str] = frozenset()
    rates: Rates = field(default_factory=Rates)

    @classmethod
    def read(cls, plan: Plan, store: StoreHandle | None = None) -> StoreState:
        """What the plan's store holds: ``store`` as ``beluga run`` holds it open (None: read at its path, where
        there is one yet)."""
        path = plan.store_path()
        source: StoreHandle | Path = store if store is not None else path
        if store is None and not path.exists():
            return cls()
        done = done_ids(source, required_evaluations(plan), probe_pools_of(plan), iid_scoring(plan))
        return cls(frozenset(done), frozenset(failed_ids(source)))


@dataclass(frozen=True)
class FoldRow:
    config: str
    method: str
    scenario: str   # only:LEVEL for the only:LEVEL=g models
    trainings: int  # the folds still waiting for their grid search included
    done: int


@dataclass(frozen=True)
class EvalSuiteCost:
    name: str
    evaluated: int   # its cases evaluated
    cases: int
    passes: int
    inputs: int
    seconds: float
    mapped: list[tuple[str, int, str]]   # (level, cases mapped, how)
    unmapped: list[str]                  # held-out levels without a mapping


@dataclass(frozen=True)
class OnlyCost:
    """What the only:LEVEL scenarios add."""

    levels: list[str]
    trainings: int
    seconds: float


@dataclass(frozen=True)
class Kept:
    """``[store] keep_probabilities`` and ``keep_weights`` on disk."""

    keep_weights: str
    models: int
    params: int | None               # of each kept model, when known
    probabilities: bool              # keep_probabilities
    case_bytes: int = 0
    iid_bytes: int | None = None     # None: every D_test example (iid_test = 0)


@dataclass(frozen=True)
class Attributions:
    methods: list[str]
    at_most: bool     # cases = "failing": only the failing ones
    least: int
    most: int
    total: int
    cases: str
    inputs: str
    cap: int
    pools: bool       # [fewshot] probe pools attributed too
    seconds: float
    forwards: float   # per input


@dataclass(frozen=True)
class FewshotLevel:
    level: str
    groups: int
    pool_sizes: tuple[int, int]   # min, max
    candidates: tuple[int, int]   # min, max models ranked per group (IID included)
    iid: int


@dataclass(frozen=True)
class StepRow:
    kind: JobKind
    scenarios: list[str]
    count: int
    steps: str


@dataclass(frozen=True)
class CheckpointRow:
    config: str
    method: str
    jobs: int
    intervals: list[tuple[str, int]]   # each interval and its jobs, most common first


@dataclass(frozen=True)
class Checkpoints:
    interval: str                      # [executor] checkpoint_every
    rows: list[CheckpointRow] = field(default_factory=list)
    off: bool = False
    saves: bool = False                # some job saves one
    params: int | None = None
    save_bytes: int | None = None
    slots: int = 1                     # jobs in flight
    cache: str = ""                    # the store, whose cache holds them


@dataclass(frozen=True)
class TaskSummary:
    name: str
    suite: str
    cases: int
    train: int
    val: int
    test: int
    model: str
    folds: list[FoldRow]
    skipped: dict[str, list[str]]
    grid: list[GridCost] | None        # None: no grid search
    reusing: list[tuple[str, tuple[str, ...]]]   # methods that reuse other methods' choices
    starts: list[tuple[str, int, str, str]]      # (configuration, jobs, the start model, its source)
    only: OnlyCost | None
    evals: list[EvalSuiteCost]
    kept: Kept
    attributions: Attributions | None
    fewshot: list[FewshotLevel]
    steps: list[StepRow]
    checkpoints: Checkpoints
    unavailable: str | None            # why the task plugin is not importable
    hub: list[HubName]


@dataclass(frozen=True)
class PacksSummary:
    setting: int | str
    size: int
    shown: bool = True                 # a run of no packs says so only when packing could have applied
    why: str = ""                      # why none pack, or how "auto" chose the size
    summary: str = ""
    alone: dict[str, int] = field(default_factory=dict)   # why a training trains alone → trainings
    pending: int = 0                   # trainings that pack once the grid search has chosen
    groups: list[list[str]] = field(default_factory=list)  # each pack's members, described


@dataclass(frozen=True)
class KindStatus:
    kind: JobKind
    planned: int
    done: int
    failed: int
    to_run: int
    pending: int


@dataclass(frozen=True)
class PlanSummary:
    tasks: list[TaskSummary]
    rates: Rates
    methods: list[tuple[str, dict[str, Any], list[tuple[str, int, int]]]]   # (method, hparams, footprints)
    scenario_models: int
    grid: tuple[str, str] | None       # (mode, criterion) of a grid search
    grid_points: dict[str, int]        # mode → grid points
    workers: str | None
    packs: PacksSummary | None
    store: str
    variant: str | None
    status: list[KindStatus]
    warnings: list[tuple[str, str]]    # ("note" | "warning", text)
    with_store: bool                   # the store has done jobs: a done column
    pricing: Pricing | None = None     # what the run will cost on this machine

    @property
    def trainings(self) -> int:
        return self.scenario_models + (self.grid_points[self.grid[0]] if self.grid else 0)


def scenario_label(fold: Fold) -> str:
    """The config's name of a fold's scenario: only:LEVEL for the only:LEVEL=g models."""
    return f"{ONLY_PREFIX}{fold.trained_level}" if fold.trained_level is not None else fold.scenario


def dry_run_summary(plan: Plan, footprints: Footprints | None = None, *,
                    store: StoreHandle | None = None, calibrate: bool = False) -> PlanSummary:
    """The dry run's summary: the plan, the store's state (``store``: the run's store as the command holds it open;
    None: read at its path), what the config's executor would do and what it will cost (``calibrate``: the rates
    measured again, not read from the cache)."""
    cfg = plan.config
    executor = EXECUTORS.get(cfg.executor.name)(cfg.executor)
    try:
        state = StoreState.read(plan, store)
        source: StoreHandle | Path | None = store if store is not None else \
            (plan.store_path() if plan.store_path().exists() else None)
        if source is not None and (plan.halving or plan.pending):
            # The rungs and folds the store's finished grid points already decide, as the run would form them.
            replay_choices(source, plan, state.done)
            state = StoreState.read(plan, store)
        pricing = price(plan, executor.workers(plan), store=source, done=state.done, refresh=calibrate)
        state = StoreState(state.done, state.failed, pricing.rates)
        if (store is not None or plan.store_path().exists()) and cfg.executor.pack == "auto" \
                and executor.trains_packs:   # the run's size
            executor.pack_size(plan, plan.jobs + plan.grid_jobs,
                               recorded_pack_size(store if store is not None else plan.store_path()))
        return summarize_plan(plan, state, executor.workers(plan), executor.packs_of(plan, plan.jobs + plan.grid_jobs),
                              footprints, pricing)
    finally:
        executor.close()   # a cluster it connected to, to size it


def summarize_plan(plan: Plan, store: StoreState | None = None, workers: Workers | None = None,
                   packs: Packs | None = None, footprints: Footprints | None = None,
                   pricing: Pricing | None = None) -> PlanSummary:
    """What the dry run shows of ``plan``; ``store``: what of it is done (none when not given); ``workers``: how
    many jobs run at once and why; ``packs``: which trainings train together; ``footprints``:
    ``method_footprints`` of the plan (computed when not given)."""
    store = store or StoreState()
    cfg = plan.config
    slots = (workers.count if workers is not None else None) or 1
    tasks = [_task(plan, i, store, slots) for i in range(len(plan.tasks))]
    footprints = method_footprints(plan) if footprints is None else footprints
    methods = [(m, method_hparams(cfg, m), [(model, *sizes[m]) for model, sizes in footprints.items() if m in sizes])
               for m in cfg.methods]
    grid = {mode: sum(getattr(c, mode) for t in tasks for c in t.grid or []) for mode in ("seen", "strict")}
    warnings = [(level, text) for tp in plan.tasks
                for level, text in (("note", tp.task_note), ("warning", tp.iid_note)) if text]
    return PlanSummary(tasks, store.rates, methods, sum(r.trainings for t in tasks for r in t.folds),
                       (cfg.grid.mode, cfg.grid.criterion) if cfg.grid.enabled else None, grid,
                       workers.line() if workers is not None else None,
                       _packs(plan, packs) if packs is not None else None, str(plan.store_path()),
                       plan.point.variant if plan.point is not None else cfg.variant,
                       _status(plan, store), warnings, bool(store.done), pricing)


def _task(plan: Plan, index: int, store: StoreState, slots: int) -> TaskSummary:
    tp = plan.tasks[index]
    counts: Counter[tuple[str, str, str]] = Counter()
    finished: Counter[tuple[str, str, str]] = Counter()
    for job in tp.jobs:
        counts[(job.config, job.method, scenario_label(job.fold))] += 1
        finished[(job.config, job.method, scenario_label(job.fold))] += job.id in store.done
    for pending in tp.pending:  # folds whose hyper-parameters the grid search has yet to choose
        counts[(pending.config, pending.method, scenario_label(pending.fold))] += 1
    labels = make_task(tp.spec, tp.suite).head_labels if tp.unavailable is None else None
    n_classes = len(tp.suite.header.label_space or labels or [""])
    everything: list[JobSpec] = [*tp.jobs, *tp.grid_jobs, *tp.pending]
    return TaskSummary(
        tp.spec.name, tp.suite.header.name, len(tp.suite.cases), len(tp.split.train), len(tp.split.val),
        len(tp.split.test), tp.model, [FoldRow(*k, n, finished[k]) for k, n in counts.items()], tp.skipped_groups,
        grid_costs(plan, tp) if plan.config.grid.enabled else None,
        [(m, METHODS.get(m).reuses) for m in plan.config.methods if METHODS.get(m).reuses],
        [(config, sum(1 for j in everything if j.config == config), start.describe(), start.source)
         for config, start in tp.starts.items()],
        _only(plan, tp, store.rates), _evals(plan, tp, store.rates), _kept(plan, tp, n_classes),
        _attributions(plan, tp, store.rates), _fewshot(plan, tp), _steps(plan, tp),
        _checkpoints(plan, tp, store.rates, n_classes, slots), tp.unavailable, hub_names(plan, index))


def _only(plan: Plan, tp: TaskPlan, rates: Rates) -> OnlyCost | None:
    only = [s for s in [*tp.jobs, *tp.pending] if not (isinstance(s, Job) and s.is_iid_model)
            and s.fold.trained_level is not None]
    if not only:
        return None
    n_inputs = {c.id: len(c.inputs) for c in tp.suite.cases}
    train = sum(training_examples(plan.config, s, fold_rows(tp.suite, s.fold.train_ids)) for s in only)
    only_eval = sum(n_inputs[c] for s in only for c in s.fold.eval_ids)
    return OnlyCost(sorted({f"{ONLY_PREFIX}{s.fold.trained_level}" for s in only}), len(only),
                    seconds(rates, train, only_eval))


def _evals(plan: Plan, tp: TaskPlan, rates: Rates) -> list[EvalSuiteCost]:
    out = []
    for ep in tp.evals:
        eval_inputs = {c.id: len(c.inputs) for c in ep.suite.cases}
        passes = [ep.eval_ids(m.fold) for m in [*tp.jobs, *tp.pending]]
        n_in = sum(eval_inputs[c] for ids in passes for c in ids)
        out.append(EvalSuiteCost(
            ep.name, len(ep.case_ids), len(ep.suite.cases), sum(1 for ids in passes if ids), n_in,
            seconds(rates, 0, n_in), [(lvl, len(m), ep.how.get(lvl, "?")) for lvl, m in ep.maps.items()],
            [lvl for lvl in plan.config.heldout_levels if lvl not in ep.maps]))
    return out


def _kept(plan: Plan, tp: TaskPlan, n_classes: int) -> Kept:
    spec = plan.config.store_spec
    jobs = tp.jobs  # the models: grid points keep nothing
    kept = [j for j in jobs if keeps_weights(plan.config, j)]
    params = parameter_count(tp.model, plan.config.model.config_overrides, max(2, n_classes)) if kept else None
    if not spec.keep_probabilities:
        return Kept(spec.keep_weights, len(kept), params, False)
    n_inputs = {c.id: len(c.inputs) for c in tp.suite.cases}
    eval_inputs = sum(len(ep.suite.case(c).inputs) for ep in tp.evals for j in jobs for c in ep.eval_ids(j.fold))
    cases, iid = stored_probability_bytes(jobs, n_inputs, plan.config.sizes.iid_test or None, n_classes, eval_inputs)
    return Kept(spec.keep_weights, len(kept), params, True, cases, iid)


def _attributions(plan: Plan, tp: TaskPlan, rates: Rates) -> Attributions | None:
    """How many inputs each model attributes in the run, and what that costs."""
    spec = plan.config.attributions
    if not spec.methods:
        return None
    counts = []
    words = 0.0
    fewshot = plan.config.fewshot
    for job in [*tp.jobs, *tp.pending]:
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
        counts.append(len(inputs))
        words += sum(len(" ".join([x] if isinstance(x, str) else list(x)).split()) for x in inputs)
    total = sum(counts)
    tokens = 1.3 * words / max(total, 1) + 3   # word pieces per input, special tokens included
    forwards = 0.0
    for name in spec.methods:
        o = {**ATTRIBUTIONS.get(name).defaults, **attribution_options(plan.config, name, run=True)}
        if "steps" in o:
            forwards += 3 * int(o["steps"])              # a forward and a backward pass per step
        elif "samples" in o:
            forwards += float(o["samples"] or min(2 * tokens + 2048, 2 ** tokens - 2))
        else:
            forwards += tokens                            # one forward per occluded token
    return Attributions(list(spec.methods), spec.cases == "failing", min(counts, default=0), max(counts, default=0),
                        total, spec.cases if isinstance(spec.cases, str) else ", ".join(spec.cases), spec.inputs,
                        spec.cap_per_fold, fewshot.enabled and fewshot.attribute, total * forwards / rates.eval,
                        forwards)


def _fewshot(plan: Plan, tp: TaskPlan) -> list[FewshotLevel]:
    """The probe pools: per level, their sizes and how many models are ranked on each group."""
    if not tp.pools:
        return []
    jobs = [*tp.jobs, *tp.pending]
    iid = sum(1 for j in jobs if CONFIGURATIONS.get(j.config).is_baseline())
    out = []
    for level in plan.config.fewshot_levels:
        sizes = [len(ids) for (lv, _), ids in tp.pools.items() if lv == level]
        folds = [sum(1 for j in jobs if j.fold.heldout_level == level and j.fold.heldout_group == g)
                 for (lv, g) in tp.pools if lv == level]
        out.append(FewshotLevel(level, len(sizes), (min(sizes, default=0), max(sizes, default=0)),
                                (min(folds, default=0) + iid, max(folds, default=0) + iid), iid))
    return out


def _steps(plan: Plan, tp: TaskPlan) -> list[StepRow]:
    """A row per job kind and distinct step list, with its jobs' scenarios: jobs share a handful of step lists,
    so a run of thousands of jobs stays a few rows."""
    groups: dict[tuple[JobKind, tuple[Step, ...]], list[str]] = {}
    for kind, fold, steps in tp.planned_steps(plan.config):
        groups.setdefault((kind, steps), []).append(scenario_label(fold))
    order = list(JobKind)
    return [StepRow(kind, list(dict.fromkeys(scenarios)), len(scenarios), steps_label(steps))
            for (kind, steps), scenarios in sorted(groups.items(), key=lambda g: order.index(g[0][0]))]


def _checkpoints(plan: Plan, tp: TaskPlan, rates: Rates, n_classes: int, slots: int) -> Checkpoints:
    """Each job's checkpoint interval, per configuration and method, and the disk the checkpoints in flight take
    in the run's cache."""
    cfg = plan.config
    interval = cfg.executor.checkpoint_interval
    if interval.mode == "off":
        return Checkpoints(str(interval), off=True)
    params = parameter_count(tp.model, cfg.model.config_overrides, max(2, n_classes))
    # What a save writes, so that "auto" plans no more saves than their cost justifies (checkpoints.auto_interval).
    size = checkpoint_bytes(params) if params is not None else None
    groups: dict[tuple[str, str], list[str]] = {}
    for spec in [*tp.jobs, *tp.grid_jobs, *tp.pending]:
        hparams = spec.hparams if isinstance(spec, Job) else {}
        if not checkpointable(METHODS.get(spec.method)(hparams.get("method", {})), hparams):
            what = f"off: method {spec.method} does not say what its state is (Method.state_attributes)"
        else:
            # An IID model on all of D_train (iid_train = 0): the plan does not know its size, so "auto" is decided
            # at run time from the measured step rate, as for every job.
            unknown = isinstance(spec, Job) and spec.is_iid_model and cfg.sizes.iid_train == 0
            examples = training_examples(cfg, spec, fold_rows(tp.suite, spec.fold.train_ids))
            what = describe_interval(interval, None if unknown else seconds(rates, examples, 0), size)
        groups.setdefault((spec.config, spec.method), []).append(what)
    rows = [CheckpointRow(config, method, len(whats), Counter(whats).most_common())
            for (config, method), whats in groups.items()]
    saves = not all(w.startswith(("off", "none")) for whats in groups.values() for w in whats)
    return Checkpoints(str(interval), rows, saves=saves, params=params, save_bytes=size, slots=slots,
                       cache=str(plan.store_path()))


def _packs(plan: Plan, packs: Packs) -> PacksSummary:
    """How ``[executor] pack`` groups the trainings, and why the others train alone."""
    setting = plan.config.executor.pack
    jobs = plan.jobs + plan.grid_jobs
    if packs.size <= 1:
        return PacksSummary(setting, packs.size, setting != 1 or any(why_not_packed(j) is None for j in jobs),
                            packs.note or packs.why)
    alone: Counter[str] = Counter()
    for job in jobs:
        if len(packs.of(job.id)) == 1:
            alone[why_not_packed(job) or "no other training shares its base, start and hyper-parameters"] += 1
    by_id = {j.id: j for j in jobs}
    return PacksSummary(setting, packs.size, True, packs.why if setting == "auto" else "", packs.summary(jobs),
                        dict(alone), len(plan.pending),
                        [[describe_job(by_id[m]) for m in group] for group in packs.groups(jobs)])


def _status(plan: Plan, store: StoreState) -> list[KindStatus]:
    """Per job kind: planned, already done, failed (retried by this run) and to run."""
    by_kind: dict[JobKind, list[str]] = {member: [] for member in JobKind}
    for job in [*plan.jobs, *plan.grid_jobs]:
        by_kind[job.kind].append(job.id)
    # The folds a grid search has yet to choose hyper-parameters for, and a halving search's later rungs.
    waiting = {JobKind.FOLD: len(plan.pending), JobKind.GRID: len(plan.planned_rungs())}
    out = []
    for kind, ids in by_kind.items():
        pending = waiting.get(kind, 0)
        if ids or pending:
            n_done = sum(i in store.done for i in ids)
            out.append(KindStatus(kind, len(ids) + pending, n_done,
                                  sum(i in store.failed and i not in store.done for i in ids), len(ids) - n_done,
                                  pending))
    return out
