"""Training configurations that start from a model of another store: ``[training.configurations.NAME] start =
"store:PATH#SELECTOR"``.

Adaptive adversarial training needs it: a suite generated against a run's IID model cannot be trained on in that
run (the IID job's identity includes the suite), so a second run, with the generated suite, starts its models
from the attacked model itself. The start is resolved while the plan is built (reading a store is a layer above
planning's: ``orchestration.teachers.plan_with_stores`` gives the resolver), and the model's id enters the job ids
of the configuration's jobs: jobs starting from different models differ, and jobs of other configurations keep theirs.

What the start model trained on counts as what the job trained on (``check_start``); a plan is refused when
- a case the job is scored on (T_test of its fold; an eval suite's mapped cases) is a case the start model
  trained on (same suite name and case id: the suite cases of its store's ``model_training_cases`` view, and,
  when it too started from another store's model, that model's, followed back);
- a held-out fold holds out a group the start model trained on cases of (the group would not be unseen);
- the start model trained on other i.i.d. data than the run's task (D_train and D_test are disjoint within one
  i.i.d. source only, so its D_train could hold the run's D_test).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.planning.cross_evals import EvalSuitePlan
from beluga_core.planning.jobs import JobSpec

STORE_START = "store:"


@dataclass(frozen=True)
class StartModel:
    """A resolved ``store:`` start: the one done model its selector names, and what it trained on."""

    source: str  # as configured
    model_id: str
    label: str  # its selector in its store (CONFIG/METHOD@SCENARIO#SEED)
    store: str  # the store it was read from (absolute)
    weights: str  # the file its kept weights are (or would be) in
    iid: str  # the i.i.d. data it (and the models it started from) trained on
    # Suite name → the suite cases it trained on, its own start model's included.
    trained: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def n_trained(self) -> int:
        return sum(len(ids) for ids in self.trained.values())

    def describe(self) -> str:
        """One line for the dry run: which model, and what it trained on."""
        cases = ("no suite case" if not self.n_trained else
                 f"{self.n_trained:,} suite cases ({', '.join(f'{s}: {len(i):,}' for s, i in self.trained.items())})")
        return (f"model {self.model_id[:12]} ({self.label}) of {self.store}, trained on i.i.d. {self.iid} and "
                f"{cases}")


class StartResolver(Protocol):
    """The model a ``store:PATH#SELECTOR`` start names (relative paths from ``base``, the config's folder): it
    must be done, of ``task`` with head ``labels`` (None: not checked), the same pretrained ``model`` with the same
    ``model_config`` overrides. A ``BelugaError`` names what is wrong."""

    def __call__(self, source: str, *, task: str, model: str, labels: list[str] | None,
                 model_config: Mapping[str, Any], base: Path) -> StartModel: ...


def start_field(config: str) -> str:
    return f"training.configurations.{config}.start"


def store_start(cfg: BenchmarkConfig, config: str) -> str | None:
    """The ``store:`` source a configuration's models start from, or None (the pretrained or the IID model)."""
    settings = cfg.training.configurations.get(config)
    start = settings.start if settings is not None else None
    return start if start is not None and start.startswith(STORE_START) else None


def resolve_start(resolver: StartResolver | None, source: str, config: str, *, task: str, model: str,
                  labels: list[str] | None, model_config: Mapping[str, Any], config_path: Path) -> StartModel:
    """``resolver``'s answer for a configuration's start; an error names the configuration's ``start`` field."""
    where = start_field(config)
    if resolver is None:
        raise BelugaError(f"start '{source}' is a model of another store, and this plan was built without a start "
                          "resolver (build it with orchestration.teachers.plan_with_stores)", source=config_path,
                          field=where)
    try:
        return resolver(source, task=task, model=model, labels=labels, model_config=model_config,
                        base=config_path.parent)
    except BelugaError as exc:
        # The resolved path, when the error is about a file: PATH is relative to the config's folder, not the
        # working directory, and saying which file was looked for says so.
        at = f" ({exc.source}; a relative PATH is read from the config's folder)" if exc.source else ""
        raise BelugaError(f"start '{source}': {exc.message}{at}", source=config_path, field=where) from None


def start_leaks(start: StartModel, suite: Suite, specs: Iterable[JobSpec],
                evals: Iterable[EvalSuitePlan] = ()) -> list[str]:
    """What makes the jobs ``specs`` (of one configuration) scored on what their start model trained on: one line
    per kind of leak, with up to three examples (empty: none)."""
    trained = start.trained.get(suite.header.name, frozenset())
    evals = list(evals)
    scored: set[str] = set()
    cross: dict[str, set[str]] = {}
    groups: dict[tuple[str, str], int] = {}
    for spec in specs:
        scored |= trained & set(spec.fold.eval_ids)
        for ep in evals:
            if start.trained.get(ep.name):
                cross.setdefault(ep.name, set()).update(start.trained[ep.name] & set(ep.eval_ids(spec.fold)))
        level, group = spec.fold.scope
        if level is not None and group is not None and (level, group) not in groups:
            groups[(level, group)] = sum(1 for c in trained if c in suite and suite.group_of(suite.case(c), level)
                                         == group)
    out = []
    if scored:
        out.append(f"{len(scored):,} case(s) of suite '{suite.header.name}' that its jobs are scored on "
                   f"(T_test): {_examples(scored)}")
    out += [f"{len(ids):,} case(s) of eval suite '{name}' that its jobs are scored on: {_examples(ids)}"
            for name, ids in cross.items() if ids]
    held = {k: n for k, n in groups.items() if n}
    if held:
        out.append("held-out group(s) it trained on cases of, which its folds hold out: "
                   + ", ".join(f"{level}={group} ({n} case(s))" for (level, group), n in sorted(held.items())))
    return out


def _examples(ids: set[str]) -> str:
    first = sorted(ids)[:3]
    return ", ".join(first) + (" …" if len(ids) > 3 else "")


def check_start(start: StartModel, config: str, *, suite: Suite, iid: str, specs: Iterable[JobSpec],
                evals: Iterable[EvalSuitePlan], config_path: Path) -> None:
    """Refuse a configuration whose jobs would be scored on what their start model trained on (module docstring),
    or whose start model's weights were not kept."""
    where = start_field(config)
    if start.iid != iid:
        raise BelugaError(f"start '{start.source}': {start.describe()}; this run's task trains on i.i.d. {iid}. "
                          "D_train and D_test are disjoint within one i.i.d. source only, so its D_train may hold "
                          "this run's D_test: start from a model trained on the same i.i.d. data", source=config_path,
                          field=where)
    leaks = start_leaks(start, suite, specs, evals)
    if leaks:
        raise BelugaError(f"start '{start.source}': {start.describe()}; the jobs of configuration '{config}' would be "
                          "scored on what it trained on — " + "; ".join(leaks) + ". Use the same split (`[split]`) "
                          "as its run, do not hold out what it trained on, or start from a model that did not train "
                          "on these cases (e.g. the IID model)", source=config_path, field=where)
    if not Path(start.weights).exists():
        raise BelugaError(f"start '{start.source}': {start.describe()}, but its weights were not kept "
                          f"({start.weights}); keep them with [store] keep_weights in its run", source=config_path,
                          field=where)
