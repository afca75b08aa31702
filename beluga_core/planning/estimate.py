"""Rough time estimates for ``--dry-run``: what the cross-suite evaluation and the only:LEVEL scenarios add.

An estimate is (training examples × epochs) / a training rate + evaluated inputs / an evaluation rate. The
default rates are the embedded MiniLM's on a 2-core CPU in fp32 (benchmarks/perf/RESULTS.md: ~64 training
examples/s at batch 16, several hundred inputs/s evaluated); a store that already holds trained models gives
its own measured training rate, and the evaluation rate is scaled with it. Other models and machines differ
by large factors: the figure says how much work is added, in the unit a user plans with.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.registries import CONFIGURATIONS
from beluga_core.planning.jobs import Job, JobSpec
from beluga_core.planning.plan import Plan

DEFAULT_TRAIN_RATE = 64.0   # training examples per second (embedded MiniLM, 2 CPU cores, fp32)
DEFAULT_EVAL_RATE = 350.0   # evaluated inputs per second (same)


@dataclass(frozen=True)
class Rates:
    train: float = DEFAULT_TRAIN_RATE
    eval: float = DEFAULT_EVAL_RATE
    source: str = "default: the embedded MiniLM on 2 CPU cores in fp32"

    @classmethod
    def measured(cls, train_rate: float | None) -> Rates:
        """Rates from a store's own trainings (examples × epochs per training second), when it has any."""
        if not train_rate or train_rate <= 0:
            return cls()
        return cls(train_rate, DEFAULT_EVAL_RATE * train_rate / DEFAULT_TRAIN_RATE,
                   "measured on this store's trained models")


def training_examples(cfg: BenchmarkConfig, spec: JobSpec, n_suite_inputs: int) -> float:
    """Examples × epochs a fold trains on: its suite inputs and the i.i.d. examples its configuration mixes in
    (``[sizes] iid_mix``; 0, all of D_train, is counted as ``iid_train``). A fold still waiting for its grid
    search counts the config's ``[training]`` epochs."""
    mix = 0
    if CONFIGURATIONS.get(spec.config).uses_iid:
        mix = cfg.sizes.iid_mix_for(spec.config) or cfg.sizes.iid_train
    hparams = spec.hparams if isinstance(spec, Job) else {}
    epochs = float(hparams.get("epochs", cfg.training.stage("suite", spec.config)["epochs"]))
    return (n_suite_inputs + mix) * epochs


def seconds(rates: Rates, train_examples: float, eval_inputs: float) -> float:
    return train_examples / rates.train + eval_inputs / rates.eval


def job_seconds(plan: Plan, rates: Rates | None = None) -> Callable[[Job], float]:
    """A job's estimated seconds: what it trains on (an IID model: ``[sizes] iid_train`` × its epochs; a fold:
    ``training_examples``) and the suite inputs it is scored on, at ``rates`` (the critical path that executors
    with several workers start first weighs jobs by it). ``iid_train = 0`` (all of D_train, whose size the plan
    does not know) counts as 0, as in the dry run."""
    rates = rates or Rates()
    inputs: dict[str, dict[str, int]] = {}   # per task: case id → its inputs

    def cost(job: Job) -> float:
        n = inputs.get(job.task)
        if n is None:
            n = inputs[job.task] = {c.id: len(c.inputs) for c in plan.task_plan(job.task).suite.cases}
        if job.is_iid_model:
            train = plan.config.sizes.iid_train * float(job.hparams.get("epochs", 1))
        else:
            train = training_examples(plan.config, job, sum(n.get(c, 1) for c in job.fold.train_ids))
        return seconds(rates, train, sum(n.get(c, 1) for c in job.fold.eval_ids))

    return cost


def describe(s: float) -> str:
    if s < 90:
        return f"≈ {s:.0f} s"
    if s < 5400:
        return f"≈ {s / 60:.0f} min"
    return f"≈ {s / 3600:.1f} h"


# Bytes per stored row beyond its probabilities: ids, indexes and DuckDB's per-row overhead, measured on the
# quick run's store (`beluga store info`): about 40 for case_predictions, 20 for iid_probs.
CASE_ROW_BYTES = 40
IID_ROW_BYTES = 20


def stored_probability_bytes(jobs: list[Job], n_inputs: dict[str, int], n_test: int | None,
                             n_classes: int, eval_inputs: int = 0) -> tuple[int, int | None]:
    """(case_predictions bytes, iid_probs bytes or None when the D_test size is unknown) that ``[store]
    keep_probabilities`` adds for ``jobs`` (their own cases' inputs, plus ``eval_inputs`` on eval suites)."""
    per_input = 4 * n_classes + CASE_ROW_BYTES
    cases = sum(n_inputs.get(c, 1) for j in jobs if not j.is_grid_point for c in j.fold.eval_ids) + eval_inputs
    iid_models = sum(1 for j in jobs if not j.is_grid_point and j.score_iid)
    iid = None if n_test is None else iid_models * n_test * (4 * n_classes + IID_ROW_BYTES)
    return cases * per_input, iid
