"""Runs that died (store.run_liveness): a run recorded 'running' whose coordinator is gone reads as interrupted, on its
own host by its run lock or its pid, on another host by its heartbeat's age, and with no liveness record by the clock;
the report, `beluga store info` and a new run's record say so. The processes here are this one (alive) and a pid no
process can have (dead); a real run SIGKILLed, and a lock held by another process, are tests/e2e/test_runs_that_died.py.
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from helpers import run_cli
from rich.console import Console
from toy_store import CASES, SUITE_ROW, result

from beluga_core.analysis.report.report_data import read_report_data, run_lines
from beluga_core.execution.worker import cache_dir_for
from beluga_core.orchestration.coordinator import record_dead_runs
from beluga_core.store.connection import utc_now
from beluga_core.store.reader import open_store
from beluga_core.store.run_liveness import (
    NO_RECORD_STALE_AFTER_S,
    STALE_AFTER_S,
    Liveness,
    RunLock,
    run_liveness,
    run_lock_path,
    running_runs,
)
from beluga_core.store.writer import StoreWriter

# Above the kernel's largest pid (PID_MAX_LIMIT, 2**22): no process has it, so it reads as a process that is gone.
GONE = 2**22 + 1
OTHER_HOST = "another-host.invalid"
T0 = datetime(2026, 3, 1, 12, 0, 0)


def _store(tmp_path: Path, *, pid: int | None, host: str | None = None, started: datetime = T0,
           last_model: datetime | None = None) -> tuple[StoreWriter, str]:
    writer = StoreWriter(tmp_path / "s.duckdb")
    writer.ensure_suite(SUITE_ROW, CASES)
    run_id = writer.begin_run(None, "", host=host, pid=pid, started_at=started)
    if pid is None:  # as a run recorded before schema 19 reads
        with writer.store.transaction() as con:
            con.execute("UPDATE runs SET pid = NULL WHERE run_id = ?", [run_id])
    if last_model is not None:
        writer.commit(result("m1", config="iid", scenario="standard", started_at=started, finished_at=last_model),
                      run_id)
    return writer, run_id


def _left_lock(store: Path, run_id: str, at: datetime) -> Path:
    """The lock file a SIGKILLed coordinator leaves: there, held by nobody, its last heartbeat at ``at`` (UTC)."""
    path = run_lock_path(store, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    stamp = (at - datetime(1970, 1, 1)).total_seconds()
    os.utime(path, (stamp, stamp))
    return path


def _judge(writer: StoreWriter, *, now: datetime | None = None, host: str | None = None) -> list[Liveness]:
    with open_store(writer.path) as con:
        return running_runs(con, writer.path, now=now, host=host)


def test_the_lock_lies_in_the_stores_cache_folder(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    assert run_lock_path(store, "r1") == cache_dir_for(store) / "runs" / "r1.lock"


def test_a_lock_left_free_on_this_host_reads_as_interrupted_at_its_last_heartbeat(tmp_path: Path) -> None:
    writer, run_id = _store(tmp_path, pid=GONE, last_model=T0 + timedelta(minutes=5))
    _left_lock(writer.path, run_id, T0 + timedelta(minutes=7))
    (r,) = _judge(writer)
    assert (r.run_id, r.running, r.certain, r.why) == (run_id, False, True, "its process is gone")
    assert r.last_alive == T0 + timedelta(minutes=7)          # the heartbeat, later than its last model
    # A model committed after the last heartbeat is the later sign of life.
    _left_lock(writer.path, run_id, T0 + timedelta(minutes=2))
    assert _judge(writer)[0].last_alive == T0 + timedelta(minutes=5)
    assert run_lines(read_report_data(writer.path, figures=False)) == [
        f"Run {run_id} was interrupted (its process is gone; last alive 2026-03-01 12:05:00 UTC): this report shows "
        "what it finished."]


def test_a_held_lock_reads_as_running_and_its_release_removes_it(tmp_path: Path) -> None:
    # pid: a process that is gone, so that only the lock keeps the run alive.
    writer, run_id = _store(tmp_path, pid=GONE)
    with RunLock(writer.path, run_id) as lock:
        assert lock.path.exists()
        (r,) = _judge(writer)
        assert r.running and r.certain and r.why == "its process holds the run lock"
        assert run_lines(read_report_data(writer.path, figures=False))[0].startswith(
            f"Run {run_id} is still going (started 2026-03-01 12:00:00 UTC)")
    assert not lock.path.exists()
    lock.release()                                              # again: nothing to do
    (r,) = _judge(writer)                                       # no file now, and the pid is gone
    assert not r.running and r.last_alive == T0


def test_without_a_lock_file_this_host_asks_the_pid(tmp_path: Path) -> None:
    writer, _ = _store(tmp_path, pid=GONE, last_model=T0 + timedelta(minutes=3))
    (r,) = _judge(writer)
    assert (r.running, r.last_alive, r.why) == (False, T0 + timedelta(minutes=3), "its process is gone")
    with writer.store.transaction() as con:
        con.execute("UPDATE runs SET pid = ?", [os.getpid()])
    (r,) = _judge(writer)
    assert r.running and r.why == f"its process {os.getpid()} is alive"


def test_another_hosts_run_is_judged_by_its_heartbeats_age(tmp_path: Path) -> None:
    # The run's host is not this one: neither its lock nor its pid can be asked (this process's pid, alive here,
    # says nothing of it), only the clock.
    writer, run_id = _store(tmp_path, pid=os.getpid(), host=OTHER_HOST)
    now = T0 + timedelta(hours=3)
    _left_lock(writer.path, run_id, now - timedelta(seconds=STALE_AFTER_S - 60))
    (r,) = _judge(writer, now=now)
    assert r.running and r.certain and r.why == f"its heartbeat from {OTHER_HOST} is {int(STALE_AFTER_S) - 60} s old"
    beat = now - timedelta(seconds=STALE_AFTER_S + 60)
    _left_lock(writer.path, run_id, beat)
    (r,) = _judge(writer, now=now)
    assert (r.running, r.last_alive) == (False, beat)
    assert r.why == f"no heartbeat from {OTHER_HOST} for over {STALE_AFTER_S / 60:.0f} minutes"
    # Asked from a host named like the run's, the same file is a lock nobody holds: gone, whatever the clock says.
    (r,) = _judge(writer, now=beat, host=OTHER_HOST)
    assert not r.running and r.why == "its process is gone"


def test_with_no_liveness_record_the_clock_from_its_last_model_decides_and_says_so(tmp_path: Path) -> None:
    # A run recorded before schema 19 (pid NULL), no lock file: its last finished model is the only clock (the
    # report reads the real one: the model finished two hours ago).
    last = utc_now().replace(microsecond=0) - timedelta(hours=2)
    started = last - timedelta(minutes=30)
    writer, run_id = _store(tmp_path, pid=None, started=started, last_model=last)
    (r,) = _judge(writer, now=last + timedelta(hours=2))
    assert r.running and not r.certain and r.why == "no liveness record"
    data = read_report_data(writer.path, figures=False)
    assert [r["run_id"] for r in data.running] == [run_id] and not data.interrupted
    assert run_lines(data) == [f"Run {run_id} may still be going (no liveness record; last alive {last} UTC, started "
                               f"{started} UTC): this report shows what is finished so far."]
    (r,) = _judge(writer, now=last + timedelta(seconds=NO_RECORD_STALE_AFTER_S + 1))
    assert (r.running, r.certain, r.last_alive) == (False, False, last)
    assert r.report_line() == (f"Run {run_id} was probably interrupted (no liveness record; nothing from it for over "
                               f"24 h; last alive {last} UTC): this report shows what it finished.")
    # Another host's run whose lock file this host cannot see: the same, and the wording says where the record is.
    with writer.store.transaction() as con:
        con.execute("UPDATE runs SET pid = 7, host = ?", [OTHER_HOST])
    (r,) = _judge(writer, now=last + timedelta(hours=2))
    assert r.running and not r.certain
    assert r.why == f"no liveness record on this host (its lock file is on {OTHER_HOST})"


def test_the_heartbeat_touches_the_lock_file(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    lock = RunLock(store, "r1", heartbeat_s=0.02).acquire()
    try:
        _left_lock(store, "r1", T0)                             # an old heartbeat: the thread's next one is newer
        row = {"run_id": "r1", "started_at": T0, "host": OTHER_HOST, "pid": 1}
        deadline = time.monotonic() + 30
        while run_liveness(store, row, now=utc_now()).last_alive == T0 and time.monotonic() < deadline:
            time.sleep(0.02)
        seen = run_liveness(store, row, now=utc_now())
        assert seen.running and seen.last_alive > T0
    finally:
        lock.release()
    assert not lock.path.exists()


def test_a_new_run_records_dead_runs_as_interrupted_and_only_those(tmp_path: Path) -> None:
    writer, dead = _store(tmp_path, pid=GONE, last_model=T0 + timedelta(minutes=4))
    _left_lock(writer.path, dead, T0 + timedelta(minutes=9))
    alive = writer.begin_run(None, "")                          # this process: alive
    done = writer.begin_run(None, "")
    writer.finish_run(done)
    console = Console(record=True, width=300)
    record_dead_runs(writer, console)
    with open_store(writer.path) as con:
        rows = dict(con.execute("SELECT run_id, (status, finished_at) FROM runs").fetchall())
    assert rows[dead] == ("interrupted", T0 + timedelta(minutes=9))
    assert rows[alive][0] == "running" and rows[done][0] == "done"
    assert not run_lock_path(writer.path, dead).exists()       # its left lock file goes with it
    assert (f"run {dead} was interrupted (its process is gone; last alive 2026-03-01 12:09:00 UTC): recorded as "
            "interrupted") in console.export_text()
    # A run that recorded its own end meanwhile keeps it.
    assert writer.record_interrupted({done: T0, alive: T0 + timedelta(hours=1)}) == [alive]
    with open_store(writer.path) as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", [done]).fetchall() == [("done",)]


def test_report_and_store_info_say_a_dead_run_was_interrupted(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                              ) -> None:
    writer, dead = _store(tmp_path, pid=GONE, last_model=T0 + timedelta(minutes=4))
    _left_lock(writer.path, dead, T0 + timedelta(minutes=6))
    alive = writer.begin_run(None, "", started_at=T0 + timedelta(hours=1))
    interrupted = (f"Run {dead} was interrupted (its process is gone; last alive 2026-03-01 12:06:00 UTC): this "
                   "report shows what it finished.")
    going = f"Run {alive} is still going (started 2026-03-01 13:00:00 UTC): this report shows what is finished so far."
    code, out, _ = run_cli(capsys, "report", writer.path)
    assert code == 0 and interrupted in out and going in out, out
    assert f"Run {dead} is still going" not in out
    code, out, _ = run_cli(capsys, "report", writer.path, "--format", "md", "--out", tmp_path / "md")
    md = (tmp_path / "md" / "report.md").read_text(encoding="utf-8")
    assert code == 0 and interrupted in md and going in md
    code, out, _ = run_cli(capsys, "store", "info", writer.path)
    assert code == 0
    assert (f"run {dead} was interrupted (its process is gone; last alive 2026-03-01 12:06:00 UTC; pid {GONE} on "
            f"{socket.gethostname()}): the store records it as running until the next `beluga run` on it records it "
            "as interrupted") in out, out
    assert f"run {alive} is running: pid {os.getpid()} on {socket.gethostname()}, started 2026-03-01 13:00:00 UTC" \
        in out, out
