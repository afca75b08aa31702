"""The inner loop's rule, enforced: a unit test starts no subprocess, runs no plan (no model trains through the
executor, worker or store), drives no browser and reads no trained store. A test that needs one of these belongs
in tests/e2e/; this guard fails it, naming what it did, instead of letting the inner loop slow down unnoticed."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

_WHY = "unit tests (tests/unit) {what}: move this test to tests/e2e/ (docs/project/development.md, 'Tests')"


def _refuse(what: str, original: Any) -> Any:
    @functools.wraps(original)   # its signature and docstring stay: the API reference is generated from them
    def refused(*args: Any, **kwargs: Any) -> Any:
        pytest.fail(_WHY.format(what=what), pytrace=False)
    return refused


@pytest.fixture(autouse=True)
def _unit_tier_rules(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from beluga_core.cli import run_cmd
    from beluga_core.execution.worker import Worker
    from beluga_core.orchestration import coordinator

    monkeypatch.setattr(subprocess.Popen, "__init__", _refuse("start no subprocess", subprocess.Popen.__init__))
    monkeypatch.setattr(coordinator, "run_plan", _refuse("run no plan", coordinator.run_plan))
    monkeypatch.setattr(run_cmd, "run_plan", _refuse("run no plan", run_cmd.run_plan))
    monkeypatch.setattr(Worker, "run", _refuse("train no model through the worker", Worker.run))
    monkeypatch.setattr(Worker, "run_pack", _refuse("train no model through the worker", Worker.run_pack))
    yield


def _no_trained_store(name: str) -> Any:
    @pytest.fixture(name=name)
    def fixture() -> None:
        pytest.fail(_WHY.format(what=f"read no trained store (fixture {name})"), pytrace=False)
    return fixture


# The session stores of tests/conftest.py, each trained by a run: unavailable here.
sentiment_store = _no_trained_store("sentiment_store")
relation_store = _no_trained_store("relation_store")
paraphrase_store = _no_trained_store("paraphrase_store")
executors_store = _no_trained_store("executors_store")
shipped_tiny_runs = _no_trained_store("shipped_tiny_runs")
