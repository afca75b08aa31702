-- Migration 6: what each model trained on. split_id names the split its cases come from; train_digest is
-- the sha256 of the JSON list of the sorted ids of the suite cases it trained on (NULL: none), which the
-- model_training_cases view recomputes from case_splits. NULL for models written before this migration.

ALTER TABLE models ADD COLUMN split_id VARCHAR;
ALTER TABLE models ADD COLUMN train_digest VARCHAR;
ALTER TABLE grid_points ADD COLUMN split_id VARCHAR;
ALTER TABLE grid_points ADD COLUMN train_digest VARCHAR;
