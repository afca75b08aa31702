"""A sweep's curves: s_T, s_iid and G against the swept value with their intervals over seeds, and per point the
verdict of every ordering asked about, corrected for how many were tested.

The rows come from the store's ``sweep_curve`` view (means and standard deviations over seeds) and
``sweep_curve_seeds`` (per seed, for the orderings between scenarios). Intervals are the seed-level t interval,
mean ± t(n−1) · sd / √n, as ``replicate_summary`` gives below five seeds (docs/method.md, "Replicates"). The orderings,
each a difference paired by seed with its two-sided t test:

- every configuration-method's G in every scenario against the IID baseline's G of the same point, on the same
  cases (``baseline``), and its s_iid against the baseline's (``iid``);
- per configuration-method, consecutive scenarios in the order the paper found (seen, then the held-out levels from
  the finest, the one with the most groups, to the coarsest: seen > functionality > class > test_type for the
  sentiment suite) (``order``); a crossing level, scored on fewer cases than the others, is left out of these.

Holm's correction runs over every test of a sweep (all points, cells and orderings): a verdict "holds" (A > B) or
"reversed" (A < B) where the Holm-adjusted p is below 0.05, "not resolved" otherwise. An adjusted p below 0.05 has
a raw p below it, so a verdict's 95 % interval always excludes 0 on its side.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import duckdb
from scipy import stats

from beluga_core.analysis.replicates.intervals import t_quantile
from beluga_core.analysis.significance.multiplicity import holm
from beluga_core.core.constants import BASELINE
from beluga_core.store.opened import StoreArg, held

ALPHA = 0.05
KINDS = {"baseline": "G against the IID baseline", "iid": "s_iid against the IID baseline",
         "order": "G between scenarios"}


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` seeds with its seed-level t interval (None below two seeds)."""

    n: int
    mean: float | None
    lo: float | None = None
    hi: float | None = None
    p: float | None = None     # two-sided p of mean = 0 (differences)

    @property
    def half(self) -> float | None:
        return None if self.lo is None or self.hi is None else (self.hi - self.lo) / 2


def t_estimate(n: int, mean: float | None, sd: float | None) -> Estimate:
    """mean ± t(n−1) · sd / √n, and the t test's two-sided p of mean = 0; no interval below two values."""
    if mean is None or n < 2 or sd is None:
        return Estimate(n, mean)
    se = sd / math.sqrt(n)
    half = t_quantile(n - 1) * se
    p = (1.0 if mean == 0 else 0.0) if se == 0 else float(2 * stats.t.sf(abs(mean) / se, n - 1))
    return Estimate(n, mean, mean - half, mean + half, p)


@dataclass(frozen=True)
class CurveRow:
    """One cell (configuration, method, scenario) at one point of a sweep."""

    sweep: str
    task: str
    axis: str
    position: int
    value: float
    variant: str
    config: str
    method: str
    scenario: str
    s_suite: Estimate
    s_iid: Estimate
    g: Estimate

    @property
    def pair(self) -> tuple[str, str]:
        return (self.config, self.method)

    @property
    def is_baseline(self) -> bool:
        return self.pair == BASELINE and self.scenario == "standard"


@dataclass(frozen=True)
class Verdict:
    """One ordering at one point: A − B over seeds, its interval, p and Holm-adjusted p, and the verdict."""

    sweep: str
    task: str
    axis: str
    position: int
    value: float
    kind: str                  # baseline, iid or order (KINDS)
    config: str
    method: str
    a: str                     # what A is (a scenario; "s_iid" for kind iid)
    b: str                     # what B is ("IID baseline", or a scenario)
    diff: Estimate
    p_holm: float | None = None

    @property
    def ordering(self) -> str:
        return f"{self.a} > {self.b}"

    @property
    def verdict(self) -> str:
        if self.p_holm is None or self.diff.mean is None:
            return "no interval (one seed)"
        if self.p_holm < ALPHA:
            return "holds" if self.diff.mean > 0 else "reversed"
        return "not resolved"


@dataclass
class Curves:
    rows: list[CurveRow] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def n_tests(self) -> dict[str, int]:
        """Per sweep, how many tests Holm's correction ran over."""
        out: dict[str, int] = defaultdict(int)
        for v in self.verdicts:
            out[v.sweep] += v.diff.p is not None
        return dict(out)

    def sweeps(self) -> list[tuple[str, str, str]]:
        """(sweep, task, axis) in order."""
        return sorted({(r.sweep, r.task, r.axis) for r in self.rows})


def read_curves(store: StoreArg) -> Curves:
    """The curves of every sweep in ``store`` (none: an empty ``Curves``)."""
    with held(store) as opened:
        con = opened.con
        names = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views() UNION ALL "
                                           "SELECT table_name FROM duckdb_tables()").fetchall()}
        if "sweep_curve" not in names or not (con.execute("SELECT count(*) FROM sweep_points").fetchone() or (0,))[0]:
            return Curves()
        rows = _dicts(con, "SELECT * FROM sweep_curve ORDER BY sweep, task, position, config, method, scenario")
        seeds = _dicts(con, "SELECT * FROM sweep_curve_seeds ORDER BY ALL")
        levels = dict(con.execute("""SELECT scenario, count(DISTINCT heldout_group) FROM models
                                     WHERE heldout_level IS NOT NULL GROUP BY scenario""").fetchall())
        crossing = {(r[0], r[1]) for r in con.execute("SELECT task, level FROM crossing_levels").fetchall()}
    return build_curves(rows, seeds, levels, crossing)


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def scenario_chain(scenarios: set[str], groups_per_level: dict[str, int]) -> list[str]:
    """The order the paper found, among ``scenarios``: seen, then the held-out levels from the one with the most
    groups to the one with the fewest (ties by name)."""
    held = sorted((s for s in scenarios if s in groups_per_level), key=lambda s: (-groups_per_level[s], s))
    return (["seen"] if "seen" in scenarios else []) + held


def build_curves(rows: list[dict[str, Any]], seeds: list[dict[str, Any]], groups_per_level: dict[str, int],
                 crossing: Collection[tuple[str, str]] = ()) -> Curves:
    """Curves from the views' rows (``sweep_curve``, ``sweep_curve_seeds``), the number of groups of every held-out
    level (the scenarios' order) and the crossing levels ((task, level): left out of the orderings between
    scenarios)."""
    curves = Curves()
    verdicts: list[Verdict] = []
    for r in rows:
        row = CurveRow(r["sweep"], r["task"], r["axis"], int(r["position"]), float(r["value"]), r["variant"],
                       r["config"], r["method"], r["scenario"],
                       t_estimate(r["n_seeds"], r["s_suite"], r["s_suite_sd"]),
                       t_estimate(r["n_seeds"], r["s_iid"], r["s_iid_sd"]),
                       t_estimate(r["n_seeds"], r["g"], r["g_sd"]))
        curves.rows.append(row)
        if row.is_baseline or r["n_paired"] == 0:
            continue
        common = (row.sweep, row.task, row.axis, row.position, row.value)
        verdicts.append(Verdict(*common, "baseline", row.config, row.method, row.scenario, "IID baseline",
                                t_estimate(r["n_paired"], r["delta_g"], r["delta_g_sd"])))
        if row.scenario == "seen" or (row.scenario == "standard" and row.pair != BASELINE):
            verdicts.append(Verdict(*common, "iid", row.config, row.method, "s_iid", "IID baseline",
                                    t_estimate(r["n_paired"], r["delta_s_iid"], r["delta_s_iid_sd"])))
    verdicts += _orderings(seeds, groups_per_level, crossing)
    by_sweep: dict[str, list[int]] = defaultdict(list)
    for i, v in enumerate(verdicts):
        if v.diff.p is not None:
            by_sweep[v.sweep].append(i)
    adjusted: dict[int, float] = {}
    for indices in by_sweep.values():
        adjusted |= dict(zip(indices, holm([verdicts[i].diff.p or 0.0 for i in indices]), strict=True))
    curves.verdicts = [Verdict(**{**v.__dict__, "p_holm": adjusted.get(i)}) for i, v in enumerate(verdicts)]
    curves.verdicts.sort(key=lambda v: (v.sweep, v.task, v.position, list(KINDS).index(v.kind), v.config, v.method,
                                        v.a))
    return curves


def _orderings(seeds: list[dict[str, Any]], groups_per_level: dict[str, int],
               crossing: Collection[tuple[str, str]]) -> list[Verdict]:
    """Per point and configuration-method, G of each scenario of the chain minus the next one's, paired by seed."""
    cells: dict[tuple[Any, ...], dict[str, dict[Any, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in seeds:
        if r["is_baseline"] or r["g"] is None or (r["task"], r["scenario"]) in crossing:
            continue
        key = (r["sweep"], r["task"], r["axis"], int(r["position"]), float(r["value"]), r["config"], r["method"])
        cells[key][r["scenario"]][(r["seed"], r["split_seed"])] = float(r["g"])
    out = []
    for key, per_scenario in sorted(cells.items()):
        chain = scenario_chain(set(per_scenario), groups_per_level)
        for a, b in itertools.pairwise(chain):
            shared = sorted(set(per_scenario[a]) & set(per_scenario[b]))
            diffs = [per_scenario[a][s] - per_scenario[b][s] for s in shared]
            if not diffs:
                continue
            mean = math.fsum(diffs) / len(diffs)
            sd = (math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) if len(diffs) > 1
                  else None)
            sweep, task, axis, position, value, config, method = key
            out.append(Verdict(sweep, task, axis, position, value, "order", config, method, a, b,
                               t_estimate(len(diffs), mean, sd)))
    return out
