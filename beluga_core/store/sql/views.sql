-- beluga result store: every aggregate, as plain SQL views (see schemas/store.md).
--
-- Readable by any DuckDB client with nothing of beluga installed. The writer re-creates these views each
-- time it opens a store, so a fixed definition reaches old stores without a schema migration.
--
-- A "scenario key" is (task, suite, model_name, config, method, scenario, seed, split_seed): the models of
-- one key together give one outcome per T_test case (one model for standard / seen, one fold model per
-- held-out group otherwise). Only models with status 'done' count. Key columns may be NULL (e.g. seed of an
-- external evaluation), hence the IS NOT DISTINCT FROM joins.

-- Pass rate of every scoring group, per scenario key (docs/method.md, "Scores"). Skips are left out of the rate; a
-- group whose cases all skipped has pass_rate NULL. `excluded` marks groups in g_exclusions.
CREATE OR REPLACE VIEW pass_rates AS
WITH counts AS (
    SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed,
           c.scoring_group,
           count(*) FILTER (WHERE o.outcome = 'pass') AS n_pass,
           count(*) FILTER (WHERE o.outcome = 'fail') AS n_fail,
           count(*) FILTER (WHERE o.outcome = 'skip') AS n_skip,
           count(DISTINCT o.model_id) AS n_models
    FROM outcomes o
    JOIN models m ON m.model_id = o.model_id
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE m.status = 'done'
    GROUP BY m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed,
             c.scoring_group
)
SELECT k.task, k.suite, k.model_name, k.config, k.method, k.scenario, k.seed, k.split_seed, k.scoring_group,
       k.n_pass, k.n_fail, k.n_skip,
       CASE WHEN k.n_pass + k.n_fail = 0 THEN NULL
            ELSE k.n_pass::DOUBLE / (k.n_pass + k.n_fail) END AS pass_rate,
       (x.scoring_group IS NOT NULL) AS excluded,
       k.n_models
FROM counts k
LEFT JOIN g_exclusions x ON x.task = k.task AND x.scoring_group = k.scoring_group;

-- s_T per scenario key: unweighted mean of the pass rates of the groups that are neither excluded nor
-- without an evaluable case. n_cases lets a reader spot an incomplete held-out scenario (a fold not yet
-- done or failed): it should equal the seen / standard scenario's n_cases.
CREATE OR REPLACE VIEW suite_scores AS
SELECT task, suite, model_name, config, method, scenario, seed, split_seed,
       avg(pass_rate) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS s_suite,
       count(*) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS n_groups,
       count(*) FILTER (WHERE NOT excluded AND pass_rate IS NULL) AS n_groups_no_evaluable,
       count(*) FILTER (WHERE excluded) AS n_groups_excluded,
       sum(n_pass + n_fail + n_skip)::BIGINT AS n_cases
FROM pass_rates
GROUP BY task, suite, model_name, config, method, scenario, seed, split_seed;

-- Every done model's primary i.i.d. metric on D_test (fold models included).
CREATE OR REPLACE VIEW model_iid_scores AS
SELECT m.model_id, m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group,
       m.seed, m.split_seed, x.metric, x.value AS s_iid
FROM models m
JOIN iid_metrics x ON x.model_id = m.model_id AND x.split = 'test' AND x.is_primary
WHERE m.status = 'done';

-- The s_iid that G uses for a (task, suite, model_name, config, method, seed, split_seed): that of its
-- 'seen' model (a configuration trained on suite data); when there is none, that of its 'standard' model
-- (the IID baseline, config 'iid'; an external evaluation).
CREATE OR REPLACE VIEW iid_scores AS
SELECT task, suite, model_name, config, method, seed, split_seed, model_id, scenario AS source_scenario,
       metric, s_iid
FROM (
    SELECT *, row_number() OVER (
               PARTITION BY task, suite, model_name, config, method, seed, split_seed
               ORDER BY CASE scenario WHEN 'seen' THEN 0 ELSE 1 END, model_id) AS rank_
    FROM model_iid_scores
    WHERE scenario IN ('seen', 'standard')
) AS ranked
WHERE rank_ = 1;

-- G = 2·s_T·s_iid / (s_T + s_iid) per scenario key (0 when both are 0; NULL when either is missing).
CREATE OR REPLACE VIEW g_scores AS
SELECT s.task, s.suite, s.model_name, s.config, s.method, s.scenario, s.seed, s.split_seed,
       s.s_suite, i.s_iid,
       CASE WHEN s.s_suite IS NULL OR i.s_iid IS NULL THEN NULL
            WHEN s.s_suite + i.s_iid = 0 THEN 0.0
            ELSE 2 * s.s_suite * i.s_iid / (s.s_suite + i.s_iid) END AS g,
       i.metric AS iid_metric, i.model_id AS iid_model_id,
       s.n_groups, s.n_groups_no_evaluable, s.n_groups_excluded, s.n_cases
FROM suite_scores s
LEFT JOIN iid_scores i
       ON i.task = s.task
      AND i.suite IS NOT DISTINCT FROM s.suite
      AND i.model_name IS NOT DISTINCT FROM s.model_name
      AND i.config = s.config
      AND i.method = s.method
      AND i.seed IS NOT DISTINCT FROM s.seed
      AND i.split_seed IS NOT DISTINCT FROM s.split_seed;

-- Mean and spread of the g_scores rows over replicates (seeds and split seeds).
CREATE OR REPLACE VIEW g_summary AS
SELECT task, suite, model_name, config, method, scenario,
       count(*) AS n_replicates,
       count(g) AS n_g,
       avg(g) AS g_mean,
       stddev_samp(g) AS g_std,
       avg(s_suite) AS s_suite_mean,
       avg(s_iid) AS s_iid_mean
FROM g_scores
GROUP BY task, suite, model_name, config, method, scenario;

-- Progress of a run: models done / failed per scenario key, failed ones included.
CREATE OR REPLACE VIEW models_status AS
SELECT task, suite, model_name, config, method, scenario, seed, split_seed,
       count(*) AS n_models,
       count(*) FILTER (WHERE status = 'done') AS n_done,
       count(*) FILTER (WHERE status = 'failed') AS n_failed,
       sum(train_seconds) FILTER (WHERE status = 'done') AS train_seconds,
       sum(eval_seconds) FILTER (WHERE status = 'done') AS eval_seconds,
       max(finished_at) AS last_finished_at
FROM models
GROUP BY task, suite, model_name, config, method, scenario, seed, split_seed;

-- Cases with more than one outcome within one scenario key: two models claim the same held-out case
-- (e.g. a re-run under a changed configuration left an old fold model behind). Empty in a sound store.
CREATE OR REPLACE VIEW duplicate_outcomes AS
SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, o.case_id,
       count(*) AS n_outcomes, list(o.model_id ORDER BY o.model_id) AS model_ids
FROM outcomes o
JOIN models m ON m.model_id = o.model_id
WHERE m.status = 'done'
GROUP BY m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, o.case_id
HAVING count(*) > 1;

-- Label names: the class names of a task's head (what i.i.d. predictions store as ids) and of a suite's label
-- space (what suite predictions store as ids), one row per (space, id).
CREATE OR REPLACE VIEW label_names AS
SELECT 'head' AS space, h.task, h.suite, (i.idx - 1)::VARCHAR AS label, h.labels->>((i.idx - 1)::INTEGER) AS name
FROM task_heads h, range(1, json_array_length(h.labels)::BIGINT + 1) AS i(idx)
WHERE h.labels IS NOT NULL
UNION ALL
SELECT 'suite' AS space, NULL AS task, s.suite, (i.idx - 1)::VARCHAR AS label,
       s.label_space->>((i.idx - 1)::INTEGER) AS name
FROM suites s, range(1, json_array_length(s.label_space)::BIGINT + 1) AS i(idx)
WHERE s.label_space IS NOT NULL;

-- Predicted against gold label counts, per done model: on the i.i.d. splits (source 'iid_val' / 'iid_test',
-- labels are head class ids) and on the suite cases' first inputs per test type (source 'suite', labels are
-- the suite's class ids; gold from cases.gold, where "not X" counts the cases whose expectation accepts
-- anything but X). `name` names the label where the store knows it.
CREATE OR REPLACE VIEW label_distribution AS
WITH labelled AS (
    SELECT model_id, 'iid_' || split AS source, NULL::VARCHAR AS test_type, pred AS label, 1 AS is_pred, 0 AS is_gold
    FROM iid_predictions
    UNION ALL
    SELECT model_id, 'iid_' || split, NULL, gold, 0, 1 FROM iid_predictions
    UNION ALL
    SELECT o.model_id, 'suite', c.test_type, o.pred, 1, 0
    FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE o.pred IS NOT NULL
    UNION ALL
    SELECT o.model_id, 'suite', c.test_type, c.gold, 0, 1
    FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE c.gold IS NOT NULL
), counted AS (
    SELECT model_id, source, test_type, label, sum(is_pred)::BIGINT AS n_pred, sum(is_gold)::BIGINT AS n_gold
    FROM labelled
    GROUP BY ALL
)
SELECT m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group, m.seed,
       m.split_seed, k.model_id, k.source, k.test_type, k.label, n.name, k.n_pred, k.n_gold
FROM counted k
JOIN models m ON m.model_id = k.model_id
LEFT JOIN label_names n
       ON n.label = k.label
      AND n.suite IS NOT DISTINCT FROM m.suite
      AND ((k.source = 'suite' AND n.space = 'suite') OR (k.source <> 'suite' AND n.space = 'head' AND n.task = m.task))
WHERE m.status = 'done';

-- The degeneracy check: does a model's prediction set collapse onto one label? Per scenario key (task,
-- suite, model_name, config, method, scenario, seed, split_seed) and prediction set — D_test, or the MFT
-- cases' first inputs —, the most predicted label, its share, and its gold share: an upper bound that counts
-- a "not X" gold (X other than the label) as possibly the label, so an uncertain gold never makes a flag.
-- `collapsed`: at least 20 predictions, the top label takes at least 90 % of them, and at least 20 points
-- more than its gold share (a model predicting the majority of a 95 %-majority gold set is not degenerate).
-- The paper's degenerate IID→T model predicts 95.2 % negative on SST-2 (gold 47.3 %).
CREATE OR REPLACE VIEW degeneracy AS
WITH sets AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed,
           CASE WHEN source = 'iid_test' THEN 'D_test' ELSE 'MFT' END AS prediction_set,
           label, any_value(name) AS name, sum(n_pred)::BIGINT AS n_pred, sum(n_gold)::BIGINT AS n_gold
    FROM label_distribution
    WHERE source = 'iid_test' OR (source = 'suite' AND test_type = 'MFT')
    GROUP BY ALL
), totals AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, prediction_set,
           sum(n_pred) AS n, sum(n_gold) AS n_gold_total,
           arg_max(label, n_pred * 1e9 - rank_) AS top_label
    FROM (SELECT *, dense_rank() OVER (PARTITION BY task, suite, model_name, config, method, scenario, seed,
                                       split_seed, prediction_set ORDER BY label) AS rank_ FROM sets)
    GROUP BY ALL
)
SELECT t.task, t.suite, t.model_name, t.config, t.method, t.scenario, t.seed, t.split_seed, t.prediction_set,
       t.n::BIGINT AS n, t.top_label, any_value(s.name) FILTER (WHERE s.label = t.top_label) AS top_name,
       (sum(s.n_pred) FILTER (WHERE s.label = t.top_label))::DOUBLE / nullif(t.n, 0) AS top_share,
       CASE WHEN t.n_gold_total > 0 THEN
            (coalesce(sum(s.n_gold) FILTER (WHERE s.label = t.top_label
                                           OR (s.label LIKE 'not %' AND s.label[5:] <> t.top_label)), 0))::DOUBLE
            / t.n_gold_total END AS top_gold_share,
       (t.n >= 20 AND top_share >= 0.9 AND (top_gold_share IS NULL OR top_share - top_gold_share >= 0.2))
           AS collapsed
FROM totals t
JOIN sets s USING (task, suite, model_name, config, method, scenario, seed, split_seed, prediction_set)
GROUP BY t.task, t.suite, t.model_name, t.config, t.method, t.scenario, t.seed, t.split_seed,
         t.prediction_set, t.n, t.n_gold_total, t.top_label;

-- Confusion matrix of every done model's i.i.d. predictions (labels are the head's class ids).
CREATE OR REPLACE VIEW iid_confusion AS
SELECT m.task, m.suite, m.config, m.method, m.scenario, m.seed, p.model_id, p.split, p.gold, p.pred,
       count(*)::BIGINT AS n
FROM iid_predictions p JOIN models m ON m.model_id = p.model_id
WHERE m.status = 'done'
GROUP BY ALL;

-- Per-class precision, recall and F1 of every done model's i.i.d. predictions (NULL where undefined).
CREATE OR REPLACE VIEW iid_class_scores AS
WITH classes AS (
    SELECT model_id, split, gold AS label FROM iid_predictions
    UNION
    SELECT model_id, split, pred FROM iid_predictions
), counts AS (
    SELECT c.model_id, c.split, c.label,
           count(*) FILTER (WHERE p.gold = c.label AND p.pred = c.label) AS tp,
           count(*) FILTER (WHERE p.pred = c.label) AS n_pred,
           count(*) FILTER (WHERE p.gold = c.label) AS support
    FROM classes c JOIN iid_predictions p ON p.model_id = c.model_id AND p.split = c.split
    GROUP BY ALL
)
SELECT m.task, m.suite, m.config, m.method, m.scenario, m.seed, k.model_id, k.split, k.label,
       n.name, k.support::BIGINT AS support,
       k.tp::DOUBLE / nullif(k.n_pred, 0) AS precision,
       k.tp::DOUBLE / nullif(k.support, 0) AS recall,
       2.0 * k.tp / nullif(k.n_pred + k.support, 0) AS f1
FROM counts k JOIN models m ON m.model_id = k.model_id
LEFT JOIN label_names n ON n.space = 'head' AND n.task = m.task AND n.suite IS NOT DISTINCT FROM m.suite
                       AND n.label = k.label
WHERE m.status = 'done';

-- The suite cases each model trained on, recomputed from the recorded split: the kept T_train cases of its
-- split, without its held-out group; a model that trained on no suite case (the IID model, an external
-- evaluation) has none. models.train_digest is the sha256 of the sorted list of these ids as the worker saw
-- them, so a reader can check the two agree.
CREATE OR REPLACE VIEW model_training_cases AS
SELECT m.model_id, m.task, m.suite, m.config, m.scenario, m.heldout_level, m.heldout_group, s.case_id
FROM models m
JOIN case_splits s ON s.split_id = m.split_id
JOIN cases c ON c.suite = m.suite AND c.case_id = s.case_id
WHERE m.train_digest IS NOT NULL AND s.part = 'train' AND s.kept
  AND (m.heldout_level IS NULL
       OR (CASE WHEN m.heldout_level = 'test_type' THEN c.test_type
                ELSE json_extract_string(c.groups, '$."' || m.heldout_level || '"') END)
          IS DISTINCT FROM m.heldout_group);

-- Cases a model both trained on and was evaluated on: empty in a sound store (the held-out group and T_test
-- never reach training).
CREATE OR REPLACE VIEW training_leaks AS
SELECT t.model_id, t.task, t.config, t.scenario, t.heldout_group, t.case_id
FROM model_training_cases t
JOIN outcomes o ON o.model_id = t.model_id AND o.case_id = t.case_id;

-- Hyper-parameter search (schemas/store.md, "Grid search"). A "selection key" is (task, suite, model_name,
-- config, method, seed, split_seed, scope_level, scope_group): the grid points one selection chooses among.

-- T_val pass rate of every scoring group, per done grid point (skips left out, as pass_rates).
CREATE OR REPLACE VIEW grid_pass_rates AS
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.scope_level,
       g.scope_group, c.scoring_group,
       count(*) FILTER (WHERE o.outcome = 'pass') AS n_pass,
       count(*) FILTER (WHERE o.outcome = 'fail') AS n_fail,
       count(*) FILTER (WHERE o.outcome = 'skip') AS n_skip,
       CASE WHEN count(*) FILTER (WHERE o.outcome <> 'skip') = 0 THEN NULL
            ELSE (count(*) FILTER (WHERE o.outcome = 'pass'))::DOUBLE
                 / count(*) FILTER (WHERE o.outcome <> 'skip') END AS pass_rate,
       bool_or(x.scoring_group IS NOT NULL) AS excluded
FROM grid_outcomes o
JOIN grid_points g ON g.grid_id = o.grid_id
JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
LEFT JOIN g_exclusions x ON x.task = g.task AND x.scoring_group = c.scoring_group
WHERE g.status = 'done'
GROUP BY ALL;

-- The validation scores of every done grid point per test type: the T_val pass rate pooled over the type's
-- cases (skips left out), the task's own scores (QQP: MFT f1; reading: MFT start/end token accuracy and its
-- objective), and the type's term of the reference criterion, `objective`: a task's own objective where it
-- stores one, else the pass rate averaged with the type's F1 where the task reports one (QQP's MFT:
-- (accuracy + F1) / 2), else the pass rate.
CREATE OR REPLACE VIEW grid_test_type_scores AS
WITH rates AS (
    SELECT o.grid_id, c.test_type,
           CASE WHEN count(*) FILTER (WHERE o.outcome <> 'skip') = 0 THEN NULL
                ELSE (count(*) FILTER (WHERE o.outcome = 'pass'))::DOUBLE
                     / count(*) FILTER (WHERE o.outcome <> 'skip') END AS pass_rate
    FROM grid_outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    GROUP BY ALL
), own AS (
    SELECT grid_id, test_type,
           any_value(value) FILTER (WHERE metric = 'objective') AS own_objective,
           any_value(value) FILTER (WHERE metric = 'f1') AS f1
    FROM grid_metrics WHERE source = 'suite_val'
    GROUP BY ALL
), terms AS (
    SELECT r.grid_id, r.test_type, 'pass_rate' AS metric, r.pass_rate AS value FROM rates r
    UNION ALL
    SELECT grid_id, test_type, metric, value FROM grid_metrics WHERE source = 'suite_val'
    UNION ALL
    SELECT r.grid_id, r.test_type, 'objective',
           coalesce(w.own_objective, CASE WHEN w.f1 IS NOT NULL THEN (r.pass_rate + w.f1) / 2 END, r.pass_rate)
    FROM rates r LEFT JOIN own w USING (grid_id, test_type)
    WHERE w.own_objective IS NULL
)
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.scope_level,
       g.scope_group, t.test_type, t.metric, t.value
FROM terms t
JOIN grid_points g ON g.grid_id = t.grid_id
WHERE g.status = 'done';

-- One row per done grid point with every built-in selection criterion (higher is better):
--   reference     sum over test types of their objective term (METHOD.md §5; the default)
--   iid_val       the task's primary metric on D_val
--   reference_iid reference + iid_val
--   mean_pass     mean T_val pass rate over scoring groups (g_exclusions left out): s_T on T_val
--   worst_group   lowest T_val scoring-group pass rate
--   g_val         harmonic mean of mean_pass and iid_val (G on the validation data)
-- `beluga select --criterion` takes one of these names or any SQL expression over these columns.
CREATE OR REPLACE VIEW grid_scores AS
WITH objective AS (
    SELECT grid_id, sum(value) AS reference, count(*) AS n_test_types
    FROM grid_test_type_scores
    WHERE metric = 'objective' AND value IS NOT NULL
    GROUP BY grid_id
), iid AS (
    SELECT grid_id, any_value(value) AS iid_val
    FROM grid_metrics
    WHERE source = 'iid_val' AND is_primary
    GROUP BY grid_id
), groups AS (
    SELECT grid_id,
           avg(pass_rate) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS mean_pass,
           min(pass_rate) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS worst_group,
           count(*) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS n_groups,
           sum(n_pass + n_fail + n_skip)::BIGINT AS n_cases
    FROM grid_pass_rates
    GROUP BY grid_id
)
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.scope_level,
       g.scope_group, g.point, g.hparams,
       o.reference, i.iid_val, o.reference + i.iid_val AS reference_iid, r.mean_pass, r.worst_group,
       CASE WHEN r.mean_pass IS NULL OR i.iid_val IS NULL THEN NULL
            WHEN r.mean_pass + i.iid_val = 0 THEN 0.0
            ELSE 2 * r.mean_pass * i.iid_val / (r.mean_pass + i.iid_val) END AS g_val,
       o.n_test_types, r.n_groups, r.n_cases, g.train_seconds, g.eval_seconds
FROM grid_points g
LEFT JOIN objective o ON o.grid_id = g.grid_id
LEFT JOIN iid i ON i.grid_id = g.grid_id
LEFT JOIN groups r ON r.grid_id = g.grid_id
WHERE g.status = 'done';
