-- Migration 15: the workers a run used (`[executor] workers`, issue 40).
--
-- executor: JSON {"workers": the config's setting ("auto" or a number), "slots": each worker's device, "threads":
-- each worker's CPU threads (both empty where the executor's cluster decides, as on Ray), "why": how auto chose}.
-- Per run, not per model: a model's results do not depend on how many workers ran beside it (its run is
-- models.run_id). NULL for runs recorded before this migration.
ALTER TABLE runs ADD COLUMN executor JSON;
