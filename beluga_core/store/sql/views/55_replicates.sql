-- Replicates (docs/method.md, "Replicates"; docs/reference/store.md "Replicates"): the seeds of a cell are its
-- replicates. A *cell* is a scenario key without its seed.

-- What a cell is computed from: per seed, its significance_inputs digest (its done models and the model its
-- s_iid comes from, with their finished_at, and the G exclusions).
CREATE OR REPLACE VIEW replicate_inputs AS
SELECT task, suite, model_name, config, method, variant, scenario, split_seed,
       count(*) AS n_seeds, list(seed ORDER BY seed) AS seeds,
       md5(string_agg(coalesce(seed::VARCHAR, '') || '=' || digest, ',' ORDER BY seed)) AS digest
FROM significance_inputs
GROUP BY task, suite, model_name, config, method, variant, scenario, split_seed;

-- Every stored interval with the one reports show and take verdicts from (default_kind: hierarchical from
-- HIERARCHICAL_MIN_SEEDS seeds on, the seed-level t below it, where the hierarchical interval covers below 93.5 %
-- in benchmarks/bench_coverage.py, the case bootstrap with one seed), its label (saying why for the seed-level t),
-- and for a difference A − B the ordering its interval resolves; `status` is 'stale' when a model of either cell
-- changed since (run `beluga analyze`). HIERARCHICAL_MIN_SEEDS is the number in `min_seeds` below; it equals
-- beluga_core.analysis.replicates.intervals.HIERARCHICAL_MIN_SEEDS (a test asserts it).
CREATE OR REPLACE VIEW replicate_summary AS
WITH current_inputs AS (
    SELECT r.interval_id,
           CASE WHEN r.base_config IS NULL THEN a.digest ELSE md5(a.digest || '/' || b.digest) END AS current_digest
    FROM replicate_intervals r
    LEFT JOIN replicate_inputs a
           ON same_cell(a, r) AND a.scenario = r.scenario
    LEFT JOIN replicate_inputs b
           ON same_cell_draw(b, r)
          AND b.config = r.base_config AND b.method = r.base_method AND b.scenario = r.base_scenario
), rule AS (
    SELECT 5 AS min_seeds   -- HIERARCHICAL_MIN_SEEDS
), kinds AS (
    SELECT r.*,
           CASE WHEN r.n_seeds >= rule.min_seeds THEN 'hierarchical' WHEN r.n_seeds >= 2 THEN 'seed'
                ELSE 'cases' END AS default_kind,
           c.current_digest
    FROM replicate_intervals r
    JOIN current_inputs c USING (interval_id)
    CROSS JOIN rule
), chosen AS (
    SELECT *,
           CASE default_kind WHEN 'hierarchical' THEN hier_lo WHEN 'seed' THEN seed_lo ELSE cases_lo END AS lo,
           CASE default_kind WHEN 'hierarchical' THEN hier_hi WHEN 'seed' THEN seed_hi ELSE cases_hi END AS hi,
           CASE default_kind WHEN 'hierarchical' THEN 'seeds, then cases within them'
                WHEN 'seed' THEN 'seed-level t: the hierarchical interval covers below 93.5 % at this many seeds'
                ELSE 'one training run: case variation only' END AS interval_label
    FROM kinds
)
SELECT * EXCLUDE (current_digest),
       CASE WHEN base_config IS NULL OR lo IS NULL THEN NULL
            WHEN lo > 0 THEN 'A > B' WHEN hi < 0 THEN 'A < B' ELSE 'not resolved' END AS ordering,
       CASE WHEN current_digest IS DISTINCT FROM inputs_digest THEN 'stale' ELSE 'current' END AS status
FROM chosen;
