"""Running a job's evaluation steps (``planning.steps``): one runner per step type, dispatched on the type.

The worker trains a job's model, then hands each of the job's steps, in order, to ``run_step`` with the job's
``Evaluation``: the trained model and what its task plan, the config and the steps before left there. A runner
adds its results to it, and the worker builds the job's ``JobResult`` from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import singledispatch

import torch

from beluga_core.attributions.compute import (
    AttributedInput,
    Item,
    attribute,
    encoder_text,
    make_methods,
    probe_items,
    select_items,
    tokenizer_id,
)
from beluga_core.config.load import attribution_options
from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.tasks import Task, first_labels
from beluga_core.contracts.training import Encoder
from beluga_core.core.constants import OUTCOME_NAMES
from beluga_core.data.iid.examples import Example, IIDData
from beluga_core.data.splits import sample_indices
from beluga_core.data.suite.suite_schema import Case
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
from beluga_core.planning.plan import TaskPlan
from beluga_core.planning.steps import Attributions, CrossSuites, FoldEval, IIDTest, Probes, Step, Validation


def _no_outcomes() -> Outcomes:
    return Outcomes.of([], [])


@dataclass
class Evaluation:
    """One trained model under evaluation: what its steps read, and the results they add."""

    job: Job
    cfg: BenchmarkConfig
    plan: TaskPlan
    task: Task
    eval_tasks: dict[str, Task]  # per eval suite, the task told that suite (its label space reads its predictions)
    iid: IIDData
    model: torch.nn.Module
    encoder: Encoder
    device: torch.device
    # The fold's own eval cases and the model's predictions on them (FoldEval), read by later steps.
    eval_cases: list[Case] = field(default_factory=list)
    predictions: FlatPredictions | None = None
    outcomes: Outcomes = field(default_factory=_no_outcomes)
    kept: list[CasePredictions] = field(default_factory=list)
    cross: list[CrossResult] = field(default_factory=list)
    attributed: list[AttributedInput] = field(default_factory=list)
    probes: ProbeResult | None = None
    iid_results: list[IIDResult] = field(default_factory=list)
    validation: list[ValidationRow] = field(default_factory=list)

    def result(self, record: ModelRecord | GridPointRecord) -> JobResult:
        return JobResult(record, self.outcomes, self.iid_results, self.validation, self.cross, self.kept,
                         self.attributed, self.probes)


@singledispatch
def run_step(step: Step, ev: Evaluation) -> None:
    """Run ``step`` of ``ev.job`` (the runner registered for its type)."""
    raise TypeError(f"no runner for evaluation step {type(step).__name__}")


@run_step.register
def _fold_eval(step: FoldEval, ev: Evaluation) -> None:
    suite = ev.plan.suite
    ev.eval_cases = [suite.case(cid) for cid in ev.job.fold.eval_ids]
    ev.predictions = ev.task.predict_cases(ev.model, ev.encoder, ev.eval_cases, ev.device) if ev.eval_cases else None
    ev.outcomes = outcomes_of(ev.eval_cases, ev.predictions, suite.header.label_space)
    if step.keep_probabilities and ev.predictions is not None:
        ev.kept.append(CasePredictions(suite.header.name, [c.id for c in ev.eval_cases], ev.predictions))


@run_step.register
def _cross_suites(step: CrossSuites, ev: Evaluation) -> None:
    evals = {e.name: e for e in ev.plan.evals}
    for name in step.suites:
        ep = evals[name]
        cases = [ep.suite.case(cid) for cid in ep.eval_ids(ev.job.fold)]
        predictions = ev.eval_tasks[name].predict_cases(ev.model, ev.encoder, cases, ev.device) if cases else None
        ev.cross.append(CrossResult(name, ep.digest(ev.job.fold),
                                    outcomes_of(cases, predictions, ep.suite.header.label_space)))
        if step.keep_probabilities and predictions is not None:
            ev.kept.append(CasePredictions(name, [c.id for c in cases], predictions))


@run_step.register
def _attributions(step: Attributions, ev: Evaluation) -> None:
    spec = ev.cfg.attributions
    items = select_items(ev.eval_cases, dict(zip(ev.outcomes.case_id, ev.outcomes.outcome, strict=True)),
                         ev.plan.suite.header.name, ev.task, which=spec.cases, inputs=spec.inputs,
                         cap=spec.cap_per_fold, seed_key=f"{ev.cfg.split.seed}|attributions|{ev.job.id}")
    ev.attributed += _attributed(ev, items, step.methods)


@run_step.register
def _probes(step: Probes, ev: Evaluation) -> None:
    suite = ev.plan.suite
    cases = [suite.case(c) for c in ev.plan.pool_of(ev.job)]
    predictions = ev.task.predict_cases(ev.model, ev.encoder, cases, ev.device)
    outcomes = outcomes_of(cases, predictions, suite.header.label_space)
    ev.probes = ProbeResult(outcomes, CasePredictions(suite.header.name, [c.id for c in cases], predictions))
    if step.attribute_with:
        items = probe_items(cases, suite.header.name, ev.task, step.perturbations)
        ev.attributed += _attributed(ev, items, step.attribute_with)


@run_step.register
def _iid_test(step: IIDTest, ev: Evaluation) -> None:
    test = iid_test_examples(ev.cfg, ev.iid.test)
    ev.iid_results.append(iid_result(ev.task, ev.model, ev.encoder, test, "test", ev.device,
                                     keep_probs=step.keep_probabilities))


@run_step.register
def _validation(step: Validation, ev: Evaluation) -> None:
    if ev.predictions is not None:
        ev.validation += [ValidationRow("suite_val", m.test_type, m.metric, m.value)
                          for m in ev.task.validation_metrics(ev.model, ev.encoder, ev.eval_cases, ev.predictions,
                                                              ev.device)]
    if step.iid_val is not None and ev.iid.val:
        val = sample_examples(ev.iid.val, step.iid_val, ev.cfg.split.seed, "iid_val")
        result = iid_result(ev.task, ev.model, ev.encoder, val, "val", ev.device)
        ev.validation += [ValidationRow("iid_val", None, name, value, name == result.primary)
                          for name, value in result.metrics.items()]


def _attributed(ev: Evaluation, items: list[Item], names: tuple[str, ...]) -> list[AttributedInput]:
    """``items`` attributed with the methods ``names`` at their in-run budgets."""
    methods = make_methods(list(names), {m: attribution_options(ev.cfg, m, run=True) for m in names})
    tokenizer = getattr(ev.encoder, "tokenizer")  # noqa: B009 - every built-in encoder keeps its tokenizer
    rows, _ = attribute(ev.model, tokenizer, tokenizer_id(ev.job.model, tokenizer, ev.encoder.max_length, ev.encoder),
                        ev.device, items, methods, max_length=ev.encoder.max_length,
                        span=ev.task.head_labels is None, model_text=encoder_text(ev.encoder))
    return rows


def iid_test_examples(cfg: BenchmarkConfig, test: Sequence[Example]) -> list[Example]:
    return sample_examples(test, cfg.sizes.iid_test, cfg.split.seed, "iid_test")


def sample_examples(examples: Sequence[Example], k: int, seed: int, what: str) -> list[Example]:
    """The seeded sample of ``k`` of ``examples`` (0: all) that every job of a run draws for ``what``."""
    return [examples[i] for i in sample_indices(len(examples), k, seed, what)]


def outcomes_of(cases: list[Case], predictions: FlatPredictions | None,
                label_space: Sequence[str] | None) -> Outcomes:
    """Judge the cases; ``label_space`` reads labels given by name (a generated suite's)."""
    if predictions is None:
        return Outcomes.of([], [])
    codes = evaluate_cases(cases, predictions, label_space=label_space)
    return Outcomes.of([c.id for c in cases], [OUTCOME_NAMES[int(o)] for o in codes], first_labels(predictions))


def iid_result(task: Task, model: torch.nn.Module, encoder: Encoder, examples: list[Example], split: str,
               device: torch.device, *, keep_probs: bool = False) -> IIDResult:
    predictions = task.predict_iid(model, encoder, examples, device)
    scores = task.score_iid(examples, predictions, split)
    return IIDResult(split, scores.gold, scores.pred, scores.correct, scores.metrics, scores.primary,
                     predictions.probs if keep_probs else None)
