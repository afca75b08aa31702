"""Running one job: load the starting weights, train its stages, predict, judge expectations.

A ``Worker`` keeps what folds share (tokenized inputs, the loaded model, the pretrained and IID weights) so
that consecutive jobs in one process do not redo it. A job's result depends only on the job: every job
re-seeds from its own identity and starts from pristine weights.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from beluga_core import registry
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.errors import BelugaError
from beluga_core.expectations.evaluate import evaluate_cases
from beluga_core.plan import Job, Plan, TaskPlan
from beluga_core.splits import sample_indices
from beluga_core.tasks.base import configure_task
from beluga_core.tasks.iid_data import IIDData, IIDExample
from beluga_core.training import precision, token_cache
from beluga_core.training.encode import Encoder
from beluga_core.training.loop import TrainStats, seed_everything, train_stage
from beluga_core.training.model import load_tokenizer, pick_device

OUTCOME_NAMES = {1: "pass", 0: "fail", -1: "skip"}
ProgressFn = Callable[[str, int, int], None]


@dataclass
class JobResult:
    job: Job
    model_row: dict[str, Any]
    iid_predictions: list[dict[str, Any]] = field(default_factory=list)
    iid_metrics: list[dict[str, Any]] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    # Grid points only: validation scores (source, test_type, metric, value, is_primary).
    grid_metrics: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _TaskState:
    plan: TaskPlan
    task: Any
    iid: IIDData | None = None


def _seed_of(job_id: str, seed: int) -> int:
    return (int(hashlib.sha256(job_id.encode()).hexdigest()[:8], 16) + seed) % (2**31)


class Worker:
    def __init__(self, plan: Plan, device: str = "auto", cache_dir: Path | None = None) -> None:
        self.plan = plan
        self.cfg: BenchmarkConfig = plan.config
        self.device = pick_device(device)
        self.precision = precision.configure(self.cfg.executor.precision, self.device)
        self.cache_dir = cache_dir
        self.tasks = {tp.spec.name: _TaskState(tp, _task_for(tp)) for tp in plan.tasks}
        self._encoders: dict[str, Encoder] = {}
        self._models: dict[tuple[str, int, str], torch.nn.Module] = {}
        self._pristine: dict[tuple[str, int], dict[str, torch.Tensor]] = {}
        self._parents: dict[str, dict[str, torch.Tensor]] = {}

    # -- shared state ---------------------------------------------------------------------------------
    def iid_data(self, name: str) -> IIDData:
        state = self.tasks[name]
        if state.iid is None:
            state.iid = state.task.load_iid(state.plan.spec.iid, self.cfg.split.iid_eval_seed)
        return state.iid

    def encoder(self, task: Any, model_name: str) -> Encoder:
        key = f"{task.name}\x1f{model_name}"
        if key not in self._encoders:
            encoder = task.make_encoder(load_tokenizer(model_name), self.cfg.model.max_length)
            if self.cache_dir is not None:  # tokenized inputs on disk for every later fold and run
                token_cache.attach(encoder, self.cache_dir / "tokens", task.name)
            self._encoders[key] = encoder
        return self._encoders[key]

    def model(self, task: Any, model_name: str, overrides: dict[str, Any]) -> torch.nn.Module:
        key = (task.name, model_name, repr(sorted(overrides.items())))
        if key not in self._models:
            # One pristine copy of the pretrained weights (with a fixed head initialisation) per model.
            extra = {"config_overrides": self.cfg.model.config_overrides} if self.cfg.model.config_overrides else {}
            model = task.build_model(model_name, seed=0, **overrides, **extra).to(self.device)
            base = (task.name, model_name)
            if base not in self._pristine:
                self._pristine[base] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            self._models[key] = model
        return self._models[key]

    def _parent_state(self, job: Job) -> dict[str, torch.Tensor]:
        assert job.parent_id is not None
        if job.parent_id in self._parents:
            return self._parents[job.parent_id]
        path = self._weights_path(job.parent_id)
        if path is not None and path.exists():
            state = torch.load(path, map_location=self.device, weights_only=True)
            self._parents[job.parent_id] = state
            return state
        raise BelugaError(f"job {job.id[:12]} starts from model {job.parent_id[:12]}, whose weights are neither "
                          "in memory nor in the cache; re-run so the parent is trained first")

    def _weights_path(self, job_id: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / f"{job_id}.pt"

    def has_weights(self, job_id: str) -> bool:
        path = self._weights_path(job_id)
        return job_id in self._parents or (path is not None and path.exists())

    # -- one job --------------------------------------------------------------------------------------
    def run(self, job: Job, progress: ProgressFn | None = None) -> JobResult:
        started = datetime.now(UTC)
        state = self.tasks[job.task]
        task = state.task
        suite = state.plan.suite
        conf = registry.get("training configuration", job.config)
        method_cls = registry.get("method", job.method)
        method = method_cls(job.hparams.get("method", {}))
        seed_everything(_seed_of(job.id, job.seed))

        model = self.model(task, job.model, method.model_overrides())
        start_state = self._pristine[(task.name, job.model)] if conf.start == "plm" else self._parent_state(job)
        model.load_state_dict(start_state)
        for p in model.parameters():
            p.requires_grad_(True)
        encoder = self.encoder(task, job.model)

        iid = self.iid_data(job.task)
        sizes = self.cfg.sizes
        if job.config == "iid":
            iid_train = _subset(iid.train, sizes.iid_train, self.cfg.split.seed, "iid_train")
            cases = []
        else:
            iid_train = (_subset(iid.train, sizes.iid_mix_for(job.config), self.cfg.split.seed, "iid_mix")
                         if conf.uses_iid else [])
            cases = [suite.case(cid) for cid in job.fold.train_ids]
        env_level = job.hparams.get("method", {}).get("env_level") or suite.header.scoring_level
        trainset = task.build_trainset(cases, iid_train, env_level, suite.group_of)
        stats = self._train(job, task, model, encoder, trainset, method, progress)
        if job.config == "iid":
            self._parents[job.id] = {k: v.detach().clone() for k, v in model.state_dict().items()}
            path = self._weights_path(job.id)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                torch.save(self._parents[job.id], tmp)
                tmp.replace(path)

        eval_start = time.perf_counter()
        if progress:
            progress("eval", 0, 1)
        result = JobResult(job, {})
        eval_cases = [suite.case(cid) for cid in job.fold.eval_ids]
        result.outcomes = self._judge(task, model, encoder, eval_cases)
        if job.score_iid:
            test = _subset(iid.test, sizes.iid_test, self.cfg.split.seed, "iid_test")
            result.iid_predictions, result.iid_metrics = task.score_iid(model, encoder, test, self.device)
        if job.kind == "grid":
            result.grid_metrics = self._grid_metrics(task, model, encoder, eval_cases, result.outcomes, iid)
        eval_seconds = time.perf_counter() - eval_start
        if progress:
            progress("eval", 1, 1)
        fold = job.fold
        result.model_row = {
            "model_id": job.id, "task": job.task, "suite": suite.header.name, "config": job.config,
            "method": job.method, "scenario": fold.scenario, "heldout_level": fold.heldout_level,
            "heldout_group": fold.heldout_group, "seed": job.seed, "split_seed": self.cfg.split.seed,
            # What building the training set left out (e.g. reading MFT inputs whose answer is not in the
            # context) is recorded with the model, under hparams.train_notes.
            "hparams": {**job.hparams, "train_notes": trainset.notes} if trainset.notes else job.hparams,
            "parent_model_id": job.parent_id, "status": "done", "error": None,
            "started_at": started, "finished_at": datetime.now(UTC), "train_seconds": stats.seconds,
            "eval_seconds": eval_seconds, "n_train_iid": len(iid_train), "n_train_suite": len(cases),
            "device": f"{self.device}/{self.precision}",
        }
        return result

    def _train(self, job: Job, task: Any, model: torch.nn.Module, encoder: Encoder, trainset: Any, method: Any,
               progress: ProgressFn | None) -> TrainStats:
        """Train the job's stages in sequence, each from the weights the previous one left (lp-ft)."""
        stages = method.stages(job.hparams)
        done = TrainStats(0, 0, float("nan"), 0.0)
        for i, (stage_method, stage_hp) in enumerate(stages):
            label = "train" if len(stages) == 1 else f"train {i + 1}/{len(stages)}"
            stats = train_stage(task, model, encoder, self.device, trainset, stage_hp, stage_method,
                                _seed_of(job.id, job.seed) + i,
                                progress=(lambda s, n, label=label: progress(label, s, n)) if progress else None)
            done = TrainStats(done.steps + stats.steps, done.examples + stats.examples, stats.mean_loss,
                              done.seconds + stats.seconds)
        return done

    def _grid_metrics(self, task: Any, model: torch.nn.Module, encoder: Encoder, cases: list[Any],
                      outcomes: list[dict[str, Any]], iid: IIDData) -> list[dict[str, Any]]:
        """A grid point's validation scores: per test type on T_val, and the task's metrics on D_val."""
        from beluga_core.grid.validation import suite_validation_metrics

        rows = suite_validation_metrics(task, model, encoder, cases, outcomes, self.device)
        grid = self.cfg.grid
        if grid.score_iid_val and iid.val:
            val = _subset(iid.val, grid.iid_val, self.cfg.split.seed, "iid_val")
            _, metrics = task.score_iid(model, encoder, val, self.device)
            rows += [{"source": "iid_val", "test_type": None, "metric": m["metric"], "value": m["value"],
                      "is_primary": bool(m["is_primary"])} for m in metrics]
        return rows

    def _judge(self, task: Any, model: torch.nn.Module, encoder: Encoder, cases: list[Any]) -> list[dict[str, Any]]:
        if not cases:
            return []
        preds, first = task.predict_cases(model, encoder, cases, self.device)
        outcomes = evaluate_cases(cases, preds)
        return [{"case_id": c.id, "outcome": OUTCOME_NAMES[int(o)], "pred": p}
                for c, o, p in zip(cases, outcomes, first, strict=True)]


def _task_for(tp: TaskPlan) -> Any:
    task = registry.get("task", tp.spec.name)()
    configure_task(task, tp.spec)
    task.use_suite(tp.suite.header.label_space)
    return task


def _subset(examples: list[IIDExample], k: int, seed: int, what: str) -> list[IIDExample]:
    return [examples[i] for i in sample_indices(len(examples), k, seed, what)]

