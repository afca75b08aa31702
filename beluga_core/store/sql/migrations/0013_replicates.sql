-- Migration 13: intervals over training runs (docs/method.md, "Replicates").
--
-- Per cell (a scenario key without its seed: the seeds are its replicates) and statistic, the mean over seeds with
-- three 95 % intervals: the t interval of the per-seed values (seed_lo, seed_hi), the two-stage interval of seeds
-- and then cases within them (hier_lo, hier_hi, with its Welch-Satterthwaite degrees of freedom hier_df), and the
-- bootstrap over cases alone (cases_lo, cases_hi). A row with base_* set is the difference A − B of two cells
-- paired by seed (p_hier: the two-sided p of the two-stage t). Monte Carlo (the case bootstrap), so stored with
-- its provenance like significance_tests; the replicate_summary view marks rows whose models changed since.
CREATE TABLE replicate_intervals (
    interval_id    VARCHAR PRIMARY KEY,   -- the JSON list of the key columns
    task           VARCHAR NOT NULL,
    suite          VARCHAR,
    model_name     VARCHAR,
    config         VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    variant        VARCHAR NOT NULL,
    scenario       VARCHAR NOT NULL,
    split_seed     BIGINT,
    base_config    VARCHAR,
    base_method    VARCHAR,
    base_scenario  VARCHAR,
    statistic      VARCHAR NOT NULL,
    grp            VARCHAR NOT NULL,      -- '' or what the statistic is of: a scoring group, an eval suite
    n_seeds        BIGINT NOT NULL,
    n_cases        BIGINT,
    mean           DOUBLE,
    seed_lo        DOUBLE,
    seed_hi        DOUBLE,
    hier_lo        DOUBLE,
    hier_hi        DOUBLE,
    hier_df        DOUBLE,
    cases_lo       DOUBLE,
    cases_hi       DOUBLE,
    p_hier         DOUBLE,
    rounds         BIGINT NOT NULL,
    rng_seed       BIGINT NOT NULL,
    inputs_digest  VARCHAR NOT NULL,
    computed_at    TIMESTAMP NOT NULL,
    beluga_version VARCHAR NOT NULL
);
