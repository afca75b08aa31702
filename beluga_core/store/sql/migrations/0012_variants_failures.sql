-- Migration 12: one store, many runs. Settings never mix, and failures are data.
--
-- variant: the name a run gave its models (`beluga run --variant NAME`, or the config's `variant`); '' for the
-- unnamed default. It is part of every view's scenario key, so two variants never share a view row; a run
-- whose settings differ from the models already stored in the same slot is refused unless it names a variant.
-- settings: everything that shaped the model, as its job id hashes it (the job identity), so a refused run can
-- name the settings that differ. NULL for models written before this migration.
-- A job that failed on every attempt keeps a row with status 'failed': error (its class and message),
-- error_type (the class alone), traceback (its last lines), attempts, worker (where it ran) and its times.
ALTER TABLE models ADD COLUMN variant VARCHAR DEFAULT '';
ALTER TABLE models ADD COLUMN settings JSON;
ALTER TABLE models ADD COLUMN error_type VARCHAR;
ALTER TABLE models ADD COLUMN traceback VARCHAR;
ALTER TABLE models ADD COLUMN attempts INTEGER;
ALTER TABLE models ADD COLUMN worker VARCHAR;
ALTER TABLE grid_points ADD COLUMN variant VARCHAR DEFAULT '';
ALTER TABLE grid_points ADD COLUMN settings JSON;
ALTER TABLE grid_points ADD COLUMN error_type VARCHAR;
ALTER TABLE grid_points ADD COLUMN traceback VARCHAR;
ALTER TABLE grid_points ADD COLUMN attempts INTEGER;
ALTER TABLE grid_points ADD COLUMN worker VARCHAR;
UPDATE models SET variant = '' WHERE variant IS NULL;
UPDATE grid_points SET variant = '' WHERE variant IS NULL;

-- The materialised tests compare arms of one variant.
ALTER TABLE significance_tests ADD COLUMN variant VARCHAR DEFAULT '';
ALTER TABLE cross_significance_tests ADD COLUMN variant VARCHAR DEFAULT '';
UPDATE significance_tests SET variant = '' WHERE variant IS NULL;
UPDATE cross_significance_tests SET variant = '' WHERE variant IS NULL;
