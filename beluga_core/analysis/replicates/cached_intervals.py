"""Compute every cell's intervals over seeds (and its difference from the IID baseline) and cache them.

``analyze_replicates`` is called by ``beluga analyze`` and the end of ``beluga run``, beside the significance
tests: it reads the cells, computes in numpy, and writes the ``replicate_intervals`` rows in one transaction, on the
store the command holds open for writing (``store.opened``). Rows whose inputs, rounds and seed are unchanged are
kept.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.analysis.replicates.intervals import (
    ESTIMATOR,
    Interval,
    Replicates,
    cell_intervals,
    difference_intervals,
)
from beluga_core.analysis.replicates.seed_rows import Cell, cell_digests, load_cells, load_parts
from beluga_core.analysis.significance.comparisons import BASELINE
from beluga_core.analysis.significance.tests_on_counts import comparison_rng
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.significance import REPLICATE_COLUMNS, SignificanceWriter

# Case-bootstrap rounds: the hierarchical interval needs the variance of the seed mean over cases, the cases
# interval its 2.5 and 97.5 percentiles.
DEFAULT_ROUNDS = 2000
CELL_STATISTICS = ("s_suite", "s_iid", "g")


def interval_id(cell: Cell, base: Cell | None, statistic: str, grp: str) -> str:
    return json.dumps([cell.task, cell.suite, cell.model_name, cell.config, cell.method, cell.variant, cell.scenario,
                       cell.split_seed, *((base.config, base.method, base.scenario) if base else (None,) * 3),
                       statistic, grp], ensure_ascii=False)


def _row(cell: Cell, base: Cell | None, statistic: str, grp: str, kinds: dict[str, Interval], rep: Replicates,
         digest: str, rounds: int, seed: int) -> dict[str, Any]:
    s, h, c = kinds["seed"], kinds["hierarchical"], kinds["cases"]
    return {"interval_id": interval_id(cell, base, statistic, grp), "task": cell.task, "suite": cell.suite,
            "model_name": cell.model_name, "config": cell.config, "method": cell.method, "variant": cell.variant,
            "scenario": cell.scenario, "split_seed": cell.split_seed,
            "base_config": base.config if base else None, "base_method": base.method if base else None,
            "base_scenario": base.scenario if base else None, "statistic": statistic, "grp": grp,
            "n_seeds": rep.n_seeds, "n_cases": len(rep.case_group), "mean": s.mean, "seed_lo": s.lo, "seed_hi": s.hi,
            "hier_lo": h.lo, "hier_hi": h.hi, "hier_df": h.df, "cases_lo": c.lo, "cases_hi": c.hi,
            "p_hier": h.p if base else None, "rounds": rounds, "rng_seed": seed, "inputs_digest": digest,
            "beluga_version": f"{BELUGA_VERSION}+{ESTIMATOR}"}


def _statistics(*reps: Replicates) -> list[str]:
    """s_T, and s_iid and G where every cell has D_test predictions."""
    return list(CELL_STATISTICS) if all(r.iid is not None for r in reps) else ["s_suite"]


# Statistics read from other outcome sources (data.SOURCES): the statistic computed on each part, and its name.
EXTRA = {"nfr": (("pooled", "nfr"),), "pfr": (("pooled", "pfr"),),
         "cross": (("s_suite", "s_cross"), ("g", "g_cross"))}


def extra_rows(parts: dict[str, dict[tuple[Cell, str], Replicates]], digests: dict[Cell, str], *, rounds: int,
               seed: int) -> list[dict[str, Any]]:
    """Rows of the regression and cross-suite figures: NFR and PFR per cell (pooled over its cases), s and G on
    every eval suite and basis (``grp`` 'EVAL_SUITE|BASIS LEVEL')."""
    rows: list[dict[str, Any]] = []
    for source, found in parts.items():
        for (cell, part), rep in sorted(found.items()):
            wanted = [(stat, name) for stat, name in EXTRA[source] if stat != "g" or rep.iid is not None]
            rng = comparison_rng(seed, interval_id(cell, None, source, part))
            ivs = cell_intervals(rep, [stat for stat, _ in wanted], rounds, rng)
            rows += [_row(cell, None, name, part, ivs[stat], rep, digests[cell], rounds, seed) for stat, name in wanted]
    return rows


def replicate_rows(cells: dict[Cell, Replicates], digests: dict[Cell, str], *, rounds: int, seed: int,
                   todo: set[str] | None = None) -> list[dict[str, Any]]:
    """The ``replicate_intervals`` rows of ``cells``: each cell's figures (its groups' pass rates too), and each
    cell's difference from the IID baseline of its task, model, variant and split (paired by seed). With
    ``todo``, only the cells whose own id (cell rows) is in it."""
    rows: list[dict[str, Any]] = []
    for cell in sorted(cells):
        rep = cells[cell]
        if todo is not None and interval_id(cell, None, "s_suite", "") not in todo:
            continue
        rng = comparison_rng(seed, interval_id(cell, None, "cell", ""))
        for name, kinds in cell_intervals(rep, _statistics(rep), rounds, rng, groups=True).items():
            statistic, _, grp = name.partition(":")
            rows.append(_row(cell, None, statistic, grp, kinds, rep, digests[cell], rounds, seed))
        base = cell.other(*BASELINE)
        if base == cell or base not in cells:
            continue
        rng = comparison_rng(seed, interval_id(cell, base, "difference", ""))
        try:
            diffs = difference_intervals(rep, cells[base], _statistics(rep, cells[base]), rounds, rng)
        except ValueError:   # no common seed, or no case both have: nothing to pair
            continue
        digest = _pair_digest(digests[cell], digests[base])
        for name, kinds in diffs.items():
            rows.append(_row(cell, base, name, "", kinds, rep, digest, rounds, seed))
    return rows


def _pair_digest(a: str, b: str) -> str:
    """md5(a/b), as the replicate_summary view computes a difference's current digest."""
    return hashlib.md5(f"{a}/{b}".encode()).hexdigest()


def _stale(cell: Cell, digests: dict[Cell, str], stored: dict[str, tuple[Any, ...]], rounds: int, seed: int) -> bool:
    """Whether the cell's own rows, or its difference from the baseline, are missing or out of date."""
    if stored.get(interval_id(cell, None, "s_suite", "")) != (digests[cell], rounds, seed, ESTIMATOR):
        return True
    base = cell.other(*BASELINE)
    if base == cell or base not in digests:
        return False
    pair = stored.get(interval_id(cell, base, "s_suite", ""))
    return pair is not None and pair != (_pair_digest(digests[cell], digests[base]), rounds, seed, ESTIMATOR)


def analyze_replicates(store: StoreArg, *, rounds: int = DEFAULT_ROUNDS, seed: int = 0,
                       force: bool = False) -> tuple[int, int]:
    """Compute the replicate intervals a store (open for writing; a path: opened for this call) calls for; returns
    (rows computed, cells already current)."""
    with held(store, write=True) as opened:
        con = opened.con
        digests = cell_digests(con)
        # An interval of an earlier estimator (its tag after the version) is recomputed like a stale one.
        stored = {r[0]: tuple(r[1:]) for r in con.execute(
            "SELECT interval_id, inputs_digest, rounds, rng_seed, split_part(beluga_version, '+', 2) "
            "FROM replicate_intervals "
            "WHERE statistic = 's_suite' AND grp = ''").fetchall()}
        todo = {interval_id(c, None, "s_suite", "") for c in digests if force or _stale(c, digests, stored, rounds,
                                                                                         seed)}
        # A cell's difference needs its baseline cell too.
        needed = {c for c in digests if interval_id(c, None, "s_suite", "") in todo}
        needed |= {c.other(*BASELINE) for c in needed if c.other(*BASELINE) in digests}
        cells = load_cells(con, needed) if needed else {}
        mine = {c for c in digests if interval_id(c, None, "s_suite", "") in todo}
        parts = {source: load_parts(con, mine, source) for source in EXTRA} if mine else {}
        rows = replicate_rows(cells, digests, rounds=rounds, seed=seed, todo=todo)
        rows += extra_rows(parts, digests, rounds=rounds, seed=seed)
        written, _ = SignificanceWriter(opened).write_replicates(rows)
    return written, len(digests) - len(todo)


__all__ = ["DEFAULT_ROUNDS", "REPLICATE_COLUMNS", "analyze_replicates", "replicate_rows"]
