-- beluga result store: every aggregate, as plain SQL views (see schemas/store.md).
--
-- Readable by any DuckDB client with nothing of beluga installed. The writer re-creates these views each
-- time it opens a store, so a fixed definition reaches old stores without a schema migration.
--
-- A "scenario key" is (task, suite, model_name, config, method, scenario, seed, split_seed): the models of
-- one key together give one outcome per T_test case (one model for standard / seen, one fold model per
-- held-out group otherwise). Only models with status 'done' count. Key columns may be NULL (e.g. seed of an
-- external evaluation), hence the IS NOT DISTINCT FROM joins.

-- Pass rate of every scoring group, per scenario key (METHOD.md §6). Skips are left out of the rate; a
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

-- Degeneracy check (METHOD.md §6): predicted against gold label counts on the i.i.d. splits
-- (source 'iid_val' / 'iid_test'), and predicted label counts of each suite case's first input per test
-- type (source 'suite'; the cases table holds no gold label, so n_gold is NULL there).
CREATE OR REPLACE VIEW label_distribution AS
WITH iid AS (
    SELECT model_id, 'iid_' || split AS source, pred AS label, 1 AS is_pred, 0 AS is_gold
    FROM iid_predictions
    UNION ALL
    SELECT model_id, 'iid_' || split AS source, gold AS label, 0 AS is_pred, 1 AS is_gold
    FROM iid_predictions
), counted AS (
    SELECT model_id, source, NULL::VARCHAR AS test_type, label,
           sum(is_pred)::BIGINT AS n_pred, sum(is_gold)::BIGINT AS n_gold
    FROM iid
    GROUP BY model_id, source, label
    UNION ALL
    SELECT o.model_id, 'suite' AS source, c.test_type, o.pred AS label,
           count(*) AS n_pred, NULL::BIGINT AS n_gold
    FROM outcomes o
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE o.pred IS NOT NULL
    GROUP BY o.model_id, c.test_type, o.pred
)
SELECT m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group, m.seed,
       m.split_seed, k.model_id, k.source, k.test_type, k.label, k.n_pred, k.n_gold
FROM counted k
JOIN models m ON m.model_id = k.model_id
WHERE m.status = 'done';

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
-- cases, and the metrics the worker stored (objective term, MFT accuracy / F1, or a task's own).
CREATE OR REPLACE VIEW grid_test_type_scores AS
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.scope_level,
       g.scope_group, m.test_type, m.metric, m.value
FROM grid_metrics m
JOIN grid_points g ON g.grid_id = m.grid_id
WHERE g.status = 'done' AND m.source = 'suite_val';

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
    FROM grid_metrics
    WHERE source = 'suite_val' AND metric = 'objective' AND value IS NOT NULL
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
