"""Names shared by every layer, spelled once: scenarios, outcomes, the baseline, statuses."""

from __future__ import annotations

# Scenarios that hold nothing out; every other scenario is named after the level it holds out.
STANDARD = "standard"
SEEN = "seen"
FIXED_SCENARIOS = (STANDARD, SEEN)
# ``test_type`` is a case field, and every suite can hold it out as if it were a level.
TEST_TYPE_LEVEL = "test_type"

# The training configuration that fine-tunes on i.i.d. data only (the baseline of every comparison), and the
# method it always trains with.
IID_CONFIG = "iid"
BASELINE_METHOD = "vanilla"
BASELINE = (IID_CONFIG, BASELINE_METHOD)

# Expectation outcomes: integer codes (what expectation kinds return) and their names (what the store keeps).
PASS, FAIL, SKIP = 1, 0, -1
OUTCOME_NAMES = {PASS: "pass", FAIL: "fail", SKIP: "skip"}
OUTCOMES = ("pass", "fail", "skip")

IID_SPLITS = ("val", "test")
MODEL_STATUSES = ("done", "failed")
RUN_STATUSES = ("running", "done", "failed", "interrupted")
# A model beluga did not train (`beluga suite check --store`).
EXTERNAL_CONFIG = "external"
EXTERNAL_METHOD = "none"


def scenario_order(scenarios: set[str]) -> list[str]:
    """standard, seen, then the held-out levels alphabetically."""
    return [s for s in FIXED_SCENARIOS if s in scenarios] + sorted(scenarios - set(FIXED_SCENARIOS))


def pair_order(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The IID baseline first, then the other configuration-methods by configuration and method."""
    return sorted(pairs, key=lambda k: (k != BASELINE, k))
