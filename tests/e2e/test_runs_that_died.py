"""Runs that died, across processes: a `beluga run` SIGKILLed reads as interrupted in the report and `beluga store
info`, and the next run records it so; a run whose coordinator lives in another process (another terminal) reads as
running until that process is killed. The liveness rules themselves: tests/unit/store/test_run_liveness.py."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import DATA, REPO, beluga, config_with, query, run_cli

from beluga_core.store.connection import utc_now
from beluga_core.store.run_liveness import run_lock_path
from beluga_core.store.writer import StoreWriter, new_run_id

FAULTY = '\n[executor.options]\nworker = "faults:FaultyWorker"\n'


def _stamp(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC"


def test_a_sigkilled_run_reads_as_interrupted_and_the_next_run_records_it(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # The test-only worker of tests/faults.py SIGKILLs the run's own process (the local executor) before its first
    # job: the coordinator has recorded the run and holds its lock, nothing has trained.
    config = config_with(DATA / "tiny-executors.toml", tmp_path, append=FAULTY)
    store = tmp_path / "killed.duckdb"
    env = {"PYTHONPATH": str(REPO / "tests")}
    killed = beluga("run", str(config), "--store", str(store), env={**env, "BELUGA_FAULT": f"before:{tmp_path / 'a'}"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    ((run_id, status, pid, host),) = query(store, "SELECT run_id, status, pid, host FROM runs")
    assert status == "running" and host == socket.gethostname()
    lock = run_lock_path(store, run_id)
    assert lock.exists()                # SIGKILL left the file; the operating system released the lock
    last = datetime.fromtimestamp(lock.stat().st_mtime, UTC).replace(tzinfo=None)
    code, out, _ = run_cli(capsys, "report", store)
    said = f"Run {run_id} was interrupted (its process is gone; last alive {_stamp(last)}): this report shows what it "
    assert code == 0 and said in " ".join(out.split()), out
    assert "still going" not in out
    code, out, _ = run_cli(capsys, "store", "info", store)
    assert code == 0
    assert (f"run {run_id} was interrupted (its process is gone; last alive {_stamp(last)}; pid {pid} on {host}): "
            "the store records it as running until the next `beluga run` on it records it as interrupted") \
        in " ".join(out.split()), out
    # The next run on the store records it as interrupted, at its last heartbeat, and removes its lock file.
    again = beluga("run", str(config), "--store", str(store), env={**env, "BELUGA_FAULT": f"before:{tmp_path / 'b'}"})
    assert again.returncode == -signal.SIGKILL, again.stderr[-3000:]
    assert (f"run {run_id} was interrupted (its process is gone; last alive {_stamp(last)}): recorded as "
            "interrupted") in " ".join(again.stdout.split()), again.stdout
    rows = query(store, "SELECT run_id, status, finished_at FROM runs ORDER BY started_at")
    assert rows[0] == (run_id, "interrupted", last) and rows[1][1:] == ("running", None)
    assert not lock.exists() and run_lock_path(store, rows[1][0]).exists()


def test_a_run_alive_in_another_process_reads_as_running_until_it_is_killed(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    # "Another terminal": a process that holds the run's lock (as a run's coordinator does) and lives on.
    writer = StoreWriter(tmp_path / "s.duckdb")
    run_id = new_run_id(utc_now())
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from beluga_core.store.run_liveness import RunLock
        RunLock(Path({str(writer.path)!r}), {run_id!r}).acquire()
        print("holding", flush=True)
        sys.stdin.read()
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "holding"
        writer.begin_run(None, "", run_id=run_id, pid=proc.pid)
        started = query(writer.path, "SELECT started_at FROM runs")[0][0]
        code, out, _ = run_cli(capsys, "report", writer.path)
        assert code == 0
        assert (f"Run {run_id} is still going (started {_stamp(started)}): this report shows what is finished so "
                "far.") in " ".join(out.split()), out
        code, out, _ = run_cli(capsys, "store", "info", writer.path)
        assert (f"run {run_id} is running: pid {proc.pid} on {socket.gethostname()}, started {_stamp(started)}"
                in " ".join(out.split())), out
    finally:
        proc.kill()
        proc.wait(timeout=30)
    code, out, _ = run_cli(capsys, "report", writer.path)
    assert f"Run {run_id} was interrupted (its process is gone; last alive " in " ".join(out.split()), out


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")   # the in-process CLI's lines unwrapped
