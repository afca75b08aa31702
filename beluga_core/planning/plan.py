"""From a validated config and suites to the plan: folds per scenario, and jobs identified by content hash.

With a grid search the plan has two phases. Phase 1: the IID models and the grid points (``grid_jobs``,
trained on T_train and scored on T_val). Then the grid points are selected (``analysis.selection``), and
phase 2 resolves the ``pending`` folds into fold jobs whose hyper-parameters are the chosen values — their
hash includes them, so it exists only after selection, and a different choice never reuses a fold.

Long: the plan is built in one place (tasks, folds, the grid's two phases, teachers and outside start models
resolved) so that a plan is complete when built; its checks live in ``plan_checks``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from beluga_core.config.load import with_config_line
from beluga_core.config.schema import BenchmarkConfig, TaskSpec
from beluga_core.config.sweep import SweepPoint
from beluga_core.contracts.registries import CONFIGURATIONS, METHODS
from beluga_core.core.constants import BASELINE_METHOD, SEEN
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import digest
from beluga_core.data.splits import SuiteSplit, split_suite
from beluga_core.data.suite.suite_files import Suite
from beluga_core.evaluation.suites import load_checked_suite
from beluga_core.planning.cross_evals import EvalSuitePlan
from beluga_core.planning.fewshot_pools import Pools, check_pools, probe_pools
from beluga_core.planning.folds import make_folds, selection_scopes
from beluga_core.planning.grid_space import check_grid_tables, grid_methods, grid_points, halving_points, job_hparams
from beluga_core.planning.halving import HALVING_KEY, HalvingSearch
from beluga_core.planning.jobs import (
    Fold,
    Job,
    JobKind,
    JobSpec,
    SelectionKey,
    common_identity,
    iid_identity,
    iid_spec,
    iid_training_identity,
    job_id,
    job_identity,
    legacy_iid_identity,
    make_job,
    split_identity,
)
from beluga_core.planning.plan_checks import (
    check_configuration_keys,
    check_env_level,
    check_levels,
    check_model_config,
    check_size_groups,
)
from beluga_core.planning.start_sources import StartModel, StartResolver, check_start, resolve_start, store_start
from beluga_core.planning.steps import Step, grid_point_steps, model_steps
from beluga_core.planning.task_setup import eval_plans, load_task, make_task
from beluga_core.planning.teacher_sources import (
    TeacherResolver,
    iid_teacher_ids,
    resolve_outside_teachers,
    teacher_seeds,
)


def configuration_start(cfg: BenchmarkConfig, config: str) -> str:
    """Where a configuration's models start: "plm", "iid" or "store:PATH#SELECTOR" (its [training.configurations]
    start wins)."""
    return cfg.training.start_of(config, CONFIGURATIONS.get(config).start)


def selection_keys(spec: JobSpec, mode: str) -> list[SelectionKey]:
    """The selections a fold needs: its method's, or those of the methods it reuses (lp-ft)."""
    level, group = spec.scope if mode == "strict" else (None, None)
    return [(spec.task, spec.config, m, level, group) for m in METHODS.get(spec.method).reuses or (spec.method,)]


@dataclass
class TaskPlan:
    spec: TaskSpec
    suite: Suite
    split: SuiteSplit
    split_id: str
    common: dict[str, Any]  # what every job id of the task hashes (the IID model's: iid_common)
    model: str
    folds: list[Fold]  # the suite scenarios' folds (one set for every seed)
    skipped_groups: dict[str, list[str]] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    grid_jobs: list[Job] = field(default_factory=list)
    pending: list[JobSpec] = field(default_factory=list)
    iid_ids: dict[int, str] = field(default_factory=dict)  # seed → the IID model's job id
    unavailable: str | None = None  # why the task plugin cannot be loaded (dry runs only)
    # Said before a run trains: one label dominates the local i.i.d. data and G's i.i.d. score is accuracy.
    iid_note: str | None = None
    iid_common: dict[str, Any] = field(default_factory=dict)  # what the IID model's id hashes (jobs.iid_identity)
    store_ids: frozenset[str] = frozenset()  # the done models of the run's store (legacy IID ids: new_job)
    legacy_iid_ids: set[str] = field(default_factory=set)  # IID jobs that kept the earlier scheme's id
    evals: list[EvalSuitePlan] = field(default_factory=list)  # the eval suites of cross-suite evaluation
    pools: Pools = field(default_factory=dict)  # [fewshot]: (level, group) → probe pool case ids
    # Settings that shape every job's numbers without being part of job ids (the precision policy).
    shaping: dict[str, Any] = field(default_factory=dict)
    # Configuration → the model of another store its jobs start from ([training.configurations.NAME] start).
    starts: dict[str, StartModel] = field(default_factory=dict)
    # [grid] strategy = "halving": each search's points and the rung jobs made so far (phase 1 holds rung 0's).
    halving: list[HalvingSearch] = field(default_factory=list)
    # A sweep point's variant (config.sweep): what its rows are stored under; not part of its jobs' ids, so that a
    # job that does not read the swept keys is one job at every point.
    row_variant: str | None = None

    @property
    def rows_variant(self) -> str:
        """The variant the task's rows are stored under: a sweep point's, else the run's."""
        return self.row_variant if self.row_variant is not None else str(self.common.get("variant", ""))

    def pool_of(self, job: Job | JobSpec) -> tuple[str, ...]:
        """The probe cases a model predicts for few-shot ranking: its held-out group's pool (a fold of a
        [fewshot] level), every pool (the IID baseline, a candidate for every group), else none (a grid point).
        A fold pending a grid search is asked as the fold job it becomes."""
        return self._pool(job, job.kind if isinstance(job, Job) else JobKind.FOLD)

    def _pool(self, spec: JobSpec, kind: JobKind) -> tuple[str, ...]:
        if not self.pools or kind is JobKind.GRID:
            return ()
        if CONFIGURATIONS.get(spec.config).is_baseline():
            return tuple(dict.fromkeys(c for ids in self.pools.values() for c in ids))
        return self.pools.get((spec.fold.heldout_level or "", spec.fold.heldout_group or ""), ())

    def steps_of(self, cfg: BenchmarkConfig, spec: JobSpec, kind: JobKind) -> tuple[Step, ...]:
        """What a job's trained model is evaluated on, in the order the worker runs it."""
        if kind is JobKind.GRID:
            return grid_point_steps(cfg)
        return model_steps(cfg, eval_suites=tuple(e.name for e in self.evals), probes=bool(self._pool(spec, kind)),
                           score_iid=spec.score_iid)

    def planned_steps(self, cfg: BenchmarkConfig) -> list[tuple[JobKind, Fold, tuple[Step, ...]]]:
        """Every job of the task as (kind, fold, steps), the folds pending a grid search as the fold jobs they
        become."""
        return [*((j.kind, j.fold, j.steps) for j in (*self.jobs, *self.grid_jobs)),
                *((JobKind.FOLD, p.fold, self.steps_of(cfg, p, JobKind.FOLD)) for p in self.pending)]

    @property
    def task_note(self) -> str | None:
        """Said before a run trains: the suite declares another task than the one that trains on it."""
        declared = self.suite.header.task
        if declared is None or declared == self.spec.name:
            return None
        return (f"suite '{self.suite.header.name}' declares task '{declared}', but the config trains it with task "
                f"'{self.spec.name}': its cases are read as '{self.spec.name}' reads them")

    def settings(self, job: Job) -> dict[str, Any]:
        """Everything that shapes ``job``'s model: the identity its id is the hash of, and what shapes it without
        being part of its id (kept out so that the ids of earlier stores stay valid): the precision policy, and
        where a start model of another store was read from (its id is in the identity; a moved store keeps it)."""
        start = self.starts.get(job.config) if job.start_model is not None else None
        where = {"start_from": {"model_id": start.model_id, "store": start.store, "selector": start.label}} \
            if start is not None else {}
        if job.id in self.legacy_iid_ids:
            identity = legacy_iid_identity(self.common, job, job.hparams)
        else:
            identity = job_identity(self.iid_common if job.is_iid_model else self.common, job, job.kind,
                                    job.hparams, job.grid_scoring)
        return identity | self.shaping | where

    def eval_digests(self, fold: Fold) -> dict[str, str]:
        """Eval suite → the identity of what a model of ``fold`` is evaluated on there."""
        return {e.name: e.digest(fold) for e in self.evals}

    def new_job(self, cfg: BenchmarkConfig, spec: JobSpec, hp: dict[str, Any], *, kind: JobKind = JobKind.FOLD,
                point: dict[str, Any] | None = None, grid_scoring: dict[str, Any] | None = None) -> Job:
        """A job of this task: its identity, and its evaluation steps. The IID model keeps the id of the earlier
        scheme where the run's store holds a done model of that id (``jobs.legacy_iid_id``)."""
        job = make_job(self.iid_common if kind is JobKind.IID else self.common, spec, hp, kind=kind, point=point,
                       grid_scoring=grid_scoring, steps=self.steps_of(cfg, spec, kind))
        if kind is not JobKind.IID:
            return job
        if job.id not in self.store_ids:
            legacy = digest(legacy_iid_identity(self.common, spec, hp))
            if legacy in self.store_ids:  # trained as then: its seed from its id
                self.legacy_iid_ids.add(legacy)
                return replace(job, id=legacy)
        return replace(job, training_id=digest(iid_training_identity(self.iid_common, spec, hp)))

    def rung_job(self, cfg: BenchmarkConfig, search: HalvingSearch, index: int, point: dict[str, Any],
                 resume_from: str | None = None) -> Job:
        """Rung ``index`` of ``point`` in ``search``: the point's hyper-parameters (the largest budget's schedule) and
        where it stops. Its training seed is that of the full search's point of the largest budget (the same
        ``training_id`` at every rung), so that each rung continues one training."""
        scoring = {"iid_val": cfg.grid.iid_val, "score_iid_val": cfg.grid.score_iid_val}
        hp = job_hparams(cfg, search.key[2], point, configuration=search.key[1])
        spec = self.with_teachers(search.spec, hp)
        training = job_id(self.common, spec, JobKind.GRID, hp, scoring)
        rung = search.rung(index)
        job = self.new_job(cfg, spec, {**hp, HALVING_KEY: rung.hparam()}, kind=JobKind.GRID, point=point,
                           grid_scoring=scoring)
        return replace(job, training_id=training, resume_from=resume_from if rung.from_epochs else None)

    def promote(self, cfg: BenchmarkConfig, search: HalvingSearch, winners: Iterable[str]) -> list[Job]:
        """The next rung of ``search``: the points of the last rung's jobs ``winners``, in point order, each going on
        from its job's state."""
        won = set(winners)
        last = search.rungs[-1]
        jobs = [self.rung_job(cfg, search, len(search.rungs), dict(j.point or {}), j.id) for j in last if j.id in won]
        search.rungs.append(jobs)
        self.grid_jobs.extend(jobs)
        return jobs

    def fold_job(self, cfg: BenchmarkConfig, spec: JobSpec, hp: dict[str, Any]) -> Job:
        conf = CONFIGURATIONS.get(spec.config)
        if conf.uses_iid and conf.uses_suite:
            hp = {**hp, "iid_for_mix": True}
        return self.new_job(cfg, self.with_teachers(spec, hp), hp)

    def start_model(self, config: str) -> str | None:
        """The id of the model of another store that ``config``'s jobs start from, or None."""
        start = self.starts.get(config)
        return start.model_id if start is not None else None

    def with_teachers(self, spec: JobSpec, hp: dict[str, Any]) -> JobSpec:
        """``spec`` needing the IID models its method loads as teachers, so that the run trains them first."""
        needs = iid_teacher_ids(spec, hp, self.iid_ids)
        return replace(spec, needs=needs) if needs else spec


def store_path_of(cfg: BenchmarkConfig, config_path: Path) -> Path:
    """The run's store: ``[store] path``, relative to the config's folder."""
    p = Path(cfg.store_spec.path).expanduser()
    return p if p.is_absolute() else (config_path.parent / p).resolve()


@dataclass
class Plan:
    config: BenchmarkConfig
    config_path: Path
    tasks: list[TaskPlan]
    # Teacher sources of the methods (``store:PATH#SELECTOR``, ``path:DIR``) resolved to the file or folder
    # their weights are in: of every job, by ``build_plan`` and ``resolve`` (with ``teacher_weights``).
    teachers: dict[str, str] = field(default_factory=dict)
    teacher_weights: TeacherResolver | None = field(default=None, repr=False, compare=False)
    # What changed the config file's settings into ``config`` (``beluga run``'s --tiny notes, --variant, --store),
    # one line each: recorded with the run (``runs.config_changes``) beside ``config`` itself.
    config_changes: tuple[str, ...] = ()
    # The sweep point this plan runs (config.sweep), with the groups whose T_train holds fewer cases than it asks.
    point: SweepPoint | None = None
    capped: dict[str, list[str]] = field(default_factory=dict)

    def for_workers(self) -> Plan:
        """The plan with each suite cut to the cases its jobs (and the folds still pending a grid search) read:
        what is sent to worker processes (the whole sentiment suite pickles to tens of MB, seconds per worker
        to send and to load)."""
        tasks = []
        for tp in self.tasks:
            folds = [*tp.folds, *(j.fold for j in (*tp.jobs, *tp.grid_jobs))]
            read = {c for f in folds for c in (*f.train_ids, *f.eval_ids)} | {c for ids in tp.pools.values()
                                                                                  for c in ids}
            tasks.append(replace(tp, suite=tp.suite.subset(read), evals=[e.for_workers() for e in tp.evals]))
        # Workers read the resolved teachers; the resolver (of the layer that reads stores) stays here.
        return replace(self, tasks=tasks, teacher_weights=None)

    @property
    def jobs(self) -> list[Job]:
        """The jobs whose identity is known: IID models and folds (all of them without a grid search)."""
        return [j for t in self.tasks for j in t.jobs]

    @property
    def grid_jobs(self) -> list[Job]:
        return [j for t in self.tasks for j in t.grid_jobs]

    @property
    def pending(self) -> list[JobSpec]:
        return [p for t in self.tasks for p in t.pending]

    @property
    def halving(self) -> list[HalvingSearch]:
        return [s for t in self.tasks for s in t.halving]

    def planned_rungs(self) -> list[tuple[Job, tuple[str, ...]]]:
        """The rungs of halving searches not made yet, each as the jobs of as many of its points as it will train
        (which points go on is known once the rung before has run; a rung costs alike whichever): what the dry run
        and the estimate count. Each with the ids of the rung before, which it waits for."""
        out: list[tuple[Job, tuple[str, ...]]] = []
        for tp in self.tasks:
            for s in tp.halving:
                before = tuple(j.id for j in s.rungs[-1]) if s.rungs else ()
                for r in range(len(s.rungs), len(s.budgets)):
                    jobs = [tp.rung_job(self.config, s, r, p) for p in s.points[:s.sizes[r]]]
                    out += [(j, before) for j in jobs]
                    before = tuple(j.id for j in jobs)
        return out

    def selectable_grid_jobs(self) -> list[Job]:
        """The grid points selection chooses among: every point of a full search, the last rung of a halving one."""
        rungs = {j.id for s in self.halving for r in s.rungs for j in r}
        return [j for j in self.grid_jobs if j.id not in rungs] + [j for s in self.halving for j in s.final_jobs()]

    def task_plan(self, name: str) -> TaskPlan:
        return next(tp for tp in self.tasks if tp.spec.name == name)

    def store_path(self) -> Path:
        return store_path_of(self.config, self.config_path)

    def resolve(self, chosen: dict[SelectionKey, dict[str, Any]]) -> tuple[list[Job], list[JobSpec]]:
        """Turn pending folds into jobs with the chosen grid points (their outside teachers resolved too: the
        plan stays complete); returns the new jobs and the folds left pending because a selection they need is
        missing (no grid point of it finished)."""
        new: list[Job] = []
        left: list[JobSpec] = []
        mode = self.config.grid.mode
        for tp in self.tasks:
            still: list[JobSpec] = []
            for pending in tp.pending:
                keys = selection_keys(pending, mode)
                if any(k not in chosen for k in keys):
                    still.append(pending)
                    continue
                if METHODS.get(pending.method).reuses:
                    hp = job_hparams(self.config, pending.method, reused={k[2]: chosen[k] for k in keys},
                                     configuration=pending.config)
                else:
                    hp = job_hparams(self.config, pending.method, chosen[keys[0]], configuration=pending.config)
                job = tp.fold_job(self.config, pending, hp)
                tp.jobs.append(job)
                new.append(job)
            tp.pending = still
            left += still
        self.resolve_teachers(new)
        return new, left

    def resolve_teachers(self, jobs: Iterable[Job]) -> None:
        """Where the weights of the outside teachers ``jobs`` load are: added to ``teachers``."""
        resolve_outside_teachers(jobs, self.teachers, self.teacher_weights, self.config_path)


def build_plan(cfg: BenchmarkConfig, config_path: Path, *, allow_missing_tasks: bool = False,
               teachers: TeacherResolver | None = None, starts: StartResolver | None = None,
               store_ids: Iterable[str] = ()) -> Plan:
    """The plan of a config, complete: every job with its evaluation steps, the outside teachers of its methods
    resolved (by ``teachers``; without it, a config naming one is refused), and so the models of other stores its
    configurations start from (by ``starts``). With a grid search, fold jobs wait in ``pending`` until
    ``Plan.resolve``. ``store_ids``: the done models of the run's store, where an IID model of an earlier
    version's id keeps it (``TaskPlan.new_job``)."""
    try:
        plan = _build_plan(cfg, config_path, allow_missing_tasks, starts, frozenset(store_ids))
        plan.teacher_weights = teachers
        plan.resolve_teachers([*plan.jobs, *plan.grid_jobs])
        return plan
    except BelugaError as exc:
        raise with_config_line(exc, config_path) from None


def _iid_seeds(cfg: BenchmarkConfig) -> set[int]:
    """The seeds whose IID model the run trains: every seed where the baseline is among the configurations or
    one starts from the IID model; else those a method's teacher names."""
    if any(configuration_start(cfg, c) == "iid" or CONFIGURATIONS.get(c).is_baseline() for c in cfg.configurations):
        return set(cfg.seeds)
    return teacher_seeds(cfg)


def _build_plan(cfg: BenchmarkConfig, config_path: Path, allow_missing_tasks: bool,
                starts: StartResolver | None = None, store_ids: frozenset[str] = frozenset()) -> Plan:
    tasks: list[TaskPlan] = []
    check_configuration_keys(cfg, config_path)
    check_grid_tables(cfg)
    iid_seeds = _iid_seeds(cfg)
    for index, spec in enumerate(cfg.tasks):
        suite = load_checked_suite(spec.suite)
        if spec.apply_corrections:
            suite = suite.with_corrections()
        unavailable, iid_note = load_task(spec, suite, allow_missing_tasks, config_path, index)
        check_levels(cfg, suite, config_path)
        sizes = cfg.sizes
        check_size_groups(sizes.suite_test_per_group_of, suite, config_path)
        split = split_suite(suite, cfg.split.seed, cfg.split.ratios,
                            (sizes.suite_train_per_group, sizes.suite_val_per_group, sizes.suite_test_per_group),
                            sizes.suite_test_per_group_of)
        folds, skipped = make_folds(suite, split, cfg.scenarios, sizes.groups_per_level, cfg.split.seed)
        model = cfg.model.task_models.get(spec.name, cfg.model.name)
        check_model_config(cfg, model, config_path)
        tp = TaskPlan(spec, suite, split, split_identity(suite, cfg), common_identity(cfg, spec, suite, model), model,
                      folds, skipped_groups=skipped, unavailable=unavailable, iid_note=iid_note,
                      shaping={"precision": cfg.executor.precision},
                      iid_common=iid_identity(cfg, spec, suite, model), store_ids=store_ids)
        tp.evals = eval_plans(cfg, config_path, index, spec, suite, unavailable is None)
        tp.pools = probe_pools(cfg, suite, split, folds)
        check_pools(cfg, suite, split, folds, tp.pools, config_path)
        for method in {*cfg.methods, *grid_methods(cfg.methods)}:
            check_env_level(job_hparams(cfg, method), method, suite, config_path)
        _resolve_starts(cfg, config_path, tp, starts)
        iids = {seed: tp.new_job(cfg, iid_spec(spec.name, seed, split.test, model, BASELINE_METHOD),
                                 cfg.training.stage("iid"), kind=JobKind.IID) for seed in cfg.seeds}
        tp.iid_ids.update({seed: job.id for seed, job in iids.items()})  # before any job that names another seed's
        for seed in cfg.seeds:
            iid = iids[seed]
            if seed in iid_seeds:
                tp.jobs.append(iid)
            for config_name in cfg.configurations:
                conf = CONFIGURATIONS.get(config_name)
                if conf.is_baseline():
                    continue
                parent = iid.id if configuration_start(cfg, config_name) == "iid" else None
                start = tp.start_model(config_name)
                if conf.is_iid_update():
                    # One model per seed and method, trained on D_train with the method, scored like the
                    # baseline (not grid-searched: there is no T_val step to select on).
                    for method in cfg.methods:
                        update = JobSpec(task=spec.name, config=config_name, method=method, seed=seed,
                                         fold=iid.fold, parent_id=parent, score_iid=True, model=model,
                                         start_model=start)
                        tp.jobs.append(tp.fold_job(cfg, update, job_hparams(cfg, method, configuration=config_name,
                                                                            step="iid")))
                    continue
                for method in cfg.methods:
                    for fold in folds:
                        score_iid = fold.scenario == SEEN or cfg.score_folds_on_iid_test
                        pending = JobSpec(task=spec.name, config=config_name, method=method, seed=seed, fold=fold,
                                          parent_id=parent, score_iid=score_iid, model=model, start_model=start)
                        if cfg.grid.enabled:
                            tp.pending.append(pending)
                        else:
                            tp.jobs.append(tp.fold_job(cfg, pending, job_hparams(cfg, method,
                                                                                 configuration=config_name)))
        if cfg.grid.enabled and tp.pending:  # nothing to select for without suite folds
            _add_grid_jobs(cfg, tp)
        for config_name, start_model in tp.starts.items():
            check_start(start_model, config_name, suite=suite, iid=spec.iid, evals=tp.evals, config_path=config_path,
                        specs=[s for s in (*tp.jobs, *tp.grid_jobs, *tp.pending) if s.config == config_name])
        tasks.append(tp)
    return Plan(cfg, config_path, tasks)


def _add_grid_jobs(cfg: BenchmarkConfig, tp: TaskPlan) -> None:
    seed = cfg.grid.seed if cfg.grid.seed is not None else cfg.seeds[0]
    iid = tp.new_job(cfg, iid_spec(tp.spec.name, seed, tp.split.test, tp.model, BASELINE_METHOD),
                     cfg.training.stage("iid"), kind=JobKind.IID)
    if seed not in tp.iid_ids:
        tp.iid_ids[seed] = iid.id
        if any(j.is_iid_model for j in tp.jobs):
            # A grid seed outside `seeds` needs its own IID model for the configurations that start from one.
            tp.jobs.insert(0, iid)
    scoring = {"iid_val": cfg.grid.iid_val, "score_iid_val": cfg.grid.score_iid_val}
    scopes = selection_scopes(tp.suite, tp.split, tp.folds, cfg.grid.mode)
    for config_name in cfg.configurations:
        conf = CONFIGURATIONS.get(config_name)
        if conf.is_baseline() or conf.is_iid_update():
            continue
        parent = iid.id if configuration_start(cfg, config_name) == "iid" else None
        for method in grid_methods(cfg.methods):
            if cfg.grid.strategy == "halving":
                _add_halving(cfg, tp, config_name, method, parent, scopes, seed)
                continue
            points = grid_points(cfg, tp.spec.name, method)
            for _, fold in scopes:
                spec = JobSpec(task=tp.spec.name, config=config_name, method=method, seed=seed, fold=fold,
                               parent_id=parent, score_iid=False, model=tp.model,
                               start_model=tp.start_model(config_name))
                for point in points:
                    hp = job_hparams(cfg, method, point, configuration=config_name)
                    tp.grid_jobs.append(tp.new_job(cfg, tp.with_teachers(spec, hp), hp, kind=JobKind.GRID,
                                                   point=point, grid_scoring=scoring))


def _add_halving(cfg: BenchmarkConfig, tp: TaskPlan, config_name: str, method: str, parent: str | None,
                 scopes: list[tuple[Any, Fold]], seed: int) -> None:
    """A halving search per scope: its rung 0 (every point, to the smallest budget) is phase 1's."""
    points, rungs = halving_points(cfg, tp.spec.name, method)
    plugin = METHODS.get(method)
    hp = job_hparams(cfg, method, points[0], configuration=config_name)
    if len(plugin(hp.get("method", {})).stages(hp)) != 1:
        raise BelugaError(f"[grid] strategy = \"halving\" stops a training at each rung's epochs, which needs a "
                          f"method that trains in one stage; '{method}' trains in several: search it with "
                          "strategy = \"full\"", field="grid.strategy")
    for _, fold in scopes:
        spec = JobSpec(task=tp.spec.name, config=config_name, method=method, seed=seed, fold=fold, parent_id=parent,
                       score_iid=False, model=tp.model, start_model=tp.start_model(config_name))
        search = HalvingSearch((tp.spec.name, config_name, method, *fold.scope), spec, points, rungs,
                               cfg.grid.reduction, plugin.checkpointable())
        search.rungs.append([tp.rung_job(cfg, search, 0, p) for p in points])
        tp.grid_jobs.extend(search.rungs[0])
        tp.halving.append(search)


def _resolve_starts(cfg: BenchmarkConfig, config_path: Path, tp: TaskPlan, resolver: StartResolver | None) -> None:
    """The models of other stores the run's configurations start from (``TaskPlan.starts``)."""
    labels = make_task(tp.spec, tp.suite).head_labels if tp.unavailable is None else None
    for config_name in cfg.configurations:
        source = store_start(cfg, config_name)
        if source is not None:
            tp.starts[config_name] = resolve_start(resolver, source, config_name, task=tp.spec.name, model=tp.model,
                                                   labels=labels, model_config=cfg.model.config_overrides,
                                                   config_path=config_path)
