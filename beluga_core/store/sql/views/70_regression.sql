-- Regression between model versions (docs/reference/store.md "Regression"): negative flips of every model against its
-- old model, on D_test and on the suite's T_test cases, and the same for any two model ids (table macros).
--
-- NFR = (old right, new wrong) / n, PFR = (old wrong, new right) / n, Δacc = PFR − NFR = acc_new − acc_old,
-- relative NFR = NFR / (acc_old · error_new) (NFR relative to independent errors; NULL where the new model
-- makes no error or the old one gets nothing right). On suite cases "right" is a pass; a case skipped by either
-- model is left out of n and counted.

-- Every done model's old model: its recorded parent (an IID→T fold's IID model, an ensemble's declared
-- baseline, an update started from the IID model), else the IID baseline (iid / vanilla / standard) of its
-- task, suite, model name, seed and split seed (the latest, if a store holds several).
CREATE OR REPLACE VIEW regression_pairs AS
WITH baselines AS (
    SELECT model_id, task, suite, model_name, seed, split_seed, variant
    FROM models
    WHERE status = 'done' AND config = 'iid' AND method = 'vanilla' AND scenario = 'standard'
    QUALIFY row_number() OVER (PARTITION BY task, suite, model_name, seed, split_seed, variant
                               ORDER BY finished_at DESC, model_id) = 1
)
SELECT m.model_id, m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group,
       m.trained_group, m.seed, m.split_seed, m.variant,
       coalesce(p.model_id, b.model_id) AS old_model_id,
       CASE WHEN p.model_id IS NOT NULL THEN 'parent' ELSE 'baseline' END AS old_source
FROM models m
LEFT JOIN models p ON p.model_id = m.parent_model_id AND p.status = 'done'
LEFT JOIN baselines b
       ON same_draw(b, m)
WHERE m.status = 'done' AND coalesce(p.model_id, b.model_id) IS NOT NULL
  AND coalesce(p.model_id, b.model_id) <> m.model_id;

-- Per model, i.i.d. example (D_test; D_val where stored) and its old model's prediction of it.
CREATE OR REPLACE VIEW iid_flips AS
SELECT r.task, r.suite, r.model_name, r.config, r.method, r.scenario, r.heldout_group, r.seed, r.split_seed, r.variant,
       r.model_id, r.old_model_id, n.split, n.example_idx, n.gold, o.pred AS old_pred, n.pred AS new_pred,
       o.correct AS old_correct, n.correct AS new_correct,
       CASE WHEN o.correct AND NOT n.correct THEN 'negative'
            WHEN NOT o.correct AND n.correct THEN 'positive' ELSE 'none' END AS flip
FROM regression_pairs r
JOIN iid_predictions n ON n.model_id = r.model_id
JOIN iid_predictions o ON o.model_id = r.old_model_id AND o.split = n.split AND o.example_idx = n.example_idx;

-- NFR, PFR and Δacc of every model with i.i.d. predictions against its old model, per split.
CREATE OR REPLACE VIEW regression_iid AS
WITH counts AS (
    SELECT task, suite, model_name, config, method, scenario, heldout_group, seed, split_seed, variant, model_id,
           old_model_id, split,
           count(*) AS n,
           count(*) FILTER (WHERE flip = 'negative') AS n_neg,
           count(*) FILTER (WHERE flip = 'positive') AS n_pos,
           mean_of(old_correct::INT) AS acc_old,
           mean_of(new_correct::INT) AS acc_new
    FROM iid_flips
    GROUP BY ALL
)
SELECT task, suite, model_name, config, method, scenario, heldout_group, seed, split_seed, variant, model_id,
       old_model_id, split, n, n_neg, n_pos,
       n_neg / n AS nfr, n_pos / n AS pfr, acc_old, acc_new, n_pos / n - n_neg / n AS delta_acc,
       CASE WHEN acc_new = 1 OR acc_old = 0 THEN NULL
            ELSE (n_neg / n) / (acc_old * (1 - acc_new)) END AS rel_nfr
FROM counts;

-- Per model and T_test case it was scored on, the old model's outcome of the same case.
CREATE OR REPLACE VIEW case_flips AS
SELECT r.task, r.suite, r.model_name, r.config, r.method, r.scenario, r.heldout_group, r.seed, r.split_seed, r.variant,
       r.model_id, r.old_model_id, n.case_id, c.test_type, c.scoring_group, c.groups,
       o.outcome AS old_outcome, n.outcome AS new_outcome,
       CASE WHEN o.outcome = 'skip' OR n.outcome = 'skip' THEN 'skip'
            WHEN o.outcome = 'pass' AND n.outcome = 'fail' THEN 'negative'
            WHEN o.outcome = 'fail' AND n.outcome = 'pass' THEN 'positive' ELSE 'none' END AS flip
FROM regression_pairs r
JOIN outcomes n ON n.model_id = r.model_id
JOIN outcomes o ON o.model_id = r.old_model_id AND o.suite = n.suite AND o.case_id = n.case_id
JOIN cases c ON c.suite = n.suite AND c.case_id = n.case_id;

-- Suite-case regression per scenario key (a held-out scenario assembled from its fold models, as g_scores
-- does) and scoring group; scoring_group NULL: all of the scenario's cases.
CREATE OR REPLACE VIEW regression_cases AS
WITH counts AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, scoring_group,
           count(*) FILTER (WHERE flip <> 'skip') AS n,
           count(*) FILTER (WHERE flip = 'skip') AS n_skipped,
           count(*) FILTER (WHERE flip = 'negative') AS n_neg,
           count(*) FILTER (WHERE flip = 'positive') AS n_pos,
           count(DISTINCT model_id) AS n_models,
           string_agg(DISTINCT old_model_id, ',' ORDER BY old_model_id) AS old_model_ids
    FROM case_flips
    GROUP BY GROUPING SETS ((task, suite, model_name, config, method, scenario, seed, split_seed, variant, scoring_group),
                            (task, suite, model_name, config, method, scenario, seed, split_seed, variant))
)
SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, scoring_group, n, n_skipped, n_neg,
       n_pos,
       CASE WHEN n > 0 THEN n_neg / n END AS nfr,
       CASE WHEN n > 0 THEN n_pos / n END AS pfr,
       CASE WHEN n > 0 THEN n_pos / n - n_neg / n END AS delta_pass_rate,
       n_models, old_model_ids
FROM counts;

-- Every i.i.d. example and suite case two models share (source 'iid': part = split, item = example_idx;
-- source 'suite': part = suite, item = case_id), with both outcomes and the flip from old_id to new_id.
CREATE OR REPLACE MACRO flips_between(old_id, new_id) AS TABLE
SELECT 'iid' AS source, n.split AS part, n.example_idx::VARCHAR AS item,
       CASE WHEN o.correct THEN 'right' ELSE 'wrong' END AS old_outcome,
       CASE WHEN n.correct THEN 'right' ELSE 'wrong' END AS new_outcome,
       CASE WHEN o.correct AND NOT n.correct THEN 'negative'
            WHEN NOT o.correct AND n.correct THEN 'positive' ELSE 'none' END AS flip
FROM iid_predictions o
JOIN iid_predictions n ON n.split = o.split AND n.example_idx = o.example_idx
WHERE o.model_id = old_id AND n.model_id = new_id
UNION ALL
SELECT 'suite', n.suite, n.case_id, o.outcome, n.outcome,
       CASE WHEN o.outcome = 'skip' OR n.outcome = 'skip' THEN 'skip'
            WHEN o.outcome = 'pass' AND n.outcome = 'fail' THEN 'negative'
            WHEN o.outcome = 'fail' AND n.outcome = 'pass' THEN 'positive' ELSE 'none' END
FROM outcomes o
JOIN outcomes n ON n.suite = o.suite AND n.case_id = o.case_id
WHERE o.model_id = old_id AND n.model_id = new_id;

-- regression_iid / regression_cases for any two model ids, per source and part.
CREATE OR REPLACE MACRO regression_between(old_id, new_id) AS TABLE
WITH counts AS (
    SELECT source, part,
           count(*) FILTER (WHERE flip <> 'skip') AS n,
           count(*) FILTER (WHERE flip = 'skip') AS n_skipped,
           count(*) FILTER (WHERE flip = 'negative') AS n_neg,
           count(*) FILTER (WHERE flip = 'positive') AS n_pos,
           count(*) FILTER (WHERE old_outcome IN ('right', 'pass')) AS n_old_right,
           count(*) FILTER (WHERE new_outcome IN ('right', 'pass')) AS n_new_right
    FROM flips_between(old_id, new_id)
    GROUP BY source, part
)
SELECT source, part, n, n_skipped, n_neg, n_pos,
       CASE WHEN n > 0 THEN n_neg / n END AS nfr, CASE WHEN n > 0 THEN n_pos / n END AS pfr,
       CASE WHEN n > 0 THEN n_pos / n - n_neg / n END AS delta_acc,
       CASE WHEN n > 0 AND n_old_right > 0 AND n_new_right < n
            THEN (n_neg / n) / ((n_old_right / n) * (1 - n_new_right / n)) END AS rel_nfr
FROM counts;

-- Stored NFR tests (beluga regress) with a `stale` flag: the three models changed since (re-trained or
-- replaced: another finished_at).
CREATE OR REPLACE VIEW regression_test_status AS
SELECT t.*,
       md5(coalesce(strftime(o.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '') || '|'
           || coalesce(strftime(a.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '') || '|'
           || coalesce(strftime(b.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '')) AS current_digest,
       md5(coalesce(strftime(o.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '') || '|'
           || coalesce(strftime(a.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '') || '|'
           || coalesce(strftime(b.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), '')) <> t.inputs_digest AS stale
FROM regression_tests t
LEFT JOIN models o ON o.model_id = t.old_model_id
LEFT JOIN models a ON a.model_id = t.a_model_id
LEFT JOIN models b ON b.model_id = t.b_model_id;

-- regression_iid and regression_cases pooled over replicates (seeds, split seeds, model names) per (task, suite,
-- config, method, variant, scenario): the report's regression section. source 'iid' (part: the split) or 'suite' (part:
-- the suite; scoring_group NULL: all of the scenario's cases).
CREATE OR REPLACE VIEW regression_summary AS
SELECT task, suite, config, method, variant, scenario, 'iid' AS source, split AS part, NULL::VARCHAR AS scoring_group,
       sum(n)::BIGINT AS n, sum(n_neg)::BIGINT AS n_neg, sum(n_pos)::BIGINT AS n_pos,
       sum(n_neg) / sum(n) AS nfr, sum(n_pos) / sum(n) AS pfr, count(*) AS n_models
FROM regression_iid
GROUP BY ALL
UNION ALL
SELECT task, suite, config, method, variant, scenario, 'suite', suite, scoring_group,
       sum(n)::BIGINT, sum(n_neg)::BIGINT, sum(n_pos)::BIGINT,
       CASE WHEN sum(n) > 0 THEN sum(n_neg) / sum(n) END, CASE WHEN sum(n) > 0 THEN sum(n_pos) / sum(n) END,
       sum(n_models)::BIGINT
FROM regression_cases
GROUP BY ALL;
