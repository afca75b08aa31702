-- Migration 2: hyper-parameter search. A grid point is a model trained on T_train (strict mode: a
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
