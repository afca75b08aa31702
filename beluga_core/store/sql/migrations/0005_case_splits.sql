-- Migration 5: how each suite was split. A split is identified by the suite, the seed, the ratios and the
-- [sizes] caps (split_id); every case gets its part (T_train / T_val / T_test, before the caps) and whether
-- [sizes] kept it. Leakage and disjointness checks read these rows.

CREATE TABLE splits (
    split_id   VARCHAR PRIMARY KEY,
    suite      VARCHAR NOT NULL,
    seed       BIGINT NOT NULL,
    ratios     JSON NOT NULL,
    caps       JSON NOT NULL      -- per-group caps of T_train, T_val, T_test and the per-group T_test exceptions
);

CREATE TABLE case_splits (
    split_id VARCHAR NOT NULL,
    case_id  VARCHAR NOT NULL,
    part     VARCHAR NOT NULL CHECK (part IN ('train', 'val', 'test')),
    kept     BOOLEAN NOT NULL,
    PRIMARY KEY (split_id, case_id)
);
