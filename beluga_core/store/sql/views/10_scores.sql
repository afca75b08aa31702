-- beluga result store: every aggregate, as plain SQL views (see docs/reference/store.md).
--
-- Readable by any DuckDB client with nothing of beluga installed. The writer re-creates these views each
-- time it opens a store, so a fixed definition reaches old stores without a schema migration.
--
-- The formulas they share are the store's macros, each defined once in migrations/0014_score_macros.sql and never
-- written out here: pass_rate, suite_score (s_T), g_score (G), case_group. Being schema, a changed formula is a
-- migration.
--
-- A "scenario key" is (task, suite, model_name, config, method, scenario, seed, split_seed, variant): the models of
-- one key together give one outcome per T_test case (one model for standard / seen, one fold model per
-- held-out group otherwise). Only models with status 'done' count. Key columns may be NULL (e.g. seed of an
-- external evaluation): joins compare replicate_key (migration 18), which matches NULL with NULL.

-- Every model row once under its own variant, and again under every other sweep point it belongs to (point_models,
-- migration 20): a job that does not read a sweep's keys (the IID model of a suite-size sweep) is one model, trained
-- once, that counts at every point. Without sweeps, the models table itself. The score views below read it.
CREATE OR REPLACE VIEW scored_models AS
SELECT * FROM models
UNION ALL
SELECT m.* REPLACE (p.variant AS variant)
FROM models m
JOIN point_models p ON p.model_id = m.model_id AND p.variant <> m.variant;

-- The crossing levels held out in a task's suite (docs/method.md, "Scenarios and folds"): a held-out scenario's level
-- at which some of the suite's cases have no group (the header's crossing_levels; a held-out scenario is named after
-- its level). That scenario scores only the cases with a group at its level, so every figure set beside it is computed
-- on those cases too: the `*_on_cases` views below give the seen and standard scenarios' figures on them, and the
-- significance view pairs each scenario with the IID baseline on the cases both have.
CREATE OR REPLACE VIEW crossing_levels AS
SELECT DISTINCT m.task, m.suite, m.heldout_level AS level
FROM scored_models m
WHERE m.status = 'done' AND m.heldout_level IS NOT NULL
  AND EXISTS (SELECT 1 FROM cases c
              WHERE c.suite = m.suite AND case_group(c.test_type, c.groups, m.heldout_level) IS NULL);

-- Pass rate of every scoring group, per scenario key and set of cases (docs/method.md, "Scores"). `cases_of` NULL:
-- every case the key has an outcome for (the rows of `pass_rates`); a crossing level L (crossing_levels): a seen or
-- standard key of L's task and suite on the cases with a group at L only, the cases L's scenario scores. Skips are
-- left out of the rate; a group whose cases all skipped has pass_rate NULL. `excluded` marks groups in g_exclusions.
CREATE OR REPLACE VIEW pass_rates_on_cases AS
WITH scored AS (
    SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant,
           c.scoring_group, o.outcome, o.model_id, NULL::VARCHAR AS cases_of
    FROM outcomes o
    JOIN scored_models m ON m.model_id = o.model_id
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    WHERE m.status = 'done'
    UNION ALL
    SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant,
           c.scoring_group, o.outcome, o.model_id, x.level
    FROM outcomes o
    JOIN scored_models m ON m.model_id = o.model_id
    JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
    JOIN crossing_levels x ON x.task = m.task AND x.suite = o.suite
    WHERE m.status = 'done' AND m.scenario IN ('seen', 'standard')
      AND case_group(c.test_type, c.groups, x.level) IS NOT NULL
), counts AS (
    SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant, scoring_group, cases_of,
           count(*) FILTER (WHERE outcome = 'pass') AS n_pass,
           count(*) FILTER (WHERE outcome = 'fail') AS n_fail,
           count(*) FILTER (WHERE outcome = 'skip') AS n_skip,
           count(DISTINCT model_id) AS n_models
    FROM scored
    GROUP BY task, suite, model_name, config, method, scenario, seed, split_seed, variant, scoring_group, cases_of
)
SELECT k.task, k.suite, k.model_name, k.config, k.method, k.scenario, k.seed, k.split_seed, k.variant, k.scoring_group,
       k.n_pass, k.n_fail, k.n_skip,
       pass_rate(k.n_pass, k.n_fail) AS pass_rate,
       (x.scoring_group IS NOT NULL) AS excluded,
       k.n_models, k.cases_of
FROM counts k
LEFT JOIN g_exclusions x ON x.task = k.task AND x.scoring_group = k.scoring_group;

-- Pass rate of every scoring group, per scenario key: pass_rates_on_cases on every case the key has.
CREATE OR REPLACE VIEW pass_rates AS
SELECT * EXCLUDE (cases_of) FROM pass_rates_on_cases WHERE cases_of IS NULL;

-- s_T per scenario key and set of cases (`cases_of`, as pass_rates_on_cases): unweighted mean of the pass rates of
-- the groups that are neither excluded nor without an evaluable case. n_cases lets a reader spot an incomplete
-- held-out scenario (a fold not yet done or failed): it should equal the seen / standard scenario's n_cases.
CREATE OR REPLACE VIEW suite_scores_on_cases AS
SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant,
       suite_score(pass_rate, excluded) AS s_suite,
       count(*) FILTER (WHERE NOT excluded AND pass_rate IS NOT NULL) AS n_groups,
       count(*) FILTER (WHERE NOT excluded AND pass_rate IS NULL) AS n_groups_no_evaluable,
       count(*) FILTER (WHERE excluded) AS n_groups_excluded,
       sum(n_pass + n_fail + n_skip)::BIGINT AS n_cases,
       cases_of
FROM pass_rates_on_cases
GROUP BY task, suite, model_name, config, method, scenario, seed, split_seed, variant, cases_of;

-- s_T per scenario key, on every case it has.
CREATE OR REPLACE VIEW suite_scores AS
SELECT * EXCLUDE (cases_of) FROM suite_scores_on_cases WHERE cases_of IS NULL;

-- Every done model's primary i.i.d. metric on D_test (fold models included).
CREATE OR REPLACE VIEW model_iid_scores AS
SELECT m.model_id, m.task, m.suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group,
       m.seed, m.split_seed, m.variant, x.metric, x.value AS s_iid
FROM scored_models m
JOIN iid_metrics x ON x.model_id = m.model_id AND x.split = 'test' AND x.is_primary
WHERE m.status = 'done';

-- The s_iid that G uses for a (task, suite, model_name, config, method, seed, split_seed, variant): that of its
-- 'seen' model (a configuration trained on suite data); when there is none, that of its 'standard' model
-- (the IID baseline, config 'iid'; an external evaluation).
CREATE OR REPLACE VIEW iid_scores AS
SELECT task, suite, model_name, config, method, seed, split_seed, variant, model_id, scenario AS source_scenario,
       metric, s_iid
FROM (
    SELECT *, row_number() OVER (
               PARTITION BY task, suite, model_name, config, method, seed, split_seed, variant
               ORDER BY CASE scenario WHEN 'seen' THEN 0 ELSE 1 END, model_id) AS rank_
    FROM model_iid_scores
    WHERE scenario IN ('seen', 'standard')
) AS ranked
WHERE rank_ = 1;

-- G per scenario key and set of cases (`cases_of`, as pass_rates_on_cases): g_score(s_T, s_iid) = 2·s_T·s_iid /
-- (s_T + s_iid) (0 when both are 0; NULL when either is missing). s_iid does not depend on the cases.
CREATE OR REPLACE VIEW g_scores_on_cases AS
SELECT s.task, s.suite, s.model_name, s.config, s.method, s.scenario, s.seed, s.split_seed, s.variant,
       s.s_suite, i.s_iid,
       g_score(s.s_suite, i.s_iid) AS g,
       i.metric AS iid_metric, i.model_id AS iid_model_id,
       s.n_groups, s.n_groups_no_evaluable, s.n_groups_excluded, s.n_cases, s.cases_of
FROM suite_scores_on_cases s
LEFT JOIN iid_scores i
       ON same_replicate(i, s);

-- G per scenario key, on every case it has.
CREATE OR REPLACE VIEW g_scores AS
SELECT * EXCLUDE (cases_of) FROM g_scores_on_cases WHERE cases_of IS NULL;

-- Mean and spread of the g_scores_on_cases rows over replicates (seeds and split seeds) of one variant and set of
-- cases. n_incomplete: replicates of a held-out scenario with fewer cases than their seen (or standard) scenario,
-- i.e. folds not done yet or failed; at a crossing level the kept T_test cases with no group there are no fold's, so
-- they are not expected.
CREATE OR REPLACE VIEW g_summary_on_cases AS
WITH reference AS (
    SELECT task, suite, model_name, config, method, seed, split_seed, variant, max(n_cases) AS n_cases
    FROM g_scores
    WHERE scenario IN ('seen', 'standard')
    GROUP BY ALL
), heldout AS (
    SELECT DISTINCT task, suite, model_name, config, method, variant, scenario, seed, split_seed, split_id,
           heldout_level
    FROM scored_models
    WHERE status = 'done' AND heldout_level IS NOT NULL AND heldout_level <> 'test_type'
), ungrouped AS (
    SELECT h.task, h.suite, h.model_name, h.config, h.method, h.variant, h.scenario, h.seed, h.split_seed,
           count(DISTINCT s.case_id) AS n_cases
    FROM heldout h
    JOIN case_splits s ON s.split_id = h.split_id AND s.part = 'test' AND s.kept
    JOIN cases c ON c.suite = h.suite AND c.case_id = s.case_id
    WHERE case_group(c.test_type, c.groups, h.heldout_level) IS NULL
    GROUP BY ALL
)
SELECT gs.task, gs.suite, gs.model_name, gs.config, gs.method, gs.variant, gs.scenario,
       count(*) AS n_replicates,
       count(gs.g) AS n_g,
       mean_of(gs.g) AS g_mean,
       std_of(gs.g) AS g_std,
       mean_of(gs.s_suite) AS s_suite_mean,
       mean_of(gs.s_iid) AS s_iid_mean,
       count(*) FILTER (WHERE gs.scenario NOT IN ('seen', 'standard')
                          AND gs.n_cases < r.n_cases - coalesce(u.n_cases, 0)) AS n_incomplete,
       gs.cases_of
FROM g_scores_on_cases gs
LEFT JOIN reference r
       ON same_replicate(r, gs)
LEFT JOIN ungrouped u
       ON same_replicate(u, gs) AND u.scenario = gs.scenario
GROUP BY gs.task, gs.suite, gs.model_name, gs.config, gs.method, gs.variant, gs.scenario, gs.cases_of;

-- g_summary_on_cases on every case a scenario key has.
CREATE OR REPLACE VIEW g_summary AS
SELECT * EXCLUDE (cases_of) FROM g_summary_on_cases WHERE cases_of IS NULL;

-- Progress of a run: models done / failed per scenario key. Failed models (status 'failed', kept with their error)
-- count in n_failed and are left out of every score view: failed_groups names the held-out groups they lack.
CREATE OR REPLACE VIEW models_status AS
SELECT task, suite, model_name, config, method, scenario, seed, split_seed, variant,
       count(*) AS n_models,
       count(*) FILTER (WHERE status = 'done') AS n_done,
       count(*) FILTER (WHERE status = 'failed') AS n_failed,
       list(coalesce(heldout_group, trained_group, scenario) ORDER BY heldout_group, trained_group)
           FILTER (WHERE status = 'failed') AS failed_groups,
       arg_max(error, finished_at) FILTER (WHERE status = 'failed') AS last_error,
       sum_of(CASE WHEN status = 'done' THEN train_seconds END) AS train_seconds,
       sum_of(CASE WHEN status = 'done' THEN eval_seconds END) AS eval_seconds,
       max(finished_at) AS last_finished_at
FROM scored_models
GROUP BY task, suite, model_name, config, method, scenario, seed, split_seed, variant;

-- Cases with more than one outcome within one scenario key: two models claim the same held-out case
-- (e.g. a re-run under a changed configuration left an old fold model behind). Empty in a sound store.
CREATE OR REPLACE VIEW duplicate_outcomes AS
SELECT m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant, o.case_id,
       count(*) AS n_outcomes, list(o.model_id ORDER BY o.model_id) AS model_ids
FROM outcomes o
JOIN scored_models m ON m.model_id = o.model_id
WHERE m.status = 'done'
GROUP BY m.task, o.suite, m.model_name, m.config, m.method, m.scenario, m.seed, m.split_seed, m.variant, o.case_id
HAVING count(*) > 1;
