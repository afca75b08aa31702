-- Few-shot ranking (beluga rank; docs/reference/store.md "Few-shot ranking"): per pair, per group and per level.

-- Whether a stored ranking is stale: a candidate model of a store ranking was re-trained, failed or deleted since.
CREATE OR REPLACE VIEW fewshot_status AS
SELECT k.rank_id,
       coalesce(bool_or(k.source = 'store' AND (m.model_id IS NULL OR m.status <> 'done'
                                               OR m.finished_at IS DISTINCT FROM c.finished_at)), false) AS stale
FROM fewshot_rankings k
LEFT JOIN fewshot_candidates c ON c.rank_id = k.rank_id
LEFT JOIN models m ON m.model_id = c.model_id
GROUP BY k.rank_id;

-- Every ranked pair with both models' labels and true scores, and the size of their true gap.
CREATE OR REPLACE VIEW fewshot_pairs AS
SELECT r.rank_id, k.level, r.grp, r.signal, r.attribution, a.label AS label_a, b.label AS label_b,
       a.truth AS truth_a, b.truth AS truth_b, r.delta_true, abs(r.delta_true) AS gap, r.pa, r.tie_rate
FROM fewshot_results r
JOIN fewshot_rankings k ON k.rank_id = r.rank_id
JOIN fewshot_candidates a ON a.rank_id = r.rank_id AND a.grp = r.grp AND a.model_id = r.model_a
JOIN fewshot_candidates b ON b.rank_id = r.rank_id AND b.grp = r.grp AND b.model_id = r.model_b;

-- Per ranking, group and signal: the ranking accuracy (mean over the group's pairs of PA) and tie rate.
CREATE OR REPLACE VIEW fewshot_group_accuracy AS
SELECT r.rank_id, k.level, r.grp, r.signal, r.attribution, mean_of(r.pa) AS accuracy, count(*) AS pairs,
       mean_of(r.tie_rate) AS tie_rate
FROM fewshot_results r
JOIN fewshot_rankings k ON k.rank_id = r.rank_id
GROUP BY ALL;

-- Per ranking and signal: the level's ranking accuracy (the mean over groups of the group accuracy), with what
-- the Monte Carlo summary adds (intervals, tau-b, top-1, the paired comparison with ACC) and whether it is stale.
CREATE OR REPLACE VIEW fewshot_accuracy AS
SELECT k.rank_id, k.source, k.task, k.suite, k.level, g.signal, g.attribution, s.direction, k.n, k.bootstrap,
       k.rng_seed, k.ties, count(*) AS n_groups, sum(g.pairs) AS pairs_used, s.pairs_excluded,
       mean_of(g.accuracy) AS accuracy, s.ci_low, s.ci_high, mean_of(g.tie_rate) AS tie_rate, s.tau_b, s.top1,
       s.top1_ci_low, s.top1_ci_high, s.diff_vs_acc, s.diff_ci_low, s.diff_ci_high, s.p_one_sided, s.p_two_sided,
       s.near_accuracy, s.far_accuracy, st.stale, k.computed_at
FROM fewshot_group_accuracy g
JOIN fewshot_rankings k ON k.rank_id = g.rank_id
LEFT JOIN fewshot_summary s ON s.rank_id = g.rank_id AND s.signal = g.signal
LEFT JOIN fewshot_status st ON st.rank_id = k.rank_id
GROUP BY ALL;

-- Per store ranking, signal and draw of its candidates (a seed: the same_draw comparison of migration 18, seed with
-- split seed, model and variant): the ranking accuracy of that draw's candidates among themselves, over the pairs whose
-- two models are of the draw (the mean over groups of the group's mean PA over those pairs, as fewshot_accuracy
-- averages every pair). A pair's PA depends on its two models only (every candidate is scored on the group's same
-- probes), so this is the accuracy a ranking of that seed's candidates alone has; pairs across draws are left out. A
-- zoo's candidates have no draw. Over a ranking's draws: analysis/ranking/over_seeds.py (mean, seed-level t interval).
CREATE OR REPLACE VIEW fewshot_seed_accuracy AS
WITH per_group AS (
    SELECT r.rank_id, r.grp, r.signal, r.attribution, a.seed, a.split_seed, a.model_name, a.variant,
           mean_of(r.pa) AS accuracy, count(*) AS pairs
    FROM fewshot_results r
    JOIN models a ON a.model_id = r.model_a
    JOIN models b ON b.model_id = r.model_b
    WHERE same_draw(a, b)
    GROUP BY ALL
)
SELECT g.rank_id, k.level, g.signal, g.attribution, g.seed, g.split_seed, g.model_name, g.variant,
       count(g.accuracy) AS n_groups, sum(g.pairs) AS pairs, mean_of(g.accuracy) AS accuracy, st.stale
FROM per_group g
JOIN fewshot_rankings k ON k.rank_id = g.rank_id AND k.source = 'store'
LEFT JOIN fewshot_status st ON st.rank_id = g.rank_id
GROUP BY ALL;
