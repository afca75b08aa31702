"""The invariants the store's views rely on, checked on a finished (or interrupted) store: ``beluga store check``.

Each invariant is a query returning the rows that break it, so a violation is reported with what to look at.
The views (pass rates, s_T, G) silently average whatever rows are there; a duplicated outcome, a fold scored
outside its held-out group or a model that trained on other cases than its split says would skew them without
any error, which is what these checks are for.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import duckdb

from beluga_core.core.hashing import sorted_ids_digest
from beluga_core.store.migrations import SCHEMA_VERSION

# A case's group at a model's held-out level (the store's macro: checks run on a store of this schema only).
_HELDOUT_GROUP = "case_group(c.test_type, c.groups, m.heldout_level)"
# Models whose suite outcomes come from a split of this store (not external evaluations).
_SPLIT_MODELS = "m.status = 'done' AND m.split_id IS NOT NULL"


@dataclass(frozen=True)
class Invariant:
    name: str
    rule: str
    sql: str


INVARIANTS: tuple[Invariant, ...] = (
    Invariant("no duplicate outcomes", "a model has at most one outcome per case",
              "SELECT model_id, suite, case_id, count(*) AS n FROM outcomes GROUP BY ALL HAVING count(*) > 1"),
    Invariant("one outcome per T_test case and scenario key",
              "within a scenario key (task, model, configuration, method, variant, scenario, seed, split seed) a "
              "case is scored once",
              """SELECT m.task, m.model_name, m.config, m.method, m.variant, m.scenario, m.seed, m.split_seed,
                        o.case_id, count(*) AS n
                 FROM outcomes o JOIN models m USING (model_id)
                 WHERE m.status = 'done' GROUP BY ALL HAVING count(*) > 1"""),
    Invariant("one done model per slot",
              "a scenario key and held-out (or trained) group has one done model: two would be two settings in one "
              "view row",
              """SELECT task, suite, model_name, config, method, variant, scenario, heldout_group, trained_group,
                        seed, split_seed, count(*) AS n, list(model_id ORDER BY model_id) AS model_ids
                 FROM models WHERE status = 'done' GROUP BY ALL HAVING count(*) > 1"""),
    Invariant("failed jobs keep their error", "a failed model or grid point records its error and attempts",
              """SELECT 'model' AS kind, model_id AS id FROM models
                 WHERE status = 'failed' AND (error IS NULL OR (settings IS NOT NULL AND attempts IS NULL))
                 UNION ALL
                 SELECT 'grid point', grid_id FROM grid_points
                 WHERE status = 'failed' AND (error IS NULL OR (settings IS NOT NULL AND attempts IS NULL))"""),
    Invariant("outcomes only on kept T_test cases", "a model is scored on the T_test cases its split kept",
              f"""SELECT o.model_id, o.case_id, s.part, s.kept FROM outcomes o JOIN models m USING (model_id)
                  LEFT JOIN case_splits s ON s.split_id = m.split_id AND s.case_id = o.case_id
                  WHERE {_SPLIT_MODELS} AND (s.part IS DISTINCT FROM 'test' OR NOT s.kept)"""),
    Invariant("every kept T_test case in scope scored",
              "a done model has an outcome on every kept T_test case of its scope (its held-out group for a fold)",
              f"""SELECT m.model_id, m.scenario, m.heldout_group, s.case_id
                  FROM models m JOIN case_splits s ON s.split_id = m.split_id
                  JOIN cases c ON c.suite = m.suite AND c.case_id = s.case_id
                  WHERE {_SPLIT_MODELS} AND s.part = 'test' AND s.kept
                    AND (m.heldout_level IS NULL OR {_HELDOUT_GROUP} = m.heldout_group)
                    AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.model_id = m.model_id
                                    AND o.suite = m.suite AND o.case_id = s.case_id)"""),
    Invariant("fold outcomes inside the held-out group", "a held-out fold is scored only on its held-out group",
              f"""SELECT o.model_id, m.heldout_level, m.heldout_group, o.case_id, {_HELDOUT_GROUP} AS case_group
                  FROM outcomes o JOIN models m USING (model_id)
                  JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                  WHERE m.heldout_level IS NOT NULL AND {_HELDOUT_GROUP} IS DISTINCT FROM m.heldout_group"""),
    Invariant("no training case scored", "no model is scored on a case it trained on (view training_leaks)",
              "SELECT * FROM training_leaks"),
    Invariant("i.i.d. metrics of the models G reads",
              "a done IID (standard) or seen model has its primary i.i.d. test metric",
              """SELECT m.model_id, m.config, m.scenario FROM models m
                 WHERE m.status = 'done' AND m.scenario IN ('standard', 'seen') AND m.config <> 'external'
                   AND NOT EXISTS (SELECT 1 FROM iid_metrics x WHERE x.model_id = m.model_id
                                   AND x.split = 'test' AND x.is_primary)"""),
    Invariant("outcomes of every done model", "a done model has suite outcomes",
              """SELECT m.model_id, m.config, m.scenario FROM models m
                 WHERE m.status = 'done' AND NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.model_id = m.model_id)"""),
    Invariant("no duplicate cross-suite outcomes", "a model has at most one outcome per eval-suite case",
              """SELECT model_id, suite, case_id, count(*) AS n FROM cross_outcomes GROUP BY ALL
                 HAVING count(*) > 1"""),
    Invariant("cross-suite evaluations complete", "a model's recorded evaluation on an eval suite counts as many "
              "outcomes as it has there, and no outcome lacks its evaluation record",
              """SELECT coalesce(e.model_id, o.model_id) AS model_id, coalesce(e.suite, o.suite) AS suite,
                        e.n_cases, o.n_outcomes
                 FROM cross_evaluations e
                 FULL JOIN (SELECT model_id, suite, count(*) AS n_outcomes FROM cross_outcomes GROUP BY ALL) o
                        ON o.model_id = e.model_id AND o.suite = e.suite
                 WHERE e.n_cases IS DISTINCT FROM coalesce(o.n_outcomes, 0)"""),
    Invariant("kept probabilities match the predictions",
              "a model's iid_probs cover exactly its iid_predictions examples, and their argmax is its prediction "
              "(a vote ensemble's tie aside)",
              """SELECT coalesce(p.model_id, q.model_id) AS model_id, coalesce(p.split, q.split) AS split,
                        coalesce(p.example_idx, q.example_idx) AS example_idx, q.pred,
                        list_position(p.probs, list_max(p.probs)) - 1 AS argmax
                 FROM iid_probs p
                 FULL JOIN (SELECT * FROM iid_predictions WHERE model_id IN (SELECT model_id FROM iid_probs)) q
                        ON q.model_id = p.model_id AND q.split = p.split AND q.example_idx = p.example_idx
                 WHERE p.model_id IS NULL OR q.model_id IS NULL
                    OR ((list_position(p.probs, list_max(p.probs)) - 1)::VARCHAR <> q.pred
                        -- a vote ensemble's vector is the vote share: a tie's argmax need not be its prediction
                        AND p.model_id NOT IN (SELECT model_id FROM models WHERE hparams->>'vote_share' = 'true'))"""),
    Invariant("no duplicate kept case predictions", "a model has at most one case_predictions row per input",
              """SELECT model_id, suite, case_id, input_idx, count(*) AS n FROM case_predictions GROUP BY ALL
                 HAVING count(*) > 1"""),
    Invariant("ensemble members are models of the store", "every id in an ensemble's hparams.members is a done "
              "model",
              """SELECT e.model_id, m.member FROM models e,
                        unnest(from_json(e.hparams->'members', '["VARCHAR"]')) AS m(member)
                 WHERE e.hparams->>'ensemble' IS NOT NULL AND e.status = 'done'
                   AND m.member NOT IN (SELECT model_id FROM models WHERE status = 'done')"""),
    Invariant("attributions reference existing cases and tokenizations",
              "every attribution row's case is in `cases`, its input in `attribution_inputs` with one score per token, "
              "and its model scored that case",
              """SELECT a.model_id, a.suite, a.case_id, a.method, c.case_id IS NULL AS no_case,
                        i.input_digest IS NULL AS no_input, len(a.scores) AS n_scores,
                        json_array_length(i.tokens) AS n_tokens
                 FROM attributions a
                 LEFT JOIN cases c ON c.suite = a.suite AND c.case_id = a.case_id
                 LEFT JOIN attribution_inputs i ON i.tokenizer = a.tokenizer AND i.input_digest = a.input_digest
                 WHERE c.case_id IS NULL OR i.input_digest IS NULL
                    OR len(a.scores) <> json_array_length(i.tokens)
                    OR NOT EXISTS (SELECT 1 FROM outcomes o WHERE o.model_id = a.model_id AND o.suite = a.suite
                                   AND o.case_id = a.case_id)
                       AND NOT EXISTS (SELECT 1 FROM cross_outcomes x WHERE x.model_id = a.model_id
                                       AND x.suite = a.suite AND x.case_id = a.case_id)
                       AND NOT EXISTS (SELECT 1 FROM probe_outcomes q WHERE q.model_id = a.model_id
                                       AND q.suite = a.suite AND q.case_id = a.case_id)"""),
    Invariant("no duplicate probe outcomes", "a model has at most one outcome per probe-pool case",
              """SELECT model_id, suite, case_id, count(*) AS n FROM probe_outcomes GROUP BY ALL
                 HAVING count(*) > 1"""),
    Invariant("probe pools unseen by their candidates",
              "no probe-pool case is a T_test case or a training case of a model that held its group out",
              """SELECT p.level, p.grp, p.case_id, 'T_test case' AS problem FROM fewshot_pools p
                 JOIN case_splits s ON s.split_id = p.split_id AND s.case_id = p.case_id WHERE s.part = 'test'
                 UNION ALL
                 SELECT p.level, p.grp, p.case_id, 'trained on by ' || m.model_id FROM fewshot_pools p
                 JOIN models m ON m.split_id = p.split_id AND m.heldout_level = p.level AND m.heldout_group = p.grp
                 JOIN model_training_cases t ON t.model_id = m.model_id AND t.case_id = p.case_id"""),
    Invariant("held-out folds judged on their mapped eval cases",
              "a held-out fold is evaluated only on the eval cases mapped to its held-out group (cross_maps)",
              """SELECT o.model_id, m.heldout_level, m.heldout_group, o.suite, o.case_id, x.train_group
                 FROM cross_outcomes o JOIN models m USING (model_id)
                 LEFT JOIN cross_maps x ON x.task = m.task AND x.train_suite = m.suite AND x.eval_suite = o.suite
                                       AND x.level = m.heldout_level AND x.case_id = o.case_id
                 WHERE m.heldout_level IS NOT NULL AND x.train_group IS DISTINCT FROM m.heldout_group"""),
)


@dataclass
class Violation:
    name: str
    rule: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    total: int


def check_store(con: duckdb.DuckDBPyConnection, *, sample: int = 5) -> tuple[list[Violation], int]:
    """(the violated invariants, each with up to ``sample`` offending rows; how many invariants were checked)."""
    found: list[Violation] = []
    version = int(con.execute("SELECT value FROM beluga_meta WHERE key = 'schema_version'").fetchone()[0])  # type: ignore[index]
    if version != SCHEMA_VERSION:
        # An older store lacks tables and views the checks read; writing to it (beluga run) migrates it.
        found.append(Violation("schema version known", f"the store's schema is this beluga's ({SCHEMA_VERSION})",
                               ["schema_version"], [(version,)], 1))
        return found, 1
    for inv in INVARIANTS:
        total = con.execute(f"SELECT count(*) FROM ({inv.sql})").fetchone()[0]  # type: ignore[index]
        if total:
            rel = con.execute(f"SELECT * FROM ({inv.sql}) LIMIT {sample}")
            found.append(Violation(inv.name, inv.rule, [d[0] for d in rel.description], rel.fetchall(), total))
    digests = _training_digest_mismatches(con)
    if digests:
        found.append(Violation("training cases as recorded",
                               "the sha256 of the cases a model trained on (as its worker saw them) equals that of "
                               "the cases its split and held-out group give (view model_training_cases)",
                               ["model_id", "train_digest", "recomputed"], digests[:sample], len(digests)))
    return found, len(INVARIANTS) + 2


def _training_digest_mismatches(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str | None, str | None]]:
    ids: dict[str, list[str]] = defaultdict(list)
    for model_id, case_id in con.execute("SELECT model_id, case_id FROM model_training_cases").fetchall():
        ids[model_id].append(case_id)
    out = []
    for model_id, digest in con.execute("SELECT model_id, train_digest FROM models WHERE status = 'done' "
                                        "AND split_id IS NOT NULL ORDER BY model_id").fetchall():
        recomputed = sorted_ids_digest(ids[model_id]) if ids.get(model_id) else None
        if recomputed != digest:
            out.append((model_id, digest, recomputed))
    return out
