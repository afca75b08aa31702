"""The folds of a suite's scenarios, and where a grid search trains and selects."""

from __future__ import annotations

from itertools import compress

import numpy as np

from beluga_core.core.constants import FIXED_SCENARIOS, ONLY_PREFIX, SEEN, only_scenario
from beluga_core.data.splits import SuiteSplit, group_ids, sample_indices
from beluga_core.data.suite.suite_files import Suite
from beluga_core.planning.jobs import Fold, Scope, seen_fold


def _groups(suite: Suite, case_ids: tuple[str, ...], level: str) -> list[str | None]:
    return [suite.group_of(suite.case(c), level) for c in case_ids]


def _sampled(groups: list[str], per_level: int, seed: int, scenario: str) -> list[str]:
    """``groups`` (sorted), or a seeded sample of ``per_level`` of them (``[sizes] groups_per_level``)."""
    return [groups[i] for i in sample_indices(len(groups), per_level, seed, "folds", scenario)]


def make_folds(suite: Suite, split: SuiteSplit, scenarios: list[str], groups_per_level: int = 0,
               seed: int = 0) -> tuple[list[Fold], dict[str, list[str]]]:
    """Folds for the suite scenarios (seen, one per group of every held-out level with T_test cases, and one per
    group of every only:LEVEL with T_train cases; of those, a seeded sample of ``groups_per_level`` when set);
    also the groups per scenario that get no fold (no T_test case to hold out; no T_train case to train on
    alone)."""
    folds: list[Fold] = []
    skipped: dict[str, list[str]] = {}
    if SEEN in scenarios:
        folds.append(seen_fold(split.train, split.test))
    for level in scenarios:
        if level in FIXED_SCENARIOS:
            continue
        if level.startswith(ONLY_PREFIX):
            only = level[len(ONLY_PREFIX):]
            train_by_group = group_ids(suite, split.train, only)
            all_groups = sorted(set(train_by_group) | set(group_ids(suite, split.test, only)))
            skipped[level] = [g for g in all_groups if g not in train_by_group]
            for group in _sampled(sorted(train_by_group), groups_per_level, seed, level):
                folds.append(Fold(only_scenario(only, group), None, tuple(train_by_group[group]), split.test,
                                  trained_level=only, trained_group=group))
            continue
        test_by_group = group_ids(suite, split.test, level)
        train_by_group = group_ids(suite, split.train, level)
        all_groups = sorted(set(test_by_group) | set(train_by_group))
        skipped[level] = [g for g in all_groups if g not in test_by_group]
        # Each case's group looked up once, not once per fold (the full benchmark has ~100 folds per suite). A
        # case with no group at a crossing level trains in every fold of it and is held out by none.
        train_groups = np.array(_groups(suite, split.train, level), dtype=object)
        for group in _sampled(sorted(test_by_group), groups_per_level, seed, level):
            # One comparison over the array per fold (the full benchmark: ~4 M cases × folds compared in Python).
            train = tuple(compress(split.train, (train_groups != group).tolist()))
            folds.append(Fold(level, group, train, tuple(test_by_group[group])))
    return folds, skipped


def selection_scopes(suite: Suite, split: SuiteSplit, folds: list[Fold], mode: str) -> list[tuple[Scope, Fold]]:
    """Where a search trains and selects: the seen scenario (T_train, T_val) and, in strict mode, every
    held-out fold too (its T_train without the group, and T_val without the group)."""
    out: list[tuple[Scope, Fold]] = [((None, None), seen_fold(split.train, split.val))]
    if mode != "strict":
        return out
    val_groups: dict[str, list[str | None]] = {}
    for fold in folds:
        level, group = fold.scope
        if level is None:
            continue
        if level not in val_groups:
            val_groups[level] = _groups(suite, split.val, level)
        val = tuple(c for c, g in zip(split.val, val_groups[level], strict=True) if g != group)
        out.append(((level, group), Fold(level, group, fold.train_ids, val)))
    return out
