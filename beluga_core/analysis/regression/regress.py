"""What ``beluga regress`` computes: per new model (or scenario key) against its old model, NFR, PFR and Δacc with
bootstrap intervals on D_test and on suite cases (optionally per group of a level); paired randomization tests of
the NFR difference between updates (stored with provenance); centric selection among several updates."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.analysis.regression.external import import_model, is_external
from beluga_core.analysis.regression.flips import (
    Centric,
    NFRTest,
    Pairing,
    bootstrap_interval,
    centric_selection,
    nfr_randomization_test,
    pairing,
    pooled,
    rng_for,
)
from beluga_core.core.errors import BelugaError
from beluga_core.store.connection import transaction, utc_now
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.selectors import select_models, select_one, selector_text

ScenarioKey = tuple[str, str, str, int | None]   # config, method, scenario, seed


@dataclass
class Row:
    """NFR / PFR / Δacc of a new model (or scenario key) against its old model on one part."""

    label: str
    old_label: str
    source: str              # "iid" or "suite"
    part: str                # split or suite
    group: str | None        # a group of --by's level (suite rows), else None
    pairing: Pairing
    ci: dict[str, tuple[float, float]]
    acc_old: float
    acc_new: float

    @property
    def rel_nfr(self) -> float | None:
        error_new = 1 - self.acc_new
        if self.pairing.n == 0 or error_new == 0 or self.acc_old == 0:
            return None
        return self.pairing.nfr / (self.acc_old * error_new)


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    tests: list[tuple[str, str, str, str, NFRTest]] = field(default_factory=list)  # a, b, source, part, test
    centric: tuple[str, Centric, dict[str, str]] | None = None                     # selector, result, id → label
    imported: str | None = None


# The model columns a label (its selector) is made of.
LABEL_COLUMNS = ("config", "method", "variant", "scenario", "heldout_group", "seed")


def _row(con: duckdb.DuckDBPyConnection, label: str, old_label: str, pairs: list[tuple[str, str]], source: str,
         part: str, seed: int, group: str | None = None, groups: dict[str, str] | None = None) -> Row | None:
    p = pooled([pairing(con, o, n, source, part) for o, n in pairs])
    if groups is not None:
        p = p.restricted(np.array([groups.get(i) == group for i in p.items], dtype=bool))
    if p.n == 0 and p.n_skipped == 0:
        return None
    rng = rng_for(seed, label, old_label, source, part, group or "")
    acc_old = float(p.old.mean()) if p.n else float("nan")
    acc_new = float(p.new.mean()) if p.n else float("nan")
    return Row(label, old_label, source, part, group, p, bootstrap_interval(p, rng), acc_old, acc_new)


def _group_of(con: duckdb.DuckDBPyConnection, suite: str, level: str) -> dict[str, str]:
    if level == "test_type":
        return dict(con.execute("SELECT case_id, test_type FROM cases WHERE suite = ?", [suite]).fetchall())
    rows = con.execute("SELECT case_id, json_extract_string(groups, ?) FROM cases WHERE suite = ?",
                       [f'$."{level}"', suite]).fetchall()
    if rows and all(g is None for _, g in rows):
        raise BelugaError(f"--by {level}: not a level of suite '{suite}'")
    return {c: g for c, g in rows if g is not None}


def _keys(models: Sequence[dict[str, Any]]) -> dict[ScenarioKey, list[dict[str, Any]]]:
    keys: dict[ScenarioKey, list[dict[str, Any]]] = defaultdict(list)
    for m in models:
        keys[(m["config"], m["method"], m["scenario"], m["seed"])].append(m)
    return keys


def compute(store: StoreArg, *, old: str | None, new: Sequence[str], by: str | None, split: str,
            seed: int) -> Report:
    """The report's rows, read from ``store`` (open for writing when ``old`` names a model to import into it; a
    path: opened for this call)."""
    report = Report()
    importing = old is not None and is_external(old)
    with held(store, write=importing) as opened:
        if old is not None and importing:
            report.imported = import_model(opened, old)
            old = report.imported
        con = opened.con
        old_row = select_one(con, old) if old is not None else None
        if new:
            models = [m for sel in new for m in select_models(con, sel)]
        else:
            models = [dict(zip(("model_id", *LABEL_COLUMNS), r, strict=True))
                      for r in con.execute(f"SELECT DISTINCT model_id, {', '.join(LABEL_COLUMNS)} "
                                           "FROM regression_pairs ORDER BY ALL").fetchall()]
        if old_row is not None:
            models = [m for m in models if m["model_id"] != old_row["model_id"]]
        pairs_of = dict(con.execute("SELECT model_id, old_model_id FROM regression_pairs").fetchall())
        labels = {r[0]: selector_text(dict(zip(LABEL_COLUMNS, r[1:], strict=True)))
                  for r in con.execute(f"SELECT model_id, {', '.join(LABEL_COLUMNS)} FROM models").fetchall()}
        suite_of = dict(con.execute("SELECT model_id, suite FROM models").fetchall())
        for (config, method, scenario, model_seed), members in _keys(models).items():
            label = f"{config}/{method}@{scenario}" + (f"#{model_seed}" if model_seed is not None else "")
            pairs = []
            for m in members:
                o = old_row["model_id"] if old_row is not None else pairs_of.get(m["model_id"])
                if o is not None:
                    pairs.append((o, m["model_id"]))
            if not pairs:
                continue
            olds = sorted({o for o, _ in pairs})
            old_label = labels.get(olds[0], olds[0][:12]) if len(olds) == 1 else f"{len(olds)} old models"
            iid = _row(con, label, old_label, pairs, "iid", split, seed)
            if iid is not None:
                report.rows.append(iid)
            suite = suite_of.get(members[0]["model_id"])
            if suite is None:
                continue
            overall = _row(con, label, old_label, pairs, "suite", suite, seed)
            if overall is not None:
                report.rows.append(overall)
            if by is not None:
                groups = _group_of(con, suite, by)
                for group in sorted(set(groups.values())):
                    row = _row(con, label, old_label, pairs, "suite", suite, seed, group, groups)
                    if row is not None and row.pairing.n + row.pairing.n_skipped > 0:
                        report.rows.append(row)
    return report


def run_tests(store: StoreArg, report: Report, *, rounds: int, seed: int) -> None:
    """The paired randomization test of ΔNFR between every two new single-model rows that share their old model
    and part; each stored in ``regression_tests`` with the models' finished_at digest (``store`` open for writing;
    a path: opened for this call)."""
    with held(store, write=True) as opened:
        _run_tests(opened.con, report, rounds=rounds, seed=seed)


def _run_tests(con: duckdb.DuckDBPyConnection, report: Report, *, rounds: int, seed: int) -> None:
    singles = [r for r in report.rows if r.group is None]
    ids = {label: mid for mid, label in _label_ids(con)}
    finished = dict(con.execute("SELECT model_id, finished_at FROM models").fetchall())
    rows: list[list[Any]] = []
    for i, a in enumerate(singles):
        for b in singles[i + 1:]:
            if (a.old_label, a.source, a.part) != (b.old_label, b.source, b.part) or a.label == b.label:
                continue
            ia, ib, io = ids.get(a.label), ids.get(b.label), ids.get(a.old_label)
            if ia is None or ib is None or io is None:
                continue   # a held-out scenario (several models) is not tested pairwise
            common = sorted(set(a.pairing.items) & set(b.pairing.items))
            pa, pb = (_align(p, common) for p in (a.pairing, b.pairing))
            test = nfr_randomization_test(pa.old, pa.new, pb.new, rounds=rounds,
                                          rng=rng_for(seed, io, ia, ib, a.source, a.part))
            report.tests.append((a.label, b.label, a.source, a.part, test))
            stamp = "|".join(_stamp(finished.get(x)) for x in (io, ia, ib))
            rows.append([json.dumps([io, ia, ib, a.source, a.part]), io, ia, ib, a.source, a.part, test.n, test.nfr_a,
                         test.nfr_b, test.nfr_a - test.nfr_b, test.n_discordant, test.p_value, rounds, seed,
                         _md5(stamp), utc_now(), BELUGA_VERSION])
    if rows:
        with transaction(con) as tx:
            tx.executemany("DELETE FROM regression_tests WHERE test_id = ?", [[r[0]] for r in rows])
            tx.executemany(f"INSERT INTO regression_tests VALUES ({', '.join('?' * 17)})", rows)


def _stamp(value: Any) -> str:
    return "" if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _md5(text: str) -> str:
    import hashlib

    return hashlib.md5(text.encode("utf-8")).hexdigest()


def _label_ids(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """(model id, label) of the models whose label names one model (seeded, holding nothing out)."""
    rows = con.execute(f"SELECT model_id, {', '.join(LABEL_COLUMNS)} FROM models WHERE status = 'done'").fetchall()
    out = [(r[0], selector_text(dict(zip(LABEL_COLUMNS, r[1:], strict=True)))) for r in rows]
    counts: dict[str, int] = defaultdict(int)
    for _, label in out:
        counts[label] += 1
    return [(m, label) for m, label in out if counts[label] == 1]


def _align(p: Pairing, items: list[str]) -> Pairing:
    index = {item: i for i, item in enumerate(p.items)}
    order = np.array([index[i] for i in items], dtype=np.int64)
    return Pairing(p.old[order], p.new[order], tuple(items))


def centric(store: StoreArg, selector: str, *, split: str, seed: int) -> tuple[Centric, dict[str, str]]:
    """Centric selection among the models ``selector`` names (one per seed), on seeded halves of D_``split``."""
    with held(store) as opened:
        con = opened.con
        models = select_models(con, selector)
        if len(models) < 3:
            raise BelugaError(f"--centric {selector}: names {len(models)} model(s); centric selection needs at "
                              "least 3 (e.g. several seeds of one update)")
        correct: dict[str, np.ndarray] = {}
        examples: list[Any] | None = None
        for m in models:
            rows = con.execute("SELECT example_idx, correct FROM iid_predictions WHERE model_id = ? AND split = ? "
                               "ORDER BY example_idx", [m["model_id"], split]).fetchall()
            if examples is None:
                examples = [r[0] for r in rows]
            elif [r[0] for r in rows] != examples:
                raise BelugaError(f"--centric {selector}: its models were scored on different D_{split} examples")
            correct[m["model_id"]] = np.array([bool(r[1]) for r in rows], dtype=bool)
    if not examples:
        raise BelugaError(f"--centric {selector}: its models have no D_{split} predictions")
    return centric_selection(correct, seed), {m["model_id"]: selector_text(m) for m in models}
