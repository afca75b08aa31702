"""The public plugin API of beluga: one typed module per plugin kind.

A plugin is a class deriving from its kind's base class, registered under an entry point of its kind's group
in the plugin package's ``pyproject.toml`` (or named ``module:Class`` in a config). Each kind's module,
``beluga_core.api.<group>`` for the group ``beluga.<group>``, exports the base with exactly the types and helpers
a plugin of that kind needs, and the kind's registry; this package re-exports the bases alone, so
``from beluga_core.api import Method`` works. The run's internals an executor drives (``order_jobs``,
``Dependencies``, ``worker_class``, ``Plan``, ``StepFn``, …) are in ``beluga_core.api.executors`` only.

A plugin that does not derive from its base class, or leaves out a member the table lists, is rejected when
it is loaded, with the missing member named. The plugin guide (docs/guides/extending.md) has a tested example of
every kind, and docs/reference/plugin-api.md every member of every base class.

<!-- the table of plugin kinds: generated from the registries by `python -m beluga_core.api.kinds_table` -->
| kind | entry-point group | base class | what a plugin implements | API module |
| --- | --- | --- | --- | --- |
| task | `beluga.tasks` | `Task` | `batch_outputs(trainer, batches)`, `build_model(model_name, *, seed, dropout, config_overrides)`, `build_trainset(cases, iid, env_level, group_of)`, `load_iid(source, eval_seed)`, `make_encoder(tokenizer, max_length)`, `predict_cases(model, encoder, cases, device)`, `predict_iid(model, encoder, examples, device)`, `score_iid(examples, predictions, split)`, `metrics`, `primary_metric`; or derive from `ClassificationTask`: nothing (override what differs) | `beluga_core.api.tasks` |
| loss | `beluga.losses` | `Loss` | `kind`; or derive from `ClassLoss`: `per_row(logits, targets, label_sets)`; `PairLoss`: `per_row(orig_logits, pert_logits, params)`; `SpanPairLoss`: `per_row(orig, pert, alignments)` | `beluga_core.api.losses` |
| training configuration | `beluga.training_configs` | `TrainingConfiguration` | `start`, `uses_iid`, `uses_suite` | `beluga_core.api.training_configs` |
| method | `beluga.methods` | `Method` | `update(trainer, batches)`; or derive from `EnvironmentMethod`: `update(trainer, batches)` | `beluga_core.api.methods` |
| expectation kind | `beluga.expectations` | `ExpectationKind` | `evaluate(batch)`; or derive from `PerInputKind`: `input_results(batch)` | `beluga_core.api.expectations` |
| attribution | `beluga.attributions` | `Attribution` | `attribute(ctx, x, target, rng)` | `beluga_core.api.attributions` |
| generator | `beluga.generators` | `Generator` | `perturb(instance, rng)` | `beluga_core.api.generators` |
| ranking signal | `beluga.signals` | `Signal` | `value(case)` | `beluga_core.api.signals` |
| executor | `beluga.executors` | `Executor` | `open(plan, jobs, cache_dir)` | `beluga_core.api.executors` |
<!-- end of the table of plugin kinds -->
"""

from __future__ import annotations

from beluga_core.api.attributions import Attribution
from beluga_core.api.executors import Executor
from beluga_core.api.expectations import ExpectationKind
from beluga_core.api.generators import Generator
from beluga_core.api.losses import Loss
from beluga_core.api.methods import Method
from beluga_core.api.signals import Signal
from beluga_core.api.tasks import Task
from beluga_core.api.training_configs import TrainingConfiguration

__all__ = [
    "Attribution",
    "Executor",
    "ExpectationKind",
    "Generator",
    "Loss",
    "Method",
    "Signal",
    "Task",
    "TrainingConfiguration",
]
