"""The public plugin API of beluga: everything a plugin needs, from one typed module.

A plugin is a class deriving from one of the base classes below, registered under an entry point of its
kind's namespace in the plugin package's ``pyproject.toml`` (or named ``module:Class`` in a config):

=====================  =========================  ============================================================
kind                   namespace                  base class (what to implement)
=====================  =========================  ============================================================
task                   ``beluga.tasks``           ``Task`` (or ``ClassificationTask``, for any classifier)
method                 ``beluga.methods``         ``Method`` (``update``; ``EnvironmentMethod`` for per-env
                                                  batches)
loss                   ``beluga.losses``          ``ClassLoss`` / ``PairLoss`` / ``SpanPairLoss`` (``per_row``)
expectation kind       ``beluga.expectations``    ``ExpectationKind`` (``evaluate``) or ``PerInputKind``
                                                  (``input_results``), with a pydantic ``Params``
training configuration ``beluga.training_configs`` ``TrainingConfiguration`` (``start``, ``uses_iid``,
                                                  ``uses_suite``)
attribution            ``beluga.attributions``    ``Attribution`` (``attribute``: one score per token of an input, from
                                                  the ``AttributionContext``'s objectives)
generator              ``beluga.generators``      ``Generator`` (``generate``: suite cases from a source, optionally
                                                  against a model)
ranking signal         ``beluga.signals``         ``Signal`` (``value``: a number per model and probe case — its
                                                  outcome, probabilities, attributions — with a fixed
                                                  ``direction``)
executor               ``beluga.executors``       ``Executor`` (``open``: the ``Backend`` that runs jobs —
                                                  ``idle``, ``submit``, ``events`` reporting ``Finished``,
                                                  ``Failed`` or ``Lost`` jobs; the shared dispatch loop
                                                  orders, retries and reports; ``worker_class(spec)`` gives
                                                  the ``Worker`` that runs one job)
=====================  =========================  ============================================================

A plugin that does not derive from its base class, or leaves one of its required members out, is rejected
when it is loaded, with the missing member named. The README has a short example of every kind.
"""

from __future__ import annotations

from beluga_core.contracts.attributions import (
    Attribution,
    AttributionContext,
    Target,
    TokenAttribution,
    TokenizedInput,
    normalize,
    word_scores,
)
from beluga_core.contracts.configurations import TrainingConfiguration
from beluga_core.contracts.expectations import (
    FAIL,
    NO_CLASS,
    PASS,
    SKIP,
    CaseBatch,
    ExpectationKind,
    FlatPredictions,
    KindParams,
    PerInputKind,
    results_from,
)
from beluga_core.contracts.generators import (
    Generator,
    Perturbed,
    Source,
    SourceInstance,
    TargetModel,
    TokenScores,
    WordGradients,
)
from beluga_core.contracts.losses import Alignment, ClassLoss, Loss, PairLoss, SpanLogits, SpanPairLoss
from beluga_core.contracts.methods import TRAINING_KEYS, EnvironmentMethod, Method, Stage
from beluga_core.contracts.registries import (
    ATTRIBUTIONS,
    CONFIGURATIONS,
    EXPECTATIONS,
    GENERATORS,
    LOSSES,
    METHODS,
    SIGNALS,
    TASKS,
)
from beluga_core.contracts.signals import InputAttribution, ProbeCase, Signal, Word
from beluga_core.contracts.tasks import (
    GroupOf,
    IIDScores,
    InputPredictions,
    Task,
    TaskSettings,
    Trainer,
    ValidationMetric,
    first_labels,
)
from beluga_core.contracts.training import (
    IID_ENV,
    IID_STREAM,
    Batch,
    BatchOutput,
    Encoder,
    EnvSampler,
    Logits,
    TrainSet,
    UnitInfo,
)
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import Registry
from beluga_core.data.iid.examples import Example, IIDData, IIDExample
from beluga_core.data.suite.schema import Case, Expectation, Input, SuiteHeader
from beluga_core.execution.executors.base import EXECUTORS, Executor, Progress, ResultFn
from beluga_core.execution.results import JobResult
from beluga_core.execution.scheduling import (
    Backend,
    Dependencies,
    Event,
    Failed,
    Finished,
    Lost,
    StepFn,
    order_jobs,
    worker_class,
)
from beluga_core.execution.worker import Worker
from beluga_core.planning.jobs import Job
from beluga_core.planning.plan import Plan
from beluga_core.tasks.classification import ClassificationTask

__all__ = [
    "ATTRIBUTIONS",
    "CONFIGURATIONS",
    "EXECUTORS",
    "EXPECTATIONS",
    "FAIL",
    "GENERATORS",
    "IID_ENV",
    "IID_STREAM",
    "LOSSES",
    "METHODS",
    "NO_CLASS",
    "PASS",
    "SIGNALS",
    "SKIP",
    "TASKS",
    "TRAINING_KEYS",
    "Alignment",
    "Attribution",
    "AttributionContext",
    "Backend",
    "Batch",
    "BatchOutput",
    "BelugaError",
    "Case",
    "CaseBatch",
    "ClassLoss",
    "ClassificationTask",
    "Dependencies",
    "Encoder",
    "EnvSampler",
    "EnvironmentMethod",
    "Event",
    "Example",
    "Executor",
    "Expectation",
    "ExpectationKind",
    "Failed",
    "Finished",
    "FlatPredictions",
    "Generator",
    "GroupOf",
    "IIDData",
    "IIDExample",
    "IIDScores",
    "Input",
    "InputAttribution",
    "InputPredictions",
    "Job",
    "JobResult",
    "KindParams",
    "Logits",
    "Loss",
    "Lost",
    "Method",
    "PairLoss",
    "PerInputKind",
    "Perturbed",
    "Plan",
    "ProbeCase",
    "Progress",
    "Registry",
    "ResultFn",
    "Signal",
    "Source",
    "SourceInstance",
    "SpanLogits",
    "SpanPairLoss",
    "Stage",
    "StepFn",
    "SuiteHeader",
    "Target",
    "TargetModel",
    "Task",
    "TaskSettings",
    "TokenAttribution",
    "TokenScores",
    "TokenizedInput",
    "TrainSet",
    "Trainer",
    "TrainingConfiguration",
    "UnitInfo",
    "ValidationMetric",
    "Word",
    "WordGradients",
    "Worker",
    "first_labels",
    "normalize",
    "order_jobs",
    "results_from",
    "word_scores",
    "worker_class",
]
