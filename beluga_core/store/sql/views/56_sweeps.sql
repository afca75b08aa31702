-- Sweeps (`[sweep]`, migration 20; docs/guide/sweeps.md): the curve of s_T, s_iid and G against the swept value.
--
-- Per sweep point and replicate (a scenario key of the point's variant): s_T, s_iid and G as g_scores has them, and
-- the IID baseline's (iid / vanilla / standard) G and s_iid of the same draw and point, on the cases the scenario is
-- scored on (a crossing level's scenario: on the cases with a group at that level, as the significance view pairs
-- them). The points' shared models (point_models) count at every point through scored_models.
CREATE OR REPLACE VIEW sweep_curve_seeds AS
SELECT p.sweep, p.base_variant, p.position, p.axis, p.value, g.task, g.suite, g.model_name, g.config, g.method,
       g.scenario, g.seed, g.split_seed, g.variant,
       g.s_suite, g.s_iid, g.g, g.n_cases,
       b.g AS baseline_g, b.s_iid AS baseline_s_iid,
       (g.config = 'iid' AND g.method = 'vanilla' AND g.scenario = 'standard') AS is_baseline
FROM sweep_points p
JOIN g_scores g ON g.variant = p.variant
LEFT JOIN crossing_levels x ON same_suite(x, g) AND x.level = g.scenario
LEFT JOIN g_scores_on_cases b
       ON same_draw(b, g) AND b.config = 'iid' AND b.method = 'vanilla' AND b.scenario = 'standard'
      AND b.cases_of IS NOT DISTINCT FROM x.level
WHERE NOT g.scenario LIKE 'only:%';

-- The curve: per sweep point and cell (configuration, method, scenario), the mean and sample standard deviation over
-- seeds of s_T, s_iid and G, and of the seed-paired differences from the IID baseline (ΔG = G − the baseline's G,
-- Δs_iid likewise); n_seeds and n_paired count them. `beluga report` and `beluga analyze` add the seed-level t
-- intervals (mean ± t(n−1)·sd/√n) and the verdicts (beluga_core.analysis.sweeps.curves).
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
