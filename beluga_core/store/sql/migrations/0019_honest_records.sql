-- Migration 19: records that say what happened (issue 55).
--
-- runs.pid: the process id of the run's coordinator (with runs.host, where it ran). A run recorded 'running' whose
-- coordinator is gone (killed: SIGKILL, power loss) reads as interrupted: on the same host when its run lock
-- (STORE.cache/runs/RUN_ID.lock, held by the coordinator while it lives) can be taken or its pid is gone; across
-- hosts when its heartbeat (the lock file's modification time) is older than the stale limit. NULL for runs
-- recorded before this migration.
-- runs.effective_config: the config the run actually ran, as JSON (the config file after `--tiny`, `--variant`,
-- `--store`), which everything that rebuilds a stored model reads; runs.config_text keeps the file's text.
-- NULL for runs recorded before this migration (their config_text is read instead).
-- runs.config_changes: what modified the config file's settings before the run (a JSON list of lines, e.g. the
-- `--tiny` notes); [] when nothing did.
ALTER TABLE runs ADD COLUMN pid BIGINT;
ALTER TABLE runs ADD COLUMN effective_config JSON;
ALTER TABLE runs ADD COLUMN config_changes JSON;

-- packs: one row per pack of LoRA trainings (`[executor] pack`): its members (job ids, in the pack's order), the
-- pack's setting and size, and its wall time (train_seconds: the seconds the pack trained, set up and merged its
-- members, evaluations excluded), written once with the pack and updated as its members finish. A member's
-- models.train_seconds is its share of that time, apportioned by the tokens it put through the pack's forward
-- passes, so that the members' train_seconds sum to the pack's. models.pack.id names the row.
CREATE TABLE IF NOT EXISTS packs (
    pack_id        VARCHAR PRIMARY KEY,
    run_id         VARCHAR,
    setting        JSON,
    size           INTEGER,
    members        JSON NOT NULL,
    train_seconds  DOUBLE,
    finished       INTEGER,
    started_at     TIMESTAMP,
    finished_at    TIMESTAMP
);
