"""The hand-made stores of issue 52 (tests/unit/analysis/test_crossing.py's known answers, and the every-renderer mark
check in tests/e2e/test_crossing_run.py): one with a crossing level, whose scenario's difference from the baseline is
negative over every case and positive, significantly, on the cases it scores (the store that printed "ΔG −2.2 ▲"),
one without, and one whose held-out scenario lacks folds.

Outcomes are laid out so that every figure is a fraction by hand (CROSSING_TARGETS in store_builder): per
functionality 20 cases with a target (f1, f2, f4; f3 none) and 20 without (f3, f4). A model passes a case with a target
iff its index j < the threshold of its plan, one without iff its index k < the other threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from store_builder import CROSSING_LEVEL, StoreBuilder, crossing_cases, crossing_suite_row, make_cases

ROUNDS = 2000
TASK = "hate"
N_IID = 100
# (config, scenario) → (passing threshold among the cases with a target, among those without; None: not scored).
PLAN: dict[tuple[str, str], tuple[int, int | None]] = {
    ("iid", "standard"): (10, 20),     # 0.5 with a target, 1.0 without
    ("lora", "seen"): (16, 6),         # 0.8 / 0.3
    ("lora", "target"): (13, None),    # 0.65 on the only cases it scores
    ("weak", "seen"): (12, 12),        # 0.6 / 0.6
    ("weak", "target"): (7, None),     # 0.35
}
# D_test: the baseline and lora right on 80 of 100 examples (the same ones), weak on 60 of them.
CORRECT = {"iid": [i % 5 != 0 for i in range(N_IID)], "lora": [i % 5 != 0 for i in range(N_IID)],
           "weak": [i % 5 not in (0, 1) for i in range(N_IID)]}


def g(s: float, s_iid: float) -> float:
    return 2 * s * s_iid / (s + s_iid)


def outcomes(with_target: int, without: int | None, *, bump: dict[str, int] | None = None) -> dict[str, str]:
    """Every case's outcome under a plan's thresholds (``bump``: a functionality's threshold raised by so many)."""
    out = {}
    for c in crossing_cases():
        f = c.groups["functionality"]
        j = int(c.case_id.split("-")[1][1:])
        if CROSSING_LEVEL in c.groups:
            out[c.case_id] = "pass" if j < with_target + (bump or {}).get(f, 0) else "fail"
        elif without is not None:
            out[c.case_id] = "pass" if j < without else "fail"
    return out


def crossing_store(path: Path, seeds: tuple[int, ...] = (42,)) -> Path:
    """The store of the module docstring: lora's target scenario raises f2's threshold by one per further seed, so its
    differences vary a little between seeds."""
    b = StoreBuilder(path, crossing_cases(), row=crossing_suite_row())
    b.record_test_split()
    for i, seed in enumerate(seeds):
        for (config, scenario), (with_target, without) in PLAN.items():
            bump = {"f2": i} if (config, scenario) == ("lora", "target") else None
            b.add(config, "vanilla", scenario, outcomes(with_target, without, bump=bump),
                  CORRECT[config] if scenario in ("standard", "seen") else None, task=TASK, seed=seed)
    return path


def plain_store(path: Path) -> Path:
    """A store without a crossing level, with marks either way: 'up' passes what the baseline fails, 'down' fails what
    it passes (and is wrong on more D_test examples)."""
    cases = make_cases(per_group=20)
    b = StoreBuilder(path, cases)
    base = {c.case_id: "pass" if i % 2 else "fail" for i, c in enumerate(cases)}
    b.add("iid", "vanilla", "standard", base, [i % 4 != 0 for i in range(N_IID)])
    for scenario in ("seen", "functionality"):
        b.add("up", "vanilla", scenario, {k: "pass" for k in base}, [True] * N_IID if scenario == "seen" else None)
        b.add("down", "vanilla", scenario, {k: "fail" if i % 3 else v for i, (k, v) in enumerate(base.items())},
              [i % 2 == 0 for i in range(N_IID)] if scenario == "seen" else None)
    return path


def partial_store(path: Path) -> Path:
    """The toy suite's functionality scenario with the folds of f1 and f2 only (the others missing or failed): on its
    40 cases 'part' passes half where the baseline passes a fifth, while the baseline passes 90 % of f3–f5's."""
    cases = make_cases(per_group=20)
    b = StoreBuilder(path, cases)
    base = {c.case_id: "pass" if int(c.case_id.split("-")[1]) < (4 if c.case_id[:2] in ("f1", "f2") else 18)
            else "fail" for c in cases}
    b.add("iid", "vanilla", "standard", base, [i % 5 != 0 for i in range(N_IID)])
    b.add("part", "vanilla", "seen", base, [i % 5 != 0 for i in range(N_IID)])
    b.add("part", "vanilla", "functionality",
          {c.case_id: "pass" if int(c.case_id.split("-")[1]) < 10 else "fail" for c in cases if c.case_id[:2] in
           ("f1", "f2")})
    return path


STORES: dict[str, Callable[[Path], Path]] = {
    "crossing-1-seed": crossing_store,
    "crossing-3-seeds": lambda p: crossing_store(p, (42, 43, 44)),
    "plain": plain_store,
    "partial": partial_store,
}
