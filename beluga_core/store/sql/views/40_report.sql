-- =============================================================================================================
-- Report views: what `beluga report` shows (the paper's Table 3, the heatmaps, worst groups, the degeneracy
-- check), so that reports only fetch rows and lay them out. Means over replicates are g_summary's; a task's
-- model names (and suites) are then averaged with equal weight, as the significance view does.
-- =============================================================================================================

-- g_summary_on_cases per (task, suite, config, method, variant, scenario, cases_of): the mean over model names of
-- their means over replicates; n_replicates and n_incomplete summed over the model names. `cases_of`: NULL for every
-- case, a crossing level for the seen and standard scenarios on the cases with a group there (pass_rates_on_cases).
CREATE OR REPLACE VIEW scenario_summary_on_cases AS
SELECT task, suite, config, method, variant, scenario,
       mean_of(g_mean) AS g,
       mean_of(s_suite_mean) AS s_suite,
       mean_of(s_iid_mean) AS s_iid,
       sum(n_replicates)::BIGINT AS n_replicates,
       sum(n_incomplete)::BIGINT AS n_incomplete,
       count(*) AS n_model_names,
       cases_of
FROM g_summary_on_cases
GROUP BY task, suite, config, method, variant, scenario, cases_of;

-- scenario_summary_on_cases on every case.
CREATE OR REPLACE VIEW scenario_summary AS
SELECT * EXCLUDE (cases_of) FROM scenario_summary_on_cases WHERE cases_of IS NULL;

-- pass_rates_on_cases averaged the same way: per (task, suite, config, method, variant, scenario, scoring_group,
-- cases_of), the mean over model names of the mean pass rate over replicates (NULL where no case of the group was
-- evaluable).
CREATE OR REPLACE VIEW pass_rate_summary_on_cases AS
WITH per_model_name AS (
    SELECT task, suite, model_name, config, method, variant, scenario, scoring_group, cases_of,
           mean_of(pass_rate) AS pass_rate, bool_or(excluded) AS excluded, count(*) AS n_replicates
    FROM pass_rates_on_cases
    GROUP BY task, suite, model_name, config, method, variant, scenario, scoring_group, cases_of
)
SELECT task, suite, config, method, variant, scenario, scoring_group,
       mean_of(pass_rate) AS pass_rate, bool_or(excluded) AS excluded, sum(n_replicates)::BIGINT AS n_replicates,
       cases_of
FROM per_model_name
GROUP BY task, suite, config, method, variant, scenario, scoring_group, cases_of;

-- pass_rate_summary_on_cases on every case.
CREATE OR REPLACE VIEW pass_rate_summary AS
SELECT * EXCLUDE (cases_of) FROM pass_rate_summary_on_cases WHERE cases_of IS NULL;

-- The scenario columns of the report, per (task, suite): every scenario but standard (standard where it is the
-- only one). One row per column and configuration-method with data there; `source_scenario` is the scenario
-- its values come from: its own, or standard for a configuration-method evaluated in the standard scenario only
-- (the IID baseline: its columns show G_standard, the reference every other row is tested against).
CREATE OR REPLACE VIEW report_columns AS
WITH present AS (
    -- only:LEVEL=g models have their own section (the only_matrix heatmaps), not a column each.
    SELECT DISTINCT task, suite, config, method, variant, scenario FROM scenario_summary WHERE scenario NOT LIKE 'only:%'
), columns_ AS (
    SELECT DISTINCT p.task, p.suite, p.scenario
    FROM present p
    WHERE p.scenario <> 'standard'
       OR NOT EXISTS (SELECT 1 FROM present q
                      WHERE same_suite(q, p) AND q.scenario <> 'standard')
), pairs AS (
    SELECT task, suite, config, method, variant, bool_and(scenario = 'standard') AS standard_only
    FROM present
    GROUP BY task, suite, config, method, variant
)
SELECT c.task, c.suite, p.config, p.method, p.variant, c.scenario,
       CASE WHEN p.standard_only THEN 'standard' ELSE c.scenario END AS source_scenario
FROM columns_ c
JOIN pairs p ON same_suite(p, c)
JOIN present x
  ON same_recipe(x, p)
 AND x.scenario = CASE WHEN p.standard_only THEN 'standard' ELSE c.scenario END;

-- The paper's Table 3: one row per cell. kind 'iid': a configuration-method's i.i.d. score in a task (iid_scores:
-- the mean over replicates per model name, then over model names); kind 'g': its G in a task's scenario column
-- (report_columns, scenario_summary_on_cases; `partial` when some replicate's held-out folds are incomplete; in a
-- crossing level's column a configuration-method shown from its standard scenario, as the IID baseline, is on the
-- cases with a group at the level, the cases that column scores); kind 'cases': beside a crossing level's column
-- (`scenario` names the level), every configuration-method's seen scenario (its standard one where it has no other)
-- on those cases, so that the figures set beside each other are on the same cases; kind 'avg': the Avg. column, the
-- mean over tasks of the mean G over the task's scenario columns (a task with a column without G left out).
-- n_replicates: how many replicates the cell rests on (seeds × split seeds, × model names for 'iid', 'g' and
-- 'cases'); `best`: the highest value of its column.
CREATE OR REPLACE VIEW table3 AS
WITH columns_ AS (
    SELECT c.*, x.level AS crossing
    FROM report_columns c
    LEFT JOIN crossing_levels x ON same_suite(x, c) AND x.level = c.scenario
), g_cells AS (
    SELECT c.task, c.config, c.method, c.variant, c.scenario, any_value(c.source_scenario) AS source_scenario,
           mean_of(s.g) AS value, mean_of(s.s_suite) AS s_suite, sum(s.n_replicates)::BIGINT AS n_replicates,
           sum(s.n_incomplete) > 0 AS partial
    FROM columns_ c
    JOIN scenario_summary_on_cases s
      ON same_recipe(s, c) AND s.scenario = c.source_scenario
     AND s.cases_of IS NOT DISTINCT FROM (CASE WHEN c.source_scenario <> c.scenario THEN c.crossing END)
    GROUP BY c.task, c.config, c.method, c.variant, c.scenario
), cases_cells AS (
    SELECT c.task, c.config, c.method, c.variant, c.scenario, any_value(s.scenario) AS source_scenario,
           mean_of(s.g) AS value, mean_of(s.s_suite) AS s_suite, sum(s.n_replicates)::BIGINT AS n_replicates
    FROM columns_ c
    JOIN scenario_summary_on_cases s
      ON same_recipe(s, c) AND s.cases_of = c.crossing
     AND s.scenario = CASE WHEN c.source_scenario = c.scenario THEN 'seen' ELSE c.source_scenario END
    GROUP BY c.task, c.config, c.method, c.variant, c.scenario
), iid_per_model_name AS (
    SELECT task, suite, model_name, config, method, variant, mean_of(s_iid) AS s_iid, count(*) AS n_replicates
    FROM iid_scores
    GROUP BY task, suite, model_name, config, method, variant
), iid_cells AS (
    SELECT i.task, i.config, i.method, i.variant, mean_of(i.s_iid) AS value, sum(i.n_replicates)::BIGINT AS n_replicates
    FROM iid_per_model_name i
    WHERE EXISTS (SELECT 1 FROM g_cells g WHERE g.task = i.task AND g.config = i.config AND g.method = i.method AND g.variant = i.variant)
    GROUP BY i.task, i.config, i.method, i.variant
), task_means AS (
    SELECT task, config, method, variant, CASE WHEN count(value) = count(*) THEN mean_of(value) END AS value
    FROM g_cells
    GROUP BY task, config, method, variant
), replicates AS (
    SELECT config, method, variant, count(*) AS n_replicates
    FROM (SELECT DISTINCT config, method, variant, seed, split_seed FROM g_scores) AS r
    GROUP BY config, method, variant
), avg_cells AS (
    SELECT t.config, t.method, t.variant, mean_of(t.value) AS value, any_value(r.n_replicates)::BIGINT AS n_replicates
    FROM task_means t
    LEFT JOIN replicates r ON r.config = t.config AND r.method = t.method AND r.variant = t.variant
    GROUP BY t.config, t.method, t.variant
), cells AS (
    SELECT 'iid' AS kind, task, config, method, variant, NULL::VARCHAR AS scenario, NULL::VARCHAR AS source_scenario,
           value, NULL::DOUBLE AS s_suite, n_replicates, false AS partial
    FROM iid_cells
    UNION ALL
    SELECT 'g', task, config, method, variant, scenario, source_scenario, value, s_suite, n_replicates, partial
    FROM g_cells
    UNION ALL
    SELECT 'cases', task, config, method, variant, scenario, source_scenario, value, s_suite, n_replicates, false
    FROM cases_cells
    UNION ALL
    SELECT 'avg', NULL, config, method, variant, NULL, NULL, value, NULL, n_replicates, false
    FROM avg_cells
)
SELECT kind, task, config, method, variant, scenario, source_scenario, value, s_suite, n_replicates, partial,
       coalesce(value = max(value) OVER (PARTITION BY kind, task, scenario), false) AS best
FROM cells;

-- The worst scoring group per (task, suite, config, method, variant, scenario, cases_of): the lowest
-- pass_rate_summary_on_cases among the groups that are neither excluded nor without an evaluable case (ties: the first
-- group name).
CREATE OR REPLACE VIEW worst_groups_on_cases AS
SELECT task, suite, config, method, variant, scenario, scoring_group, pass_rate, cases_of
FROM (
    SELECT *, row_number() OVER (PARTITION BY task, suite, config, method, variant, scenario, cases_of
                                 ORDER BY pass_rate, scoring_group) AS rank_
    FROM pass_rate_summary_on_cases
    WHERE NOT excluded AND pass_rate IS NOT NULL
) AS ranked
WHERE rank_ = 1;

-- worst_groups_on_cases on every case.
CREATE OR REPLACE VIEW worst_groups AS
SELECT * EXCLUDE (cases_of) FROM worst_groups_on_cases WHERE cases_of IS NULL;

-- The degeneracy check as the report shows it: per (task, suite, config, method, variant, scenario) and prediction set
-- (D_test, or the MFT cases' first inputs), one row per label (a predicted label, or a gold one other than
-- "not X") with its counts summed over replicates and folds: `share` of the predictions, `gold_share`, and
-- `gold_share_upper`, which also counts the "not X" gold cases (X other than the label) as possibly the label
-- (as degeneracy's top_gold_share). Gold shares are NULL where the set has no gold label. `collapsed`: the set
-- collapsed (degeneracy.collapsed) in n_collapsed of its n_sets replicates.
CREATE OR REPLACE VIEW degeneracy_labels AS
WITH counts AS (
    SELECT task, suite, config, method, variant, scenario,
           CASE WHEN source = 'iid_test' THEN 'D_test' ELSE 'MFT' END AS prediction_set,
           label, any_value(name) AS name, sum(n_pred)::BIGINT AS n_pred, sum(n_gold)::BIGINT AS n_gold
    FROM label_distribution
    WHERE source = 'iid_test' OR (source = 'suite' AND test_type = 'MFT')
    GROUP BY ALL
), totals AS (
    SELECT task, suite, config, method, variant, scenario, prediction_set,
           sum(n_pred)::BIGINT AS n, sum(n_gold)::BIGINT AS n_gold_total
    FROM counts
    GROUP BY ALL
), flags AS (
    SELECT task, suite, config, method, variant, scenario, prediction_set,
           count(*) FILTER (WHERE collapsed) AS n_collapsed, count(*) AS n_sets
    FROM degeneracy
    GROUP BY ALL
), upper_ AS (
    SELECT c.task, c.suite, c.config, c.method, c.variant, c.scenario, c.prediction_set, c.label,
           sum(o.n_gold) FILTER (WHERE o.label = c.label
                                    OR (o.label LIKE 'not %' AND o.label[5:] <> c.label)) AS n_gold_upper
    FROM counts c
    JOIN counts o
      ON same_recipe(o, c) AND o.scenario = c.scenario AND o.prediction_set = c.prediction_set
    GROUP BY ALL
)
SELECT c.task, c.suite, c.config, c.method, c.variant, c.scenario, c.prediction_set, c.label, c.name, c.n_pred, c.n_gold,
       t.n, t.n_gold_total,
       c.n_pred::DOUBLE / nullif(t.n, 0) AS share,
       CASE WHEN t.n_gold_total > 0 THEN c.n_gold::DOUBLE / t.n_gold_total END AS gold_share,
       CASE WHEN t.n_gold_total > 0 THEN coalesce(u.n_gold_upper, 0)::DOUBLE / t.n_gold_total END AS gold_share_upper,
       coalesce(f.n_collapsed, 0) > 0 AS collapsed, coalesce(f.n_collapsed, 0)::BIGINT AS n_collapsed,
       coalesce(f.n_sets, 0)::BIGINT AS n_sets
FROM counts c
JOIN totals t
  ON same_recipe(t, c)
 AND t.scenario = c.scenario AND t.prediction_set = c.prediction_set
LEFT JOIN upper_ u
  ON same_recipe(u, c)
 AND u.scenario = c.scenario AND u.prediction_set = c.prediction_set AND u.label IS NOT DISTINCT FROM c.label
LEFT JOIN flags f
  ON same_recipe(f, c)
 AND f.scenario = c.scenario AND f.prediction_set = c.prediction_set
WHERE c.label IS NULL OR c.label NOT LIKE 'not %';
