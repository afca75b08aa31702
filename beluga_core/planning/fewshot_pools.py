"""Probe pools for few-shot ranking (``[fewshot]``): per held-out level L and group g, the cases of g in the kept
T_train ∪ T_val — cases that neither the folds holding g out nor the IID model trained on, and that are not the
T_test cases their true scores are computed on.

A pool smaller than the probe size is refused at planning, with the ``[sizes]`` that would fix it: T_val cases
cost predictions only (nobody trains on them), so ``suite_val_per_group`` is the cheap knob.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.core.errors import BelugaError
from beluga_core.data.splits import SuiteSplit, group_ids, sample_indices, split_suite
from beluga_core.data.suite.suite_files import Suite
from beluga_core.planning.jobs import Fold

Pools = dict[tuple[str, str], tuple[str, ...]]


def probe_pools(cfg: BenchmarkConfig, suite: Suite, split: SuiteSplit, folds: Sequence[Fold]) -> Pools:
    """(level, group) → the group's pool case ids (suite order; a seeded sample of ``pool_cap``), for every
    held-out fold of a ``[fewshot]`` level."""
    levels = cfg.fewshot_levels
    if not levels:
        return {}
    seen = set(split.train) | set(split.val)
    unseen = tuple(c.id for c in suite.cases if c.id in seen)
    pools: Pools = {}
    for level in levels:
        by_group = group_ids(suite, unseen, level)
        for fold in folds:
            if fold.heldout_level != level or fold.heldout_group is None:
                continue
            ids = by_group.get(fold.heldout_group, [])
            keep = sample_indices(len(ids), cfg.fewshot.pool_cap, cfg.split.seed, "fewshot", level,
                                  fold.heldout_group)
            pools[(level, fold.heldout_group)] = tuple(ids[i] for i in keep)
    return pools


def check_pools(cfg: BenchmarkConfig, suite: Suite, split: SuiteSplit, folds: Sequence[Fold], pools: Pools,
                config_path: Path) -> None:
    """Refuse pools smaller than ``[fewshot] n``, naming the groups and the ``suite_val_per_group`` that fixes
    them (or saying that the group has too few cases outside T_test for any)."""
    n = cfg.fewshot.n
    small = sorted((key, len(ids)) for key, ids in pools.items() if len(ids) < n)
    if not small:
        return
    listed = "; ".join(f"{level} '{group}': {size}" for (level, group), size in small[:8])
    more = f" (and {len(small) - 8} more)" if len(small) > 8 else ""
    fix = _val_size_fixing(cfg, suite, folds, n)
    sizes = cfg.sizes
    if fix is not None:
        hint = (f"set [sizes] suite_val_per_group = {fix} (now {sizes.suite_val_per_group or 'all'}; T_val cases "
                "are only predicted, never trained on), or lower [fewshot] n")
    else:
        hint = ("even all of their T_train and T_val cases are too few: lower [fewshot] n, raise [sizes] "
                "suite_train_per_group, or give T_val a larger share in [split] ratios")
    raise BelugaError(f"[fewshot] n = {n}, but {len(small)} probe pool(s) are smaller (pool = the group's kept "
                      f"T_train ∪ T_val cases, capped at pool_cap = {cfg.fewshot.pool_cap or 'all'}): {listed}{more}; "
                      f"{hint}", source=config_path, field="fewshot.n")


def _val_size_fixing(cfg: BenchmarkConfig, suite: Suite, folds: Sequence[Fold], n: int) -> int | None:
    """The smallest ``suite_val_per_group`` (above the current one) whose pools all reach ``n``; None when none
    does (all of T_val is not enough)."""
    sizes = cfg.sizes
    current = sizes.suite_val_per_group
    if current == 0:
        return None
    for val in range(current + 1, current + 4 * n + 1):
        split = split_suite(suite, cfg.split.seed, cfg.split.ratios,
                            (sizes.suite_train_per_group, val, sizes.suite_test_per_group),
                            sizes.suite_test_per_group_of)
        wider = cfg.model_copy(update={"sizes": sizes.model_copy(update={"suite_val_per_group": val})})
        if all(len(ids) >= n for ids in probe_pools(wider, suite, split, folds).values()):
            return val
    return None
