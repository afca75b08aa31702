-- Migration 8: cross-suite evaluation and the only:LEVEL scenarios.
--
-- A model of an only:LEVEL=g scenario trained on the cases of group g of LEVEL alone (trained_level,
-- trained_group); NULL for every other model.
ALTER TABLE models ADD COLUMN trained_level VARCHAR;
ALTER TABLE models ADD COLUMN trained_group VARCHAR;

-- A model's outcomes on the cases of an eval suite (a suite other than the one it trained on, held in
-- `suites` / `cases` like any other). Unique (model_id, suite, case_id), checked by the writer.
CREATE TABLE cross_outcomes (
    model_id VARCHAR NOT NULL,
    suite    VARCHAR NOT NULL,
    case_id  VARCHAR NOT NULL,
    outcome  VARCHAR NOT NULL CHECK (outcome IN ('pass', 'fail', 'skip')),
    pred     VARCHAR
);

-- One row per (model, eval suite) it was evaluated on, also when no eval case was its to judge (a fold whose
-- held-out group no eval group maps to): cases_digest identifies the eval cases it was meant to judge, so a
-- run whose eval suites, mapping or sample changed evaluates the model again.
CREATE TABLE cross_evaluations (
    model_id     VARCHAR NOT NULL,
    suite        VARCHAR NOT NULL,
    n_cases      BIGINT NOT NULL,
    cases_digest VARCHAR NOT NULL,
    PRIMARY KEY (model_id, suite)
);

-- How an eval suite's cases map onto a training suite's groups, per training level: the training group each
-- eval case is mapped to (cases without a mapping at a level have no row). Written per (task, training suite,
-- eval suite) by every run, replacing the earlier mapping.
CREATE TABLE cross_maps (
    task        VARCHAR NOT NULL,
    train_suite VARCHAR NOT NULL,
    eval_suite  VARCHAR NOT NULL,
    level       VARCHAR NOT NULL,
    case_id     VARCHAR NOT NULL,
    train_group VARCHAR NOT NULL,
    PRIMARY KEY (task, train_suite, eval_suite, level, case_id)
);

-- Significance of cross-suite G against the IID baseline on the same eval cases (materialised like
-- significance_tests; the cross_significance view marks stale rows).
CREATE TABLE cross_significance_tests (
    comparison_id  VARCHAR PRIMARY KEY,
    task           VARCHAR NOT NULL,
    suite          VARCHAR,
    model_name     VARCHAR,
    seed           BIGINT,
    split_seed     BIGINT,
    config         VARCHAR NOT NULL,
    method         VARCHAR NOT NULL,
    scenario       VARCHAR NOT NULL,
    eval_suite     VARCHAR NOT NULL,
    mapped_level   VARCHAR,               -- NULL: every evaluated eval case; else the cases mapped at this level
    n_cases        BIGINT NOT NULL,
    n_cases_differ BIGINT NOT NULL,
    s_cross        DOUBLE,
    base_s_cross   DOUBLE,
    g              DOUBLE,
    base_g         DOUBLE,
    delta_g        DOUBLE,
    p_g            DOUBLE,
    rounds         BIGINT NOT NULL,
    rng_seed       BIGINT NOT NULL,
    inputs_digest  VARCHAR NOT NULL,
    computed_at    TIMESTAMP NOT NULL,
    beluga_version VARCHAR NOT NULL
);
