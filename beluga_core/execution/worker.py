"""Running one job: load the starting weights, train its stages, predict, judge expectations.

A ``Worker`` keeps what folds share (tokenized inputs, the loaded model, the pretrained and IID weights) so
that consecutive jobs in one process do not redo it. A job's result depends only on the job: every job
re-seeds from its own identity and starts from pristine weights.

Long: a job's whole life — start weights, training stages, T_test, eval suites, probe pools, attributions,
i.i.d. scores, records — reads the worker's shared state (encoders, models, kept weights); the pieces stay
methods of it rather than functions that would each take that state back as arguments.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import torch

from beluga_core.attributions.compute import (
    AttributedInput,
    Item,
    attribute,
    make_methods,
    probe_items,
    select_items,
    tokenizer_id,
)
from beluga_core.config.load import attribution_options
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import CONFIGURATIONS, METHODS
from beluga_core.contracts.tasks import Task, first_labels
from beluga_core.contracts.training import Encoder, TrainSet
from beluga_core.core.constants import OUTCOME_NAMES, SEEN
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import sorted_ids_digest
from beluga_core.core.io import atomic_save
from beluga_core.data.iid.examples import Example, IIDData
from beluga_core.data.splits import sample_indices
from beluga_core.data.suite.schema import Case
from beluga_core.evaluation.evaluate import evaluate_cases
from beluga_core.execution.results import (
    CasePredictions,
    CrossResult,
    GridPointRecord,
    IIDResult,
    JobResult,
    ModelRecord,
    Outcomes,
    ProbeResult,
    ValidationRow,
)
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan, TaskPlan, make_task
from beluga_core.training import determinism, precision, token_cache
from beluga_core.training.loop import TrainStats, seed_everything, train_stage
from beluga_core.training.models import load_tokenizer, pick_device

ProgressFn = Callable[[str, int, int], None]


def weights_path(cache_dir: Path, job_id: str) -> Path:
    """Where a model's weights are kept between jobs and runs (the IID models', and what ``[store] keep_weights``
    asks for)."""
    return cache_dir / f"{job_id}.pt"


def keeps_weights(cfg: BenchmarkConfig, job: Job) -> bool:
    """Whether ``[store] keep_weights`` keeps this job's weights: "iid" the IID models only (every run keeps
    those); "seen" also the seen models and the updates of the i.i.d. model; "all" every scenario model."""
    policy = cfg.store_spec.keep_weights
    if job.kind == "grid":
        return False
    if job.kind == "iid" or policy == "all":
        return True
    return policy == "seen" and (job.fold.scenario == SEEN or CONFIGURATIONS.get(job.config).is_iid_update())


def iid_train_examples(cfg: BenchmarkConfig, config: str, train: Sequence[Example]) -> list[Example]:
    """The i.i.d. examples a job of configuration ``config`` trains on (its ``[sizes]`` subset)."""
    conf = CONFIGURATIONS.get(config)
    if conf.is_baseline():
        return _subset(train, cfg.sizes.iid_train, cfg.split.seed, "iid_train")
    if conf.is_iid_update():  # an update of the i.i.d. model trains on what the IID model did, unless sized itself
        return _subset(train, cfg.sizes.iid_mix_of.get(config, cfg.sizes.iid_train), cfg.split.seed, "iid_train")
    if conf.uses_iid:
        return _subset(train, cfg.sizes.iid_mix_for(config), cfg.split.seed, "iid_mix")
    return []


def iid_test_examples(cfg: BenchmarkConfig, test: Sequence[Example]) -> list[Example]:
    return _subset(test, cfg.sizes.iid_test, cfg.split.seed, "iid_test")


def _subset(examples: Sequence[Example], k: int, seed: int, what: str) -> list[Example]:
    return [examples[i] for i in sample_indices(len(examples), k, seed, what)]


def _seed_of(job_id: str, seed: int) -> int:
    return (int(hashlib.sha256(job_id.encode()).hexdigest()[:8], 16) + seed) % (2**31)


@dataclass
class _TaskState:
    plan: TaskPlan
    task: Task
    iid: IIDData | None = None
    # Per eval suite, the task told that suite (its predictions are read in that suite's label space).
    eval_tasks: dict[str, Task] | None = None


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
                                               eval_tasks={e.name: make_task(tp.spec, e.suite) for e in tp.evals})
                      for tp in plan.tasks}
        self._encoders: dict[str, Encoder] = {}
        self._models: dict[tuple[str, str, str], torch.nn.Module] = {}
        self._pristine: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
        self._states: dict[str, dict[str, torch.Tensor]] = {}

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
        ``store:`` / ``path:`` source the coordinator resolved to a file or folder (``Plan.teachers``; a bare path
        is taken as it is)."""
        task = self.tasks[job.task].task
        if source == "iid" or source.startswith("iid#"):
            seed = job.seed if source == "iid" else int(source[4:])
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
        started = datetime.now(UTC)
        state = self.tasks[job.task]
        task = state.task
        suite = state.plan.suite
        conf = CONFIGURATIONS.get(job.config)
        method = METHODS.get(job.method)(job.hparams.get("method", {}))
        seed_everything(_seed_of(job.id, job.seed))

        model = self.model(task, job.model, method.model_overrides())
        start_state = self._pristine[(task.name, job.model)] if job.parent_id is None else self._parent_state(job)
        model.load_state_dict(start_state)
        for p in model.parameters():
            p.requires_grad_(True)
        encoder = self.encoder(task, job.model)

        iid = self.iid_data(job.task)
        iid_train = iid_train_examples(self.cfg, job.config, iid.train)
        cases = [suite.case(cid) for cid in job.fold.train_ids] if conf.uses_suite else []
        env_level = job.hparams.get("method", {}).get("env_level") or suite.header.scoring_level
        trainset = task.build_trainset(cases, iid_train, env_level, suite.group_of)
        stats = self._train(job, task, model, encoder, trainset, method, progress)
        if conf.is_baseline():
            self._keep_weights(job.id, model)
        elif job.kind != "grid" and keeps_weights(self.cfg, job):
            self._save_weights(job.id, model)

        eval_start = time.perf_counter()
        if progress:
            progress("eval", 0, 1)
        eval_cases = [suite.case(cid) for cid in job.fold.eval_ids]
        predictions = task.predict_cases(model, encoder, eval_cases, self.device) if eval_cases else None
        outcomes = _outcomes(eval_cases, predictions, suite.header.label_space)
        keep = self.cfg.store_spec.keep_probabilities and job.kind != "grid"
        kept: list[CasePredictions] = []
        if keep and predictions is not None:
            kept.append(CasePredictions(suite.header.name, [c.id for c in eval_cases], predictions))
        cross = self._cross(job, state, model, encoder, kept if keep else None) if job.kind != "grid" else []
        attributed = (self._attribute(job, task, model, encoder, eval_cases, outcomes)
                      if self.cfg.attributions.methods and job.kind != "grid" else [])
        probes = None
        pool = state.plan.pool_of(job)
        if pool:
            probes, probe_attr = self._probe(job, task, model, encoder, [suite.case(c) for c in pool])
            attributed += probe_attr
        iid_results = []
        if job.score_iid:
            test = iid_test_examples(self.cfg, iid.test)
            iid_results.append(_iid_result(task, model, encoder, test, "test", self.device, keep_probs=keep))
        validation: list[ValidationRow] = []
        if job.kind == "grid":
            validation = self._validation(task, model, encoder, eval_cases, predictions, iid)
        eval_seconds = time.perf_counter() - eval_start
        if progress:
            progress("eval", 1, 1)
        notes = dict(trainset.notes)
        grid = {"n_val_suite": len(eval_cases)} if job.kind == "grid" else {}
        record = job_record(
            state.plan, job,
            # What building the training set left out (e.g. reading MFT inputs whose answer is not in the
            # context) is recorded with the model, under hparams.train_notes.
            hparams={**job.hparams, "train_notes": notes} if notes else job.hparams,
            started_at=started, finished_at=datetime.now(UTC), train_seconds=stats.seconds,
            eval_seconds=eval_seconds, n_train_iid=len(iid_train), n_train_suite=len(cases),
            train_digest=sorted_ids_digest([c.id for c in cases]) if cases else None,
            device="/".join(filter(None, (str(self.device), self.precision, self.mode))), **grid)
        return JobResult(record, outcomes, iid_results, validation, cross, kept, attributed, probes)

    def _attribute(self, job: Job, task: Task, model: torch.nn.Module, encoder: Encoder, cases: list[Case],
                   outcomes: Outcomes) -> list[AttributedInput]:
        """The ``[attributions]`` of this model, computed before its weights are discarded."""
        spec = self.cfg.attributions
        items = select_items(cases, dict(zip(outcomes.case_id, outcomes.outcome, strict=True)),
                             self.tasks[job.task].plan.suite.header.name, task, which=spec.cases, inputs=spec.inputs,
                             cap=spec.cap_per_fold, seed_key=f"{self.cfg.split.seed}|attributions|{job.id}")
        return self._attributed(job, task, model, encoder, items)

    def _attributed(self, job: Job, task: Task, model: torch.nn.Module, encoder: Encoder,
                    items: list[Item]) -> list[AttributedInput]:
        """``items`` attributed with the [attributions] methods at their in-run budgets."""
        names = self.cfg.attributions.methods
        methods = make_methods(names, {m: attribution_options(self.cfg, m, run=True) for m in names})
        tokenizer = getattr(encoder, "tokenizer")  # noqa: B009 - every built-in encoder keeps its tokenizer
        rows, _ = attribute(model, tokenizer, tokenizer_id(job.model, tokenizer, encoder.max_length), self.device,
                            items, methods, max_length=encoder.max_length, span=task.head_labels is None)
        return rows

    def _probe(self, job: Job, task: Task, model: torch.nn.Module, encoder: Encoder,
               cases: list[Case]) -> tuple[ProbeResult, list[AttributedInput]]:
        """The model's predictions on its [fewshot] probe pool, and their attributions with the [attributions]
        methods (INV/DIR cases: the original and at most ``perturbations`` perturbed inputs; others: the first)."""
        suite_name = self.tasks[job.task].plan.suite.header.name
        predictions = task.predict_cases(model, encoder, cases, self.device)
        outcomes = _outcomes(cases, predictions, self.tasks[job.task].plan.suite.header.label_space)
        kept = CasePredictions(suite_name, [c.id for c in cases], predictions)
        spec, methods = self.cfg.fewshot, self.cfg.attributions.methods
        if not (spec.attribute and methods):
            return ProbeResult(outcomes, kept), []
        items = probe_items(cases, suite_name, task, spec.perturbations)
        return ProbeResult(outcomes, kept), self._attributed(job, task, model, encoder, items)

    def _cross(self, job: Job, state: _TaskState, model: torch.nn.Module, encoder: Encoder,
               kept: list[CasePredictions] | None) -> list[CrossResult]:
        """The model's outcomes on each eval suite of its task (cross-suite evaluation); with ``kept``, its
        predictions there are appended to it."""
        out = []
        for ep in state.plan.evals:
            cases = [ep.suite.case(cid) for cid in ep.eval_ids(job.fold)]
            assert state.eval_tasks is not None
            predictions = (state.eval_tasks[ep.name].predict_cases(model, encoder, cases, self.device)
                           if cases else None)
            out.append(CrossResult(ep.name, ep.digest(job.fold),
                                   _outcomes(cases, predictions, ep.suite.header.label_space)))
            if kept is not None and predictions is not None:
                kept.append(CasePredictions(ep.name, [c.id for c in cases], predictions))
        return out

    def _parent_state(self, job: Job) -> dict[str, torch.Tensor]:
        if job.parent_id is None:
            raise BelugaError(f"job {job.id[:12]} starts from the IID model but names no parent")
        return self.state_of(job.parent_id)

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

    def _train(self, job: Job, task: Task, model: torch.nn.Module, encoder: Encoder, trainset: TrainSet,
               method: Method, progress: ProgressFn | None) -> TrainStats:
        """Train the job's stages in sequence, each from the weights the previous one left (lp-ft)."""
        stages = method.stages(job.hparams)
        done = TrainStats(0, 0, float("nan"), 0.0)
        for i, (stage_method, stage_hp) in enumerate(stages):
            label = "train" if len(stages) == 1 else f"train {i + 1}/{len(stages)}"
            stats = train_stage(task, model, encoder, self.device, trainset, stage_hp, stage_method,
                                _seed_of(job.id, job.seed) + i,
                                progress=partial(progress, label) if progress else None,
                                teachers=partial(self.teacher, job))
            done = TrainStats(done.steps + stats.steps, done.examples + stats.examples, stats.mean_loss,
                              done.seconds + stats.seconds)
        return done

    def _validation(self, task: Task, model: torch.nn.Module, encoder: Encoder, cases: list[Case],
                    predictions: FlatPredictions | None, iid: IIDData) -> list[ValidationRow]:
        """A grid point's task-specific T_val scores per test type, and its metrics on D_val."""
        rows = []
        if predictions is not None:
            rows = [ValidationRow("suite_val", m.test_type, m.metric, m.value)
                    for m in task.validation_metrics(model, encoder, cases, predictions, self.device)]
        grid = self.cfg.grid
        if grid.score_iid_val and iid.val:
            val = _subset(iid.val, grid.iid_val, self.cfg.split.seed, "iid_val")
            result = _iid_result(task, model, encoder, val, "val", self.device)
            rows += [ValidationRow("iid_val", None, name, value, name == result.primary)
                     for name, value in result.metrics.items()]
        return rows


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
        "hparams": job.hparams, "parent_model_id": job.parent_id, "variant": tp.common.get("variant", ""),
        "settings": tp.settings(job),
    } | values
    if job.kind == "grid":
        return GridPointRecord(**fields, grid_id=job.id, point=job.point or {}, scope_level=job.fold.heldout_level,
                               scope_group=job.fold.heldout_group)
    return ModelRecord(**fields, model_id=job.id, scenario=job.fold.scenario, heldout_level=job.fold.heldout_level,
                       heldout_group=job.fold.heldout_group, trained_level=job.fold.trained_level,
                       trained_group=job.fold.trained_group)


def _outcomes(cases: list[Case], predictions: FlatPredictions | None,
              label_space: Sequence[str] | None) -> Outcomes:
    """Judge the cases; ``label_space`` reads labels given by name (a generated suite's)."""
    if predictions is None:
        return Outcomes.of([], [])
    codes = evaluate_cases(cases, predictions, label_space=label_space)
    return Outcomes.of([c.id for c in cases], [OUTCOME_NAMES[int(o)] for o in codes], first_labels(predictions))


def _iid_result(task: Task, model: torch.nn.Module, encoder: Encoder, examples: list[Example], split: str,
                device: torch.device, *, keep_probs: bool = False) -> IIDResult:
    predictions = task.predict_iid(model, encoder, examples, device)
    scores = task.score_iid(examples, predictions, split)
    return IIDResult(split, scores.gold, scores.pred, scores.correct, scores.metrics, scores.primary,
                     predictions.probs if keep_probs else None)
