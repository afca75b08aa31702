-- Migration 3: significance tests (created on demand before; a table of the schema since), see
-- docs/reference/store.md "Significance".
--
-- The one materialised aggregate of the store: Monte Carlo p-values cannot be a view. `beluga analyze` and
-- the end of `beluga run` compute them in Python into significance_tests, each row recording what it was
-- computed from (a digest of the compared models, rounds, seed); the views of views/50_significance.sql
-- recompute that digest from the current tables and mark a row stale when its inputs changed since.
-- IF NOT EXISTS: stores of schema 2 whose significance table was made on demand keep it as it is.

CREATE TABLE IF NOT EXISTS significance_tests (
    comparison_id  VARCHAR PRIMARY KEY,   -- canonical JSON of the key columns below
    scope          VARCHAR NOT NULL CHECK (scope IN ('replicate', 'mean_over_tasks')),
    -- the replicate: task, suite, model_name are NULL for a mean over tasks
    task           VARCHAR,
    suite          VARCHAR,
    model_name     VARCHAR,
    seed           BIGINT,
    split_seed     BIGINT,
    -- arm A; scenario NULL (means over tasks only): the mean over all of A's scenarios (the paper's Avg.)
    config         VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    scenario       VARCHAR,
    -- arm B; base_scenario NULL: the same scenario as A's
    base_config    VARCHAR NOT NULL,
    base_method    VARCHAR NOT NULL,
    base_scenario  VARCHAR,
    n_tasks        BIGINT NOT NULL,
    n_strata       BIGINT NOT NULL,       -- paired (task, suite, model_name, scenario) comparisons pooled
    -- i.i.d.: values the test used (mean correctness over the paired D_test examples)
    iid_test       VARCHAR CHECK (iid_test IN ('binomial', 'randomization')),
    n_iid          BIGINT,
    n_discordant   BIGINT,
    k_better       BIGINT,                -- discordant examples A gets right (and B wrong)
    s_iid          DOUBLE,
    base_s_iid     DOUBLE,
    delta_iid      DOUBLE,
    p_iid          DOUBLE,
    -- G: values the test used (over the paired T_test cases)
    n_cases        BIGINT,
    n_cases_differ BIGINT,
    s_suite        DOUBLE,
    base_s_suite   DOUBLE,
    g              DOUBLE,
    base_g         DOUBLE,
    delta_g        DOUBLE,
    p_g            DOUBLE,
    -- provenance
    rounds         BIGINT NOT NULL,
    rng_seed       BIGINT NOT NULL,
    inputs_digest  VARCHAR NOT NULL,
    computed_at    TIMESTAMP NOT NULL,
    beluga_version VARCHAR NOT NULL
);
