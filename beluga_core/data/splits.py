"""Seeded splits of a suite into T_train / T_val / T_test, within every scoring group.

Cases (not inputs) are split, so perturbations of one case never cross splits. The permutation of a group
depends only on (seed, group name, the group's case ids), never on dict order, process or machine:
``random.Random`` seeded with a string hashes it with SHA-512.

A case whose meta names its part (``split_part``: ``train``, ``val`` or ``test``) is in that part, whole: the
ratios split the other cases, and ``[sizes]`` caps leave pinned cases alone. A generator pins the cases it made
from D_train as training data (CDA's counterfactual twins of every training sentence): scored as T_test they
would be tests on the training sentences, and a cap would drop part of an augmentation meant whole.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite

SPLITS = ("train", "val", "test")
# The case meta key that pins a case to one part of every split.
PART_KEY = "split_part"


@dataclass(frozen=True)
class SuiteSplit:
    """Case ids per split as ``[sizes]`` keeps them, each in suite order; ``parts`` gives every case's part
    before the caps (what the store records, so leakage and disjointness checks can read it)."""

    train: tuple[str, ...]
    val: tuple[str, ...]
    test: tuple[str, ...]
    parts: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def of(self, name: str) -> tuple[str, ...]:
        return {"train": self.train, "val": self.val, "test": self.test}[name]

    def records(self) -> list[tuple[str, str, bool]]:
        """(case id, part, kept by [sizes]) of every case, in suite order."""
        kept = {*self.train, *self.val, *self.test}
        return [(cid, part, cid in kept) for cid, part in self.parts.items()]


def _rng(seed: int, *parts: str) -> random.Random:
    return random.Random("\x1f".join([str(seed), *parts]))


def split_counts(n: int, ratios: tuple[float, float, float]) -> tuple[int, int, int]:
    # The reference takes floor(n/2) train cases; val and test share the rest.
    n_train = int(n * ratios[0])
    n_val = int(n * ratios[1]) if ratios[2] > 0 else n - n_train
    return n_train, n_val, n - n_train - n_val


def split_suite(suite: Suite, seed: int, ratios: tuple[float, float, float] = (0.5, 0.25, 0.25),
                per_group: tuple[int, int, int] = (0, 0, 0), test_per_group_of: dict[str, int] | None = None,
                ) -> SuiteSplit:
    """Split every scoring group 50/25/25 (by default), then optionally keep at most ``per_group[k]`` cases
    of each group in split k (0 keeps all): the subsample is itself seeded and nested in the full split.
    ``test_per_group_of`` replaces the T_test cap of the groups it names."""
    pinned, orders, parts = _group_orders(suite, seed, ratios)
    chosen: dict[str, list[str]] = {name: [cid for cid, part in pinned.items() if part == name] for name in SPLITS}
    for group, (order, counts) in orders.items():
        start = 0
        test_cap = (test_per_group_of or {}).get(group)
        caps = per_group if test_cap is None else (*per_group[:2], test_cap)
        for name, count, cap in zip(SPLITS, counts, caps, strict=True):
            part = order[start:start + count]
            start += count
            if cap and len(part) > cap:
                part = _subsample_order(suite, seed, ratios, name, group, part)[:cap]
            chosen[name].extend(part)
    # In suite order: sorting the kept ids costs k log k, not a pass over every case per part.
    position = _positions(suite)
    ordered = {name: tuple(sorted(ids, key=position.__getitem__)) for name, ids in chosen.items()}
    return SuiteSplit(**ordered, parts=dict(parts))


def _memo_key(suite: Suite, *parts: Any) -> tuple[Any, ...]:
    # The case count guards against a suite whose cases were replaced after a split was memoised.
    return (*parts, len(suite.cases))


def _group_orders(suite: Suite, seed: int, ratios: tuple[float, float, float],
                  ) -> tuple[dict[str, str], dict[str, tuple[list[str], tuple[int, ...]]], dict[str, str]]:
    """The pinned parts; per scoring group its seeded order with each part's count (before the caps); and every
    case's part before the caps, in suite order."""
    key = _memo_key(suite, "orders", seed, tuple(ratios))
    if key in suite._split_memo:
        memoised: tuple[dict[str, str], dict[str, tuple[list[str], tuple[int, ...]]], dict[str, str]] = \
            suite._split_memo[key]
        return memoised
    level = suite.header.scoring_level
    pinned = pinned_parts(suite)
    by_group: dict[str, list[str]] = defaultdict(list)
    for case in suite.cases:
        if case.id not in pinned:
            by_group[case.groups[level]].append(case.id)
    unit_parts = _unit_parts(suite, seed, ratios, pinned) if suite.header.split_by else None
    orders: dict[str, tuple[list[str], tuple[int, ...]]] = {}
    part_of: dict[str, str] = dict(pinned)
    for group, ids in by_group.items():
        order = sorted(ids)
        _rng(seed, "split", group).shuffle(order)
        if unit_parts is not None:
            # Tied cases take their unit's part; the order within a part stays the group's seeded one.
            parts = [[cid for cid in order if unit_parts[cid] == name] for name in SPLITS]
            order = [cid for part in parts for cid in part]
            counts: tuple[int, ...] = tuple(len(part) for part in parts)
        else:
            counts = split_counts(len(order), ratios)
        orders[group] = (order, counts)
        start = 0
        for name, count in zip(SPLITS, counts, strict=True):
            part_of.update(dict.fromkeys(order[start:start + count], name))
            start += count
    result = (pinned, orders, {c.id: part_of[c.id] for c in suite.cases})
    suite._split_memo[key] = result
    return result


def _positions(suite: Suite) -> dict[str, int]:
    key = _memo_key(suite, "positions")
    if key not in suite._split_memo:
        suite._split_memo[key] = {c.id: i for i, c in enumerate(suite.cases)}
    memoised: dict[str, int] = suite._split_memo[key]
    return memoised


def _subsample_order(suite: Suite, seed: int, ratios: tuple[float, float, float], name: str, group: str,
                     part: list[str]) -> list[str]:
    """A group's part in its seeded subsample order: a cap of n keeps the first n (so caps nest)."""
    key = _memo_key(suite, "subsample", seed, tuple(ratios), name, group)
    if key not in suite._split_memo:
        order = sorted(part)
        _rng(seed, "subsample", name, group).shuffle(order)
        suite._split_memo[key] = order
    memoised: list[str] = suite._split_memo[key]
    return memoised


def pinned_parts(suite: Suite) -> dict[str, str]:
    """Case id → the part its meta pins it to (``split_part``); a clear error for a part that is none."""
    out: dict[str, str] = {}
    for c in suite.cases:
        part = c.meta.get(PART_KEY)
        if part is None:
            continue
        if part not in SPLITS:
            raise BelugaError(f"case '{c.id}': meta {PART_KEY} is {part!r}; expected one of {', '.join(SPLITS)}",
                              source=suite.path, field=f"meta.{PART_KEY}")
        out[c.id] = str(part)
    return out


def _unit_parts(suite: Suite, seed: int, ratios: tuple[float, float, float],
                pinned: dict[str, str]) -> dict[str, str]:
    """Per case not pinned, the part of its unit (the value of its ``split_by`` meta key; else the case alone):
    the units are split by the ratios as a whole, so that cases made from one source never straddle two parts.
    Every scoring group then gets about the ratios of its cases, not exactly."""
    key = suite.header.split_by
    assert key is not None
    unit_of = {c.id: f"k\x1f{c.meta[key]}" if key in c.meta else f"c\x1f{c.id}" for c in suite.cases
               if c.id not in pinned}
    units = sorted(set(unit_of.values()))
    _rng(seed, "split", "units").shuffle(units)
    counts = split_counts(len(units), ratios)
    part_of_unit: dict[str, str] = {}
    start = 0
    for name, count in zip(SPLITS, counts, strict=True):
        part_of_unit.update(dict.fromkeys(units[start:start + count], name))
        start += count
    return {cid: part_of_unit[unit] for cid, unit in unit_of.items()}


def sample_indices(n: int, k: int, seed: int, *parts: str) -> list[int]:
    """A seeded sample of ``k`` of ``range(n)`` (all when k is 0 or ≥ n), in increasing order."""
    if k == 0 or k >= n:
        return list(range(n))
    return sorted(_rng(seed, "sample", *parts).sample(range(n), k))


def halves(n: int, seed: int) -> tuple[list[int], list[int]]:
    """Split ``range(n)`` into two seeded halves (D_val, D_test from an official validation set)."""
    order = list(range(n))
    _rng(seed, "halves").shuffle(order)
    mid = n // 2
    return sorted(order[:mid]), sorted(order[mid:])


def group_ids(suite: Suite, ids: Iterable[str], level: str) -> dict[str, list[str]]:
    """Group → the ids among ``ids`` in it, at ``level``; a case with no group there (a crossing level) is in
    none."""
    out: dict[str, list[str]] = defaultdict(list)
    for cid in ids:
        group = suite.group_of(suite.case(cid), level)
        if group is not None:
            out[group].append(cid)
    return dict(out)
