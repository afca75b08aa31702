"""Cross-suite evaluation: which cases of an eval suite each model of a task is evaluated on.

An eval suite is a second suite judged with the same model head. The models that hold nothing out (standard,
seen, only:LEVEL) are evaluated on every eval case (or a seeded sample per eval scoring group); a fold that
held out group g at level L is evaluated only on the eval cases *mapped* to g at L. The mapping is declared per
training level (``maps_to = {LEVEL: {eval group: training group}}``, eval groups taken at ``maps_from``), in the
eval suite's header or the config; a coarser training level nobody declared is derived when the declared
level's groups nest in it (each functionality lies in one class), and ``test_type`` maps each eval case to its
own test type. A level without a mapping leaves that scenario's folds unevaluated on the eval suite.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from beluga_core.config.schema import EvalSuiteSpec
from beluga_core.core.constants import TEST_TYPE_LEVEL
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import ids_digest
from beluga_core.core.registry import unknown_name_message
from beluga_core.data.splits import sample_indices
from beluga_core.data.suite.suite_files import Suite
from beluga_core.planning.jobs import Fold


@dataclass(frozen=True)
class EvalSuitePlan:
    """An eval suite of a task: the cases evaluated, and per training level each mapped case's training group."""

    suite: Suite
    case_ids: tuple[str, ...]
    maps: dict[str, dict[str, str]] = field(default_factory=dict)  # training level → eval case id → group
    how: dict[str, str] = field(default_factory=dict)              # training level → where its mapping comes from
    maps_from: str | None = None

    @property
    def name(self) -> str:
        return self.suite.header.name

    def eval_ids(self, fold: Fold) -> tuple[str, ...]:
        """The eval cases a model of ``fold`` is evaluated on."""
        if fold.heldout_group is None:
            return self.case_ids
        level_map = self.maps.get(fold.scenario, {})
        return tuple(c for c in self.case_ids if level_map.get(c) == fold.heldout_group)

    def digest(self, fold: Fold) -> str:
        """Identity of what a model of ``fold`` is evaluated on here (stored with its evaluation; a model whose
        stored digest differs is evaluated again)."""
        return ids_digest((self.name, *self.eval_ids(fold)))

    def for_workers(self) -> EvalSuitePlan:
        return replace(self, suite=self.suite.subset(set(self.case_ids)))


def _problem(message: str, config_field: str, config_path: Path, declared_in_header: bool,
             suite: Suite) -> BelugaError:
    """The error at the config field, or at the eval suite's header when the mapping is the header's own
    (``config_field`` minus the entry's prefix is then the header field, e.g. ``maps_to.functionality``)."""
    if declared_in_header:
        header_field = config_field[config_field.index("maps_"):]
        return BelugaError(message, source=suite.path, line=1, field=header_field)
    return BelugaError(message, source=config_path, field=config_field)


def _groups_at(suite: Suite, level: str) -> set[str]:
    return {g for c in suite.cases if (g := suite.group_of(c, level)) is not None}


def _check_names(names: list[str], known: set[str], what: str, where: str, config_path: Path, header: bool,
                 suite: Suite) -> None:
    for name in names:
        if name not in known:
            raise _problem(unknown_name_message(what, name, sorted(known)), where, config_path, header, suite)


def selected_case_ids(suite: Suite, per_group: int, seed: int) -> tuple[str, ...]:
    """Every case, or a seeded sample of ``per_group`` cases per scoring group, in suite order."""
    if per_group == 0:
        return tuple(c.id for c in suite.cases)
    level = suite.header.scoring_level
    by_group: dict[str, list[str]] = defaultdict(list)
    for case in suite.cases:
        by_group[case.groups[level]].append(case.id)
    kept: set[str] = set()
    for group, ids in by_group.items():
        kept.update(ids[i] for i in sample_indices(len(ids), per_group, seed, "eval", suite.header.name, group))
    return tuple(c.id for c in suite.cases if c.id in kept)


def _nesting(train: Suite, finer: str, coarser: str) -> dict[str, str] | None:
    """finer group → its coarser group, when every finer group lies in exactly one coarser group (a case with
    no group at the coarser level, a crossing one, breaks the nesting)."""
    out: dict[str, set[str | None]] = defaultdict(set)
    for case in train.cases:
        group = train.group_of(case, finer)
        if group is not None:
            out[group].add(train.group_of(case, coarser))
    nested: dict[str, str] = {}
    for k, v in out.items():
        (only, *more) = v
        if more or only is None:
            return None
        nested[k] = only
    return nested


def plan_eval_suite(spec: EvalSuiteSpec, where: str, train: Suite, evals: Suite, *, levels: list[str],
                    seed: int, config_path: Path) -> EvalSuitePlan:
    """The cases of ``evals`` to evaluate and their mapping onto ``train``'s groups at every level in
    ``levels`` (the run's held-out levels). ``where`` is the config field of the entry (error messages)."""
    header = evals.header
    from_config = spec.maps_to is not None
    maps_to = spec.maps_to if spec.maps_to is not None else (header.maps_to or {})
    maps_from = spec.maps_from or header.maps_from or header.scoring_level
    if maps_from not in header.holdable_levels():
        raise _problem(f"maps_from '{maps_from}' is not a level of eval suite '{header.name}' "
                       f"({', '.join(header.holdable_levels())})", f"{where}.maps_from", config_path,
                       spec.maps_from is None, evals)
    case_ids = selected_case_ids(evals, spec.cases_per_group, seed)
    eval_groups = _groups_at(evals, maps_from)
    in_header = not from_config
    maps: dict[str, dict[str, str]] = {}
    how: dict[str, str] = {}
    for level, table in maps_to.items():
        field_ = f"{where}.maps_to.{level}"
        if level not in train.header.holdable_levels():
            raise _problem(unknown_name_message(f"level of training suite '{train.header.name}'", level,
                                                train.header.holdable_levels()), field_, config_path, in_header,
                           evals)
        _check_names(sorted(table), eval_groups, f"{maps_from} of eval suite '{header.name}'", field_, config_path,
                     in_header, evals)
        _check_names(sorted(set(table.values())), _groups_at(train, level),
                     f"{level} of training suite '{train.header.name}'", field_, config_path, in_header, evals)
        maps[level] = {c: table[g] for c in case_ids
                       if (g := evals.group_of(evals.case(c), maps_from)) in table}
        how[level] = f"declared ({'config' if from_config else 'suite header'}; {maps_from} → {level})"
    train_types = {c.test_type for c in train.cases}
    for level in levels:
        if level in maps:
            continue
        if level == TEST_TYPE_LEVEL:
            maps[level] = {c: t for c in case_ids if (t := evals.case(c).test_type) in train_types}
            how[level] = "each eval case's own test type"
            continue
        for declared in maps_to:
            nest = _nesting(train, declared, level) if declared != TEST_TYPE_LEVEL else None
            if nest is not None:
                maps[level] = {c: nest[g] for c, g in maps[declared].items()}
                how[level] = f"derived from {declared} ({level} contains each {declared})"
                break
    return EvalSuitePlan(evals, case_ids, {lvl: m for lvl, m in maps.items() if lvl in levels or lvl in maps_to},
                         how, maps_from)
