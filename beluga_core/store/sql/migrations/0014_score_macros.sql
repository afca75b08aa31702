-- Migration 14: the score formulas, each defined once as a macro that every view needing it calls
-- (docs/method.md "Scores"; docs/reference/store.md "Macros"). Macros live in the store's catalog like the views, so any
-- DuckDB client reads the views, or calls the macros itself, with nothing of beluga installed.
--
-- Unlike a view, which every open re-creates, a macro is schema: a changed definition is a new migration (CREATE OR
-- REPLACE MACRO), never an edit of this file.

-- The pass rate of a group: passes over evaluable cases (skips are neither passes nor failures); NULL when no case
-- was evaluable.
CREATE OR REPLACE MACRO pass_rate(n_pass, n_fail) AS
    CASE WHEN n_pass + n_fail = 0 THEN NULL ELSE n_pass::DOUBLE / (n_pass + n_fail) END;

-- s_T, an aggregate: the unweighted mean of the groups' pass rates, leaving out the groups excluded from G
-- (g_exclusions) and those without an evaluable case (pass rate NULL).
CREATE OR REPLACE MACRO suite_score(rate, excluded) AS
    avg(rate) FILTER (WHERE NOT excluded AND rate IS NOT NULL);

-- G, the harmonic mean of a suite score and an i.i.d. score: 2·s·s_iid / (s + s_iid); 0 when both are 0 (the limit
-- of the harmonic mean), NULL when either is missing.
CREATE OR REPLACE MACRO g_score(s, s_iid) AS
    CASE WHEN s IS NULL OR s_iid IS NULL THEN NULL
         WHEN s + s_iid = 0 THEN 0.0
         ELSE 2 * s * s_iid / (s + s_iid) END;

-- A case's group at a level: its test type at the level 'test_type', else its entry for the level in `groups`
-- (NULL where it has none).
CREATE OR REPLACE MACRO case_group(test_type, groups, level) AS
    CASE WHEN level = 'test_type' THEN test_type ELSE json_extract_string(groups, '$."' || level || '"') END;
