-- Migration 18: the replicate key, defined once (docs/reference/store.md "One replicate key").
--
-- A replicate cell is one (task, suite, model_name, config, method, seed, split_seed, variant): its models together
-- give one outcome per T_test case and scenario. Key columns may be NULL (the seed of an external evaluation, the
-- suite of a task without one), so two rows are of one cell when every key column is equal or NULL on both sides.
-- Every view and query that joins two relations on a cell, or on a coarser one, compares these ids; a new key column
-- is added here (and to the tables), nowhere else.
--
-- Each macro takes a row r (a table alias that is not also a column's name: in `FROM g_scores g`, g is the G
-- column) and returns md5 of the JSON array of the eight key columns as text, in the order of replicate_key, with
-- JSON null where a column is NULL or left out; never NULL itself. A coarser key is replicate_key with its pooled
-- columns left out, so it equals replicate_key's array with nulls there and reads relations that lack them.
-- (Written out eight times rather than through one macro with a list of columns to leave out: that form bound
-- slowly enough to make the report's views 30 % slower to read; benchmarks/perf/replicate_key_joins.py.)

-- The cell.
CREATE OR REPLACE MACRO replicate_key(r) AS md5(to_json([
    r.task, r.suite, r.model_name, r.config, r.method, r.seed::VARCHAR, r.split_seed::VARCHAR, r.variant]));

-- The cell without its recipe (config, method): the same draw under another configuration-method, as a baseline
-- pairs with it.
CREATE OR REPLACE MACRO draw_key(r) AS md5(to_json([
    r.task, r.suite, r.model_name, NULL, NULL, r.seed::VARCHAR, r.split_seed::VARCHAR, r.variant]));

-- The cell without its seed: its seeds are its replicates (migration 13; replicate_inputs, replicate_intervals).
CREATE OR REPLACE MACRO cell_key(r) AS md5(to_json([
    r.task, r.suite, r.model_name, r.config, r.method, NULL, r.split_seed::VARCHAR, r.variant]));

-- The cell without its seed and recipe: a cell's baseline cell.
CREATE OR REPLACE MACRO cell_draw_key(r) AS md5(to_json([
    r.task, r.suite, r.model_name, NULL, NULL, NULL, r.split_seed::VARCHAR, r.variant]));

-- The cell pooled over tasks, suites and model names: a mean over tasks (significance's mean_over_tasks rows).
CREATE OR REPLACE MACRO over_tasks_key(r) AS md5(to_json([
    NULL, NULL, NULL, r.config, r.method, r.seed::VARCHAR, r.split_seed::VARCHAR, r.variant]));

-- A recipe pooled over its draws (model names, seeds, split seeds): the report's cells.
CREATE OR REPLACE MACRO recipe_key(r) AS md5(to_json([
    r.task, r.suite, NULL, r.config, r.method, NULL, NULL, r.variant]));

-- The suite a task is scored on (task heads, crossing levels, report columns).
CREATE OR REPLACE MACRO suite_key(r) AS md5(to_json([r.task, r.suite, NULL, NULL, NULL, NULL, NULL, NULL]));
