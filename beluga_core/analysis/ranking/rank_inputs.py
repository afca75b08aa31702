"""What ``beluga rank STORE --level L`` ranks: per group of L with a probe pool, the models blind to it (every fold
that held it out, and the IID baseline), their true scores (pass rate on T_test ∩ group) and what each did on the
pool — read from the store, with the pool's disjointness from T_test and from every candidate's training cases
checked there first.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from beluga_core.analysis.ranking.rank import Candidate, GroupData
from beluga_core.contracts.registries import CONFIGURATIONS
from beluga_core.contracts.signals import InputAttribution, ProbeCase, Word
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_schema import Case
from beluga_core.store.rows import level_pointer
from beluga_core.store.selectors import selector_text


@dataclass
class StoreGroups:
    task: str
    suite: str
    split_id: str
    groups: list[GroupData]
    notes: list[str] = field(default_factory=list)


GROUP_SQL = "CASE WHEN ? = 'test_type' THEN c.test_type ELSE json_extract_string(c.groups, ?) END"


def _group_args(level: str) -> list[str]:
    """The two parameters of ``GROUP_SQL``: a case's group at ``level`` (``c`` is the cases row)."""
    return [level, level_pointer(level)]


def _baselines(con: duckdb.DuckDBPyConnection) -> list[str]:
    out = []
    for (config,) in con.execute("SELECT DISTINCT config FROM models").fetchall():
        try:
            if CONFIGURATIONS.get(config).is_baseline():
                out.append(config)
        except BelugaError:
            continue
    return out


def load_store_groups(con: duckdb.DuckDBPyConnection, level: str, task: str | None, where: str,
                      split: str | None = None) -> StoreGroups:
    found = con.execute(
        """SELECT DISTINCT m.task, p.suite, p.split_id FROM fewshot_pools p
           JOIN models m ON m.split_id = p.split_id AND m.suite = p.suite
           WHERE p.level = ? AND (? IS NULL OR m.task = ?) AND (? IS NULL OR starts_with(p.split_id, ?))
           ORDER BY ALL""", [level, task, task, split, split]).fetchall()
    if not found:
        levels = [r[0] for r in con.execute("SELECT DISTINCT level FROM fewshot_pools ORDER BY 1").fetchall()]
        asked = "".join([f" of task {task!r}" if task else "", f" in split {split}" if split else ""])
        raise BelugaError(f"no probe pools for level '{level}'{asked} in {where}: "
                          + (f"pools exist for {', '.join(levels)}" if levels else
                             "the run needs [fewshot] enabled = true (with the level among its held-out scenarios)"))
    if len({t for t, _, _ in found}) > 1:
        raise BelugaError(f"{where} has probe pools for level '{level}' of several tasks "
                          f"({', '.join(sorted({t for t, _, _ in found}))}); name one with --task")
    if len(found) > 1:
        raise BelugaError(f"{where} has probe pools for level '{level}' of task '{found[0][0]}' in several splits "
                          f"(another [split] seed or [sizes]): {', '.join(s[:12] for _, _, s in found)}; name one "
                          "with --split (a prefix of its id)")
    task_name, suite, split_id = found[0]
    _check_disjoint(con, split_id, suite, level, where)
    baselines = _baselines(con)
    pools: dict[str, list[str]] = defaultdict(list)
    for grp, cid in con.execute("SELECT grp, case_id FROM fewshot_pools WHERE split_id = ? AND suite = ? AND "
                                "level = ? ORDER BY grp, case_id", [split_id, suite, level]).fetchall():
        pools[grp].append(cid)
    models = con.execute(
        """SELECT model_id, config, method, scenario, heldout_group, seed, finished_at, variant FROM models
           WHERE status = 'done' AND task = ? AND suite = ? AND split_id = ? AND hparams->>'ensemble' IS NULL
             AND (heldout_level = ? OR (scenario = 'standard' AND list_contains(?, config)))
           ORDER BY config, method, seed, model_id""", [task_name, suite, split_id, level, baselines]).fetchall()
    cols = ("model_id", "config", "method", "scenario", "heldout_group", "seed", "finished_at", "variant")
    rows = [dict(zip(cols, r, strict=True)) for r in models]
    truth = {(mid, grp): (int(p), int(n)) for mid, grp, p, n in con.execute(
        f"""SELECT o.model_id, {GROUP_SQL} AS grp, count(*) FILTER (WHERE o.outcome = 'pass'),
                   count(*) FILTER (WHERE o.outcome <> 'skip')
            FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE o.suite = ? AND o.model_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL""",
        [*_group_args(level), suite, [r["model_id"] for r in rows]]).fetchall()}
    probed: dict[str, set[str]] = defaultdict(set)
    for mid, cid in con.execute("SELECT model_id, case_id FROM probe_outcomes WHERE suite = ? AND model_id IN "
                                "(SELECT unnest(?::VARCHAR[]))", [suite, [r["model_id"] for r in rows]]).fetchall():
        probed[mid].add(cid)
    specs = {cid: Case.model_validate_json(spec) for cid, spec in con.execute(
        "SELECT case_id, spec::VARCHAR FROM case_specs WHERE suite = ? AND case_id IN (SELECT case_id FROM "
        "fewshot_pools WHERE split_id = ? AND level = ?)", [suite, split_id, level]).fetchall()}
    space = con.execute("SELECT label_space::VARCHAR FROM suites WHERE suite = ?", [suite]).fetchall()
    label_space = json.loads(space[0][0]) if space and space[0][0] else None
    out = StoreGroups(task_name, suite, split_id, [])
    lacking: list[str] = []
    for grp, pool in pools.items():
        candidates = []
        for r in rows:
            if r["scenario"] != "standard" and r["heldout_group"] != grp:
                continue
            if not set(pool) <= probed.get(r["model_id"], set()):   # trained before the pool was (as it is)
                lacking.append(selector_text(r))
                continue
            passed, n = truth.get((r["model_id"], grp), (0, 0))
            if n == 0:
                continue
            candidates.append(Candidate(r["model_id"], selector_text(r), passed / n, n, r["finished_at"]))
        missing = [c for c in pool if c not in specs]
        if missing:
            raise BelugaError(f"{where}: probe pool case {missing[0]!r} of {level} '{grp}' has no stored case spec")
        out.groups.append(GroupData(grp, candidates, list(pool),
                                    _probe_cases(con, suite, candidates, [specs[c] for c in pool], label_space)))
    if lacking:
        out.notes.append(f"{len(set(lacking))} candidate model(s) lack probe predictions for their group's pool "
                         f"(trained before [fewshot] gave them this pool) and are left out, e.g. "
                         f"{sorted(set(lacking))[0]}; `beluga run` with the same [fewshot] re-runs them")
    if grid_selected_on_seen(con, task_name):
        out.notes.append("hyper-parameters were selected on the seen scenario's T_val, which includes each group's "
                         "T_val cases — part of its probe pool: the candidates' hyper-parameters (not their weights) "
                         "saw those cases")
    return out


def grid_selected_on_seen(con: duckdb.DuckDBPyConnection, task: str) -> bool:
    """Whether ``task``'s folds took hyper-parameters selected on the seen scenario's T_val (grid mode seen: a
    strict search selects per fold, without the fold's group)."""
    seen, strict = con.execute("SELECT count(*) FILTER (WHERE scope_level IS NULL), count(*) FILTER (WHERE "
                               "scope_level IS NOT NULL) FROM grid_selections WHERE task = ?", [task]).fetchall()[0]
    return bool(seen) and not strict


def _check_disjoint(con: duckdb.DuckDBPyConnection, split_id: str, suite: str, level: str, where: str) -> None:
    """No pool case is a T_test case, and none is a training case of a model that held its group out."""
    in_test = con.execute(
        """SELECT count(*), min(p.case_id) FROM fewshot_pools p
           JOIN case_splits s ON s.split_id = p.split_id AND s.case_id = p.case_id
           WHERE p.split_id = ? AND p.level = ? AND s.part = 'test'""", [split_id, level]).fetchall()[0]
    if in_test[0]:
        raise BelugaError(f"{where}: {in_test[0]} probe pool case(s) of level '{level}' are T_test cases (e.g. "
                          f"{in_test[1]!r}): the pools are not disjoint from the cases the truth is computed on")
    trained = con.execute(
        """SELECT count(*), min(p.case_id) FROM fewshot_pools p
           JOIN models m ON m.split_id = p.split_id AND m.heldout_level = p.level AND m.heldout_group = p.grp
           JOIN model_training_cases t ON t.model_id = m.model_id AND t.case_id = p.case_id
           WHERE p.split_id = ? AND p.level = ? AND p.suite = ?""", [split_id, level, suite]).fetchall()[0]
    if trained[0]:
        raise BelugaError(f"{where}: {trained[0]} probe pool case(s) of level '{level}' were trained on by a model "
                          f"ranked on their group (e.g. {trained[1]!r})")


def _gold_index(label: Any, label_space: list[str] | None) -> int | None:
    if label is None or isinstance(label, bool):
        return None
    if isinstance(label, int):
        return label
    if isinstance(label, str) and label_space is not None and label in label_space:
        return label_space.index(label)
    return None


def case_labels(case: Case, label_space: list[str] | None) -> tuple[int | None, ...]:
    labels = case.label if isinstance(case.label, list) else [case.label] * len(case.inputs)
    return tuple(_gold_index(x, label_space) for x in labels)


def _probe_cases(con: duckdb.DuckDBPyConnection, suite: str, candidates: list[Candidate], cases: list[Case],
                 label_space: list[str] | None) -> dict[str, list[list[ProbeCase]]]:
    ids = [c.model_id for c in candidates]
    case_ids = [c.id for c in cases]
    args = [suite, ids, case_ids]
    where = ("suite = ? AND model_id IN (SELECT unnest(?::VARCHAR[])) AND case_id IN "
             "(SELECT unnest(?::VARCHAR[]))")
    outcomes = {(m, c): o for m, c, o in con.execute(
        f"SELECT model_id, case_id, outcome FROM probe_outcomes WHERE {where}", args).fetchall()}
    probs: dict[tuple[str, str], dict[int, np.ndarray]] = defaultdict(dict)
    for m, c, i, p in con.execute(f"SELECT model_id, case_id, input_idx, probs FROM probe_predictions WHERE {where} "
                                  "AND probs IS NOT NULL", args).fetchall():
        probs[(m, c)][int(i)] = np.asarray(p, dtype=np.float64)
    words: dict[tuple[str, str, str], dict[int, list[Word]]] = defaultdict(lambda: defaultdict(list))
    for m, c, i, method, seg, text, score in con.execute(
            f"""SELECT model_id, case_id, input_idx, method, segment, text, score FROM attribution_words
                WHERE {where} ORDER BY model_id, case_id, input_idx, method, first_token""", args).fetchall():
        words[(m, c, method)][int(i)].append(Word(int(seg), text or "", float(score)))
    methods = sorted({k[2] for k in words})
    labels = {c.id: case_labels(c, label_space) for c in cases}

    def probe(mid: str, case: Case, method: str) -> ProbeCase:
        p = probs.get((mid, case.id), {})
        attr = {i: InputAttribution(method, tuple(w)) for i, w in words.get((mid, case.id, method), {}).items()} \
            if method else {}
        return ProbeCase(case.id, case.test_type, tuple(case.inputs), outcomes.get((mid, case.id), "skip"),
                         labels[case.id], tuple(p.get(i) for i in range(len(case.inputs))), attr)

    return {method: [[probe(mid, case, method) for case in cases] for mid in ids] for method in ["", *methods]}
