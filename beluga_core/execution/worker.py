"""Running one job: load the starting weights, train its stages, run its evaluation steps, build its record.

A ``Worker`` keeps what folds share (tokenized inputs, the loaded model, the pretrained and IID weights) so
that consecutive jobs in one process do not redo it. A job's result depends only on the job: every job
re-seeds from its own identity and starts from pristine weights. What a trained model is evaluated on is the
job's steps, decided by planning (``planning.steps``) and run by their runners (``execution.step_runners``).

Long: a job's whole path, alone (``run``) or as a member of a pack (``run_pack``), shares the state this class
keeps (start weights, encoders, checkpoints, kept weights) and its evaluation; split, each part would reach back.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import torch

from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import CONFIGURATIONS, METHODS
from beluga_core.contracts.tasks import Task
from beluga_core.contracts.training import Encoder, TrainSet
from beluga_core.core.constants import SEEN
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import sorted_ids_digest
from beluga_core.core.io import atomic_save
from beluga_core.data.iid.examples import Example, IIDData
from beluga_core.execution.results import GridPointRecord, JobResult, ModelRecord, PackTime
from beluga_core.execution.step_runners import Evaluation, run_step, sample_examples
from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, TaskPlan, make_task
from beluga_core.planning.teacher_sources import iid_teacher_seed
from beluga_core.training import determinism, precision, token_cache
from beluga_core.training.checkpoint_file import (
    CheckpointRejected,
    CheckpointStore,
    FolderCheckpoints,
    checkpoint_folder,
    rung_folder,
)
from beluga_core.training.checkpoints import JobCheckpoints, StageCheckpoints, checkpointable
from beluga_core.training.loop import TrainStats, seed_everything, train_stage
from beluga_core.training.models import load_tokenizer, pick_device

ProgressFn = Callable[[str, int, int], None]


def cache_dir_for(store: Path) -> Path:
    """The folder next to a store that holds its kept weights, checkpoints and token cache."""
    return store.with_name(store.name + ".cache")


def weights_path(cache_dir: Path, job_id: str) -> Path:
    """Where a model's weights are kept between jobs and runs (the IID models', and what ``[store] keep_weights``
    asks for)."""
    return cache_dir / f"{job_id}.pt"


def keeps_weights(cfg: BenchmarkConfig, job: Job) -> bool:
    """Whether ``[store] keep_weights`` keeps this job's weights: "iid" the IID models only (every run keeps
    those); "seen" also the seen models and the updates of the i.i.d. model; "all" every scenario model."""
    policy = cfg.store_spec.keep_weights
    if job.is_grid_point:
        return False
    if job.is_iid_model or policy == "all":
        return True
    return policy == "seen" and kept_from(job.fold.scenario, job.config) == "seen"


def kept_from(scenario: str, config: str) -> str:
    """The least ``[store] keep_weights`` that keeps a scenario model's weights: "seen" for the seen models and the
    updates of the i.i.d. model, "all" for the others."""
    return "seen" if scenario == SEEN or CONFIGURATIONS.get(config).is_iid_update() else "all"


def iid_train_examples(cfg: BenchmarkConfig, config: str, train: Sequence[Example]) -> list[Example]:
    """The i.i.d. examples a job of configuration ``config`` trains on (its ``[sizes]`` subset)."""
    conf = CONFIGURATIONS.get(config)
    if conf.is_baseline():
        return sample_examples(train, cfg.sizes.iid_train, cfg.split.seed, "iid_train")
    if conf.is_iid_update():  # an update of the i.i.d. model trains on what the IID model did, unless sized itself
        return sample_examples(train, cfg.sizes.iid_mix_of.get(config, cfg.sizes.iid_train), cfg.split.seed,
                               "iid_train")
    if conf.uses_iid:
        return sample_examples(train, cfg.sizes.iid_mix_for(config), cfg.split.seed, "iid_mix")
    return []


def _seed_of(key: str, seed: int) -> int:
    """A job's training seed: from its ``Job.training_key`` (its id, or for the IID model the identity of its
    training alone) and its seed, so that what does not change the training does not redraw it."""
    return (int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) + seed) % (2**31)


@dataclass
class _TaskState:
    plan: TaskPlan
    task: Task
    # Per eval suite, the task told that suite (its predictions are read in that suite's label space).
    eval_tasks: dict[str, Task]
    iid: IIDData | None = None


@dataclass(frozen=True)
class _Trained:
    """A job's trained model, and what training it left for its record."""

    model: torch.nn.Module
    encoder: Encoder
    stats: TrainStats
    n_train_iid: int
    suite_ids: list[str]  # the suite cases it trained on
    notes: dict[str, Any]  # what building the training set left out
    resumed_from: str | None = None  # where training resumed from a checkpoint


class Worker:
    def __init__(self, plan: Plan, device: str = "auto", cache_dir: Path | None = None) -> None:
        self.plan = plan
        self.cfg: BenchmarkConfig = plan.config
        self.device = pick_device(device)
        # Before the precision check, which may start CUDA.
        self.mode = determinism.configure(self.cfg.executor.deterministic, self.device)
        self.precision = precision.configure(self.cfg.executor.precision, self.device)
        self.cache_dir = cache_dir
        self.tasks = {tp.spec.name: _TaskState(tp, make_task(tp.spec, tp.suite),
                                               {e.name: make_task(tp.spec, e.suite) for e in tp.evals})
                      for tp in plan.tasks}
        self._encoders: dict[str, Encoder] = {}
        self._models: dict[tuple[str, str, str], torch.nn.Module] = {}
        self._pristine: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
        self._states: dict[str, dict[str, torch.Tensor]] = {}
        # Where jobs save their training state to resume inside a fold (an executor may send them elsewhere).
        self.checkpoint_store: CheckpointStore | None = (FolderCheckpoints(checkpoint_folder(cache_dir))
                                                         if cache_dir is not None else None)
        # Where a halving search's rungs keep the state the next rung goes on from (``planning.halving``).
        self.rung_store: CheckpointStore | None = (FolderCheckpoints(rung_folder(cache_dir))
                                                   if cache_dir is not None else None)

    # -- shared state ---------------------------------------------------------------------------------
    def iid_data(self, name: str) -> IIDData:
        state = self.tasks[name]
        if state.iid is None:
            state.iid = state.task.load_iid(state.plan.spec.iid, self.cfg.split.iid_eval_seed)
        return state.iid

    def encoder(self, task: Task, model_name: str) -> Encoder:
        key = f"{task.name}\x1f{model_name}"
        if key not in self._encoders:
            encoder = task.make_encoder(load_tokenizer(model_name), self.cfg.model.max_length)
            if self.cache_dir is not None:  # tokenized inputs on disk for every later fold and run
                token_cache.attach(encoder, self.cache_dir / "tokens", task.name)
            self._encoders[key] = encoder
        return self._encoders[key]

    def model(self, task: Task, model_name: str, overrides: dict[str, Any]) -> torch.nn.Module:
        key = (task.name, model_name, repr(sorted(overrides.items())))
        if key not in self._models:
            # One pristine copy of the pretrained weights (with a fixed head initialisation) per model.
            model = task.build_model(model_name, seed=0, config_overrides=self.cfg.model.config_overrides,
                                     **overrides).to(self.device)
            base = (task.name, model_name)
            if base not in self._pristine:
                self._pristine[base] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            self._models[key] = model
        return self._models[key]

    def state_of(self, model_id: str) -> dict[str, torch.Tensor]:
        """The weights of a model trained earlier (the IID models), from memory or the cache folder."""
        if model_id in self._states:
            return self._states[model_id]
        if self.cache_dir is not None and weights_path(self.cache_dir, model_id).exists():
            state: dict[str, torch.Tensor] = torch.load(weights_path(self.cache_dir, model_id),
                                                        map_location=self.device, weights_only=True)
            self._states[model_id] = state
            return state
        raise BelugaError(f"the weights of model {model_id[:12]} are neither in memory nor in the cache; re-run "
                          "so that it is trained first")

    def has_weights(self, job_id: str) -> bool:
        return job_id in self._states or (self.cache_dir is not None
                                          and weights_path(self.cache_dir, job_id).exists())

    def teacher(self, job: Job, source: str) -> torch.nn.Module:
        """A frozen model: ``"iid"`` (the IID model of the job's task and seed; ``"iid#N"``: of seed N), or a
        ``store:`` / ``path:`` source planning resolved to a file or folder (``Plan.teachers``; a bare path is
        taken as it is)."""
        task = self.tasks[job.task].task
        seed = iid_teacher_seed(source, job.seed)
        if seed is not None:
            iid_id = self.tasks[job.task].plan.iid_ids.get(seed)
            if iid_id is None:
                raise BelugaError(f"no IID model for task '{job.task}' and seed {seed} in this plan")
            model = task.build_model(job.model, seed=0, config_overrides=self.cfg.model.config_overrides)
            model.load_state_dict(self.state_of(iid_id))
        else:
            path = Path(self.plan.teachers.get(source, source.split(":", 1)[-1]))
            if path.is_dir():
                check_same_tokenizer(path, job.model, source)
                model = task.build_model(str(path), seed=0)
            elif path.is_file():
                model = task.build_model(job.model, seed=0, config_overrides=self.cfg.model.config_overrides)
                model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            else:
                raise BelugaError(f"teacher '{source}': neither 'iid', a state dict file nor a model folder")
        model.to(self.device).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return model

    # -- one job --------------------------------------------------------------------------------------
    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        """Train ``job``'s model, run its evaluation steps in order, and return its record and results."""
        started = datetime.now(UTC)
        state = self.tasks[job.task]
        trained = self._trained(job, state, progress)
        return self._evaluated(job, state, trained, started, progress)

    def run_pack(self, jobs: Sequence[Job], progress: Callable[[Job, str, int, int], None] | None = None,
                 pack: dict[str, Any] | None = None) -> Iterator[JobResult]:
        """Train ``jobs`` as the members of one pack (``training.packed_training``; ``planning.pack_groups`` formed
        it), and yield each member's result as soon as it has trained and been evaluated, in the order the members
        finish.
        ``pack`` is recorded with each model (``models.pack``)."""
        from beluga_core.training.pack_clock import PackClock
        from beluga_core.training.packed_training import MemberSpec, train_pack

        started = datetime.now(UTC)
        clock = PackClock(len(jobs))
        jobs = list(jobs)   # the caller's list may shrink as members finish
        first = jobs[0]
        state = self.tasks[first.task]
        task, suite = state.task, state.plan.suite
        method0 = METHODS.get(first.method)(first.hparams.get("method", {}))
        model = self.model(task, first.model, method0.model_overrides())
        model.load_state_dict(self._start_state(first, state.plan))
        encoder = self.encoder(task, first.model)
        specs, built = [], []
        for job in jobs:
            conf = CONFIGURATIONS.get(job.config)
            method = METHODS.get(job.method)(job.hparams.get("method", {}))
            ((stage_method, stage_hp),) = method.stages(job.hparams)
            iid_train = iid_train_examples(self.cfg, job.config, self.iid_data(job.task).train)
            cases = [suite.case(cid) for cid in job.fold.train_ids] if conf.uses_suite else []
            env_level = job.hparams.get("method", {}).get("env_level") or suite.header.scoring_level
            trainset = task.build_trainset(cases, iid_train, env_level, suite.group_of)
            checkpoints = self.checkpoints_of(job, method)
            resume = checkpoints.resume(1) if checkpoints is not None else None
            at = None if checkpoints is None else StageCheckpoints(checkpoints, 0, 1, (0, 0, 0.0), resume)
            seed = _seed_of(job.training_key, job.seed)
            specs.append(MemberSpec(job.id, trainset, stage_method, stage_hp, seed, seed,
                                    progress=partial(progress, job, "train") if progress else None, checkpoints=at))
            built.append((trainset, len(iid_train), [c.id for c in cases], resume))
        for finished, (m, weights, stats) in enumerate(train_pack(task, model, encoder, self.device, specs, clock),
                                                       start=1):
            job = jobs[m]
            trainset, n_iid, suite_ids, resume = built[m]
            model.load_state_dict(weights)
            if CONFIGURATIONS.get(job.config).is_baseline():
                self._keep_weights(job.id, model)
            elif keeps_weights(self.cfg, job):
                self._save_weights(job.id, model)
            trained = _Trained(model, encoder, stats, n_iid, suite_ids, dict(trainset.notes),
                               resume.describe() if resume is not None else None)
            result = self._evaluated(job, state, trained, started,
                                     partial(progress, job) if progress else None, pack=pack)
            result.pack_time = PackTime(clock.seconds, finished, started)
            yield result

    def _evaluated(self, job: Job, state: _TaskState, trained: _Trained, started: datetime,
                   progress: ProgressFn | None, pack: dict[str, Any] | None = None) -> JobResult:
        """Run the job's evaluation steps on its trained model, in order, and build its record and results."""
        eval_start = time.perf_counter()
        if progress:
            progress("eval", 0, 1)
        ev = Evaluation(job, self.cfg, state.plan, state.task, state.eval_tasks, self.iid_data(job.task),
                        trained.model, trained.encoder, self.device)
        for step in job.steps:
            run_step(step, ev)
        eval_seconds = time.perf_counter() - eval_start
        if progress:
            progress("eval", 1, 1)
        grid = {"n_val_suite": len(ev.eval_cases)} if job.is_grid_point else {}
        record = job_record(
            state.plan, job,
            # What building the training set left out (e.g. reading MFT inputs whose answer is not in the
            # context) is recorded with the model, under hparams.train_notes.
            hparams={**job.hparams, "train_notes": trained.notes} if trained.notes else job.hparams,
            started_at=started, finished_at=datetime.now(UTC), train_seconds=trained.stats.seconds,
            eval_seconds=eval_seconds, n_train_iid=trained.n_train_iid, n_train_suite=len(trained.suite_ids),
            train_digest=sorted_ids_digest(trained.suite_ids) if trained.suite_ids else None,
            device="/".join(filter(None, (str(self.device), self.precision, self.mode))), pack=pack, **grid)
        result = ev.result(record)
        result.resumed_from = trained.resumed_from
        return result

    def _trained(self, job: Job, state: _TaskState, progress: ProgressFn | None, load: bool = True) -> _Trained:
        """The job's model: its start weights, trained on its data in its stages (from its checkpoint, unless
        ``load`` is false); its weights kept as asked."""
        task, suite = state.task, state.plan.suite
        conf = CONFIGURATIONS.get(job.config)
        method = METHODS.get(job.method)(job.hparams.get("method", {}))
        seed_everything(_seed_of(job.training_key, job.seed))
        model = self.model(task, job.model, method.model_overrides())
        model.load_state_dict(self._start_state(job, state.plan))
        for p in model.parameters():
            p.requires_grad_(True)
        encoder = self.encoder(task, job.model)
        iid_train = iid_train_examples(self.cfg, job.config, self.iid_data(job.task).train)
        cases = [suite.case(cid) for cid in job.fold.train_ids] if conf.uses_suite else []
        env_level = job.hparams.get("method", {}).get("env_level") or suite.header.scoring_level
        trainset = task.build_trainset(cases, iid_train, env_level, suite.group_of)
        checkpoints = self.checkpoints_of(job, method)
        try:
            stats, resumed = self._train(job, task, model, encoder, trainset, method, progress, checkpoints, load)
        except CheckpointRejected as exc:  # found not to fit once its stage was built: start the job over
            assert checkpoints is not None
            checkpoints.reject(str(exc))
            return self._trained(job, state, progress, load=False)
        if conf.is_baseline():
            self._keep_weights(job.id, model)
        elif keeps_weights(self.cfg, job):
            self._save_weights(job.id, model)
        return _Trained(model, encoder, stats, len(iid_train), [c.id for c in cases], dict(trainset.notes), resumed)

    def _start_state(self, job: Job, tp: TaskPlan) -> dict[str, torch.Tensor]:
        """The weights a job starts from: a model of another store (``TaskPlan.starts``), its parent (the IID
        model), else the pretrained model's."""
        if job.start_model is not None:
            if job.start_model not in self._states:
                start = tp.starts[job.config]
                self._states[job.start_model] = torch.load(start.weights, map_location=self.device, weights_only=True)
            return self._states[job.start_model]
        if job.parent_id is not None:
            return self.state_of(job.parent_id)
        return self._pristine[(tp.spec.name, job.model)]

    def _keep_weights(self, job_id: str, model: torch.nn.Module) -> None:
        """Keep a parent's weights in memory for the folds that start from it, and on disk for later runs."""
        self._states[job_id] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if self.cache_dir is not None:
            atomic_save(weights_path(self.cache_dir, job_id), lambda tmp: torch.save(self._states[job_id], tmp))

    def _save_weights(self, job_id: str, model: torch.nn.Module) -> None:
        """Keep a model's weights on disk only (``[store] keep_weights``): no job starts from them."""
        if self.cache_dir is not None:
            state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
            atomic_save(weights_path(self.cache_dir, job_id), lambda tmp: torch.save(state, tmp))

    def checkpoints_of(self, job: Job, method: Method) -> JobCheckpoints | None:
        """The job's checkpoints, or None where it trains without: no cache folder, ``checkpoint_every = "off"``,
        or a stage's method that does not say what its state is (``Method.checkpointable``). A rung of a halving
        search has them (saving none with ``"off"``) to keep and take up the state between rungs."""
        interval = self.cfg.executor.checkpoint_interval
        if self.checkpoint_store is None or not checkpointable(method, job.hparams):
            return None
        if interval.mode == "off":
            if rung_of(job.hparams) is None:
                return None
            interval = CheckpointEvery("off")
        return JobCheckpoints(self.checkpoint_store, job.id, interval, self.device)

    def _train(self, job: Job, task: Task, model: torch.nn.Module, encoder: Encoder, trainset: TrainSet,
               method: Method, progress: ProgressFn | None, checkpoints: JobCheckpoints | None = None,
               load: bool = True) -> tuple[TrainStats, str | None]:
        """Train the job's stages in sequence, each from the weights the previous one left (lp-ft); a job with
        a checkpoint skips the stages before its own and resumes that one at its step."""
        stages = method.stages(job.hparams)
        resume = checkpoints.resume(len(stages)) if checkpoints is not None and load else None
        rung = rung_of(job.hparams)
        last_rung = rung is None or rung.epochs >= float(job.hparams["epochs"])
        own = resume is not None   # its own checkpoint (said in the run's output), not the previous rung's state
        if (resume is None and load and rung is not None and job.resume_from and checkpoints is not None
                and self.rung_store is not None):
            resume = checkpoints.resume_rung(self.rung_store, job.resume_from, len(stages))
        done = TrainStats(0, 0, float("nan"), 0.0)
        if resume is not None:
            steps, examples, seconds = resume.prior
            done = TrainStats(steps, examples, float("nan"), seconds)
        for i, (stage_method, stage_hp) in enumerate(stages):
            if resume is not None and i < resume.stage:
                continue
            label = "train" if len(stages) == 1 else f"train {i + 1}/{len(stages)}"
            at = None if checkpoints is None else StageCheckpoints(
                checkpoints, i, len(stages), (done.steps, done.examples, done.seconds),
                resume if resume is not None and i == resume.stage else None,
                keep_to=None if last_rung else self.rung_store)
            stats = train_stage(task, model, encoder, self.device, trainset, stage_hp, stage_method,
                                _seed_of(job.training_key, job.seed) + i,
                                progress=partial(progress, label) if progress else None,
                                teachers=partial(self.teacher, job), checkpoints=at,
                                stop_epochs=None if rung is None else rung.epochs)
            done = TrainStats(done.steps + stats.steps, done.examples + stats.examples, stats.mean_loss,
                              done.seconds + stats.seconds)
        return done, resume.describe() if resume is not None and own else None


def check_same_tokenizer(folder: Path, model_name: str, source: str) -> None:
    """A teacher read from a checkpoint folder must tokenize as the run's model does (its logits are compared
    row by row with the student's on the same token ids)."""
    theirs, ours = load_tokenizer(str(folder)), load_tokenizer(model_name)
    if theirs.get_vocab() != ours.get_vocab():
        raise BelugaError(f"teacher '{source}': its tokenizer ({type(theirs).__name__}, {len(theirs)} tokens) differs "
                          f"from the run's model '{model_name}' ({type(ours).__name__}, {len(ours)} tokens); a "
                          "teacher must share the student's tokenizer")


def job_record(tp: TaskPlan, job: Job, **values: Any) -> ModelRecord | GridPointRecord:
    """The store row of ``job``: what the job is, from its task's plan, and ``values``, how it went (timings
    and counts of a finished job; status, error and attempts of a failed one)."""
    fields: dict[str, Any] = {
        "task": job.task, "config": job.config, "method": job.method, "suite": tp.suite.header.name,
        "model_name": job.model, "seed": job.seed, "split_seed": tp.common["split"]["seed"], "split_id": tp.split_id,
        "hparams": job.hparams, "parent_model_id": job.parent_id, "variant": tp.rows_variant,
        "settings": tp.settings(job),
    } | values
    if job.is_grid_point:
        return GridPointRecord(**fields, grid_id=job.id, point=job.point or {}, scope_level=job.fold.heldout_level,
                               scope_group=job.fold.heldout_group)
    return ModelRecord(**fields, model_id=job.id, scenario=job.fold.scenario, heldout_level=job.fold.heldout_level,
                       heldout_group=job.fold.heldout_group, trained_level=job.fold.trained_level,
                       trained_group=job.fold.trained_group)
