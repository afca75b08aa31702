-- Migration 1: the result store as beluga 0.1 created it (see docs/reference/store.md for every column).
--
-- Tables hold raw facts only; every aggregate (pass rates, s_T, s_iid, G) is a view in views/, so a
-- user can re-aggregate in SQL and nothing stored can drift from what it was computed from.
-- Timestamps are UTC (TIMESTAMP without time zone, so no ICU extension is needed to read them).
-- No foreign keys: DuckDB cannot cascade deletes and checks them eagerly, which would forbid replacing a
-- failed model's rows inside one transaction; the writer checks references instead.
-- No primary key on the bulk tables (iid_predictions, outcomes): its index made a store ~9x bigger and
-- commits ~30% slower (300 models x 21k outcomes: 480 MB against 52 MB); the writer rejects duplicates.

CREATE TABLE IF NOT EXISTS beluga_meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS runs (
    run_id         VARCHAR PRIMARY KEY,
    config_path    VARCHAR,
    config_text    VARCHAR,
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP,
    status         VARCHAR NOT NULL CHECK (status IN ('running', 'done', 'failed', 'interrupted')),
    beluga_version VARCHAR NOT NULL,
    duckdb_version VARCHAR NOT NULL,
    host           VARCHAR,
    device         VARCHAR
);

CREATE TABLE IF NOT EXISTS cases (
    suite         VARCHAR NOT NULL,
    case_id       VARCHAR NOT NULL,
    test_type     VARCHAR NOT NULL,
    scoring_group VARCHAR NOT NULL,
    groups        JSON NOT NULL,
    PRIMARY KEY (suite, case_id)
);

CREATE TABLE IF NOT EXISTS models (
    model_id        VARCHAR PRIMARY KEY,
    run_id          VARCHAR,
    task            VARCHAR NOT NULL,
    suite           VARCHAR,
    model_name      VARCHAR,
    config          VARCHAR NOT NULL,
    method          VARCHAR NOT NULL,
    scenario        VARCHAR NOT NULL,
    heldout_level   VARCHAR,
    heldout_group   VARCHAR,
    seed            BIGINT,
    split_seed      BIGINT,
    hparams         JSON,
    parent_model_id VARCHAR,
    status          VARCHAR NOT NULL CHECK (status IN ('done', 'failed')),
    error           VARCHAR,
    started_at      TIMESTAMP,
    finished_at     TIMESTAMP,
    train_seconds   DOUBLE,
    eval_seconds    DOUBLE,
    n_train_iid     BIGINT,
    n_train_suite   BIGINT,
    device          VARCHAR
);

CREATE TABLE IF NOT EXISTS iid_predictions (
    model_id    VARCHAR NOT NULL,
    split       VARCHAR NOT NULL CHECK (split IN ('val', 'test')),
    example_idx BIGINT NOT NULL,
    gold        VARCHAR,
    pred        VARCHAR,
    correct     BOOLEAN NOT NULL   -- unique (model_id, split, example_idx)
);

CREATE TABLE IF NOT EXISTS iid_metrics (
    model_id   VARCHAR NOT NULL,
    split      VARCHAR NOT NULL CHECK (split IN ('val', 'test')),
    metric     VARCHAR NOT NULL,
    value      DOUBLE,
    is_primary BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (model_id, split, metric)
);

CREATE TABLE IF NOT EXISTS outcomes (
    model_id VARCHAR NOT NULL,
    suite    VARCHAR NOT NULL,
    case_id  VARCHAR NOT NULL,
    outcome  VARCHAR NOT NULL CHECK (outcome IN ('pass', 'fail', 'skip')),
    pred     VARCHAR            -- unique (model_id, suite, case_id)
);

CREATE TABLE IF NOT EXISTS g_exclusions (
    task          VARCHAR NOT NULL,
    scoring_group VARCHAR NOT NULL,
    PRIMARY KEY (task, scoring_group)
);
