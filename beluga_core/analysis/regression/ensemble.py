"""Ensembles of stored models: one derived model row per scenario group, its predictions combined from its
members' stored predictions, its suite cases judged again with their expectations.

Members are grouped by (scenario, held-out group, trained group): an ensemble of a held-out scenario is one
model per held-out group, whose members are the members' fold models of that group. Rules:

- ``mean``: the mean of the members' class probabilities (the task's model space for i.i.d. examples, the
  suite's label space for cases; needs ``[store] keep_probabilities``), then its argmax.
- ``vote``: each input's majority label; ties broken by the mean probabilities where stored, else by the first
  member (in member order). Its probability vector is the vote share, which expectations that read
  probabilities (INV's tolerance, monotonic checks) then read: the ensemble row records ``vote_share`` so the
  report marks its outcomes.

The row's ``seed`` is NULL, ``hparams`` lists the members, and ``parent_model_id`` records its baseline: the
members' common parent if they share one, else the IID baseline of the first member's seed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np

from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.contracts.registries import TASKS
from beluga_core.core.constants import OUTCOME_NAMES, parse_only
from beluga_core.core.errors import BelugaError
from beluga_core.core.hashing import digest
from beluga_core.data.suite.suite_schema import Case
from beluga_core.evaluation.evaluate import evaluate_cases
from beluga_core.execution.results import (
    CasePredictions,
    CrossResult,
    IIDResult,
    JobResult,
    ModelRecord,
    Outcomes,
)
from beluga_core.store.connection import expand_key_comparisons
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.selectors import select_models

RULES = ("vote", "mean")


@dataclass(frozen=True)
class EnsembleSpec:
    name: str
    members: tuple[str, ...]          # selectors
    rule: str = "vote"


def combine(labels: np.ndarray, probs: np.ndarray | None, rule: str, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(predicted class, probability vector) per item from the members' ``labels`` ``[members, items]`` (class
    ids) and ``probs`` ``[members, items, classes]`` (None when not stored)."""
    if rule == "mean":
        if probs is None:
            raise BelugaError("a mean ensemble needs its members' probabilities: run them with [store] "
                              "keep_probabilities = true (or use --rule vote)")
        mean = probs.mean(axis=0)
        return mean.argmax(axis=-1), mean
    counts = np.stack([(labels == c).sum(axis=0) for c in range(n_classes)], axis=-1).astype(np.float64)
    share = counts / labels.shape[0]
    top = counts.max(axis=-1, keepdims=True)
    tied = counts == top
    if probs is not None:   # ties: the highest mean probability among the tied classes
        mean = probs.mean(axis=0)
        pred = np.where(tied, mean, -np.inf).argmax(axis=-1)
    else:                   # ties: the first member's label when it is among the tied ones, else the lowest
        first = labels[0]
        first_tied = tied[np.arange(len(first)), first]
        pred = np.where(first_tied, first, tied.argmax(axis=-1))
    return pred, share


def _members(con: duckdb.DuckDBPyConnection, spec: EnsembleSpec) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for selector in spec.members:
        for r in select_models(con, selector):
            rows.setdefault(r["model_id"], r)
    members = list(rows.values())
    for key in ("task", "suite", "model_name", "config", "split_seed", "variant"):
        values = {m[key] for m in members}
        if len(values) > 1:
            raise BelugaError(f"ensemble '{spec.name}': its members differ in {key} ({sorted(map(str, values))}); "
                              "an ensemble combines models of one task, suite, model, configuration and split")
    return members


def majority(values: Sequence[Any]) -> Any:
    """The most frequent value; ties: the one that comes first (member order)."""
    counts: dict[Any, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return max(counts, key=lambda v: counts[v])


def _baseline(con: duckdb.DuckDBPyConnection, members: Sequence[dict[str, Any]]) -> str | None:
    parents = {m["parent_model_id"] for m in members}
    if len(parents) == 1 and None not in parents:
        return str(next(iter(parents)))
    # The IID baseline of the first member's draw (its replicate key under config iid, method vanilla).
    row = con.execute(expand_key_comparisons("""SELECT b.model_id FROM models m
                         JOIN models b ON same_draw(b, m)
                         WHERE m.model_id = ? AND b.status = 'done' AND b.config = 'iid' AND b.method = 'vanilla'
                           AND b.scenario = 'standard' ORDER BY b.finished_at DESC LIMIT 1"""),
                      [members[0]["model_id"]]).fetchall()
    return row[0][0] if row else None


def _class_count(con: duckdb.DuckDBPyConnection, task: str, suite: str | None) -> int | None:
    row = con.execute("SELECT json_array_length(labels) FROM task_heads h "
                      "WHERE same_suite(h, {'task': ?::VARCHAR, 'suite': ?::VARCHAR})",
                      [task, suite]).fetchall()
    return int(row[0][0]) if row and row[0][0] is not None else None


def _iid(con: duckdb.DuckDBPyConnection, ids: list[str], rule: str, task: str, n_classes: int | None,
         primary: str | None) -> list[IIDResult]:
    out = []
    for (split,) in con.execute("SELECT DISTINCT split FROM iid_predictions WHERE model_id = ? ORDER BY split",
                                [ids[0]]).fetchall():
        per = [con.execute("SELECT example_idx, gold, pred, correct FROM iid_predictions WHERE model_id = ? AND "
                           "split = ? ORDER BY example_idx", [m, split]).fetchall() for m in ids]
        if any(len(p) != len(per[0]) or [r[0] for r in p] != [r[0] for r in per[0]] for p in per):
            raise BelugaError(f"ensemble members were scored on different {split} examples; they must share D_{split}")
        gold = [r[1] for r in per[0]]
        if n_classes is None:   # span models: a vote over answers (correct exactly when a member with it was)
            answers = np.array([[r[2] for r in p] for p in per], dtype=object)
            correct_of = {(i, a): bool(p[i][3]) for p in per for i, a in enumerate(r[2] for r in p)}
            if rule != "vote":
                raise BelugaError("answers (span models) can only be ensembled by vote")
            chosen = [majority(list(answers[:, i])) for i in range(answers.shape[1])]
            correct = np.array([correct_of[(i, a)] for i, a in enumerate(chosen)], dtype=bool)
            metrics = {"exact_match": float(correct.mean()) if len(correct) else float("nan")}
            out.append(IIDResult(split, gold, [str(a) for a in chosen], correct, metrics, "exact_match"))
            continue
        labels = np.array([[int(r[2]) for r in p] for p in per], dtype=np.int64)
        probs = _iid_probs(con, ids, split, len(gold))
        pred, vector = combine(labels, probs, rule, n_classes)
        gold_ids = np.array([int(g) for g in gold], dtype=np.int64)
        plugin = TASKS.get(task)()
        metrics = plugin.iid_metrics(pred, gold_ids) if hasattr(plugin, "iid_metrics") else {}
        metrics.setdefault("accuracy", float(np.mean(pred == gold_ids)))
        out.append(IIDResult(split, gold, [str(int(p)) for p in pred], pred == gold_ids, metrics,
                             primary if primary is not None and primary in metrics else "accuracy",
                             vector.astype(np.float32)))
    return out


def _iid_probs(con: duckdb.DuckDBPyConnection, ids: list[str], split: str, n: int) -> np.ndarray | None:
    stacks = []
    for m in ids:
        rows = con.execute("SELECT probs FROM iid_probs WHERE model_id = ? AND split = ? ORDER BY example_idx",
                           [m, split]).fetchall()
        if len(rows) != n:
            return None
        stacks.append(np.array([r[0] for r in rows], dtype=np.float64))
    return np.stack(stacks)


def _cases(con: duckdb.DuckDBPyConnection, ids: list[str], rule: str) -> dict[str, tuple[list[str], FlatPredictions]]:
    """Per suite: the case ids every member has predictions for, and the combined per-input predictions."""
    out: dict[str, tuple[list[str], FlatPredictions]] = {}
    suites = [r[0] for r in con.execute("SELECT DISTINCT suite FROM case_predictions WHERE model_id = ? ORDER BY 1",
                                        [ids[0]]).fetchall()]
    for suite in suites:
        per = []
        for m in ids:
            rows = con.execute("""SELECT case_id, input_idx, probs, answer FROM case_predictions WHERE model_id = ?
                                  AND suite = ? ORDER BY case_id, input_idx""", [m, suite]).fetchall()
            per.append(rows)
        keys = [(r[0], r[1]) for r in per[0]]
        if any([(r[0], r[1]) for r in p] != keys for p in per):
            raise BelugaError(f"ensemble members predicted different cases of suite '{suite}'")
        case_ids = list(dict.fromkeys(k[0] for k in keys))
        lengths = [sum(1 for k in keys if k[0] == c) for c in case_ids]
        if per[0] and per[0][0][2] is None:   # answers
            answers = np.array([[r[3] for r in p] for p in per], dtype=object)
            voted = [majority(list(answers[:, i])) for i in range(answers.shape[1])]
            out[suite] = (case_ids, FlatPredictions.from_arrays(answers=voted, lengths=lengths))
            continue
        probs = np.array([[r[2] for r in p] for p in per], dtype=np.float64)   # [members, inputs, labels]
        labels = probs.argmax(axis=-1)
        _, vector = combine(labels, probs, rule, probs.shape[-1])
        out[suite] = (case_ids, FlatPredictions.from_arrays(probs=vector, lengths=lengths))
    return out


def _label_space(con: duckdb.DuckDBPyConnection, suite: str) -> list[str] | None:
    rows = con.execute("SELECT label_space::VARCHAR FROM suites WHERE suite = ?", [suite]).fetchall()
    return json.loads(rows[0][0]) if rows and rows[0][0] else None


def _specs(con: duckdb.DuckDBPyConnection, suite: str, case_ids: list[str]) -> list[Case]:
    rows = dict(con.execute("SELECT case_id, spec::VARCHAR FROM case_specs WHERE suite = ?", [suite]).fetchall())
    missing = [c for c in case_ids if c not in rows]
    if missing:
        raise BelugaError(f"suite '{suite}': {len(missing)} case(s) without a stored definition (case_specs), e.g. "
                          f"{missing[:3]}; the store was written by an older beluga: re-run the config to record them")
    return [Case.model_validate_json(rows[c]) for c in case_ids]


def build_ensemble(store: StoreArg, spec: EnsembleSpec, *, run_id: str | None = None) -> list[str]:
    """Write the ensemble's model rows (one per scenario group of its members) to ``store``, open for writing (a path:
    opened for this call); returns their ids."""
    if spec.rule not in RULES:
        raise BelugaError(f"ensemble '{spec.name}': rule '{spec.rule}', expected one of {', '.join(RULES)}")
    results: list[JobResult] = []
    with held(store, write=True) as opened:
        con = opened.con
        members = _members(con, spec)
        if len(members) < 2:
            raise BelugaError(f"ensemble '{spec.name}': its selectors name {len(members)} model(s); an ensemble "
                              "needs at least 2")
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
        for m in members:
            groups[(m["scenario"], m["heldout_level"], m["heldout_group"])].append(m)
        sizes = {len(v) for v in groups.values()}
        if len(sizes) > 1:
            raise BelugaError(f"ensemble '{spec.name}': its members cover the scenarios unevenly "
                              f"({ {k[0] + ('/' + str(k[2]) if k[2] else ''): len(v) for k, v in groups.items()} })")
        first = members[0]
        n_classes = _class_count(con, first["task"], first["suite"])
        primary = con.execute("SELECT metric FROM iid_metrics WHERE model_id = ? AND is_primary LIMIT 1",
                              [first["model_id"]]).fetchall()
        trained = dict(con.execute("SELECT model_id, trained_group FROM models").fetchall())
        splits = dict(con.execute("SELECT model_id, split_id FROM models").fetchall())
        for (scenario, level, group), rows in sorted(groups.items(), key=lambda kv: str(kv[0])):
            ids = [r["model_id"] for r in rows]
            iid = _iid(con, ids, spec.rule, first["task"], n_classes, primary[0][0] if primary else None)
            combined = _cases(con, ids, spec.rule)
            outcomes = Outcomes.of([], [])
            cross: list[CrossResult] = []
            kept: list[CasePredictions] = []
            for suite, (case_ids, flat) in combined.items():
                codes = evaluate_cases(_specs(con, suite, case_ids), flat, label_space=_label_space(con, suite))
                o = Outcomes.of(case_ids, [OUTCOME_NAMES[int(c)] for c in codes],
                                [None] * len(case_ids) if flat.probs is None else
                                [str(int(np.argmax(flat.probs[flat.offsets[i]]))) for i in range(len(case_ids))])
                kept.append(CasePredictions(suite, case_ids, flat))
                if suite == first["suite"]:
                    outcomes = o
                else:
                    cross_digest = con.execute("SELECT cases_digest FROM cross_evaluations WHERE model_id = ? AND "
                                               "suite = ?", [ids[0], suite]).fetchall()
                    cross.append(CrossResult(suite, cross_digest[0][0] if cross_digest else "", o))
            if not len(outcomes) and first["suite"] is not None:
                raise BelugaError(f"ensemble '{spec.name}': its members have no stored case predictions; run them "
                                  "with [store] keep_probabilities = true")
            model_id = "ensemble-" + digest([spec.name, spec.rule, sorted(ids)])[:32]
            record = ModelRecord(
                model_id=model_id, task=first["task"], suite=first["suite"], model_name=first["model_name"],
                config=first["config"], method=spec.name, scenario=scenario, heldout_level=level,
                heldout_group=group, trained_level=(parse_only(scenario) or (None, None))[0],
                trained_group=trained.get(ids[0]), seed=None, split_seed=first["split_seed"], variant=first["variant"],
                split_id=splits.get(ids[0]),
                hparams={"ensemble": spec.name, "rule": spec.rule, "members": ids,
                         "vote_share": spec.rule == "vote", "selectors": list(spec.members)},
                parent_model_id=_baseline(con, rows), finished_at=datetime.now(UTC))
            results.append(JobResult(record, outcomes, iid, cross=cross, predictions=kept))
        # The ensemble's earlier rows (its members have changed since: another id) are replaced, not kept beside.
        stale = [r[0] for r in con.execute(
            "SELECT model_id FROM models WHERE method = ? AND hparams->>'ensemble' = ? AND config = ? AND variant = ?",
            [spec.name, spec.name, first["config"], first["variant"]]).fetchall()
            if r[0] not in {x.id for x in results}]
        opened.writer().commit_many(results, run_id, replacing=stale)
    return [r.id for r in results]
