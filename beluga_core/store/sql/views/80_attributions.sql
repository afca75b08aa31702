-- Token attributions (docs/reference/store.md "Attributions"): per token, per word, and per word over a scoring group's
-- failing cases (the report's section).

-- One row per attributed token: its position, string, character offsets, segment, word and score.
CREATE OR REPLACE VIEW attribution_tokens AS
WITH rows_ AS (
    SELECT a.model_id, a.suite, a.case_id, a.input_idx, a.method, a.target, a.predicted, a.scores, i.tokens,
           i.offsets, i.segment_ids, i.word_ids, i.input, unnest(range(len(a.scores))) AS k
    FROM attributions a
    JOIN attribution_inputs i ON i.tokenizer = a.tokenizer AND i.input_digest = a.input_digest
)
SELECT model_id, suite, case_id, input_idx, method, target, predicted, k AS token_idx,
       tokens->>(k::INTEGER) AS token, (offsets->(k::INTEGER)->>0)::INTEGER AS char_start,
       (offsets->(k::INTEGER)->>1)::INTEGER AS char_end, segment_ids[k + 1] AS segment, word_ids[k + 1] AS word,
       scores[k + 1] AS score,
       CASE WHEN segment_ids[k + 1] < 0 THEN NULL
            WHEN json_type(input) = 'VARCHAR' THEN input->>'$'
            ELSE input->>(segment_ids[k + 1]) END AS segment_text
FROM rows_;

-- One row per word (a word's score is the sum over its pieces; special tokens are words of their own), with its
-- text as it stands in the input.
CREATE OR REPLACE VIEW attribution_words AS
SELECT model_id, suite, case_id, input_idx, method, target, predicted, segment,
       CASE WHEN word < 0 THEN -1 - token_idx ELSE word END AS word, min(token_idx) AS first_token,
       CASE WHEN segment < 0 THEN any_value(token)
            ELSE substring(any_value(segment_text), min(char_start) + 1, max(char_end) - min(char_start)) END AS text,
       min(char_start) AS char_start, max(char_end) AS char_end, sum_of(score) AS score, count(*) AS n_pieces
FROM attribution_tokens
GROUP BY model_id, suite, case_id, input_idx, method, target, predicted, segment,
         CASE WHEN word < 0 THEN -1 - token_idx ELSE word END;

-- Per (task, suite, config, method, variant, scenario, scoring group, attribution method) and lower-cased word: the mean
-- score of the word over the group's failing T_test cases (pooled over replicates and fold models), and how
-- many occurrences it rests on. Special tokens are left out.
CREATE OR REPLACE VIEW failing_words AS
SELECT m.task, w.suite, m.config, m.method, m.variant, m.scenario, c.scoring_group, w.method AS attribution,
       lower(w.text) AS word, mean_of(w.score) AS mean_score, count(*) AS n, count(DISTINCT w.case_id) AS n_cases
FROM attribution_words w
JOIN models m ON m.model_id = w.model_id AND m.status = 'done'
JOIN outcomes o ON o.model_id = w.model_id AND o.suite = w.suite AND o.case_id = w.case_id AND o.outcome = 'fail'
JOIN cases c ON c.suite = w.suite AND c.case_id = w.case_id
WHERE w.segment >= 0
GROUP BY ALL;
