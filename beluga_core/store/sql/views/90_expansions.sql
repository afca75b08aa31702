-- Seeds and their expansions (docs/reference/store.md "Seeds and expansions"): a generated case whose meta.note.seed is
-- the first input of another case of its suite and scoring group was made from that case by inserting words
-- (the s2lct generator's expansions). Per model, an expansion that fails while its seed passes is a
-- pass-to-fail: a failure the seed alone would not have shown (S²LCT's #pass-to-fail).

-- One row per expanded case and the seed case it was made from.
CREATE OR REPLACE VIEW seed_expansions AS
SELECT ce.suite, ce.case_id, cs.case_id AS seed_case_id, ce.scoring_group
FROM case_specs e
JOIN cases ce ON ce.suite = e.suite AND ce.case_id = e.case_id
JOIN cases cs ON cs.suite = ce.suite AND cs.scoring_group = ce.scoring_group AND cs.case_id <> ce.case_id
JOIN case_specs s ON s.suite = cs.suite AND s.case_id = cs.case_id
WHERE json_extract_string(e.spec, '$.meta.note.seed') IS NOT NULL
  AND json_extract_string(s.spec, '$.meta.note.seed') IS NULL
  AND json_extract_string(s.spec, '$.inputs[0]') = json_extract_string(e.spec, '$.meta.note.seed');

-- Per done model that was judged on both an expansion and its seed (T_test outcomes or an eval suite's), the two
-- outcomes and the flip: 'pass_to_fail', 'fail_to_pass', 'same', or 'skip' (either skipped).
CREATE OR REPLACE VIEW expansion_flips AS
WITH judged AS (
    SELECT model_id, suite, case_id, outcome FROM outcomes
    UNION ALL
    SELECT model_id, suite, case_id, outcome FROM cross_outcomes
)
SELECT m.task, m.suite AS train_suite, m.model_name, m.config, m.method, m.scenario, m.heldout_group, m.seed,
       m.split_seed, m.variant, m.model_id, x.suite, x.scoring_group, x.case_id, x.seed_case_id,
       so.outcome AS seed_outcome, eo.outcome AS expansion_outcome,
       CASE WHEN so.outcome = 'skip' OR eo.outcome = 'skip' THEN 'skip'
            WHEN so.outcome = 'pass' AND eo.outcome = 'fail' THEN 'pass_to_fail'
            WHEN so.outcome = 'fail' AND eo.outcome = 'pass' THEN 'fail_to_pass'
            ELSE 'same' END AS flip
FROM seed_expansions x
JOIN judged eo ON eo.suite = x.suite AND eo.case_id = x.case_id
JOIN judged so ON so.model_id = eo.model_id AND so.suite = x.suite AND so.case_id = x.seed_case_id
JOIN models m ON m.model_id = eo.model_id AND m.status = 'done';

-- expansion_flips counted per model and scoring group (S²LCT's per-capability table: seed and expansion failure
-- rates, pass-to-fail count).
CREATE OR REPLACE VIEW expansion_summary AS
SELECT task, train_suite, model_name, config, method, scenario, heldout_group, seed, split_seed, variant, model_id, suite,
       scoring_group,
       count(DISTINCT seed_case_id) AS n_seeds,
       count(DISTINCT seed_case_id) FILTER (WHERE seed_outcome = 'fail')::DOUBLE
           / nullif(count(DISTINCT seed_case_id) FILTER (WHERE seed_outcome <> 'skip'), 0) AS seed_fail_rate,
       count(*) AS n_expansions,
       count(*) FILTER (WHERE flip = 'pass_to_fail') AS n_pass_to_fail,
       count(*) FILTER (WHERE flip = 'fail_to_pass') AS n_fail_to_pass,
       mean_of(CASE WHEN expansion_outcome = 'skip' THEN NULL ELSE (expansion_outcome = 'fail')::INT END)
           AS expansion_fail_rate
FROM expansion_flips
GROUP BY ALL;
