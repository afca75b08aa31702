-- Migration 9: what regression analysis and ensembles read — per-input probabilities, the cases themselves —
-- and the materialised tests of negative-flip rates.

-- Class probabilities of a model's i.i.d. predictions (the head's classes, as iid_predictions' ids), kept with
-- [store] keep_probabilities. Unique (model_id, split, example_idx), checked by the writer.
CREATE TABLE iid_probs (
    model_id    VARCHAR NOT NULL,
    split       VARCHAR NOT NULL CHECK (split IN ('val', 'test')),
    example_idx BIGINT NOT NULL,
    probs       FLOAT[] NOT NULL
);

-- Per-input predictions on suite cases (the training suite's and eval suites'), kept with [store]
-- keep_probabilities: class probabilities in the suite's label space, or an answer (span models).
CREATE TABLE case_predictions (
    model_id  VARCHAR NOT NULL,
    suite     VARCHAR NOT NULL,
    case_id   VARCHAR NOT NULL,
    input_idx INTEGER NOT NULL,
    probs     FLOAT[],
    answer    VARCHAR
);

-- The cases a run evaluates (its kept split cases and eval cases), as their suite file states them (inputs,
-- label, expectation, ...): what re-judging needs (ensembles, imported predictions) without the suite file.
CREATE TABLE case_specs (
    suite   VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    spec    JSON NOT NULL,
    PRIMARY KEY (suite, case_id)
);

-- Paired randomization tests of the difference between two models' negative-flip rates against the same old
-- model (beluga regress): materialised with what they were computed from, like significance_tests.
CREATE TABLE regression_tests (
    test_id        VARCHAR PRIMARY KEY,   -- canonical JSON of (old, a, b, source, part)
    old_model_id   VARCHAR NOT NULL,
    a_model_id     VARCHAR NOT NULL,
    b_model_id     VARCHAR NOT NULL,
    source         VARCHAR NOT NULL CHECK (source IN ('iid', 'suite')),
    part           VARCHAR NOT NULL,      -- the i.i.d. split, or the suite
    n              BIGINT NOT NULL,       -- paired examples (cases evaluable for all three)
    nfr_a          DOUBLE,
    nfr_b          DOUBLE,
    delta_nfr      DOUBLE,                -- nfr_a - nfr_b
    n_discordant   BIGINT NOT NULL,       -- old right, exactly one of a and b wrong
    p_value        DOUBLE,
    rounds         BIGINT NOT NULL,
    rng_seed       BIGINT NOT NULL,
    inputs_digest  VARCHAR NOT NULL,
    computed_at    TIMESTAMP NOT NULL,
    beluga_version VARCHAR NOT NULL
);
