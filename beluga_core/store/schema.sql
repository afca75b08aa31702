-- beluga result store, schema version 2 (see schemas/store.md for every column).
--
-- Tables hold raw facts only; every aggregate (pass rates, s_T, s_iid, G) is a view in views.sql, so a
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

-- Hyper-parameter search (schema version 2). A grid point is a model trained on T_train (strict mode: a
-- fold's T_train) and scored on T_val (strict: T_val without the fold's held-out group); it is not a scenario
-- model, so it lives here and never reaches the scenario views.
CREATE TABLE IF NOT EXISTS grid_points (
    grid_id         VARCHAR PRIMARY KEY,
    run_id          VARCHAR,
    task            VARCHAR NOT NULL,
    suite           VARCHAR,
    model_name      VARCHAR,
    config          VARCHAR NOT NULL,
    method          VARCHAR NOT NULL,
    seed            BIGINT,
    split_seed      BIGINT,
    scope_level     VARCHAR,           -- NULL: the seen-scenario search; else the held-out level (strict)
    scope_group     VARCHAR,           -- the held-out group (strict)
    point           JSON NOT NULL,     -- the searched values, e.g. {"batch_size": 8, "epochs": 1, ...}
    hparams         JSON,              -- every hyper-parameter of the grid point
    parent_model_id VARCHAR,
    status          VARCHAR NOT NULL CHECK (status IN ('done', 'failed')),
    error           VARCHAR,
    started_at      TIMESTAMP,
    finished_at     TIMESTAMP,
    train_seconds   DOUBLE,
    eval_seconds    DOUBLE,
    n_train_iid     BIGINT,
    n_train_suite   BIGINT,
    n_val_suite     BIGINT,
    device          VARCHAR
);

CREATE TABLE IF NOT EXISTS grid_outcomes (
    grid_id VARCHAR NOT NULL,
    suite   VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL CHECK (outcome IN ('pass', 'fail', 'skip')),
    pred    VARCHAR            -- unique (grid_id, suite, case_id)
);

CREATE TABLE IF NOT EXISTS grid_metrics (
    grid_id    VARCHAR NOT NULL,
    source     VARCHAR NOT NULL CHECK (source IN ('suite_val', 'iid_val')),
    test_type  VARCHAR,        -- suite_val: the test type; iid_val: NULL
    metric     VARCHAR NOT NULL,
    value      DOUBLE,
    is_primary BOOLEAN NOT NULL DEFAULT false
);

CREATE TABLE IF NOT EXISTS grid_selections (
    run_id      VARCHAR,
    task        VARCHAR NOT NULL,
    config      VARCHAR NOT NULL,
    method      VARCHAR NOT NULL,
    scope_level VARCHAR,
    scope_group VARCHAR,
    criterion   VARCHAR NOT NULL,
    grid_id     VARCHAR NOT NULL,
    value       DOUBLE,
    n_points    BIGINT NOT NULL,
    selected_at TIMESTAMP NOT NULL
);
