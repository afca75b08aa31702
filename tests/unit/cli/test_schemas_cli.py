"""JSON Schemas stay in sync with the pydantic models; `suite info` and `plugins list` show what they promise."""

from __future__ import annotations

import pytest
from helpers import REPO

from beluga_core.cli.app import main
from beluga_core.cli.jsonschema import models, render

SCHEMAS = REPO / "schemas"


@pytest.mark.parametrize("name", sorted(models()))
def test_json_schema_in_sync(name: str) -> None:
    path = SCHEMAS / name
    assert path.exists(), f"{path} missing: run python -m beluga_core.cli.jsonschema --builtin schemas"
    assert path.read_text(encoding="utf-8") == render(models()[name]), \
        f"{path} is stale: run python -m beluga_core.cli.jsonschema --builtin schemas"


def run_ok(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        main(argv)
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr().err
    return " ".join(capsys.readouterr().out.split())


def test_suite_info_counts(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = run_ok(["suite", "info", "builtin:sst2-phenomena"], capsys)
    assert "300 cases" in out and "levels: phenomenon ⊃ length" in out
    assert "level phenomenon: 5 groups" in out and "level length: 3 groups" in out
    assert "test types: INV (100), MFT (200)" in out
    assert "label space: negative, positive" in out


def test_suite_info_checklist(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = run_ok(["suite", "info", "builtin:sentiment"], capsys)
    assert "86,420 cases, 178,578 inputs" in out
    assert "level functionality: 38 groups" in out and "level class: 7 groups" in out
    assert "DIR (9,368), INV (8,140), MFT (68,912)" in out


def test_plugins_list_shows_builtins_with_their_package(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = run_ok(["plugins", "list"], capsys)
    for fragment in ("task (beluga.tasks)", "sentiment", "method (beluga.methods)", "vanilla",
                     "loss (beluga.losses)", "expectation kind (beluga.expectations)", "monotonic",
                     "executor (beluga.executors)", "local", "beluga_core.tasks.sentiment:SentimentTask"):
        assert fragment in out
    assert " beluga " in out  # the distribution each plugin comes from
