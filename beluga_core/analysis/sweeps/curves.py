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
  sentiment suite) (``order``).

Both sides of a comparison are scored on the cases both score (``sweep_pair_seeds``): a held-out scenario scores only
its groups' cases, all of them at a crossing level's, a sample with ``[sizes] groups_per_level``.

Holm's correction runs over every test of a sweep (all points, cells and orderings): a verdict "holds" (A > B) or
"reversed" (A < B) where the Holm-adjusted p is below 0.05, "not resolved" otherwise. An adjusted p below 0.05 has
a raw p below it, so a verdict's 95 % interval always excludes 0 on its side.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import duckdb
from scipy import stats

from beluga_core.analysis.replicates.intervals import t_quantile
from beluga_core.analysis.significance.multiplicity import holm
from beluga_core.core.constants import BASELINE
from beluga_core.store.connection import table_names
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
    unfinished: str = ""       # why the point's verdicts wait: "k of n models done" (not tested, not in Holm's family)

    @property
    def ordering(self) -> str:
        return f"{self.a} > {self.b}"

    @property
    def verdict(self) -> str:
        if self.unfinished:
            return f"point unfinished ({self.unfinished}): re-run the sweep"
        if self.p_holm is None or self.diff.mean is None:
            return "no interval (one seed)"
        if self.p_holm < ALPHA:
            return "holds" if self.diff.mean > 0 else "reversed"
        return "not resolved"


@dataclass
class Curves:
    rows: list[CurveRow] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    # (sweep, position) → "k of n models done" for a point whose models are not all done (sweep_progress).
    unfinished: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def n_tests(self) -> dict[str, int]:
        """Per sweep, how many tests Holm's correction ran over."""
        out: dict[str, int] = defaultdict(int)
        for v in self.verdicts:
            out[v.sweep] += v.diff.p is not None and not v.unfinished
        return dict(out)

    def sweeps(self) -> list[tuple[str, str, str]]:
        """(sweep, task, axis) in order."""
        return sorted({(r.sweep, r.task, r.axis) for r in self.rows})


def read_curves(store: StoreArg) -> Curves:
    """The curves of every sweep in ``store`` (none: an empty ``Curves``)."""
    with held(store) as opened:
        con = opened.con
        names = table_names(con)
        if "sweep_curve" not in names or not (con.execute("SELECT count(*) FROM sweep_points").fetchone() or (0,))[0]:
            return Curves()
        rows = _dicts(con, "SELECT * FROM sweep_curve ORDER BY sweep, task, position, config, method, scenario")
        # Each scenario against another of its configuration-method, per seed, on the cases both score.
        seeds = _dicts(con, """SELECT p.sweep, p.axis, p.position, p.value, s.*
                               FROM sweep_pair_seeds s JOIN sweep_points p ON p.variant = s.variant
                               WHERE s.base_config = s.config AND s.base_method = s.method ORDER BY ALL""")
        # Each held-out level's groups in its suite (not the folds run: a sample of groups_per_level has as many
        # folds at every level), which orders the scenarios from the finest level to the coarsest.
        # A store whose views an earlier beluga of this schema wrote (read-only opens keep them) lacks the view.
        progress = {r[0]: (int(r[1]), int(r[2])) for r in con.execute(
            "SELECT variant, n_done, n_planned FROM sweep_progress").fetchall()} if "sweep_progress" in names else {}
        levels = dict(con.execute("""
            SELECT l.level, count(DISTINCT case_group(c.test_type, c.groups, l.level))
            FROM (SELECT DISTINCT suite, heldout_level AS level FROM models WHERE heldout_level IS NOT NULL) l
            JOIN cases c ON c.suite = l.suite GROUP BY l.level""").fetchall())
    return build_curves(rows, seeds, levels, progress)


def _dicts(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict[str, Any]]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def scenario_chain(scenarios: set[str], groups_per_level: dict[str, int]) -> list[str]:
    """The order the paper found, among ``scenarios``: seen, then the held-out levels from the one with the most
    groups to the one with the fewest (ties by name)."""
    held = sorted((s for s in scenarios if s in groups_per_level), key=lambda s: (-groups_per_level[s], s))
    return (["seen"] if "seen" in scenarios else []) + held


def build_curves(rows: list[dict[str, Any]], pairs: list[dict[str, Any]], groups_per_level: dict[str, int],
                 progress: dict[str, tuple[int, int]] | None = None) -> Curves:
    """Curves from the views' rows: ``sweep_curve``, and ``sweep_pair_seeds`` (with its point's sweep, axis, position
    and value) for the orderings between scenarios; ``groups_per_level``: the number of groups of every held-out level
    (the scenarios' order); ``progress``: per point's variant, (models done, models planned) (``sweep_progress``): a
    point with fewer done has no verdicts yet."""
    curves = Curves()
    for r in rows:
        done, planned = (progress or {}).get(r["variant"], (0, 0))
        if done < planned:
            curves.unfinished[(r["sweep"], int(r["position"]))] = f"{done} of {planned} models done"
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
    verdicts += _orderings(pairs, groups_per_level)
    verdicts = [replace(v, unfinished=curves.unfinished.get((v.sweep, v.position), "")) for v in verdicts]
    by_sweep: dict[str, list[int]] = defaultdict(list)
    for i, v in enumerate(verdicts):
        if v.diff.p is not None and not v.unfinished:
            by_sweep[v.sweep].append(i)
    adjusted: dict[int, float] = {}
    for indices in by_sweep.values():
        adjusted |= dict(zip(indices, holm([verdicts[i].diff.p or 0.0 for i in indices]), strict=True))
    curves.verdicts = [Verdict(**{**v.__dict__, "p_holm": adjusted.get(i)}) for i, v in enumerate(verdicts)]
    curves.verdicts.sort(key=lambda v: (v.sweep, v.task, v.position, list(KINDS).index(v.kind), v.config, v.method,
                                        v.a))
    return curves


def _orderings(pairs: list[dict[str, Any]], groups_per_level: dict[str, int]) -> list[Verdict]:
    """Per point and configuration-method, G of each scenario of the chain minus the next one's, paired by seed, both
    on the cases both score (``sweep_pair_seeds``)."""
    cells: dict[tuple[Any, ...], dict[tuple[str, str], dict[Any, float]]] = defaultdict(lambda: defaultdict(dict))
    scenarios: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for r in pairs:
        if r["g"] is None or r["base_g"] is None:
            continue
        key = (r["sweep"], r["task"], r["axis"], int(r["position"]), float(r["value"]), r["config"], r["method"])
        cells[key][(r["scenario"], r["base_scenario"])][(r["seed"], r["split_seed"])] = float(r["g"] - r["base_g"])
        scenarios[key] |= {r["scenario"], r["base_scenario"]}
    out = []
    for key, per_pair in sorted(cells.items()):
        chain = scenario_chain(scenarios[key] - {"standard"}, groups_per_level)
        for a, b in itertools.pairwise(chain):
            by_seed = per_pair.get((a, b), {})
            diffs = [by_seed[s] for s in sorted(by_seed)]
            if not diffs:
                continue
            mean = math.fsum(diffs) / len(diffs)
            sd = (math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) if len(diffs) > 1
                  else None)
            sweep, task, axis, position, value, config, method = key
            out.append(Verdict(sweep, task, axis, position, value, "order", config, method, a, b,
                               t_estimate(len(diffs), mean, sd)))
    return out
