"""The result site's case shards: every evaluated case with every model's outcome and prediction, cut into
``.js`` files small enough to paint from (one scoring group, at most ``CHUNK`` cases each).

Columns are **arms**: scenario keys (task, suite, model name, configuration, method, variant, scenario, seed,
split seed) of one store, the unit every score view aggregates over; a held-out arm's outcomes come from its fold
models, one per case. The facts are raw store rows (``outcomes``, ``cross_outcomes``, ``case_specs``,
``case_predictions``, ``attribution_words``, ``case_flips``); nothing here is a score. DuckDB does the heavy
lifting: per arm and chunk it aggregates the outcomes, predictions and models into one character per case, so
Python never holds a row per prediction (a 200,000-case × 50-arm store has about 9M of them).

The stores are attached read-only to an in-memory database; ``read_report_data`` has opened each one first
(migrating an older store), so they are at the current schema.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from beluga_core.analysis.report.report_data import SuiteLayout
from beluga_core.core.constants import (
    EXTERNAL_CONFIG,
    IID_CONFIG,
    ONLY_PREFIX,
    STANDARD,
    pair_order,
    scenario_order,
)
from beluga_core.store.connection import expand_key_comparisons

CHUNK = 1000            # cases per shard: a few hundred kB with 50 arms, parsed in tens of milliseconds
FETCH = 20_000          # rows per fetch when streaming
# Codes of a per-(arm, chunk) dictionary are one UTF-16 unit each: 0x30 + code, skipping the surrogates. A
# dictionary has at most CHUNK entries, so every code stays far below the end of the basic plane.
CODE_BASE = 0x30
SURROGATES = (0xD800, 0xE000)
OUTCOME_CODES = {"pass": "p", "fail": "f", "skip": "s"}     # "." where the arm has no outcome on the case
FLIP_CODES = {"negative": "n", "positive": "p", "none": "=", "skip": "s"}

ARM_KEY = ("task", "suite", "model_name", "config", "method", "variant", "scenario", "seed", "split_seed")


@dataclass
class Arm:
    index: int
    store: int
    key: dict[str, Any]

    @property
    def kind(self) -> str:
        """What the case page calls the arm's models."""
        config, scenario = self.key["config"], self.key["scenario"]
        if scenario == STANDARD:
            if config == EXTERNAL_CONFIG:
                return "external"
            # Another configuration scored like the IID model (an i.i.d. update, an ensemble): a model update.
            return "IID" if config == IID_CONFIG else "update"
        if scenario == "seen":
            return "seen"
        if scenario.startswith(ONLY_PREFIX):
            return "only"
        return "held out"

    def label(self, several_stores: bool, store_names: list[str]) -> str:
        k = self.key
        seed = f"#{k['seed']}" if k["seed"] is not None else ""
        text = f"{k['config']}/{k['method']}@{k['scenario']}{seed}"
        return f"{store_names[self.store]}: {text}" if several_stores else text

    def as_json(self, several_stores: bool, store_names: list[str]) -> dict[str, Any]:
        return {"i": self.index, "store": self.store, **{k: self.key[k] for k in ARM_KEY}, "kind": self.kind,
                "label": self.label(several_stores, store_names)}


@dataclass
class SuiteInfo:
    index: int
    name: str
    label_space: list[str] | None
    scoring_level: str | None
    parent_level: str | None
    groups: list[dict[str, Any]]                         # gi, name, parent, test_type, n_cases, chunks
    arms: list[int] = field(default_factory=list)       # arms with an outcome on a case of the suite
    n_cases: int = 0


def _code_sql(column: str) -> str:
    """The SQL of the character that stands for ``column``'s code (see CODE_BASE)."""
    cp = f"({CODE_BASE} + {column})"
    return f"chr(CAST(CASE WHEN {cp} >= {SURROGATES[0]} THEN {cp} + {SURROGATES[1] - SURROGATES[0]} ELSE {cp} END " \
           "AS INTEGER))"


def _union(n: int, select: Callable[[int], str]) -> str:
    return " UNION ALL ".join(select(i) for i in range(n))


def _has_rows(con: duckdb.DuckDBPyConnection, relation: str) -> bool:
    return con.execute(f"SELECT EXISTS (SELECT 1 FROM {relation})").fetchone() == (True,)


def _rel_exists(con: duckdb.DuckDBPyConnection, catalog: str, name: str) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_catalog = ? AND table_name = ?",
                      [catalog, name]).fetchone()
    return bool(row and row[0])


def order_arms(keys: list[tuple[int, dict[str, Any]]]) -> list[Arm]:
    """Arms by store, task, suite, then the report's order of configuration-methods and scenarios, model, seed."""
    pairs = pair_order({(k["config"], k["method"]) for _, k in keys})
    scen = scenario_order({k["scenario"] for _, k in keys})

    def sort_key(item: tuple[int, dict[str, Any]]) -> tuple[Any, ...]:
        store, k = item
        return (store, k["task"], k["suite"], pairs.index((k["config"], k["method"])), scen.index(k["scenario"]),
                k["model_name"] or "", k["seed"] if k["seed"] is not None else -1,
                k["split_seed"] if k["split_seed"] is not None else -1)

    return [Arm(i, store, k) for i, (store, k) in enumerate(sorted(keys, key=sort_key))]


class CaseShards:
    """Builds the arms, the suites' case positions and the shards of one site (one or two stores)."""

    def __init__(self, stores: list[Path], variants: list[str], layouts: list[dict[str, SuiteLayout]]) -> None:
        self.stores = stores
        self.con = duckdb.connect()
        for i, path in enumerate(stores):
            self.con.execute(f"ATTACH '{_sql_text(str(path.resolve()))}' AS s{i} (READ_ONLY)")
        self.arms = self._arms(variants)
        self.suites = self._suites(layouts)

    def close(self) -> None:
        self.con.close()

    # -- arms and positions --------------------------------------------------------------------------------------
    def _arms(self, variants: list[str]) -> list[Arm]:
        keys: list[tuple[int, dict[str, Any]]] = []
        cols = ", ".join(ARM_KEY)
        for i, variant in enumerate(variants):
            cur = self.con.execute(f"SELECT DISTINCT {cols} FROM s{i}.models WHERE status = 'done' AND variant = ?",
                                   [variant])
            keys += [(i, dict(zip(ARM_KEY, r, strict=True))) for r in cur.fetchall()]
        arms = order_arms(keys)
        self.con.execute("CREATE TABLE site_arms (arm INTEGER, store INTEGER, task VARCHAR, suite VARCHAR, "
                         "model_name VARCHAR, config VARCHAR, method VARCHAR, variant VARCHAR, scenario VARCHAR, "
                         "seed BIGINT, split_seed BIGINT)")
        if arms:
            self.con.executemany("INSERT INTO site_arms VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [[a.index, a.store, *[a.key[k] for k in ARM_KEY]] for a in arms])
        same = expand_key_comparisons("same_replicate(m, a)") + " AND m.scenario = a.scenario"
        self.con.execute("CREATE TABLE site_models AS " + _union(len(self.stores), lambda i: (
            f"SELECT {i} AS store, m.model_id, a.arm, m.heldout_group FROM s{i}.models m JOIN site_arms a "
            f"ON a.store = {i} AND m.status = 'done' AND {same}")))
        return arms

    def _suites(self, layouts: list[dict[str, SuiteLayout]]) -> list[SuiteInfo]:
        n = len(self.stores)
        # Every outcome of an arm, one per case (a sound store has one; `beluga store check` names any other).
        self.con.execute("CREATE TABLE site_o0 AS SELECT m.arm, o.suite, o.case_id, min(o.model_id) AS model_id, "
                         "arg_min(o.outcome, o.model_id) AS outcome, arg_min(o.pred, o.model_id) AS pred "
                         "FROM (" + _union(n, lambda i: (
                             f"SELECT {i} AS store, model_id, suite, case_id, outcome, pred FROM s{i}.outcomes "
                             f"UNION ALL SELECT {i}, model_id, suite, case_id, outcome, pred FROM s{i}.cross_outcomes"))
                         + ") o JOIN site_models m USING (store, model_id) GROUP BY m.arm, o.suite, o.case_id")
        # Suites and their groups: the first store's layout order, then groups only the other store has.
        names = [r[0] for r in self.con.execute("SELECT DISTINCT suite FROM site_o0 ORDER BY suite").fetchall()]
        suites: list[SuiteInfo] = []
        group_rows: list[tuple[str, str, int, int]] = []
        for si, suite in enumerate(names):
            layout = next((lay[suite] for lay in layouts if suite in lay), None)
            groups: list[dict[str, Any]] = []
            seen: set[str] = set()
            for lay in layouts:
                if suite not in lay:
                    continue
                for info in lay[suite].groups:
                    if info.name not in seen:
                        seen.add(info.name)
                        groups.append({"gi": len(groups), "name": info.name, "parent": info.parent,
                                       "test_type": info.test_type, "number": info.number})
            suites.append(SuiteInfo(si, suite, self._label_space(suite), layout.scoring_level if layout else None,
                                    layout.parent_level if layout else None, groups))
            group_rows += [(suite, g["name"], si, g["gi"]) for g in groups]
        self.con.execute("CREATE TABLE site_groups (suite VARCHAR, scoring_group VARCHAR, si INTEGER, gi INTEGER)")
        if group_rows:
            self.con.executemany("INSERT INTO site_groups VALUES (?, ?, ?, ?)", group_rows)
        self.con.execute(f"""
            CREATE TABLE site_cases AS
            SELECT *, pos // {CHUNK} AS chunk, pos % {CHUNK} AS slot FROM (
                SELECT c.suite, c.case_id, c.test_type, c.gold, g.si, g.gi,
                       row_number() OVER (PARTITION BY g.si, g.gi ORDER BY c.case_id) - 1 AS pos
                FROM (SELECT * FROM ({_union(n, lambda i: f"SELECT {i} AS store, suite, case_id, test_type, gold, "
                                                         f"scoring_group FROM s{i}.cases")})
                      QUALIFY row_number() OVER (PARTITION BY suite, case_id ORDER BY store) = 1) c
                JOIN site_groups g USING (suite, scoring_group)
                JOIN (SELECT DISTINCT suite, case_id FROM site_o0) e USING (suite, case_id))""")
        for s in suites:
            counts = dict(self.con.execute("SELECT gi, count(*) FROM site_cases WHERE si = ? GROUP BY gi",
                                           [s.index]).fetchall())
            for g in s.groups:
                g["n_cases"] = int(counts.get(g["gi"], 0))
                g["chunks"] = -(-g["n_cases"] // CHUNK)
            s.n_cases = sum(g["n_cases"] for g in s.groups)
            s.arms = [r[0] for r in self.con.execute("SELECT DISTINCT arm FROM site_o0 WHERE suite = ? ORDER BY arm",
                                                     [s.name]).fetchall()]
        flips = _union(n, lambda i: f"SELECT {i} AS store, model_id, case_id, flip FROM s{i}.case_flips"
                       if _rel_exists(self.con, f"s{i}", "case_flips") else
                       f"SELECT {i} AS store, NULL::VARCHAR AS model_id, NULL::VARCHAR AS case_id, "
                       "NULL::VARCHAR AS flip WHERE false")
        self.con.execute(f"""
            CREATE TABLE site_o AS
            SELECT c.si, c.gi, c.chunk, c.slot, o.arm, o.model_id, o.outcome, o.pred, f.flip,
                   dense_rank() OVER (PARTITION BY o.arm, c.si, c.gi, c.chunk ORDER BY o.pred) - 1 AS pred_code,
                   dense_rank() OVER (PARTITION BY o.arm, c.si, c.gi, c.chunk ORDER BY o.model_id) - 1 AS model_code
            FROM site_o0 o JOIN site_cases c USING (suite, case_id)
            JOIN site_models m ON m.arm = o.arm AND m.model_id = o.model_id
            LEFT JOIN ({flips}) f ON f.store = m.store AND f.model_id = o.model_id AND f.case_id = o.case_id""")
        return suites

    def _label_space(self, suite: str) -> list[str] | None:
        for i in range(len(self.stores)):
            row = self.con.execute(f"SELECT label_space::VARCHAR FROM s{i}.suites WHERE suite = ?", [suite]).fetchone()
            if row and row[0]:
                return list(json.loads(row[0]))
        return None

    # -- per-suite aggregates (views) ------------------------------------------------------------------------------
    def pass_rates(self, suite: SuiteInfo) -> list[list[Any]]:
        """[arm, gi, n_pass, n_fail, n_skip, pass_rate] per arm and group: the ``pass_rates`` view for the training
        suite, ``cross_pass_rates`` at the arm's own basis for an eval suite."""
        same = expand_key_comparisons("same_replicate(p, a)") + " AND p.scenario = a.scenario"
        parts = []
        for i in range(len(self.stores)):
            parts.append(f"SELECT a.arm, g.gi, p.n_pass, p.n_fail, p.n_skip, p.pass_rate FROM s{i}.pass_rates p "
                         f"JOIN site_arms a ON a.store = {i} AND a.suite = p.suite AND {same} "
                         "JOIN site_groups g ON g.suite = p.suite AND g.scoring_group = p.scoring_group "
                         "WHERE p.suite = $suite")
            if _rel_exists(self.con, f"s{i}", "cross_pass_rates"):
                parts.append(f"SELECT a.arm, g.gi, p.n_pass, p.n_fail, p.n_skip, p.pass_rate FROM s{i}.cross_pass_rates"
                             f" p JOIN site_arms a ON a.store = {i} AND a.suite = p.suite AND {same} "
                             "JOIN site_groups g ON g.suite = p.eval_suite AND g.scoring_group = p.eval_group "
                             # A held-out arm is judged on its mapped cases (basis: its level); the others
                             # on every eval case (basis NULL).
                             # (a held-out scenario has rows at its level only; the others at NULL and per level).
                             "WHERE p.eval_suite = $suite AND (p.mapped_level IS NULL OR p.mapped_level = p.scenario)")
        rows = self.con.execute(" UNION ALL ".join(parts) + " ORDER BY 1, 2", {"suite": suite.name}).fetchall()
        return [[r[0], r[1], r[2], r[3], r[4], r[5]] for r in rows]

    # -- the shards -----------------------------------------------------------------------------------------------
    def arm_strings(self, suite: SuiteInfo) -> dict[tuple[int, int], dict[int, dict[str, Any]]]:
        """(gi, chunk) → arm → its outcome, prediction, model and flip strings (one character per case)."""
        outcome = "CASE o.outcome " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in OUTCOME_CODES.items()) + \
            " ELSE '.' END"
        flip = "CASE o.flip " + " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in FLIP_CODES.items()) + " ELSE '.' END"
        cur = self.con.execute(f"""
            WITH present AS (SELECT DISTINCT si, gi, chunk, arm FROM site_o WHERE si = $si)
            SELECT a.gi, a.chunk, a.arm,
                   string_agg({outcome}, '' ORDER BY c.slot) AS o,
                   string_agg(CASE WHEN o.pred IS NULL THEN ' ' ELSE {_code_sql('o.pred_code')} END, ''
                              ORDER BY c.slot) AS p,
                   string_agg(CASE WHEN o.model_id IS NULL THEN ' ' ELSE {_code_sql('o.model_code')} END, ''
                              ORDER BY c.slot) AS m,
                   string_agg({flip}, '' ORDER BY c.slot) AS f,
                   count(o.flip) AS n_flip
            FROM present a JOIN site_cases c ON c.si = a.si AND c.gi = a.gi AND c.chunk = a.chunk
            LEFT JOIN site_o o ON o.si = a.si AND o.gi = a.gi AND o.chunk = a.chunk AND o.arm = a.arm
                             AND o.slot = c.slot
            GROUP BY ALL ORDER BY ALL""", {"si": suite.index})
        out: dict[tuple[int, int], dict[int, dict[str, Any]]] = defaultdict(dict)
        for gi, chunk, arm, o, p, m, f, n_flip in _stream(cur):
            entry: dict[str, Any] = {"o": o, "p": p, "m": m}
            if n_flip:
                entry["f"] = f
            out[(gi, chunk)][arm] = entry
        # The dictionaries the codes index: predictions (the stored text) and models (id and held-out group).
        for gi, chunk, arm, preds in _stream(self.con.execute(
                "SELECT gi, chunk, arm, list(pred ORDER BY pred) FROM (SELECT DISTINCT gi, chunk, arm, pred FROM "
                "site_o WHERE si = $si AND pred IS NOT NULL) GROUP BY ALL", {"si": suite.index})):
            out[(gi, chunk)][arm]["pv"] = preds
        for gi, chunk, arm, models in _stream(self.con.execute(
                "SELECT gi, chunk, arm, list([model_id, heldout_group] ORDER BY model_id) FROM (SELECT DISTINCT "
                "o.gi, o.chunk, o.arm, o.model_id, m.heldout_group FROM site_o o JOIN site_models m ON m.arm = o.arm "
                "AND m.model_id = o.model_id WHERE o.si = $si) GROUP BY ALL", {"si": suite.index})):
            out[(gi, chunk)][arm]["mv"] = models
        return out

    def cases(self, suite: SuiteInfo) -> Iterator[tuple[tuple[int, int], list[list[Any]]]]:
        """((gi, chunk), its cases in row order): [case_id, test_type, gold, inputs, label, expectation]; the spec
        fields are None where the store keeps no definition of the case (``case_specs``)."""
        n = len(self.stores)
        specs = _union(n, lambda i: f"SELECT {i} AS store, suite, case_id, spec::VARCHAR AS spec FROM s{i}.case_specs")
        cur = self.con.execute(f"""
            SELECT c.gi, c.chunk, c.case_id, c.test_type, c.gold, s.spec
            FROM site_cases c
            LEFT JOIN (SELECT * FROM ({specs})
                       QUALIFY row_number() OVER (PARTITION BY suite, case_id ORDER BY store) = 1) s
                   ON s.suite = c.suite AND s.case_id = c.case_id
            WHERE c.si = $si ORDER BY c.gi, c.chunk, c.slot""", {"si": suite.index})
        key: tuple[int, int] | None = None
        rows: list[list[Any]] = []
        for gi, chunk, case_id, test_type, gold, spec in _stream(cur):
            if (gi, chunk) != key:
                if key is not None:
                    yield key, rows
                key, rows = (gi, chunk), []
            parsed = json.loads(spec) if spec else {}
            rows.append([case_id, test_type, gold, parsed.get("inputs"), parsed.get("label"),
                         parsed.get("expectation")])
        if key is not None:
            yield key, rows

    def probabilities(self, suite: SuiteInfo) -> dict[tuple[int, int], dict[int, dict[int, list[Any]]]]:
        """(gi, chunk) → row → arm → [[input_idx, probs or answer], …] from ``case_predictions`` (kept only with
        ``[store] keep_probabilities``)."""
        out: dict[tuple[int, int], dict[int, dict[int, list[Any]]]] = defaultdict(lambda: defaultdict(dict))
        for i in range(len(self.stores)):
            if not _has_rows(self.con, f"s{i}.case_predictions"):
                continue
            cur = self.con.execute(f"""
                SELECT o.gi, o.chunk, o.slot, o.arm, p.input_idx, p.probs, p.answer
                FROM s{i}.case_predictions p
                JOIN site_cases c ON c.suite = p.suite AND c.case_id = p.case_id
                JOIN site_o o ON o.si = c.si AND o.gi = c.gi AND o.chunk = c.chunk AND o.slot = c.slot
                             AND o.model_id = p.model_id
                JOIN site_models m ON m.arm = o.arm AND m.model_id = o.model_id AND m.store = {i}
                WHERE c.si = $si ORDER BY ALL""", {"si": suite.index})
            for gi, chunk, row, arm, idx, probs, answer in _stream(cur):
                value = [round(float(x), 4) for x in probs] if probs is not None else answer
                out[(gi, chunk)][row].setdefault(arm, []).append([idx, value])
        return out

    def attributions(self, suite: SuiteInfo) -> dict[tuple[int, int], dict[int, dict[int, list[Any]]]]:
        """(gi, chunk) → row → arm → [[input_idx, method, target, [[word, score, special], …]], …] from the
        ``attribution_words`` view, for the model whose outcome the arm shows."""
        out: dict[tuple[int, int], dict[int, dict[int, list[Any]]]] = defaultdict(lambda: defaultdict(dict))
        for i in range(len(self.stores)):
            if not _has_rows(self.con, f"s{i}.attributions"):
                continue
            cur = self.con.execute(f"""
                SELECT o.gi, o.chunk, o.slot, o.arm, w.input_idx, w.method, w.target, w.text, w.score, w.segment < 0
                FROM s{i}.attribution_words w
                JOIN site_cases c ON c.suite = w.suite AND c.case_id = w.case_id
                JOIN site_o o ON o.si = c.si AND o.gi = c.gi AND o.chunk = c.chunk AND o.slot = c.slot
                             AND o.model_id = w.model_id
                JOIN site_models m ON m.arm = o.arm AND m.model_id = o.model_id AND m.store = {i}
                WHERE c.si = $si ORDER BY o.gi, o.chunk, o.slot, o.arm, w.input_idx, w.method, w.first_token""",
                                   {"si": suite.index})
            for gi, chunk, row, arm, idx, method, target, text, score, special in _stream(cur):
                inputs = out[(gi, chunk)][row].setdefault(arm, [])
                if not inputs or inputs[-1][0] != idx or inputs[-1][1] != method:
                    inputs.append([idx, method, target, []])
                inputs[-1][3].append([text, round(float(score), 4), bool(special)])
        return out


def _stream(cur: duckdb.DuckDBPyConnection) -> Iterator[tuple[Any, ...]]:
    while True:
        rows = cur.fetchmany(FETCH)
        if not rows:
            return
        yield from rows


def _sql_text(text: str) -> str:
    return text.replace("'", "''")
