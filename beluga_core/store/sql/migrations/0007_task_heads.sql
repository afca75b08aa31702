-- Migration 7: the class names of each task's model head (what i.i.d. predictions store as ids), per suite
-- (a generic classifier's head is its suite's label space). NULL labels: a span model (answers).

CREATE TABLE task_heads (
    task   VARCHAR NOT NULL,
    suite  VARCHAR NOT NULL,
    labels JSON,
    PRIMARY KEY (task, suite)
);
