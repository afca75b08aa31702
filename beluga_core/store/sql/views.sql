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

-- Mean and spread of the g_scores rows over replicates (seeds and split seeds). n_incomplete: replicates of a
-- held-out scenario with fewer cases than their seen (or standard) scenario, i.e. folds not done yet or failed.
CREATE OR REPLACE VIEW g_summary AS
WITH reference AS (
    SELECT task, suite, model_name, config, method, seed, split_seed, max(n_cases) AS n_cases
    FROM g_scores
    WHERE scenario IN ('seen', 'standard')
    GROUP BY ALL
)
SELECT g.task, g.suite, g.model_name, g.config, g.method, g.scenario,
       count(*) AS n_replicates,
       count(g.g) AS n_g,
       avg(g.g) AS g_mean,
       stddev_samp(g.g) AS g_std,
       avg(g.s_suite) AS s_suite_mean,
       avg(g.s_iid) AS s_iid_mean,
       count(*) FILTER (WHERE g.scenario NOT IN ('seen', 'standard') AND g.n_cases < r.n_cases) AS n_incomplete
FROM g_scores g
LEFT JOIN reference r
       ON r.task = g.task
      AND r.suite IS NOT DISTINCT FROM g.suite
      AND r.model_name IS NOT DISTINCT FROM g.model_name
      AND r.config = g.config
      AND r.method = g.method
      AND r.seed IS NOT DISTINCT FROM g.seed
      AND r.split_seed IS NOT DISTINCT FROM g.split_seed
GROUP BY g.task, g.suite, g.model_name, g.config, g.method, g.scenario;

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
--   reference     sum over test types of their objective term (docs/method.md, "Hyper-parameter selection"; the default)
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

-- =============================================================================================================
-- Report views: what `beluga report` shows (the paper's Table 3, the heatmaps, worst groups, the degeneracy
-- check), so that reports only fetch rows and lay them out. Means over replicates are g_summary's; a task's
-- model names (and suites) are then averaged with equal weight, as the significance view does.
-- =============================================================================================================

-- g_summary per (task, suite, config, method, scenario): the mean over model names of their means over
-- replicates; n_replicates and n_incomplete summed over the model names.
CREATE OR REPLACE VIEW scenario_summary AS
SELECT task, suite, config, method, scenario,
       avg(g_mean) AS g,
       avg(s_suite_mean) AS s_suite,
       avg(s_iid_mean) AS s_iid,
       sum(n_replicates)::BIGINT AS n_replicates,
       sum(n_incomplete)::BIGINT AS n_incomplete,
       count(*) AS n_model_names
FROM g_summary
GROUP BY task, suite, config, method, scenario;

-- pass_rates averaged the same way: per (task, suite, config, method, scenario, scoring_group), the mean over
-- model names of the mean pass rate over replicates (NULL where no case of the group was evaluable).
CREATE OR REPLACE VIEW pass_rate_summary AS
WITH per_model_name AS (
    SELECT task, suite, model_name, config, method, scenario, scoring_group,
           avg(pass_rate) AS pass_rate, bool_or(excluded) AS excluded, count(*) AS n_replicates
    FROM pass_rates
    GROUP BY task, suite, model_name, config, method, scenario, scoring_group
)
SELECT task, suite, config, method, scenario, scoring_group,
       avg(pass_rate) AS pass_rate, bool_or(excluded) AS excluded, sum(n_replicates)::BIGINT AS n_replicates
FROM per_model_name
GROUP BY task, suite, config, method, scenario, scoring_group;

-- The scenario columns of the report, per (task, suite): every scenario but standard (standard where it is the
-- only one). One row per column and configuration-method with data there; `source_scenario` is the scenario
-- its values come from: its own, or standard for a configuration-method evaluated in the standard scenario only
-- (the IID baseline: its columns show G_standard, the reference every other row is tested against).
CREATE OR REPLACE VIEW report_columns AS
WITH present AS (
    SELECT DISTINCT task, suite, config, method, scenario FROM scenario_summary
), columns_ AS (
    SELECT DISTINCT p.task, p.suite, p.scenario
    FROM present p
    WHERE p.scenario <> 'standard'
       OR NOT EXISTS (SELECT 1 FROM present q
                      WHERE q.task = p.task AND q.suite IS NOT DISTINCT FROM p.suite AND q.scenario <> 'standard')
), pairs AS (
    SELECT task, suite, config, method, bool_and(scenario = 'standard') AS standard_only
    FROM present
    GROUP BY task, suite, config, method
)
SELECT c.task, c.suite, p.config, p.method, c.scenario,
       CASE WHEN p.standard_only THEN 'standard' ELSE c.scenario END AS source_scenario
FROM columns_ c
JOIN pairs p ON p.task = c.task AND p.suite IS NOT DISTINCT FROM c.suite
JOIN present x
  ON x.task = c.task AND x.suite IS NOT DISTINCT FROM c.suite AND x.config = p.config AND x.method = p.method
 AND x.scenario = CASE WHEN p.standard_only THEN 'standard' ELSE c.scenario END;

-- The paper's Table 3: one row per cell. kind 'iid': a configuration-method's i.i.d. score in a task (iid_scores:
-- the mean over replicates per model name, then over model names); kind 'g': its G in a task's scenario column
-- (report_columns, scenario_summary; `partial` when some replicate's held-out folds are incomplete); kind 'avg':
-- the Avg. column, the mean over tasks of the mean G over the task's scenario columns (a task with a column
-- without G left out). n_replicates: how many replicates the cell rests on (seeds × split seeds, × model names
-- for 'iid' and 'g'); `best`: the highest value of its column.
CREATE OR REPLACE VIEW table3 AS
WITH g_cells AS (
    SELECT c.task, c.config, c.method, c.scenario, any_value(c.source_scenario) AS source_scenario,
           avg(s.g) AS value, avg(s.s_suite) AS s_suite, sum(s.n_replicates)::BIGINT AS n_replicates,
           sum(s.n_incomplete) > 0 AS partial
    FROM report_columns c
    JOIN scenario_summary s
      ON s.task = c.task AND s.suite IS NOT DISTINCT FROM c.suite AND s.config = c.config
     AND s.method = c.method AND s.scenario = c.source_scenario
    GROUP BY c.task, c.config, c.method, c.scenario
), iid_per_model_name AS (
    SELECT task, suite, model_name, config, method, avg(s_iid) AS s_iid, count(*) AS n_replicates
    FROM iid_scores
    GROUP BY task, suite, model_name, config, method
), iid_cells AS (
    SELECT i.task, i.config, i.method, avg(i.s_iid) AS value, sum(i.n_replicates)::BIGINT AS n_replicates
    FROM iid_per_model_name i
    WHERE EXISTS (SELECT 1 FROM g_cells g WHERE g.task = i.task AND g.config = i.config AND g.method = i.method)
    GROUP BY i.task, i.config, i.method
), task_means AS (
    SELECT task, config, method, CASE WHEN count(value) = count(*) THEN avg(value) END AS value
    FROM g_cells
    GROUP BY task, config, method
), replicates AS (
    SELECT config, method, count(*) AS n_replicates
    FROM (SELECT DISTINCT config, method, seed, split_seed FROM g_scores) AS r
    GROUP BY config, method
), avg_cells AS (
    SELECT t.config, t.method, avg(t.value) AS value, any_value(r.n_replicates)::BIGINT AS n_replicates
    FROM task_means t
    LEFT JOIN replicates r ON r.config = t.config AND r.method = t.method
    GROUP BY t.config, t.method
), cells AS (
    SELECT 'iid' AS kind, task, config, method, NULL::VARCHAR AS scenario, NULL::VARCHAR AS source_scenario,
           value, NULL::DOUBLE AS s_suite, n_replicates, false AS partial
    FROM iid_cells
    UNION ALL
    SELECT 'g', task, config, method, scenario, source_scenario, value, s_suite, n_replicates, partial
    FROM g_cells
    UNION ALL
    SELECT 'avg', NULL, config, method, NULL, NULL, value, NULL, n_replicates, false
    FROM avg_cells
)
SELECT kind, task, config, method, scenario, source_scenario, value, s_suite, n_replicates, partial,
       coalesce(value = max(value) OVER (PARTITION BY kind, task, scenario), false) AS best
FROM cells;

-- The worst scoring group per (task, suite, config, method, scenario): the lowest pass_rate_summary among the
-- groups that are neither excluded nor without an evaluable case (ties: the first group name).
CREATE OR REPLACE VIEW worst_groups AS
SELECT task, suite, config, method, scenario, scoring_group, pass_rate
FROM (
    SELECT *, row_number() OVER (PARTITION BY task, suite, config, method, scenario
                                 ORDER BY pass_rate, scoring_group) AS rank_
    FROM pass_rate_summary
    WHERE NOT excluded AND pass_rate IS NOT NULL
) AS ranked
WHERE rank_ = 1;

-- The degeneracy check as the report shows it: per (task, suite, config, method, scenario) and prediction set
-- (D_test, or the MFT cases' first inputs), one row per label (a predicted label, or a gold one other than
-- "not X") with its counts summed over replicates and folds: `share` of the predictions, `gold_share`, and
-- `gold_share_upper`, which also counts the "not X" gold cases (X other than the label) as possibly the label
-- (as degeneracy's top_gold_share). Gold shares are NULL where the set has no gold label. `collapsed`: the set
-- collapsed (degeneracy.collapsed) in n_collapsed of its n_sets replicates.
CREATE OR REPLACE VIEW degeneracy_labels AS
WITH counts AS (
    SELECT task, suite, config, method, scenario,
           CASE WHEN source = 'iid_test' THEN 'D_test' ELSE 'MFT' END AS prediction_set,
           label, any_value(name) AS name, sum(n_pred)::BIGINT AS n_pred, sum(n_gold)::BIGINT AS n_gold
    FROM label_distribution
    WHERE source = 'iid_test' OR (source = 'suite' AND test_type = 'MFT')
    GROUP BY ALL
), totals AS (
    SELECT task, suite, config, method, scenario, prediction_set,
           sum(n_pred)::BIGINT AS n, sum(n_gold)::BIGINT AS n_gold_total
    FROM counts
    GROUP BY ALL
), flags AS (
    SELECT task, suite, config, method, scenario, prediction_set,
           count(*) FILTER (WHERE collapsed) AS n_collapsed, count(*) AS n_sets
    FROM degeneracy
    GROUP BY ALL
), upper_ AS (
    SELECT c.task, c.suite, c.config, c.method, c.scenario, c.prediction_set, c.label,
           sum(o.n_gold) FILTER (WHERE o.label = c.label
                                    OR (o.label LIKE 'not %' AND o.label[5:] <> c.label)) AS n_gold_upper
    FROM counts c
    JOIN counts o
      ON o.task = c.task AND o.suite IS NOT DISTINCT FROM c.suite AND o.config = c.config
     AND o.method = c.method AND o.scenario = c.scenario AND o.prediction_set = c.prediction_set
    GROUP BY ALL
)
SELECT c.task, c.suite, c.config, c.method, c.scenario, c.prediction_set, c.label, c.name, c.n_pred, c.n_gold,
       t.n, t.n_gold_total,
       c.n_pred::DOUBLE / nullif(t.n, 0) AS share,
       CASE WHEN t.n_gold_total > 0 THEN c.n_gold::DOUBLE / t.n_gold_total END AS gold_share,
       CASE WHEN t.n_gold_total > 0 THEN coalesce(u.n_gold_upper, 0)::DOUBLE / t.n_gold_total END AS gold_share_upper,
       coalesce(f.n_collapsed, 0) > 0 AS collapsed, coalesce(f.n_collapsed, 0)::BIGINT AS n_collapsed,
       coalesce(f.n_sets, 0)::BIGINT AS n_sets
FROM counts c
JOIN totals t
  ON t.task = c.task AND t.suite IS NOT DISTINCT FROM c.suite AND t.config = c.config AND t.method = c.method
 AND t.scenario = c.scenario AND t.prediction_set = c.prediction_set
LEFT JOIN upper_ u
  ON u.task = c.task AND u.suite IS NOT DISTINCT FROM c.suite AND u.config = c.config AND u.method = c.method
 AND u.scenario = c.scenario AND u.prediction_set = c.prediction_set AND u.label IS NOT DISTINCT FROM c.label
LEFT JOIN flags f
  ON f.task = c.task AND f.suite IS NOT DISTINCT FROM c.suite AND f.config = c.config AND f.method = c.method
 AND f.scenario = c.scenario AND f.prediction_set = c.prediction_set
WHERE c.label IS NULL OR c.label NOT LIKE 'not %';
