"""The DuckDB result store across processes: a writer killed mid-commit, a writer waiting for a reader in another
process, a reader seeing commits as they land (the store's unit tests: tests/unit/store/test_store.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers import REPO
from toy_store import (
    CASES,
    SUITE_ROW,
    result,
    rows_of,
)

from beluga_core.core.errors import BelugaError
from beluga_core.store import connection as connection_mod
from beluga_core.store.reader import done_ids
from beluga_core.store.writer import StoreWriter

# --------------------------------------------------------------------------------- the views


# ----------------------------------------------------------------------------- the writer


def _with_tests_on_path() -> dict[str, str]:
    """This environment, with tests/ first on PYTHONPATH: a child process imports the tests' helpers as pytest
    does (tests/ is not a package)."""
    paths = [str(REPO / "tests"), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@pytest.fixture
def writer(tmp_path: Path) -> StoreWriter:
    w = StoreWriter(tmp_path / "w.duckdb")
    w.ensure_suite(SUITE_ROW, CASES)
    return w


def test_crash_mid_commit_leaves_no_rows(writer: StoreWriter, tmp_path: Path) -> None:
    # The process dies inside the transaction (no rollback, no close): DuckDB's WAL must drop it.
    script = textwrap.dedent(f"""
        import os
        from beluga_core.store.writer import StoreWriter
        from toy_store import result
        StoreWriter._insert_outcomes = lambda *a, **k: os._exit(3)
        StoreWriter({str(writer.path)!r}).commit(result("m1"))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=_with_tests_on_path(),
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 3, proc.stderr
    assert sum(rows_of(writer.path, "m1").values()) == 0
    writer.commit(result("m2"))
    assert done_ids(writer.path) == {"m2"}


def test_writer_waits_for_a_reader_in_another_process(writer: StoreWriter,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    script = textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(writer.path)!r}, read_only=True)
        print("open", flush=True)
        time.sleep(2.5)
        con.close()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        # While it waits, the writer says every LOCK_REPORT_EVERY seconds which process holds the store.
        monkeypatch.setattr(connection_mod, "LOCK_REPORT_EVERY", 0.25)
        said: list[str] = []
        writer.store.on_wait = said.append
        writer.store.lock_timeout = 1.2
        with pytest.raises(BelugaError, match=rf"held open by process {proc.pid} \(.*python.*\).*waited 1 s"):
            writer.commit(result("m0"))
        assert len(said) >= 2 and all(f"process {proc.pid}" in m and "at most 1 s" in m for m in said), said
        writer.store.lock_timeout = 60.0
        start = time.monotonic()
        writer.commit(result("m1"))
        assert time.monotonic() - start > 0.3  # it did wait for the reader
    finally:
        proc.wait(timeout=30)
    assert done_ids(writer.path) == {"m1"}


def test_reader_process_sees_commits_as_they_land(writer: StoreWriter) -> None:
    script = textwrap.dedent(f"""
        import time
        from beluga_core.store.reader import fetch_dicts
        seen = []
        for _ in range(15):
            seen.append(len(fetch_dicts({str(writer.path)!r}, "models_status")))
            time.sleep(0.02)
        print(seen[0], seen[-1])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    for seed in range(8):
        writer.commit(result(f"m{seed}", seed=seed))
        time.sleep(0.05)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    first, last = map(int, out.split())
    assert first <= last <= 8


# --------------------------------------------------------------------- creating and opening
