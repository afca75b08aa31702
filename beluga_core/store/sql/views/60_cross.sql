-- Cross-suite evaluation and the only:LEVEL scenarios (docs/reference/store.md "Cross-suite evaluation").
--
-- A model's outcomes on an eval suite are in cross_outcomes. Its "basis" (mapped_level) says which of them a
-- row counts: NULL = every eval case it was evaluated on; a level L = the eval cases mapped to a training
-- group at L (cross_maps). A held-out fold at L is evaluated on the cases mapped to its group only, so its rows
-- have basis L; the models that hold nothing out (standard, seen, only:LEVEL=g) have a row for basis NULL and
-- one for every mapped level, so that each held-out scenario can be compared with them on the same cases.

-- One row per (done model, eval case, basis).
CREATE OR REPLACE VIEW cross_case_bases AS
WITH base AS (
    SELECT m.model_id, m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant,
           m.heldout_level, o.suite AS eval_suite, o.case_id, o.outcome, c.scoring_group AS eval_group
    FROM cross_outcomes o
    JOIN models m ON m.model_id = o.model_id AND m.status = 'done'
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
)
SELECT b.*, NULL::VARCHAR AS mapped_level, NULL::VARCHAR AS mapped_group
FROM base b
WHERE b.heldout_level IS NULL
UNION ALL
SELECT b.*, x.level AS mapped_level, x.train_group AS mapped_group
FROM base b
JOIN cross_maps x
  ON x.task = b.task AND x.train_suite = b.suite AND x.eval_suite = b.eval_suite AND x.case_id = b.case_id
WHERE b.heldout_level IS NULL OR x.level = b.heldout_level;

-- Pass rate per scenario key, eval suite, basis, eval-suite scoring group (eval_group) and the training group
-- its cases map to at the basis level (mapped_group; NULL for basis NULL). Skips left out of the rate.
CREATE OR REPLACE VIEW cross_pass_rates AS
WITH counts AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite, mapped_level,
           eval_group, mapped_group,
           count(*) FILTER (WHERE outcome = 'pass') AS n_pass,
           count(*) FILTER (WHERE outcome = 'fail') AS n_fail,
           count(*) FILTER (WHERE outcome = 'skip') AS n_skip,
           count(DISTINCT model_id) AS n_models
    FROM cross_case_bases
    GROUP BY ALL
)
SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite, mapped_level, eval_group,
       mapped_group, n_pass, n_fail, n_skip,
       pass_rate(n_pass, n_fail) AS pass_rate,
       n_models
FROM counts;

-- The cross-suite score per scenario key, eval suite and basis: s_cross, the unweighted mean of the eval
-- groups' pass rates (as s_T), and G with the s_iid that g_scores uses for the key.
CREATE OR REPLACE VIEW cross_scores AS
WITH per_group AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite, mapped_level,
           eval_group,
           count(*) FILTER (WHERE outcome = 'pass') AS n_pass,
           count(*) FILTER (WHERE outcome = 'fail') AS n_fail,
           count(*) AS n_cases
    FROM cross_case_bases
    GROUP BY ALL
), scores AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite, mapped_level,
           mean_of(pass_rate(n_pass, n_fail)) AS s_cross,
           count(*) FILTER (WHERE n_pass + n_fail > 0) AS n_groups,
           count(*) FILTER (WHERE n_pass + n_fail = 0) AS n_groups_no_evaluable,
           sum(n_cases)::BIGINT AS n_cases
    FROM per_group
    GROUP BY ALL
)
SELECT s.task, s.suite, s.model_name, s.config, s.method, s.scenario, s.seed, s.split_seed, s.variant, s.eval_suite,
       s.mapped_level, s.s_cross, i.s_iid,
       g_score(s.s_cross, i.s_iid) AS g,
       i.metric AS iid_metric, i.model_id AS iid_model_id, s.n_groups, s.n_groups_no_evaluable, s.n_cases
FROM scores s
LEFT JOIN iid_scores i
       ON same_replicate(i, s);

-- cross_scores and cross_pass_rates as the report shows them: per (task, suite, config, method, variant, scenario,
-- eval suite, basis[, eval group]), the mean over replicates and model names.
CREATE OR REPLACE VIEW cross_summary AS
SELECT task, suite, config, method, variant, scenario, eval_suite, mapped_level,
       mean_of(s_cross) AS s_cross, mean_of(s_iid) AS s_iid, mean_of(g) AS g, count(*) AS n_replicates,
       max(n_cases)::BIGINT AS n_cases
FROM cross_scores
GROUP BY ALL;

CREATE OR REPLACE VIEW cross_pass_rate_summary AS
SELECT task, suite, config, method, variant, scenario, eval_suite, mapped_level, eval_group,
       string_agg(DISTINCT mapped_group, ' / ' ORDER BY mapped_group) AS mapped_groups,
       mean_of(pass_rate) AS pass_rate, sum(n_pass + n_fail + n_skip)::BIGINT AS n_cases
FROM (SELECT task, suite, config, method, scenario, seed, split_seed, variant, model_name, eval_suite, mapped_level,
             eval_group, string_agg(DISTINCT mapped_group, ' / ' ORDER BY mapped_group) AS mapped_group,
             sum(n_pass) AS n_pass, sum(n_fail) AS n_fail, sum(n_skip) AS n_skip,
             pass_rate(sum(n_pass), sum(n_fail)) AS pass_rate
      FROM cross_pass_rates
      GROUP BY ALL) AS per_replicate
GROUP BY ALL;

-- The train-group × eval-group matrix of an only:LEVEL scenario: per replicate, the model trained on group
-- trained_group of `level` alone, its pass rate on the T_test cases of each group eval_group of the same level
-- — the unweighted mean of the pass rates of the scoring groups (G exclusions left out) within eval_group, as
-- s_T averages them. The diagonal is each model's pass rate on its own group.
CREATE OR REPLACE VIEW only_matrix AS
WITH cells AS (
    SELECT m.task, m.suite, m.model_name, m.config, m.method, m.seed, m.split_seed, m.variant,
           m.trained_level AS level, m.trained_group,
           case_group(c.test_type, c.groups, m.trained_level) AS eval_group,
           c.scoring_group,
           count(*) FILTER (WHERE o.outcome = 'pass') AS n_pass,
           count(*) FILTER (WHERE o.outcome = 'fail') AS n_fail,
           count(*) FILTER (WHERE o.outcome = 'skip') AS n_skip
    FROM models m
    JOIN outcomes o ON o.model_id = m.model_id
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    LEFT JOIN g_exclusions x ON x.task = m.task AND x.scoring_group = c.scoring_group
    WHERE m.status = 'done' AND m.trained_group IS NOT NULL AND x.scoring_group IS NULL
    GROUP BY ALL
)
SELECT task, suite, model_name, config, method, seed, split_seed, variant, level, trained_group, eval_group,
       mean_of(pass_rate(n_pass, n_fail)) AS pass_rate,
       count(*) FILTER (WHERE n_pass + n_fail > 0) AS n_groups,
       sum(n_pass)::BIGINT AS n_pass, sum(n_fail)::BIGINT AS n_fail, sum(n_skip)::BIGINT AS n_skip,
       trained_group = eval_group AS diagonal
FROM cells
GROUP BY ALL;

-- only_matrix averaged over replicates and model names (the report's heatmap).
CREATE OR REPLACE VIEW only_matrix_summary AS
SELECT task, suite, config, method, variant, level, trained_group, eval_group, mean_of(pass_rate) AS pass_rate,
       count(*) AS n_replicates
FROM only_matrix
GROUP BY ALL;

-- The cross-suite comparisons significance calls for: every scenario key's G on an eval suite against the IID
-- baseline's (iid / vanilla / standard) G on the same eval cases, at the key's own basis (NULL for the
-- models that hold nothing out, the held-out level for a held-out scenario). inputs_digest changes whenever
-- either side's models or the mapping the basis uses does (significance_inputs; the cross_maps rows).
CREATE OR REPLACE VIEW cross_comparisons AS
WITH map_digests AS (
    SELECT task, train_suite, eval_suite, level,
           md5(string_agg(case_id || '=' || train_group, ',' ORDER BY case_id)) AS map_digest
    FROM cross_maps
    GROUP BY ALL
)
SELECT (CASE WHEN a.variant = ''  -- the unnamed variant keeps the ids stores had before variants
             THEN json_array(a.task, a.suite, a.model_name, a.seed, a.split_seed, a.config, a.method, a.scenario,
                             a.eval_suite, a.mapped_level)
             ELSE json_array(a.task, a.suite, a.model_name, a.seed, a.split_seed, a.config, a.method, a.scenario,
                             a.eval_suite, a.mapped_level, a.variant) END)::VARCHAR AS comparison_id,
       a.task, a.suite, a.model_name, a.seed, a.split_seed, a.variant, a.config, a.method, a.scenario, a.eval_suite,
       a.mapped_level, a.s_cross, b.s_cross AS base_s_cross, a.g, b.g AS base_g,
       md5(ia.digest || '/' || ib.digest || '|' || coalesce(mp.map_digest, '')) AS inputs_digest
FROM cross_scores a
JOIN cross_scores b
  ON same_draw(b, a)
 AND b.config = 'iid' AND b.method = 'vanilla' AND b.scenario = 'standard'
 AND b.eval_suite = a.eval_suite AND b.mapped_level IS NOT DISTINCT FROM a.mapped_level
JOIN significance_inputs ia
  ON same_replicate(ia, a) AND ia.scenario = a.scenario
JOIN significance_inputs ib
  ON same_replicate(ib, b) AND ib.scenario = b.scenario
LEFT JOIN map_digests mp
  ON mp.task = a.task AND mp.train_suite = a.suite AND mp.eval_suite = a.eval_suite AND mp.level = a.mapped_level
WHERE (a.mapped_level IS NULL OR a.mapped_level = a.scenario)
  AND NOT (a.config = 'iid' AND a.method = 'vanilla' AND a.scenario = 'standard');

-- Every cross-suite comparison with its stored test: status 'current', 'stale' (inputs changed since; run
-- `beluga analyze`) or 'missing'; g_mark 'better' / 'worse' only for a current test with p < 0.05, in the direction
-- it tested, which must be that of the difference shown (delta_g).
CREATE OR REPLACE VIEW cross_significance AS
SELECT c.task, c.suite, c.model_name, c.seed, c.split_seed, c.variant, c.config, c.method, c.scenario, c.eval_suite,
       c.mapped_level, c.s_cross, c.base_s_cross, c.g, c.base_g, c.g - c.base_g AS delta_g, t.p_g,
       CASE WHEN t.comparison_id IS NULL OR t.inputs_digest <> c.inputs_digest OR t.p_g IS NULL
                 OR t.p_g >= 0.05 OR t.delta_g = 0 OR sign(c.g - c.base_g) IS DISTINCT FROM sign(t.delta_g) THEN NULL
            WHEN t.delta_g > 0 THEN 'better' ELSE 'worse' END AS g_mark,
       CASE WHEN t.comparison_id IS NULL THEN 'missing'
            WHEN t.inputs_digest <> c.inputs_digest THEN 'stale' ELSE 'current' END AS status,
       t.n_cases, t.n_cases_differ, t.rounds, t.rng_seed, t.computed_at, c.comparison_id, c.inputs_digest
FROM cross_comparisons c
LEFT JOIN cross_significance_tests t ON t.comparison_id = c.comparison_id;

-- Capability alignment across suites: per model, eval group and the training group its cases map to, every
-- outcome on either side — 'eval': the eval suite's cases of the group; 'template': the training suite's own
-- T_test cases of the group it maps to (outcomes holds exactly those a model was evaluated on). `unit` is what a
-- bootstrap resamples: a generated case's source instance (meta.split_key: the cases made from one corpus
-- sentence are not independent), else the case itself.
CREATE OR REPLACE VIEW cross_alignment_cases AS
WITH mapped AS (
    SELECT DISTINCT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite,
           mapped_level, eval_group, mapped_group, model_id
    FROM cross_case_bases
    WHERE mapped_level IS NOT NULL
)
SELECT b.task, b.suite, b.model_name, b.config, b.method, b.scenario, b.seed, b.split_seed, b.variant, b.eval_suite,
       b.mapped_level, b.eval_group, b.mapped_group, 'eval' AS side, b.model_id, b.case_id,
       coalesce(json_extract_string(s.spec, '$.meta.split_key'), b.case_id) AS unit, b.outcome
FROM cross_case_bases b
LEFT JOIN case_specs s ON s.suite = b.eval_suite AND s.case_id = b.case_id
WHERE b.mapped_level IS NOT NULL
UNION ALL
SELECT a.task, a.suite, a.model_name, a.config, a.method, a.scenario, a.seed, a.split_seed, a.variant, a.eval_suite,
       a.mapped_level, a.eval_group, a.mapped_group, 'template' AS side, a.model_id, o.case_id, o.case_id AS unit,
       o.outcome
FROM mapped a
JOIN outcomes o ON o.model_id = a.model_id
JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
WHERE case_group(c.test_type, c.groups, a.mapped_level) = a.mapped_group;

-- cross_alignment_cases counted: per scenario key, eval suite, basis, eval group and mapped group, the pass rate
-- on the eval suite's cases beside the pass rate on the training suite's cases of the group they map to (skips
-- left out of both rates).
CREATE OR REPLACE VIEW cross_alignment AS
SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, eval_suite, mapped_level, eval_group,
       mapped_group,
       count(*) FILTER (WHERE side = 'template' AND outcome = 'pass') AS template_n_pass,
       count(*) FILTER (WHERE side = 'template' AND outcome = 'fail') AS template_n_fail,
       pass_rate(count(*) FILTER (WHERE side = 'template' AND outcome = 'pass'),
                 count(*) FILTER (WHERE side = 'template' AND outcome = 'fail')) AS template_pass_rate,
       count(*) FILTER (WHERE side = 'eval' AND outcome = 'pass') AS eval_n_pass,
       count(*) FILTER (WHERE side = 'eval' AND outcome = 'fail') AS eval_n_fail,
       pass_rate(count(*) FILTER (WHERE side = 'eval' AND outcome = 'pass'),
                 count(*) FILTER (WHERE side = 'eval' AND outcome = 'fail')) AS eval_pass_rate,
       count(DISTINCT unit) FILTER (WHERE side = 'eval') AS eval_units
FROM cross_alignment_cases
GROUP BY ALL;
