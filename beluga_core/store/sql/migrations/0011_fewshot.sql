-- Migration 11: few-shot ranking of models on groups they never saw (docs/guides/ranking.md).
--
-- The probe pools of a run ([fewshot]): per split, held-out level and group, the cases (kept T_train ∪ T_val of
-- the group) every candidate model predicts before its weights are discarded.
CREATE TABLE fewshot_pools (
    split_id VARCHAR NOT NULL,
    suite    VARCHAR NOT NULL,
    level    VARCHAR NOT NULL,
    grp      VARCHAR NOT NULL,
    case_id  VARCHAR NOT NULL,
    PRIMARY KEY (split_id, level, grp, case_id)
);

-- A model's outcomes on its probe pool (kept apart from `outcomes`, which are its T_test evaluation). Unique
-- (model_id, suite, case_id), checked by the writer.
CREATE TABLE probe_outcomes (
    model_id VARCHAR NOT NULL,
    suite    VARCHAR NOT NULL,
    case_id  VARCHAR NOT NULL,
    outcome  VARCHAR NOT NULL CHECK (outcome IN ('pass', 'fail', 'skip')),
    pred     VARCHAR
);

-- Its per-input class probabilities there (the suite's label space), or answers (span models).
CREATE TABLE probe_predictions (
    model_id  VARCHAR NOT NULL,
    suite     VARCHAR NOT NULL,
    case_id   VARCHAR NOT NULL,
    input_idx INTEGER NOT NULL,
    probs     FLOAT[],
    answer    VARCHAR
);

-- One `beluga rank` (of a store's level, or of a zoo): what it was computed from. Materialised because it is Monte
-- Carlo (bootstrap probes); `fewshot_candidates` lets the views mark it stale when a candidate changed since.
CREATE TABLE fewshot_rankings (
    rank_id        VARCHAR PRIMARY KEY,
    source         VARCHAR NOT NULL CHECK (source IN ('store', 'zoo')),
    task           VARCHAR,
    suite          VARCHAR NOT NULL,
    split_id       VARCHAR,             -- the split whose pools were ranked (NULL: a zoo)
    level          VARCHAR NOT NULL,
    signals        JSON NOT NULL,
    options        JSON NOT NULL,       -- the signals' options (e.g. window's words)
    n              INTEGER NOT NULL,
    bootstrap      INTEGER NOT NULL,
    rng_seed       BIGINT NOT NULL,
    ties           VARCHAR NOT NULL,
    inputs_digest  VARCHAR NOT NULL,
    computed_at    TIMESTAMP NOT NULL,
    beluga_version VARCHAR NOT NULL
);

CREATE TABLE fewshot_candidates (
    rank_id     VARCHAR NOT NULL,
    grp         VARCHAR NOT NULL,
    model_id    VARCHAR NOT NULL,
    label       VARCHAR NOT NULL,
    truth       DOUBLE NOT NULL,    -- pass rate on T_test ∩ group (a zoo: on its truth set)
    n_truth     BIGINT NOT NULL,    -- the non-skipped cases it rests on
    finished_at TIMESTAMP
);

-- Per ranking, group, signal (and attribution method; '' for none) and pair of candidates with different true
-- scores: the pairwise ranking accuracy over the B probes (ties counted as the `ties` rule says) and the share of
-- probes on which the signal tied the pair.
CREATE TABLE fewshot_results (
    rank_id     VARCHAR NOT NULL,
    grp         VARCHAR NOT NULL,
    signal      VARCHAR NOT NULL,
    attribution VARCHAR NOT NULL,
    model_a     VARCHAR NOT NULL,
    model_b     VARCHAR NOT NULL,
    delta_true  DOUBLE NOT NULL,    -- truth(a) - truth(b), never 0
    pa          DOUBLE,
    tie_rate    DOUBLE NOT NULL
);

-- Per ranking, group and signal: the group's summary over its probes (pairs used and excluded, Kendall tau-b,
-- top-1 hit rate, 95 % bootstrap interval over probes), or why the signal was skipped there.
CREATE TABLE fewshot_groups (
    rank_id        VARCHAR NOT NULL,
    grp            VARCHAR NOT NULL,
    signal         VARCHAR NOT NULL,
    attribution    VARCHAR NOT NULL,
    n_models       INTEGER NOT NULL,
    n_pool         INTEGER NOT NULL,
    pairs_used     INTEGER NOT NULL,
    pairs_excluded INTEGER NOT NULL,
    accuracy       DOUBLE,
    ci_low         DOUBLE,
    ci_high        DOUBLE,
    tie_rate       DOUBLE,
    tau_b          DOUBLE,
    tau_undefined  DOUBLE,          -- share of probes on which tau-b is undefined (a constant order)
    top1           DOUBLE,
    skipped        VARCHAR          -- why the signal was not computed for this group (NULL: it was)
);

-- Per ranking and signal, over its groups: the level's ranking accuracy with a 95 % two-stage bootstrap interval
-- (groups, then probes), and the paired comparison with ACC on the same probes.
CREATE TABLE fewshot_summary (
    rank_id        VARCHAR NOT NULL,
    signal         VARCHAR NOT NULL,
    attribution    VARCHAR NOT NULL,
    direction      INTEGER NOT NULL,
    n_groups       INTEGER NOT NULL,
    pairs_used     INTEGER NOT NULL,
    pairs_excluded INTEGER NOT NULL,
    accuracy       DOUBLE,
    ci_low         DOUBLE,
    ci_high        DOUBLE,
    tie_rate       DOUBLE,
    tau_b          DOUBLE,
    top1           DOUBLE,
    top1_ci_low    DOUBLE,
    top1_ci_high   DOUBLE,
    diff_vs_acc    DOUBLE,
    diff_ci_low    DOUBLE,
    diff_ci_high   DOUBLE,
    p_one_sided    DOUBLE,          -- share of probes on which the signal did not beat ACC
    p_two_sided    DOUBLE,
    near_accuracy  DOUBLE,          -- pairs whose |true gap| is at most the median gap
    far_accuracy   DOUBLE
);
