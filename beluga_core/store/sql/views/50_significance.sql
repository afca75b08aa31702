-- Significance views (docs/reference/store.md "Significance"): re-created on every open, as the other views.

-- What a comparison arm (a scenario key) is computed from: its done models and the model its s_iid comes
-- from, each with its finished_at (a re-trained or replaced model gets a new one), and the task's G
-- exclusions. `digest` changes whenever any of these does.
CREATE OR REPLACE VIEW significance_inputs AS
WITH keys AS (
    SELECT DISTINCT task, suite, model_name, config, method, scenario, seed, split_seed, variant
    FROM scored_models WHERE status = 'done'
), members AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, model_id, finished_at
    FROM scored_models WHERE status = 'done'
    UNION
    SELECT k.task, k.suite, k.model_name, k.config, k.method, k.scenario, k.seed, k.split_seed, k.variant,
           m.model_id, m.finished_at
    FROM keys k
    JOIN iid_scores i
      ON same_replicate(i, k)
    JOIN scored_models m ON m.model_id = i.model_id
), exclusions AS (
    SELECT task, string_agg(scoring_group, ',' ORDER BY scoring_group) AS groups
    FROM g_exclusions GROUP BY task
)
SELECT mb.task, mb.suite, mb.model_name, mb.config, mb.method, mb.scenario, mb.seed, mb.split_seed, mb.variant,
       count(*) AS n_models,
       md5(string_agg(mb.model_id || '@' || coalesce(strftime(mb.finished_at, '%Y-%m-%dT%H:%M:%S.%f'), ''),
                      ',' ORDER BY mb.model_id)
           || '|' || coalesce(any_value(x.groups), '')) AS digest
FROM members mb
LEFT JOIN exclusions x ON x.task = mb.task
GROUP BY mb.task, mb.suite, mb.model_name, mb.config, mb.method, mb.scenario, mb.seed, mb.split_seed, mb.variant;

-- Every stored test with its current input digest; `stale` when the models it compared changed (or are
-- gone, or a mean over tasks gained or lost a stratum). The strata rule matches the Python side
-- (beluga_core/analysis/significance/comparisons.py): A's scenario keys of the row's replicate (every task for a mean over
-- tasks; every scenario when scenario is NULL), each paired with B's key of the same task, suite,
-- model_name, seed, split_seed, variant and scenario coalesce(base_scenario, A's scenario).
CREATE OR REPLACE VIEW significance_pairs AS
WITH strata AS (
    SELECT t.comparison_id,
           a.task || '|' || coalesce(a.suite, '') || '|' || coalesce(a.model_name, '') || '|' || a.scenario
               AS stratum,
           a.digest AS a_digest, b.digest AS b_digest
    FROM significance_tests t
    JOIN significance_inputs a
      ON same_over_tasks(a, t)
     AND (t.scope = 'mean_over_tasks' OR same_replicate(a, t))
     AND (a.scenario = t.scenario OR (t.scenario IS NULL AND a.scenario NOT LIKE 'only:%'))
    JOIN significance_inputs b
      ON same_draw(b, a)
     AND b.config = t.base_config AND b.method = t.base_method
     AND b.scenario = coalesce(t.base_scenario, a.scenario)
    WHERE NOT (a.config = b.config AND a.method = b.method AND a.scenario = b.scenario)
), current_inputs AS (
    SELECT comparison_id,
           md5(string_agg(stratum || '=' || a_digest || '/' || b_digest, ',' ORDER BY stratum)) AS current_digest
    FROM strata
    GROUP BY comparison_id
)
SELECT t.*, c.current_digest, (c.current_digest IS DISTINCT FROM t.inputs_digest) AS stale
FROM significance_tests t
LEFT JOIN current_inputs c ON c.comparison_id = t.comparison_id;

-- Every configuration-method (and scenario) against the IID baseline (config 'iid', method 'vanilla',
-- scenario 'standard': its G_standard), per replicate and as the mean over tasks. Scores and deltas are
-- live (from the outcomes and g_scores' s_iid), each side's s_T on the T_test cases both have an outcome for, as
-- the randomization test pairs them: a crossing level's scenario (crossing_levels) scores only the cases with a
-- group at its level, and the baseline's G it is compared with is on those cases too. p-values come from
-- significance_tests. status: 'current', 'stale' (inputs changed since; run `beluga analyze`), 'missing' (never
-- computed). A cell is marked 'better' / 'worse' only for a current test with p < 0.05 (docs/method.md,
-- "Significance"), in the direction of the difference it tested, which is that of the difference shown.
CREATE OR REPLACE VIEW significance AS
WITH baseline AS (
    SELECT * FROM g_scores WHERE config = 'iid' AND method = 'vanilla' AND scenario = 'standard'
), arms AS (
    SELECT gs.task, gs.suite, gs.model_name, gs.config, gs.method, gs.scenario, gs.seed, gs.split_seed, gs.variant,
           gs.s_iid, b.s_iid AS base_s_iid
    FROM g_scores gs
    JOIN baseline b
      ON same_draw(b, gs)
    WHERE NOT (gs.config = 'iid' AND gs.method = 'vanilla' AND gs.scenario = 'standard')
), arm_outcomes AS (
    SELECT a.task, a.suite, a.model_name, a.config, a.method, a.scenario, a.seed, a.split_seed, a.variant,
           o.suite AS case_suite, o.case_id, o.outcome
    FROM arms a
    JOIN scored_models m
      ON m.status = 'done' AND same_replicate(m, a) AND m.scenario = a.scenario
    JOIN outcomes o ON o.model_id = m.model_id
), base_outcomes AS (
    SELECT m.task, m.suite, m.model_name, m.seed, m.split_seed, m.variant, o.suite AS case_suite, o.case_id, o.outcome
    FROM scored_models m
    JOIN outcomes o ON o.model_id = m.model_id
    WHERE m.status = 'done' AND m.config = 'iid' AND m.method = 'vanilla' AND m.scenario = 'standard'
), shared_counts AS (
    -- Per arm and scoring group: both sides' passes and fails over the cases both have an outcome for.
    SELECT a.task, a.suite, a.model_name, a.config, a.method, a.scenario, a.seed, a.split_seed, a.variant,
           c.scoring_group,
           count(*) FILTER (WHERE a.outcome = 'pass') AS n_pass, count(*) FILTER (WHERE a.outcome = 'fail') AS n_fail,
           count(*) FILTER (WHERE b.outcome = 'pass') AS base_n_pass,
           count(*) FILTER (WHERE b.outcome = 'fail') AS base_n_fail
    FROM arm_outcomes a
    JOIN base_outcomes b
      ON same_draw(b, a) AND b.case_suite = a.case_suite AND b.case_id = a.case_id
    JOIN cases c ON c.suite = a.case_suite AND c.case_id = a.case_id
    GROUP BY ALL
), shared AS (
    SELECT k.task, k.suite, k.model_name, k.config, k.method, k.scenario, k.seed, k.split_seed, k.variant,
           suite_score(pass_rate(k.n_pass, k.n_fail), x.scoring_group IS NOT NULL) AS s_suite,
           suite_score(pass_rate(k.base_n_pass, k.base_n_fail), x.scoring_group IS NOT NULL) AS base_s_suite
    FROM shared_counts k
    LEFT JOIN g_exclusions x ON x.task = k.task AND x.scoring_group = k.scoring_group
    GROUP BY k.task, k.suite, k.model_name, k.config, k.method, k.scenario, k.seed, k.split_seed, k.variant
), live AS (
    SELECT a.task, a.suite, a.model_name, a.config, a.method, a.scenario, a.seed, a.split_seed, a.variant,
           a.s_iid, a.base_s_iid, g_score(s.s_suite, a.s_iid) AS g, g_score(s.base_s_suite, a.base_s_iid) AS base_g
    FROM arms a
    LEFT JOIN shared s
      ON same_replicate(s, a) AND s.scenario = a.scenario
), per_task AS (
    -- Within a task: mean over its strata (model names; and scenarios for the Avg. row, scenario NULL, which
    -- pools the generalization scenarios, not the only:LEVEL=g models).
    SELECT task, config, method, scenario, seed, split_seed, variant,
           mean_of(s_iid) AS s_iid, mean_of(base_s_iid) AS base_s_iid, mean_of(g) AS g, mean_of(base_g) AS base_g
    FROM live
    GROUP BY task, config, method, scenario, seed, split_seed, variant
    UNION ALL
    SELECT task, config, method, NULL, seed, split_seed, variant,
           mean_of(s_iid) AS s_iid, mean_of(base_s_iid) AS base_s_iid, mean_of(g) AS g, mean_of(base_g) AS base_g
    FROM live
    WHERE scenario NOT LIKE 'only:%'
    GROUP BY task, config, method, seed, split_seed, variant
), mean_live AS (
    SELECT config, method, scenario, seed, split_seed, variant, count(*) AS n_tasks,
           mean_of(s_iid) AS s_iid, mean_of(base_s_iid) AS base_s_iid, mean_of(g) AS g, mean_of(base_g) AS base_g
    FROM per_task
    GROUP BY config, method, scenario, seed, split_seed, variant
), stored AS (
    SELECT * FROM significance_pairs
    WHERE base_config = 'iid' AND base_method = 'vanilla' AND base_scenario = 'standard'
), joined AS (
    SELECT 'replicate' AS scope, l.task, l.suite, l.model_name, l.config, l.method, l.scenario,
           l.seed, l.split_seed, l.variant, 1::BIGINT AS n_tasks, l.s_iid, l.base_s_iid, l.g, l.base_g,
           s.iid_test, s.n_discordant, s.k_better, s.p_iid, s.p_g, s.delta_iid AS tested_delta_iid,
           s.delta_g AS tested_delta_g, s.rounds, s.rng_seed, s.computed_at, s.comparison_id, s.stale
    FROM live l
    LEFT JOIN stored s
      ON s.scope = 'replicate' AND same_replicate(s, l) AND s.scenario = l.scenario
    UNION ALL
    SELECT 'mean_over_tasks', NULL, NULL, NULL, l.config, l.method, l.scenario, l.seed, l.split_seed, l.variant,
           l.n_tasks, l.s_iid, l.base_s_iid, l.g, l.base_g,
           s.iid_test, s.n_discordant, s.k_better, s.p_iid, s.p_g, s.delta_iid, s.delta_g,
           s.rounds, s.rng_seed, s.computed_at, s.comparison_id, s.stale
    FROM mean_live l
    LEFT JOIN stored s
      ON s.scope = 'mean_over_tasks'
     AND same_over_tasks(s, l)
     AND s.scenario IS NOT DISTINCT FROM l.scenario
)
SELECT scope, task, suite, model_name, config, method, scenario, seed, split_seed, variant, n_tasks,
       s_iid, base_s_iid, s_iid - base_s_iid AS delta_iid, p_iid, iid_test, n_discordant, k_better,
       CASE WHEN stale IS DISTINCT FROM false OR p_iid IS NULL OR p_iid >= 0.05 OR tested_delta_iid = 0
                 OR sign(s_iid - base_s_iid) IS DISTINCT FROM sign(tested_delta_iid)
            THEN NULL WHEN tested_delta_iid > 0 THEN 'better' ELSE 'worse' END AS iid_mark,
       g, base_g, g - base_g AS delta_g, p_g,
       CASE WHEN stale IS DISTINCT FROM false OR p_g IS NULL OR p_g >= 0.05 OR tested_delta_g = 0
                 OR sign(g - base_g) IS DISTINCT FROM sign(tested_delta_g)
            THEN NULL WHEN tested_delta_g > 0 THEN 'better' ELSE 'worse' END AS g_mark,
       CASE WHEN comparison_id IS NULL THEN 'missing' WHEN stale THEN 'stale' ELSE 'current' END AS status,
       rounds, rng_seed, computed_at, comparison_id
FROM joined;
