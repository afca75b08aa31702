"""``beluga store check``: a sound store passes; each kind of damage the views would silently average over is
named, with exit status 1 (a missing store: 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from helpers import run_cli

pytestmark = pytest.mark.slow

# Folds of tests/data/tiny-executors.toml hold out the length level (short / medium / long).
FOLD = "SELECT model_id FROM models WHERE config = 'iid-then-t' AND heldout_group = 'short'"
OTHER_GROUP_CASE = ("SELECT o.case_id FROM outcomes o JOIN cases c USING (suite, case_id) "
                    "WHERE c.groups->>'length' = 'long' LIMIT 1")

DAMAGE = {
    "a duplicated outcome": ("INSERT INTO outcomes SELECT * FROM outcomes LIMIT 1", ["no duplicate outcomes"]),
    "a fold scored outside its held-out group": (
        f"INSERT INTO outcomes SELECT ({FOLD}), 'sst2-phenomena', ({OTHER_GROUP_CASE}), 'pass', NULL",
        ["fold outcomes inside the held-out group", "one outcome per T_test case and scenario key"]),
    "a model that trained on other cases than its split gives": (
        f"UPDATE models SET train_digest = 'tampered' WHERE model_id = ({FOLD})",
        ["training cases as recorded", "tampered"]),
    "a scored training case": (
        f"""INSERT INTO outcomes SELECT model_id, suite, case_id, 'pass', NULL FROM model_training_cases
            WHERE model_id = ({FOLD}) LIMIT 1""",
        ["no training case scored", "outcomes only on kept T_test cases"]),
    "an IID model without its i.i.d. metric": (
        "DELETE FROM iid_metrics WHERE model_id IN (SELECT model_id FROM models WHERE config = 'iid')",
        ["i.i.d. metrics of the models G reads"]),
    "a fold without its outcomes": (
        f"DELETE FROM outcomes WHERE model_id = ({FOLD})",
        ["outcomes of every done model", "every kept T_test case in scope scored"]),
    "an older schema": ("UPDATE beluga_meta SET value = '1' WHERE key = 'schema_version'",
                        ["schema version known"]),
}


def _copy(store: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store.duckdb"
    shutil.copyfile(store, copy)
    return copy


def test_a_sound_store_passes(executors_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "store", "check", _copy(executors_store, tmp_path))
    assert code == 0 and "all 21 invariants hold" in out


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damage_is_named(damage: str, executors_store: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    sql, expected = DAMAGE[damage]
    store = _copy(executors_store, tmp_path)
    con = duckdb.connect(str(store))
    try:
        assert con.execute(sql).fetchall() is not None
        assert con.execute("SELECT count(*) FROM models").fetchone() == (9,)
    finally:
        con.close()
    code, out, _ = run_cli(capsys, "store", "check", store)
    text = " ".join(out.split())
    assert code == 1, text
    for fragment in expected:
        assert fragment in text, (fragment, text)


def test_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "store", "check", tmp_path / "none.duckdb")
    assert code == 2 and "no such result store" in err
