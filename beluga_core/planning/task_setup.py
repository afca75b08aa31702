"""A task of the plan set up and checked: its plugin configured with the suite it is judged by, its i.i.d. source
read where it is local, and its eval suites validated against it (``plan`` builds on these)."""

from __future__ import annotations

from pathlib import Path

from beluga_core.config.load import with_config_line
from beluga_core.config.schema import BenchmarkConfig, TaskSpec
from beluga_core.contracts.registries import TASKS
from beluga_core.contracts.tasks import Task, TaskSettings
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.label_share import majority_label_warning
from beluga_core.data.suite.suite_files import Suite
from beluga_core.evaluation.suites import load_checked_suite
from beluga_core.planning.cross_evals import EvalSuitePlan, plan_eval_suite


def task_settings(spec: TaskSpec) -> TaskSettings:
    return TaskSettings(spec.iid_metric, dict(spec.options), dict(spec.label_map))


def make_task(spec: TaskSpec, suite: Suite) -> Task:
    """The configured task plugin of a ``[[tasks]]`` entry, told the suite it is judged by."""
    task = TASKS.get(spec.name)()
    task.name = spec.name
    task.configure(task_settings(spec))
    task.use_suite(suite.header)
    return task



def load_task(spec: TaskSpec, suite: Suite, allow_missing: bool, config_path: Path,
               index: int) -> tuple[str | None, str | None]:
    """Load and configure the task plugin (it checks its own settings and the suite, so a dry run catches
    mistakes in them); with ``allow_missing`` (a dry run), a plugin that cannot be imported is reported
    instead of failing, since the plan itself needs only the suite. A local i.i.d. source is read here too, so that
    a missing column or a label outside the suite's label space stops the dry run (and the run before any
    training), not a worker, and so that one label dominating it under accuracy is said before then too
    (``majority_label_warning``). A setting or source the plugin refuses is located in the config (file, line,
    ``tasks.index.field``). Returns (why the plugin cannot be loaded, that warning)."""
    try:
        TASKS.get(spec.name)
    except BelugaError as exc:
        if allow_missing:
            return str(exc), None
        raise
    note = None
    try:
        task = make_task(spec, suite)
        if Path(spec.iid).is_absolute() and Path(spec.iid).exists():
            note = majority_label_warning(task.load_iid(spec.iid, eval_seed=0), task=spec.name, metric=task.metric,
                                          metrics=task.metrics)
    except BelugaError as exc:
        if (exc.source is not None and Path(exc.source) == config_path) or (exc.field or "").startswith("tasks."):
            raise
        # An error in the i.i.d. data keeps its own place (the data file, its column) after the config's.
        field = f"tasks.{index}.{exc.field if exc.source is None and exc.field else 'iid'}"
        raise with_config_line(BelugaError(str(exc) if exc.source is not None else exc.message, field=field),
                               config_path) from None
    return None, note



def eval_plans(cfg: BenchmarkConfig, config_path: Path, index: int, spec: TaskSpec, suite: Suite,
                check_task: bool) -> list[EvalSuitePlan]:
    """The task's eval suites, each validated like the training suite and judged by the same model head."""
    out: list[EvalSuitePlan] = []
    names = {suite.header.name: f"tasks.{index}.suite"}
    head = make_task(spec, suite).head_labels if check_task else None  # None: a span model (answers)
    for j, entry in enumerate(spec.eval_specs()):
        where = f"tasks.{index}.eval_suites.{j}"
        evals = load_checked_suite(entry.suite)
        if spec.apply_corrections:
            evals = evals.with_corrections()
        name = evals.header.name
        if name in names:
            raise BelugaError(f"eval suite '{name}' ({evals.path}) has the name of the suite at {names[name]}; a store "
                              "keeps one suite per name: give the eval suite a name of its own", source=config_path,
                              field=where)
        names[name] = where
        if evals.header.input_kind != suite.header.input_kind:
            raise BelugaError(f"eval suite '{name}' has input_kind '{evals.header.input_kind}', the training suite "
                              f"'{suite.header.name}' '{suite.header.input_kind}': the task's model reads one kind",
                              source=config_path, field=where)
        if check_task:
            try:
                eval_head = make_task(spec, evals).head_labels
            except BelugaError as exc:
                raise BelugaError(f"eval suite '{name}' does not fit task '{spec.name}': {exc.message}",
                                  source=config_path, field=where) from None
            if eval_head != head:
                raise BelugaError(f"eval suite '{name}' needs a model head with classes {eval_head}, but the "
                                  f"task's model, trained for suite '{suite.header.name}', has {head}; an eval "
                                  "suite must be judged by the same head (give it the training suite's label "
                                  "space)", source=config_path, field=where)
        out.append(plan_eval_suite(entry, where, suite, evals, levels=cfg.heldout_levels, seed=cfg.split.seed,
                                   config_path=config_path))
    return out
