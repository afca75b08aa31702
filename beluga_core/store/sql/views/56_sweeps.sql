-- Sweeps (`[sweep]`, migration 20; docs/guides/sweeps.md): the curve of s_T, s_iid and G against the swept value.
--
-- Two figures compared are computed on the same cases: a held-out scenario scores only its groups' cases (all of
-- them at a crossing level's, a sample of groups with `[sizes] groups_per_level`), so a comparison of scenario A with
-- B (the IID baseline, or another scenario of A's configuration-method) scores both on the cases both score.

-- Per sweep point, its planned models (point_models: recorded for every point before the sweep's first training) and
-- how many are done: a point with n_done < n_planned is unfinished (not reached, interrupted, or with failed jobs).
CREATE OR REPLACE VIEW sweep_progress AS
SELECT p.variant, count(pm.model_id) AS n_planned,
       count(m.model_id) FILTER (WHERE m.status = 'done') AS n_done
FROM sweep_points p
LEFT JOIN point_models pm ON pm.variant = p.variant
LEFT JOIN models m ON m.model_id = pm.model_id
GROUP BY p.variant;

-- Every outcome of a sweep point's scenario keys, with its case's scoring group; groups in g_exclusions left out.
CREATE OR REPLACE VIEW sweep_case_outcomes AS
SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant,
       o.case_id, c.scoring_group, o.outcome
FROM sweep_points p
JOIN scored_models m ON m.variant = p.variant AND m.status = 'done'
JOIN outcomes o ON o.model_id = m.model_id
JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
LEFT JOIN g_exclusions x ON x.task = m.task AND x.scoring_group = c.scoring_group
WHERE x.scoring_group IS NULL AND m.scenario NOT LIKE 'only:%';

-- Per sweep point and draw, every scenario key A against B on the cases both score: B is the IID baseline (iid /
-- vanilla / standard) or another scenario of A's configuration-method. s_T of each side over those cases (the mean
-- of its groups' pass rates), its s_iid (iid_scores: its seen model's, the baseline's own) and G.
CREATE OR REPLACE VIEW sweep_pair_seeds AS
WITH keys AS (
    SELECT DISTINCT task, suite, model_name, config, method, scenario, seed, split_seed, variant
    FROM sweep_case_outcomes
), pairs AS (
    SELECT a.task, a.suite, a.model_name, a.config, a.method, a.scenario, a.seed, a.split_seed, a.variant,
           b.config AS base_config, b.method AS base_method, b.scenario AS base_scenario
    FROM keys a
    JOIN keys b ON same_draw(a, b)
    WHERE (b.config = 'iid' AND b.method = 'vanilla' AND b.scenario = 'standard'
           AND NOT (a.config = 'iid' AND a.method = 'vanilla' AND a.scenario = 'standard'))
       OR (b.config = a.config AND b.method = a.method AND b.scenario <> a.scenario)
), rates AS (
    SELECT p.task, p.suite, p.model_name, p.config, p.method, p.scenario, p.seed, p.split_seed, p.variant,
           p.base_config, p.base_method, p.base_scenario, oa.scoring_group,
           pass_rate(count(*) FILTER (WHERE oa.outcome = 'pass'), count(*) FILTER (WHERE oa.outcome = 'fail'))
               AS rate,
           pass_rate(count(*) FILTER (WHERE ob.outcome = 'pass'), count(*) FILTER (WHERE ob.outcome = 'fail'))
               AS base_rate,
           count(*) AS n_cases
    FROM pairs p
    JOIN sweep_case_outcomes oa ON same_replicate(oa, p) AND oa.scenario = p.scenario
    JOIN sweep_case_outcomes ob
      ON same_draw(ob, p) AND ob.config = p.base_config AND ob.method = p.base_method
     AND ob.scenario = p.base_scenario AND ob.case_id = oa.case_id
    GROUP BY ALL
), scores AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, base_config, base_method,
           base_scenario, suite_score(rate, false) AS s_suite, suite_score(base_rate, false) AS base_s_suite,
           sum(n_cases)::BIGINT AS n_cases
    FROM rates
    GROUP BY ALL
)
SELECT s.task, s.suite, s.model_name, s.config, s.method, s.scenario, s.seed, s.split_seed, s.variant,
       s.base_config, s.base_method, s.base_scenario, s.n_cases,
       s.s_suite, ia.s_iid, g_score(s.s_suite, ia.s_iid) AS g,
       s.base_s_suite, ib.s_iid AS base_s_iid, g_score(s.base_s_suite, ib.s_iid) AS base_g
FROM scores s
LEFT JOIN iid_scores ia ON same_replicate(ia, s)
LEFT JOIN iid_scores ib ON same_draw(ib, s) AND ib.config = s.base_config AND ib.method = s.base_method;

-- Per sweep point and replicate (a scenario key of the point's variant): s_T, s_iid and G as g_scores has them, and
-- the IID baseline's G and s_iid of the same draw and point on the cases the scenario scores (sweep_pair_seeds).
CREATE OR REPLACE VIEW sweep_curve_seeds AS
SELECT p.sweep, p.base_variant, p.position, p.axis, p.value, g.task, g.suite, g.model_name, g.config, g.method,
       g.scenario, g.seed, g.split_seed, g.variant,
       g.s_suite, g.s_iid, g.g, g.n_cases,
       CASE WHEN g.config = 'iid' AND g.method = 'vanilla' AND g.scenario = 'standard' THEN g.g ELSE b.base_g END
           AS baseline_g,
       CASE WHEN g.config = 'iid' AND g.method = 'vanilla' AND g.scenario = 'standard' THEN g.s_iid
            ELSE b.base_s_iid END AS baseline_s_iid,
       (g.config = 'iid' AND g.method = 'vanilla' AND g.scenario = 'standard') AS is_baseline
FROM sweep_points p
JOIN g_scores g ON g.variant = p.variant
LEFT JOIN sweep_pair_seeds b
       ON same_replicate(b, g) AND b.scenario = g.scenario
      AND b.base_config = 'iid' AND b.base_method = 'vanilla' AND b.base_scenario = 'standard'
WHERE NOT g.scenario LIKE 'only:%';

-- The curve: per sweep point and cell (configuration, method, scenario), the mean and sample standard deviation over
-- seeds of s_T, s_iid and G, and of the seed-paired differences from the IID baseline on the scenario's cases
-- (ΔG = G − the baseline's G there, Δs_iid likewise); n_seeds and n_paired count them. `beluga report` and
-- `beluga analyze` add the seed-level t intervals (mean ± t(n−1)·sd/√n) and the verdicts
-- (beluga_core.analysis.sweeps.curves).
CREATE OR REPLACE VIEW sweep_curve AS
SELECT sweep, base_variant, position, axis, value, variant, task, suite, model_name, config, method, scenario,
       split_seed, is_baseline,
       count(g) AS n_seeds,
       mean_of(s_suite) AS s_suite, std_of(s_suite) AS s_suite_sd,
       mean_of(s_iid) AS s_iid, std_of(s_iid) AS s_iid_sd,
       mean_of(g) AS g, std_of(g) AS g_sd,
       count(g - baseline_g) AS n_paired,
       mean_of(g - baseline_g) AS delta_g, std_of(g - baseline_g) AS delta_g_sd,
       mean_of(s_iid - baseline_s_iid) AS delta_s_iid, std_of(s_iid - baseline_s_iid) AS delta_s_iid_sd
FROM sweep_curve_seeds
GROUP BY sweep, base_variant, position, axis, value, variant, task, suite, model_name, config, method, scenario,
         split_seed, is_baseline;
