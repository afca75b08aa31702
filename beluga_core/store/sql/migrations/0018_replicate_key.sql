-- Migration 18: the replicate key, defined once (docs/reference/store.md "One replicate key").
--
-- A replicate cell is one (task, suite, model_name, config, method, seed, split_seed, variant): its models together
-- give one outcome per T_test case and scenario. Key columns may be NULL (the seed of an external evaluation, the
-- suite of a task without one), so two rows are of one cell when every key column is equal or NULL on both sides.
-- Every view and query that joins two relations on a cell, or on a coarser one, calls one of the same_* macros
-- below, and no other code compares key columns one by one: a new key column is added here (and to the tables),
-- nowhere else.
--
-- The macros take two rows a and b (table aliases, or STRUCTs of named values; an alias must not also be a column's
-- name: in `FROM g_scores g`, g is the G column) and compare their key columns. beluga's views and queries call
-- them as same_*(x, y) and are expanded to these comparisons before DuckDB sees them (store/connection.py
-- expand_key_comparisons, which reads the bodies from here): through a macro's row arguments DuckDB 1.2.0 planned
-- the report's joins worse (table3 1.3x slower to read), and a join on a hash of the columns read the views 10-19 %
-- slower at 2.0.1 and twice as slow at 1.2.0 (benchmarks/perf/replicate_key_joins.py). In a store the macros are
-- there for any client's SQL. Each body is one `a.col … b.col` expression ending in `;`. task, config, method and
-- variant are never NULL.

-- The replicate cell.
CREATE OR REPLACE MACRO same_replicate(a, b) AS
    a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite AND a.model_name IS NOT DISTINCT FROM b.model_name
    AND a.config = b.config AND a.method = b.method AND a.seed IS NOT DISTINCT FROM b.seed
    AND a.split_seed IS NOT DISTINCT FROM b.split_seed AND a.variant = b.variant;

-- The same draw under another recipe (config, method left out): the cells a baseline pairs with.
CREATE OR REPLACE MACRO same_draw(a, b) AS
    a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite AND a.model_name IS NOT DISTINCT FROM b.model_name
    AND a.seed IS NOT DISTINCT FROM b.seed AND a.split_seed IS NOT DISTINCT FROM b.split_seed AND a.variant = b.variant;

-- The cell of migration 13 (seed left out: its seeds are its replicates).
CREATE OR REPLACE MACRO same_cell(a, b) AS
    a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite AND a.model_name IS NOT DISTINCT FROM b.model_name
    AND a.config = b.config AND a.method = b.method AND a.split_seed IS NOT DISTINCT FROM b.split_seed
    AND a.variant = b.variant;

-- The cell under another recipe (seed, config and method left out): a cell's baseline cell.
CREATE OR REPLACE MACRO same_cell_draw(a, b) AS
    a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite AND a.model_name IS NOT DISTINCT FROM b.model_name
    AND a.split_seed IS NOT DISTINCT FROM b.split_seed AND a.variant = b.variant;

-- A replicate of a mean over tasks (task, suite and model_name left out).
CREATE OR REPLACE MACRO same_over_tasks(a, b) AS
    a.config = b.config AND a.method = b.method AND a.seed IS NOT DISTINCT FROM b.seed
    AND a.split_seed IS NOT DISTINCT FROM b.split_seed AND a.variant = b.variant;

-- A recipe pooled over its draws (model_name, seed and split_seed left out): the report's cells.
CREATE OR REPLACE MACRO same_recipe(a, b) AS
    a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite AND a.config = b.config AND a.method = b.method
    AND a.variant = b.variant;

-- The suite a task is scored on.
CREATE OR REPLACE MACRO same_suite(a, b) AS a.task = b.task AND a.suite IS NOT DISTINCT FROM b.suite;

-- The replicate cell of row r as an id, for grouping and joining in your own SQL (beluga's views join through the
-- same_* macros): md5 of the JSON array of the key columns as text, JSON null for NULL, so never NULL itself.
CREATE OR REPLACE MACRO replicate_key(r) AS md5(to_json([
    r.task, r.suite, r.model_name, r.config, r.method, r.seed::VARCHAR, r.split_seed::VARCHAR, r.variant]));
