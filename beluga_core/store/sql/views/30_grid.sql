-- Hyper-parameter search (docs/reference/store.md, "Grid search"). A "selection key" is (task, suite, model_name,
-- config, method, seed, split_seed, variant, scope_level, scope_group): the grid points one selection chooses among.

-- T_val pass rate of every scoring group, per done grid point (skips left out, as pass_rates).
CREATE OR REPLACE VIEW grid_pass_rates AS
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.variant, g.scope_level,
       g.scope_group, c.scoring_group,
       count(*) FILTER (WHERE o.outcome = 'pass') AS n_pass,
       count(*) FILTER (WHERE o.outcome = 'fail') AS n_fail,
       count(*) FILTER (WHERE o.outcome = 'skip') AS n_skip,
       pass_rate(count(*) FILTER (WHERE o.outcome = 'pass'), count(*) FILTER (WHERE o.outcome = 'fail')) AS pass_rate,
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
           pass_rate(count(*) FILTER (WHERE o.outcome = 'pass'), count(*) FILTER (WHERE o.outcome = 'fail'))
               AS pass_rate
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
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.variant, g.scope_level,
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
--   g_val         g_score(mean_pass, iid_val): G on the validation data
-- rung, rung_epochs: a successive-halving search's rung of the point and the epochs it trained to ([grid] strategy =
-- "halving"; NULL for a full search's point, which trained its own epochs).
-- `beluga select --criterion` takes one of these names or any SQL expression over these columns.
CREATE OR REPLACE VIEW grid_scores AS
WITH objective AS (
    SELECT grid_id, sum_of(value) AS reference, count(*) AS n_test_types
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
           suite_score(pass_rate, excluded) AS mean_pass,
           min(pass_rate) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS worst_group,
           count(*) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS n_groups,
           sum(n_pass + n_fail + n_skip)::BIGINT AS n_cases
    FROM grid_pass_rates
    GROUP BY grid_id
)
SELECT g.grid_id, g.task, g.suite, g.model_name, g.config, g.method, g.seed, g.split_seed, g.variant, g.scope_level,
       g.scope_group, g.point, g.hparams,
       TRY_CAST(json_extract(g.hparams, '$.halving.rung') AS INTEGER) AS rung,
       TRY_CAST(json_extract(g.hparams, '$.halving.epochs') AS DOUBLE) AS rung_epochs,
       o.reference, i.iid_val, o.reference + i.iid_val AS reference_iid, r.mean_pass, r.worst_group,
       g_score(r.mean_pass, i.iid_val) AS g_val,
       o.n_test_types, r.n_groups, r.n_cases, g.train_seconds, g.eval_seconds
FROM grid_points g
LEFT JOIN objective o ON o.grid_id = g.grid_id
LEFT JOIN iid i ON i.grid_id = g.grid_id
LEFT JOIN groups r ON r.grid_id = g.grid_id
WHERE g.status = 'done';

-- One row per point of a successive-halving search ([grid] strategy = "halving"): the last rung it reached and the
-- epochs it trained to there, its reference criterion at each rung (in rung order), and whether the key's latest
-- selection chose it (grid_selections: a run with another criterion selects again). A full search's points have no
-- rows here.
CREATE OR REPLACE VIEW grid_halving AS
SELECT s.task, s.suite, s.model_name, s.config, s.method, s.seed, s.split_seed, s.variant, s.scope_level,
       s.scope_group, s.point::VARCHAR AS point,
       max(s.rung) AS stopped_rung, max(s.rung_epochs) AS stopped_epochs,
       list(s.reference ORDER BY s.rung) AS reference_by_rung,
       bool_or(c.grid_id IS NOT NULL) AS chosen
FROM grid_scores s
LEFT JOIN (SELECT arg_max(grid_id, selected_at) AS grid_id FROM grid_selections
           GROUP BY task, config, method, scope_level, scope_group) c ON c.grid_id = s.grid_id
WHERE s.rung IS NOT NULL
GROUP BY ALL;
