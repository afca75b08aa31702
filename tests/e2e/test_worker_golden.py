"""The execution path under golden test: today's worker runs tests/data/tiny-steps.toml end to end (the local
executor, one thread, deterministic fp32; its jobs carry every typed evaluation step of ``planning.steps``), and
the raw rows it writes — outcomes, predictions and probabilities, i.i.d. metrics, the rows of every step (cross-suite
outcomes, attributions, probe outcomes, the grid points' validation rows) — are compared with the rows recorded in
tests/data/golden/tiny-steps/worker_rows.json.gz (``python -m tools.fixtures.build_golden worker``; what is left out
and why: ``worker_golden.WORKER_TABLES`` and ``NOT_RESULTS``).

Where the machine's fingerprint (torch, transformers and numpy versions, torch's CPU kernels, the CPU and its ISA
flags: ``worker_golden.machine_fingerprint``) is the recorded one, every value compares exactly, floats bit for bit.
Elsewhere the discrete values (ids, outcomes, predicted labels, tokens, counts) compare exactly and the floats within
``worker_golden.FLOAT_REL`` / ``FLOAT_ABS``; the test prints which comparison it made and warns when it was not the
exact one. A change meant to change what a job computes or stores records the golden again, and says why in its
commit; docs/project/development.md, "Goldens".

Each step kind's runner skipped in turn (the others run), the comparison must fail, and on that step's tables: the
golden would catch a worker that silently stopped running one."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest

from beluga_core.execution.step_runners import run_step
from beluga_core.planning.steps import Attributions, CrossSuites, FoldEval, IIDTest, Probes, Step, Validation
from tools.fixtures import build_golden, worker_golden  # the recorder and this test share "a table's rows"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

RECORDED = worker_golden.read_worker_rows()

# The tables each step kind fills in this config's run: skipping the step must change them.
STEP_TABLES: dict[type[Step], set[str]] = {
    FoldEval: {"outcomes", "grid_outcomes"},
    CrossSuites: {"cross_outcomes", "cross_evaluations"},
    Attributions: {"attributions"},
    Probes: {"probe_outcomes", "probe_predictions"},
    IIDTest: {"iid_predictions", "iid_metrics", "iid_probs"},
    Validation: {"grid_metrics"},
}


def compared(now: dict[str, Any]) -> tuple[str, list[str]]:
    """How ``now`` was compared with the recording (a line saying so) and what differs."""
    exact = now["fingerprint"] == RECORDED["fingerprint"]
    if exact:
        how = "worker golden: the recorded machine fingerprint; every value compared exactly, floats bit for bit"
    else:
        differ = {k: (RECORDED["fingerprint"].get(k), v) for k, v in now["fingerprint"].items()
                  if RECORDED["fingerprint"].get(k) != v}
        how = (f"worker golden: another machine fingerprint (recorded, now: {differ}); discrete values compared "
               f"exactly, floats within rel {worker_golden.FLOAT_REL:g} / abs {worker_golden.FLOAT_ABS:g}")
    return how, worker_golden.worker_differences(RECORDED, now, exact)


@contextlib.contextmanager
def skipped(kind: type[Step]) -> Iterator[None]:
    """The runner of ``kind`` replaced by one that does nothing (every other step runs as before)."""
    real = run_step.registry[kind]
    run_step.register(kind, lambda step, ev: None)
    try:
        yield
    finally:
        run_step.register(kind, real)


@pytest.fixture(scope="module")
def worker_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return worker_golden.worker_run(tmp_path_factory.mktemp("worker"))


def test_the_golden_covers_every_step_kind() -> None:
    """Every step kind has rows in the recording (a config change that dropped one would leave its check empty)."""
    tables = RECORDED["tables"]
    assert set(STEP_TABLES) == set(get_args(Step))
    for kind, names in STEP_TABLES.items():
        assert all(tables[t]["rows"] for t in names), f"{kind.__name__}: no rows recorded in {sorted(names)}"
    assert {r[0] for r in tables["grid_metrics"]["rows"]} == {r[0] for r in tables["grid_points"]["rows"]}


def test_todays_worker_writes_the_recorded_rows(worker_rows: dict[str, Any]) -> None:
    how, differences = compared(worker_rows)
    print(how)
    if "another machine" in how:
        warnings.warn(how, stacklevel=1)
    assert not differences, how + "\n" + "\n".join(differences)
    # The ids are the planned ones that job_ids.json.gz records (the folds' are chosen by the grid search).
    written = {r[0] for t in ("models", "grid_points") for r in worker_rows["tables"][t]["rows"]}
    assert set(build_golden.job_ids(worker_golden.WORKER_CONFIG)["jobs"]) <= written


@pytest.mark.parametrize("kind", list(STEP_TABLES), ids=lambda k: k.__name__)
def test_the_golden_fails_when_a_step_kind_is_skipped(kind: type[Step], tmp_path: Path) -> None:
    with skipped(kind):
        now = worker_golden.worker_run(tmp_path)
    how, differences = compared(now)
    assert differences, f"{kind.__name__} skipped, yet the worker golden passed ({how})"
    differing = {line.split(":")[0] for line in differences}
    assert STEP_TABLES[kind] <= differing, (kind.__name__, differences)
