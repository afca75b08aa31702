-- Diagnostic views over single models: label distributions, degeneracy, confusion, per-class scores and
-- the cases each model trained on (leak checks). Scenario keys as in 10_scores.sql.

-- Label names: the class names of a task's head (what i.i.d. predictions store as ids) and of a suite's label
-- space (what suite predictions store as ids), one row per (space, id).
CREATE OR REPLACE VIEW label_names AS
SELECT 'head' AS space, h.task, h.suite, (i.idx - 1)::VARCHAR AS label, h.labels->>((i.idx - 1)::INTEGER) AS name
FROM task_heads h, range(1, json_array_length(h.labels)::BIGINT + 1) AS i(idx)
WHERE h.labels IS NOT NULL
UNION ALL
SELECT 'suite' AS space, NULL AS task, s.suite, (i.idx - 1)::VARCHAR AS label,
       s.label_space->>((i.idx - 1)::INTEGER) AS name
FROM suites s, range(1, json_array_length(s.label_space)::BIGINT + 1) AS i(idx)
WHERE s.label_space IS NOT NULL;

-- Predicted against gold label counts, per done model: on the i.i.d. splits (source 'iid_val' / 'iid_test',
-- labels are head class ids) and on the suite cases' first inputs per test type (source 'suite', labels are
-- the suite's class ids; gold from cases.gold, where "not X" counts the cases whose expectation accepts
-- anything but X). `name` names the label where the store knows it.
CREATE OR REPLACE VIEW label_distribution AS
WITH labelled AS (
    SELECT model_id, 'iid_' || split AS source, NULL::VARCHAR AS test_type, pred AS label, 1 AS is_pred, 0 AS is_gold
    FROM iid_predictions
    UNION ALL
    SELECT model_id, 'iid_' || split, NULL, gold, 0, 1 FROM iid_predictions
    UNION ALL
    SELECT o.model_id, 'suite', c.test_type, o.pred, 1, 0
    FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE o.pred IS NOT NULL
    UNION ALL
    SELECT o.model_id, 'suite', c.test_type, c.gold, 0, 1
    FROM outcomes o JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE c.gold IS NOT NULL
), counted AS (
    SELECT model_id, source, test_type, label, sum(is_pred)::BIGINT AS n_pred, sum(is_gold)::BIGINT AS n_gold
    FROM labelled
    GROUP BY ALL
)
SELECT m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group, m.seed,
       m.split_seed, m.variant, k.model_id, k.source, k.test_type, k.label, n.name, k.n_pred, k.n_gold
FROM counted k
JOIN scored_models m ON m.model_id = k.model_id
LEFT JOIN label_names n
       ON n.label = k.label
      AND ((k.source = 'suite' AND n.space = 'suite' AND n.suite = m.suite)
        OR (k.source <> 'suite' AND n.space = 'head' AND same_suite(n, m)))
WHERE m.status = 'done';

-- The degeneracy check: does a model's prediction set collapse onto one label? Per scenario key (task,
-- suite, model_name, config, method, scenario, seed, split_seed, variant) and prediction set — D_test, or the MFT
-- cases' first inputs —, the most predicted label, its share, and its gold share: an upper bound that counts
-- a "not X" gold (X other than the label) as possibly the label, so an uncertain gold never makes a flag.
-- `collapsed`: at least 20 predictions, the top label takes at least 90 % of them, and at least 20 points
-- more than its gold share (a model predicting the majority of a 95 %-majority gold set is not degenerate).
-- The paper's degenerate IID→T model predicts 95.2 % negative on SST-2 (gold 47.3 %).
CREATE OR REPLACE VIEW degeneracy AS
WITH sets AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant,
           CASE WHEN source = 'iid_test' THEN 'D_test' ELSE 'MFT' END AS prediction_set,
           label, any_value(name) AS name, sum(n_pred)::BIGINT AS n_pred, sum(n_gold)::BIGINT AS n_gold
    FROM label_distribution
    WHERE source = 'iid_test' OR (source = 'suite' AND test_type = 'MFT')
    GROUP BY ALL
), totals AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, prediction_set,
           sum(n_pred) AS n, sum(n_gold) AS n_gold_total,
           arg_max(label, n_pred * 1e9 - rank_) AS top_label
    FROM (SELECT *, dense_rank() OVER (PARTITION BY task, suite, model_name, config, method, scenario, seed,
                                       split_seed, variant, prediction_set ORDER BY label) AS rank_ FROM sets)
    GROUP BY ALL
)
SELECT t.task, t.suite, t.model_name, t.config, t.method, t.scenario, t.seed, t.split_seed, t.variant, t.prediction_set,
       t.n::BIGINT AS n, t.top_label, any_value(s.name) FILTER (WHERE s.label = t.top_label) AS top_name,
       (sum(s.n_pred) FILTER (WHERE s.label = t.top_label))::DOUBLE / nullif(t.n, 0) AS top_share,
       CASE WHEN t.n_gold_total > 0 THEN
            (coalesce(sum(s.n_gold) FILTER (WHERE s.label = t.top_label
                                           OR (s.label LIKE 'not %' AND s.label[5:] <> t.top_label)), 0))::DOUBLE
            / t.n_gold_total END AS top_gold_share,
       (t.n >= 20 AND top_share >= 0.9 AND (top_gold_share IS NULL OR top_share - top_gold_share >= 0.2))
           AS collapsed
FROM totals t
JOIN sets s USING (task, suite, model_name, config, method, scenario, seed, split_seed, variant, prediction_set)
GROUP BY t.task, t.suite, t.model_name, t.config, t.method, t.scenario, t.seed, t.split_seed, t.variant,
         t.prediction_set, t.n, t.n_gold_total, t.top_label;

-- Confusion matrix of every done model's i.i.d. predictions (labels are the head's class ids).
CREATE OR REPLACE VIEW iid_confusion AS
SELECT m.task, m.suite, m.config, m.method, m.scenario, m.seed, m.variant, p.model_id, p.split, p.gold, p.pred,
       count(*)::BIGINT AS n
FROM iid_predictions p JOIN models m ON m.model_id = p.model_id
WHERE m.status = 'done'
GROUP BY ALL;

-- Per-class precision, recall and F1 of every done model's i.i.d. predictions (NULL where undefined).
CREATE OR REPLACE VIEW iid_class_scores AS
WITH classes AS (
    SELECT model_id, split, gold AS label FROM iid_predictions
    UNION
    SELECT model_id, split, pred FROM iid_predictions
), counts AS (
    SELECT c.model_id, c.split, c.label,
           count(*) FILTER (WHERE p.gold = c.label AND p.pred = c.label) AS tp,
           count(*) FILTER (WHERE p.pred = c.label) AS n_pred,
           count(*) FILTER (WHERE p.gold = c.label) AS support
    FROM classes c JOIN iid_predictions p ON p.model_id = c.model_id AND p.split = c.split
    GROUP BY ALL
)
SELECT m.task, m.suite, m.config, m.method, m.scenario, m.seed, m.variant, k.model_id, k.split, k.label,
       n.name, k.support::BIGINT AS support,
       k.tp::DOUBLE / nullif(k.n_pred, 0) AS precision,
       k.tp::DOUBLE / nullif(k.support, 0) AS recall,
       2.0 * k.tp / nullif(k.n_pred + k.support, 0) AS f1
FROM counts k JOIN scored_models m ON m.model_id = k.model_id
LEFT JOIN label_names n ON n.space = 'head' AND same_suite(n, m)
                       AND n.label = k.label
WHERE m.status = 'done';

-- The suite cases each model trained on, recomputed from the recorded split: the kept T_train cases of its
-- split, without its held-out group (only:LEVEL=g: those of group g alone); a model that trained on no suite case (the IID model, an external
-- evaluation) has none. models.train_digest is the sha256 of the sorted list of these ids as the worker saw
-- them, so a reader can check the two agree.
CREATE OR REPLACE VIEW model_training_cases AS
SELECT m.model_id, m.task, m.suite, m.config, m.variant, m.scenario, m.heldout_level, m.heldout_group, s.case_id
FROM models m
JOIN case_splits s ON s.split_id = m.split_id
JOIN cases c ON c.suite = m.suite AND c.case_id = s.case_id
WHERE m.train_digest IS NOT NULL AND s.part = 'train' AND s.kept
  AND (m.heldout_level IS NULL
       OR case_group(c.test_type, c.groups, m.heldout_level) IS DISTINCT FROM m.heldout_group)
  AND (m.trained_level IS NULL
       OR case_group(c.test_type, c.groups, m.trained_level) = m.trained_group);

-- Cases a model both trained on and was evaluated on: empty in a sound store (the held-out group and T_test
-- never reach training).
CREATE OR REPLACE VIEW training_leaks AS
SELECT t.model_id, t.task, t.config, t.scenario, t.heldout_group, t.case_id
FROM model_training_cases t
JOIN outcomes o ON o.model_id = t.model_id AND o.case_id = t.case_id;
