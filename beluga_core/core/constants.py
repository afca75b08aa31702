"""Names shared by every layer, spelled once: scenarios, outcomes, the baseline, statuses."""

from __future__ import annotations

# Scenarios that hold nothing out; every other scenario is named after the level it holds out.
STANDARD = "standard"
SEEN = "seen"
FIXED_SCENARIOS = (STANDARD, SEEN)
# ``only:LEVEL`` in a config: one model per group g of LEVEL, trained on g's T_train cases alone and evaluated on
# all of T_test. In the store each such model is its own scenario, ``only:LEVEL=g``.
ONLY_PREFIX = "only:"


def only_scenario(level: str, group: str) -> str:
    return f"{ONLY_PREFIX}{level}={group}"


def parse_only(scenario: str) -> tuple[str, str | None] | None:
    """(level, group) of an ``only:LEVEL=g`` scenario ((level, None) for the config's ``only:LEVEL``); None for
    any other scenario."""
    if not scenario.startswith(ONLY_PREFIX):
        return None
    level, sep, group = scenario[len(ONLY_PREFIX):].partition("=")
    return level, (group if sep else None)
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
    """standard, seen, then the held-out levels alphabetically, then the only:LEVEL=g scenarios."""
    rest = scenarios - set(FIXED_SCENARIOS)
    return ([s for s in FIXED_SCENARIOS if s in scenarios] + sorted(s for s in rest if not s.startswith(ONLY_PREFIX))
            + sorted(s for s in rest if s.startswith(ONLY_PREFIX)))


def pair_order(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The IID baseline first, then the other configuration-methods by configuration and method."""
    return sorted(pairs, key=lambda k: (k != BASELINE, k))
