-- Migration 4: the suites a store holds (label space, levels, scoring level) and each case's gold label, so
-- that label names and the degeneracy check are views, and nothing reads suite files back.

CREATE TABLE suites (
    suite         VARCHAR PRIMARY KEY,
    label_space   JSON,               -- label names in class-id order; NULL for free-text answers
    levels        JSON NOT NULL,      -- the grouping levels, coarsest first
    scoring_level VARCHAR NOT NULL,
    input_kind    VARCHAR NOT NULL
);

-- The gold label of the case's first input as its expectation states it: a class id as text (eq with the
-- label or a fixed value), "not X" for a not_eq, an answer string, or NULL when the expectation names none
-- (perturbation tests). NULL for cases written before this migration until a run re-writes them.
ALTER TABLE cases ADD COLUMN gold VARCHAR;
