"""What a plan costs: per job, the examples it trains on, the inputs it is scored on and its seconds, at rates
the dry run measures (``orchestration.pricing``: a capped calibration, a store's own trainings) or, without them,
the defaults below.

A job's seconds are ``fixed`` + Σ over its training parts of examples × epochs × the seconds per example at that
part's batch size + evaluated inputs × the seconds per evaluated input: per task, since a task fixes the model and
the inputs' length. The default rates are the embedded MiniLM's on a 2-core CPU in fp32 (~64 training examples/s at
batch 16, several hundred inputs/s evaluated), for plans priced without measuring; the executors' critical-path
order weighs jobs by them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.registries import CONFIGURATIONS, LOSSES
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case
from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job, JobSpec
from beluga_core.planning.plan import Plan

DEFAULT_TRAIN_RATE = 64.0   # training examples per second (embedded MiniLM, 2 CPU cores, fp32)
DEFAULT_EVAL_RATE = 350.0   # evaluated inputs per second (same)


@dataclass(frozen=True)
class TaskRates:
    """One task's measured rates: seconds per training example at each batch size measured, seconds per evaluated
    input, and where they came from."""

    train: Mapping[int, float]   # batch size → seconds per training example
    eval: float                  # seconds per evaluated input
    source: str

    def train_seconds(self, batch: int) -> float:
        """Seconds per example at ``batch``: measured there, else at the nearest batch measured."""
        if batch in self.train:
            return self.train[batch]
        return self.train[min(self.train, key=lambda b: (abs(b - batch), b))]


@dataclass(frozen=True)
class Rates:
    """The rates a plan is priced at: ``per_task`` where measured, else ``train``/``eval`` (examples and inputs
    per second); ``fixed``: a job's seconds outside its steps and forward passes (starting it, storing it)."""

    train: float = DEFAULT_TRAIN_RATE
    eval: float = DEFAULT_EVAL_RATE
    source: str = "default: the embedded MiniLM on 2 CPU cores in fp32"
    per_task: Mapping[str, TaskRates] = field(default_factory=dict)
    fixed: float = 0.0
    fixed_source: str = "not counted"

    def train_seconds(self, task: str, batch: int) -> float:
        rates = self.per_task.get(task)
        return rates.train_seconds(batch) if rates is not None else 1.0 / self.train

    def eval_seconds(self, task: str) -> float:
        rates = self.per_task.get(task)
        return rates.eval if rates is not None else 1.0 / self.eval


def training_rows(case: Case, kind: str | None = None) -> int:
    """The rows a suite case puts through a training epoch (as the tasks build their training sets): a test case
    trained with a single-input loss, each of its inputs where it is an MFT, else one drawn per visit; with a pair
    loss, an original and one perturbation. ``kind``: its loss's kind, where the caller knows it."""
    if (kind or LOSSES.get(case.loss).kind) == "single":
        return len(case.inputs) if case.test_type == "MFT" else 1
    return 2 if len(case.inputs) >= 2 else 0


def suite_rows(suite: Suite) -> dict[str, int]:
    """Case id → its training rows (``training_rows``)."""
    kinds = {name: LOSSES.get(name).kind for name in {c.loss for c in suite.cases}}
    return {c.id: training_rows(c, kinds[c.loss]) for c in suite.cases}


# Per suite object its rows per case id, and per (suite, id-tuple) object their sum: the plan's jobs share their
# folds' tuples, and the estimate, the checkpoint intervals and the only: scenarios each need the sums (the full
# benchmark: ~300 tuples of up to 86,000 ids, summed three times over ~2 s). Each entry holds its objects, so that
# their ids are not reused while it lives; bounded, as the plans of one process come and go.
_ROWS: dict[int, tuple[Suite, dict[str, int]]] = {}
_ROW_SUMS: dict[tuple[int, int], tuple[tuple[str, ...], int]] = {}


def fold_rows(suite: Suite, ids: tuple[str, ...]) -> int:
    """The training rows (``training_rows``) of the suite cases ``ids``: a fold's training set."""
    held = _ROWS.get(id(suite))
    if held is None or held[0] is not suite:
        if len(_ROWS) >= 16:
            _ROWS.clear()
            _ROW_SUMS.clear()
        held = _ROWS[id(suite)] = (suite, suite_rows(suite))
    key = (id(suite), id(ids))
    summed = _ROW_SUMS.get(key)
    if summed is None or summed[0] is not ids:
        if len(_ROW_SUMS) >= 8192:
            _ROW_SUMS.clear()
        summed = _ROW_SUMS[key] = (ids, sum(map(held[1].__getitem__, ids)))
    return summed[1]


def training_parts(cfg: BenchmarkConfig, spec: JobSpec, n_suite_rows: int,
                   d_train: int | None = None) -> list[tuple[float, int]]:
    """(examples × epochs, batch size) of each part of what a job trains on. An IID model: ``[sizes] iid_train``
    (0, all of D_train, whose size the plan does not know, counts as 0) at the IID stage's batch; a fold: its
    suite cases' training rows (``training_rows``) and the i.i.d. examples its configuration mixes in (``[sizes]
    iid_mix``; 0 is counted as ``iid_train``) at the suite stage's. A fold still waiting for its grid search
    counts the config's ``[training]`` epochs and batch size; a grid point, its own (a halving rung, the epochs from
    the rung before to its own). ``d_train``: D_train's size where known, for ``iid_train = 0``."""
    iid_train = cfg.sizes.iid_train or d_train or 0
    hparams = spec.hparams if isinstance(spec, Job) else {}
    if isinstance(spec, Job) and spec.is_iid_model:
        stage = cfg.training.stage("iid", spec.config)
        return [(iid_train * float(hparams.get("epochs", stage["epochs"])),
                 int(hparams.get("batch_size", stage["batch_size"])))]
    stage = cfg.training.stage("suite", spec.config)
    mix = 0
    if CONFIGURATIONS.get(spec.config).uses_iid:
        mix = cfg.sizes.iid_mix_for(spec.config) or iid_train
    epochs = float(hparams.get("epochs", stage["epochs"]))
    rung = rung_of(hparams)
    if rung is not None:   # a halving rung trains from where the rung before stopped to its own epochs
        epochs = rung.epochs - rung.from_epochs
    return [((n_suite_rows + mix) * epochs, int(hparams.get("batch_size", stage["batch_size"])))]


def training_examples(cfg: BenchmarkConfig, spec: JobSpec, n_suite_rows: int) -> float:
    """Examples × epochs a job trains on (``training_parts``, summed)."""
    return sum(n for n, _ in training_parts(cfg, spec, n_suite_rows))


def seconds(rates: Rates, train_examples: float, eval_inputs: float) -> float:
    return train_examples / rates.train + eval_inputs / rates.eval


@dataclass(frozen=True)
class JobCost:
    """What one job costs: examples × epochs, evaluated inputs, and the seconds of each and outside them."""

    examples: float
    inputs: float
    train_seconds: float
    eval_seconds: float
    fixed: float

    @property
    def seconds(self) -> float:
        return self.fixed + self.train_seconds + self.eval_seconds


def job_costs(plan: Plan, rates: Rates | None = None, iid_test: Mapping[str, int | None] | None = None,
              iid_train: Mapping[str, int | None] | None = None,
              iid_val: Mapping[str, int | None] | None = None) -> Callable[[JobSpec], JobCost]:
    """A job's cost at ``rates``: what it trains on (``training_parts``; ``iid_train[task]``: D_train's size where
    known) and the inputs it is scored on: its own suite cases, the eval suites' cases mapped to its fold, and, for
    a job scored on D_test, ``iid_test[task]`` examples, and for a grid point scored on D_val, ``iid_val[task]``
    examples up to ``[grid] iid_val`` (None or absent: not counted, the plan does not know their sizes)."""
    rates = rates or Rates()
    cfg = plan.config
    inputs: dict[str, dict[str, int]] = {}   # per task: case id → its inputs
    sums: dict[tuple[str, int], float] = {}  # per case-id tuple the plan holds (jobs may share one) → its sum
    eval_suites: dict[tuple[str, str, str, str | None], float] = {}

    def total(kind: str, counts: Mapping[str, int], ids: tuple[str, ...]) -> float:
        key = (kind, id(ids))
        if key not in sums:
            sums[key] = float(sum(map(counts.__getitem__, ids)))
        return sums[key]

    def cost(spec: JobSpec) -> JobCost:
        n = inputs.get(spec.task)
        tp = plan.task_plan(spec.task)
        if n is None:
            n = inputs[spec.task] = {c.id: len(c.inputs) for c in tp.suite.cases}
        parts = training_parts(cfg, spec, fold_rows(tp.suite, spec.fold.train_ids), (iid_train or {}).get(spec.task))
        evaluated = total("inputs", n, spec.fold.eval_ids)
        if isinstance(spec, Job) and spec.is_grid_point:
            cap, n_val = int(spec.grid_scoring.get("iid_val") or 0), (iid_val or {}).get(spec.task)
            if spec.grid_scoring.get("score_iid_val") and (cap or n_val):
                evaluated += min(cap, n_val) if cap and n_val else cap or n_val or 0
        else:
            for ep in tp.evals:   # an eval suite's cases of a fold: by its scenario and held-out group
                key = (spec.task, ep.name, spec.fold.scenario, spec.fold.heldout_group)
                if key not in eval_suites:
                    eval_suites[key] = float(sum(len(ep.suite.case(c).inputs) for c in ep.eval_ids(spec.fold)))
                evaluated += eval_suites[key]
            if spec.score_iid and iid_test:
                evaluated += iid_test.get(spec.task) or 0
        return JobCost(sum(e for e, _ in parts), evaluated,
                       sum(e * rates.train_seconds(spec.task, b) for e, b in parts),
                       evaluated * rates.eval_seconds(spec.task), rates.fixed)

    return cost


def job_seconds(plan: Plan, rates: Rates | None = None) -> Callable[[Job], float]:
    """A job's estimated seconds (``job_costs``): the weight the critical path that executors with several workers
    start first gives it."""
    cost = job_costs(plan, rates)
    return lambda job: cost(job).seconds


def describe(s: float) -> str:
    if s >= 2 * 86400:
        return f"≈ {s / 86400:,.0f} days"
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
