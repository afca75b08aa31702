"""Issue 56: every command that reads or writes a store opens it (and migrates it) once, and hands the open store
(``store.opened.StoreHandle``) down: no function below the command opens the file again. Counted at
``duckdb.connect``, where every open of a store file passes (``store.connection.connect``'s, and a writer's)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import run_cli
from store_builder import report_store

_OPENS: list[str] = []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("opens") / "results.duckdb"
    report_store(path, analyse=False)
    return path


@pytest.fixture
def store(template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "results.duckdb"
    shutil.copyfile(template, path)
    other = tmp_path / "other.duckdb"
    shutil.copyfile(template, other)
    real = duckdb.connect

    def counted(database: Any = ":memory:", *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        if Path(str(database)).name.endswith(".duckdb"):
            _OPENS.append(Path(str(database)).name)
        return real(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counted)
    _OPENS.clear()
    yield path


COMMANDS = {
    "analyze": ["analyze", "{store}", "--rounds", "20"],
    "analyze --compare": ["analyze", "{store}", "--rounds", "20", "--compare", "iid-plus-t", "iid-then-t"],
    "report": ["report", "{store}"],
    "report --format md": ["report", "{store}", "--format", "md", "--out", "{tmp}/md"],
    "report --format html": ["report", "{store}", "--format", "html", "--out", "{tmp}/html"],
    "report --format site": ["report", "{store}", "--format", "site", "--out", "{tmp}/site"],
    "store info": ["store", "info", "{store}"],
    "store check": ["store", "check", "{store}"],
    "sql": ["sql", "{store}", "SELECT count(*) FROM models"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_opens_its_store_once(command: str, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(store=store, tmp=store.parent) for a in COMMANDS[command]]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, (out, err)
    assert len(_OPENS) == 1 and _OPENS[0] == store.name, f"{command}: opened {len(_OPENS)} time(s): {_OPENS}"


def test_report_site_with_compare_opens_each_store_once(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "report", store, "--format", "site", "--out", store.parent / "site",
                             "--compare", store.parent / "other.duckdb")
    assert code == 0, (out, err)
    assert sorted(_OPENS) == ["other.duckdb", store.name]
