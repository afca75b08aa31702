-- Migration 10: token attributions (docs/guides/attributions.md).
--
-- How an input is tokenized, once per (tokenizer, input): its text (a string, or a [first, second] pair), the
-- tokens, their character offsets into the text of their segment ([0, 0] for special tokens), their segment
-- (0, 1; -1 for special tokens) and the word each belongs to (-1 for special tokens).
CREATE TABLE attribution_inputs (
    tokenizer    VARCHAR NOT NULL,
    input_digest VARCHAR NOT NULL,
    input        JSON NOT NULL,
    tokens       JSON NOT NULL,
    offsets      JSON NOT NULL,
    segment_ids  INTEGER[] NOT NULL,
    word_ids     INTEGER[] NOT NULL,
    PRIMARY KEY (tokenizer, input_digest)
);

-- One score per token of one input of a case, per model, estimator and target. Unique (model_id, suite,
-- case_id, input_idx, method), checked by the writer.
CREATE TABLE attributions (
    model_id     VARCHAR NOT NULL,
    suite        VARCHAR NOT NULL,
    case_id      VARCHAR NOT NULL,
    input_idx    INTEGER NOT NULL,
    method       VARCHAR NOT NULL,
    options      JSON NOT NULL,
    target       VARCHAR NOT NULL,     -- the class id (a span model: "start:end") the scores explain
    predicted    VARCHAR NOT NULL,     -- the model's prediction on the input
    tokenizer    VARCHAR NOT NULL,
    input_digest VARCHAR NOT NULL,
    scores       FLOAT[] NOT NULL
);
