"""Which comparisons a store calls for, their strata, and the digest of their inputs.

An *arm* is a scenario key (task, suite, model_name, config, method, scenario, seed, split_seed, variant). A
comparison pairs arm A with arm B of the same (task, suite, model_name, seed, split_seed, variant): B's scenario is
``b_scenario`` (e.g. 'standard' for the IID baseline's G_standard) or, when that is None, A's own. A
*replicate* comparison is one such pair; a *mean over tasks* pools every pair of one (seed, split_seed, variant)
and scenario — or all scenarios, the paper's Avg. — with each task weighing the same.

The strata rule and the digest here must match the ``significance_pairs`` view (significance.sql), which
re-derives them to mark stale rows; tests/unit/analysis/test_significance.py checks that they agree.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import duckdb

from beluga_core.core.constants import parse_only

BASELINE = ("iid", "vanilla", "standard")
REPLICATE = "replicate"
MEAN_OVER_TASKS = "mean_over_tasks"


@dataclass(frozen=True, order=True)
class Arm:
    task: str
    suite: str | None
    model_name: str | None
    config: str
    method: str
    scenario: str
    seed: int | None
    split_seed: int | None
    variant: str = ""

    @property
    def stratum(self) -> str:
        # Same text as the view's: task|suite|model_name|scenario, NULL as ''.
        return "|".join([self.task, self.suite or "", self.model_name or "", self.scenario])

    @property
    def replicate(self) -> tuple[str, str | None, str | None, int | None, int | None, str]:
        return (self.task, self.suite, self.model_name, self.seed, self.split_seed, self.variant)

    def other(self, config: str, method: str, scenario: str) -> Arm:
        return Arm(self.task, self.suite, self.model_name, config, method, scenario, self.seed, self.split_seed,
                   self.variant)


@dataclass(frozen=True)
class Comparison:
    """One test to run and store: A = (config, method, scenario) against B = (base_*), over ``strata``."""

    scope: str
    config: str
    method: str
    scenario: str | None             # None: all of A's scenarios (means over tasks only)
    base_config: str
    base_method: str
    base_scenario: str | None        # None: A's scenario
    seed: int | None
    split_seed: int | None
    strata: tuple[tuple[Arm, Arm], ...]
    task: str | None = None
    suite: str | None = None
    model_name: str | None = None
    variant: str = ""

    @property
    def comparison_id(self) -> str:
        # The unnamed variant keeps the ids stores had before variants.
        return json.dumps([self.scope, self.task, self.suite, self.model_name, self.seed, self.split_seed,
                           self.config, self.method, self.scenario, self.base_config, self.base_method,
                           self.base_scenario, *([self.variant] if self.variant else [])], ensure_ascii=False)

    @property
    def n_tasks(self) -> int:
        return len({a.task for a, _ in self.strata})

    def weights(self) -> list[float]:
        """Stratum weights: every task weighs 1/n_tasks, shared equally by its strata."""
        per_task: dict[str, int] = defaultdict(int)
        for a, _ in self.strata:
            per_task[a.task] += 1
        return [1 / (len(per_task) * per_task[a.task]) for a, _ in self.strata]

    def iid_units(self) -> list[tuple[str, str | None, str | None]]:
        """(task, suite, model_name) whose D_test pairing the strata use; s_iid does not depend on scenario."""
        return sorted({(a.task, a.suite, a.model_name) for a, _ in self.strata}, key=lambda u: json.dumps(u))

    @property
    def iid_key(self) -> str:
        """The key of the comparison's i.i.d. randomization test: the models it compares (A's and B's s_iid models of
        its units and replicate), not the scenario, so that every scenario row of the same two models has one test."""
        return json.dumps(["iid", self.seed, self.split_seed, self.config, self.method, self.base_config,
                           self.base_method, self.iid_units(), *([self.variant] if self.variant else [])],
                          ensure_ascii=False)

    def iid_weights(self) -> list[float]:
        units = self.iid_units()
        per_task: dict[str, int] = defaultdict(int)
        for task, _, _ in units:
            per_task[task] += 1
        return [1 / (len(per_task) * per_task[u[0]]) for u in units]

    def digest(self, arm_digests: Mapping[Arm, str]) -> str:
        parts = sorted(f"{a.stratum}={arm_digests[a]}/{arm_digests[b]}" for a, b in self.strata)
        return hashlib.md5(",".join(parts).encode("utf-8")).hexdigest()


def load_arms(con: duckdb.DuckDBPyConnection) -> dict[Arm, str]:
    """Every arm of the store with its input digest (view ``significance_inputs``)."""
    rows = con.execute("""SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant,
                                 digest
                          FROM significance_inputs""").fetchall()
    return {Arm(*r[:9]): r[9] for r in rows}


def pair_comparisons(arms: Iterable[Arm], a: tuple[str, str], b: tuple[str, str], b_scenario: str | None,
                     *, scenarios: Iterable[str] | None = None) -> list[Comparison]:
    """Replicate comparisons of (config, method) ``a`` against ``b``, and their means over tasks."""
    arm_set = set(arms)
    wanted = None if scenarios is None else set(scenarios)
    strata = []
    for arm in sorted(arm_set):
        if (arm.config, arm.method) != a or (wanted is not None and arm.scenario not in wanted):
            continue
        other = arm.other(b[0], b[1], b_scenario or arm.scenario)
        if other in arm_set and other != arm:
            strata.append((arm, other))
    out = [Comparison(REPLICATE, a[0], a[1], arm.scenario, b[0], b[1], b_scenario, arm.seed, arm.split_seed,
                      ((arm, other),), arm.task, arm.suite, arm.model_name, arm.variant) for arm, other in strata]
    by_seed: dict[tuple[int | None, int | None, str], list[tuple[Arm, Arm]]] = defaultdict(list)
    for pair in strata:
        by_seed[(pair[0].seed, pair[0].split_seed, pair[0].variant)].append(pair)
    for (seed, split_seed, variant), pairs in sorted(by_seed.items(), key=lambda kv: json.dumps(kv[0])):
        by_scenario: dict[str, list[tuple[Arm, Arm]]] = defaultdict(list)
        for pair in pairs:
            by_scenario[pair[0].scenario].append(pair)
        for scenario, sp in sorted(by_scenario.items()):
            out.append(Comparison(MEAN_OVER_TASKS, a[0], a[1], scenario, b[0], b[1], b_scenario, seed, split_seed,
                                  tuple(sp), variant=variant))
        # The Avg. (all scenarios) pools the generalization scenarios, not the only:LEVEL=g models.
        pooled = tuple(p for p in pairs if parse_only(p[0].scenario) is None)
        if pooled:
            out.append(Comparison(MEAN_OVER_TASKS, a[0], a[1], None, b[0], b[1], b_scenario, seed, split_seed,
                                  pooled, variant=variant))
    return out


def baseline_comparisons(arms: Iterable[Arm]) -> list[Comparison]:
    """Every configuration-method against the IID baseline's G_standard (and its i.i.d. score)."""
    arms = list(arms)
    pairs = sorted({(x.config, x.method) for x in arms})
    out: list[Comparison] = []
    for pair in pairs:
        out += pair_comparisons(arms, pair, BASELINE[:2], BASELINE[2])
    return out


def default_base_scenario(arms: Iterable[Arm], b: tuple[str, str]) -> str | None:
    """B's scenario for a pairwise comparison: 'standard' when B has nothing else (an IID-style model), so its
    G_standard is the reference as for the baseline; otherwise None (scenario against same scenario)."""
    scenarios = {x.scenario for x in arms if (x.config, x.method) == b}
    return "standard" if scenarios == {"standard"} else None
