-- Migration 20: sweeps (`[sweep]`, docs/guide/sweeps.md): one size-like setting over several values in one store.
--
-- sweep_points: one row per point: the variant its models are stored under (every view keys on it), the sweep it
-- belongs to (the config's name and base variant), its position, the axis (the first swept key) and its value,
-- every swept key's value (values: a JSON object), and the scoring groups whose T_train held fewer cases than the
-- point asks (capped: level → groups; they train on what they hold).
CREATE TABLE IF NOT EXISTS sweep_points (
    variant       VARCHAR PRIMARY KEY,
    sweep         VARCHAR NOT NULL,
    base_variant  VARCHAR NOT NULL,
    position      INTEGER NOT NULL,
    axis          VARCHAR NOT NULL,
    value         DOUBLE NOT NULL,
    "values"      JSON NOT NULL,
    capped        JSON NOT NULL
);

-- point_models: every model of a point. A job that does not read the swept keys (the IID model of a suite-size
-- sweep) has one id at every point and one models row, under the variant of the first point that ran it; it
-- belongs to every point here, and the scored_models view counts it at each.
CREATE TABLE IF NOT EXISTS point_models (
    variant   VARCHAR NOT NULL,
    model_id  VARCHAR NOT NULL,
    PRIMARY KEY (variant, model_id)
);
