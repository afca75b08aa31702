"""A job's evaluation steps: what its trained model is evaluated on, one type per step, decided by planning from
the config (``model_steps``, ``grid_point_steps``; ``TaskPlan.steps_of`` per job) and run by the worker in the
order given, each by the runner of its type (``execution.step_runners``).

The order is part of the plan: a later step reads what an earlier one left (the attributions select cases by the
outcomes the fold's own evaluation judged; a grid point's validation reads its T_val predictions). A step holds
only what is the same for every job that has it, so that a run of thousands of jobs has a handful of distinct
step lists (``beluga run --dry-run`` prints them); what differs per job (its cases, its probe pool) is read from
its fold and its task's plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from beluga_core.config.schema import BenchmarkConfig


@dataclass(frozen=True)
class FoldEval:
    """The fold's own eval cases judged: T_test for a model, T_val for a grid point (``split``); with
    ``keep_probabilities`` (``[store] keep_probabilities``, models only), its per-input predictions are stored."""

    split: str
    keep_probabilities: bool

    @property
    def label(self) -> str:
        return self.split


@dataclass(frozen=True)
class CrossSuites:
    """Cross-suite evaluation: the model judged on each eval suite of its task, on the cases mapped to its fold."""

    suites: tuple[str, ...]
    keep_probabilities: bool

    @property
    def label(self) -> str:
        return f"cross {', '.join(self.suites)}"


@dataclass(frozen=True)
class Attributions:
    """``[attributions]`` of the fold's eval cases (selected by the outcomes ``FoldEval`` judged), computed while
    the model is in memory: a fold's weights are discarded after it."""

    methods: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"attributions {', '.join(self.methods)}"


@dataclass(frozen=True)
class Probes:
    """``[fewshot]``: the model's predictions on its probe pool, attributed with ``attribute_with`` (INV/DIR cases:
    the original and at most ``perturbations`` perturbed inputs; none when empty)."""

    attribute_with: tuple[str, ...]
    perturbations: int

    @property
    def label(self) -> str:
        return "probes" + (f" + attributions {', '.join(self.attribute_with)}" if self.attribute_with else "")


@dataclass(frozen=True)
class IIDTest:
    """The i.i.d. test metrics (the ``[sizes] iid_test`` sample of D_test); with ``keep_probabilities``, its
    probabilities are stored."""

    keep_probabilities: bool

    @property
    def label(self) -> str:
        return "D_test"


@dataclass(frozen=True)
class Validation:
    """A grid point's task-specific T_val scores per test type, and (``iid_val`` not None) its metrics on that
    many D_val examples (0: all): what the grid search selects on."""

    iid_val: int | None

    @property
    def label(self) -> str:
        return "validation" + (" + D_val" if self.iid_val is not None else "")


Step = FoldEval | CrossSuites | Attributions | Probes | IIDTest | Validation


def steps_label(steps: tuple[Step, ...]) -> str:
    """A step list on one line, in the order it runs."""
    return " → ".join(s.label for s in steps) or "(none)"


def model_steps(cfg: BenchmarkConfig, *, eval_suites: tuple[str, ...], probes: bool,
                score_iid: bool) -> tuple[Step, ...]:
    """A model's steps: T_test, the task's eval suites, the [attributions] of its T_test cases, its [fewshot] probe
    pool (``probes``: it has one), and D_test when it is scored i.i.d."""
    keep = cfg.store_spec.keep_probabilities
    methods = tuple(cfg.attributions.methods)
    steps: list[Step] = [FoldEval("T_test", keep)]
    if eval_suites:
        steps.append(CrossSuites(eval_suites, keep))
    if methods and cfg.attributions.cases != "none":   # "none": the methods serve the probe pools only
        steps.append(Attributions(methods))
    if probes:
        steps.append(Probes(methods if cfg.fewshot.attribute else (), cfg.fewshot.perturbations))
    if score_iid:
        steps.append(IIDTest(keep))
    return tuple(steps)


def grid_point_steps(cfg: BenchmarkConfig) -> tuple[Step, ...]:
    """A grid point's steps: T_val, then its validation scores (what selection reads); nothing is kept."""
    grid = cfg.grid
    return FoldEval("T_val", keep_probabilities=False), Validation(grid.iid_val if grid.score_iid_val else None)
