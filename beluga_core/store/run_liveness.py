"""Runs that died: whether a run the store records as ``running`` is really running (issue 55).

A run's coordinator holds a lock on its run while it lives (``RunLock``): the file ``STORE.cache/runs/RUN_ID.lock``,
taken as soon as the run's row is written, its modification time touched every ``HEARTBEAT_S`` seconds (the
heartbeat), released and removed on every way out (done, failed, Ctrl-C, an exception). A process killed outright
(SIGKILL, the OOM killer, a power loss) cannot record its end: its row stays ``running``, but the operating system
releases its lock. ``run_liveness`` tells the two apart:

- on the run's own host (``runs.host``): interrupted when its lock can be taken, or when the lock file is absent and
  its process (``runs.pid``) is gone. Last alive: the lock file's modification time (its last heartbeat), or its
  last finished model, else its start, whichever is latest;
- on another host (a store on a shared filesystem), where neither the lock nor the process can be asked:
  interrupted when its heartbeat is older than ``STALE_AFTER_S``;
- with no liveness record (a run recorded before schema 19, whose ``pid`` is NULL, or whose lock file this host
  cannot see): by the clock, from its last finished model, and its wording says so.

``beluga report`` (every format), ``beluga store info`` and the result site say what it says; a new ``beluga run``
records the dead runs it finds as ``interrupted`` (``StoreWriter.record_interrupted``), with ``finished_at`` the
last time they were alive.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import duckdb
from filelock import FileLock, Timeout

from beluga_core.core.errors import BelugaError
from beluga_core.store.connection import as_utc, utc_now

# How often a living coordinator touches its lock file.
HEARTBEAT_S = 30.0
# Across hosts only the clock can tell: a heartbeat older than this reads as a dead run. Twenty missed heartbeats:
# room for two hosts' clocks to disagree by minutes, for a shared filesystem that caches file times (NFS: up to a
# minute) and for a coordinator stalled a while (swapping, a paused VM), without taking a living run for dead.
STALE_AFTER_S = 10 * 60.0
# A run with no liveness record leaves the store's own commits as the only clock, and one training may run for hours
# between two of them: only a day without a finished model reads as dead (and the wording says it is a guess).
NO_RECORD_STALE_AFTER_S = 24 * 3600.0
# How long the coordinator waits for its run's fresh lock (no other process has a reason to hold it but a reader
# probing it, for an instant).
ACQUIRE_TIMEOUT_S = 10.0

# The runs recorded 'running', with the last time one of their models (or grid points) finished.
RUNNING_RUNS = """
    SELECT r.run_id, r.started_at, r.host, r.pid, max(f.finished_at) AS last_model_at
    FROM runs r
    LEFT JOIN (SELECT run_id, finished_at FROM models UNION ALL SELECT run_id, finished_at FROM grid_points) f
           ON f.run_id = r.run_id
    WHERE r.status = 'running'
    GROUP BY r.run_id, r.started_at, r.host, r.pid
    ORDER BY r.started_at, r.run_id"""


def run_lock_path(store: Path, run_id: str) -> Path:
    """The run's lock file, in the store's cache folder (``execution.worker.cache_dir_for``, spelt out here so that a
    reader of the store does not import the training code)."""
    return store.with_name(store.name + ".cache") / "runs" / f"{run_id}.lock"


def _stamp(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S} UTC"


@dataclass(frozen=True)
class Liveness:
    """What ``run_liveness`` found of a run recorded as ``running``."""

    run_id: str
    running: bool
    last_alive: datetime      # UTC, naive: the latest sign of life (now, for a run seen alive)
    started_at: datetime      # UTC, naive
    why: str                  # what it was judged by, e.g. "its process is gone"
    certain: bool = True      # False: no liveness record, judged by the clock from its last finished model
    host: str | None = None
    pid: int | None = None

    def report_line(self) -> str:
        """The report's sentence (every report format and the result site)."""
        if self.running and self.certain:
            return (f"Run {self.run_id} is still going (started {_stamp(self.started_at)}): this report shows what "
                    "is finished so far.")
        if self.running:
            return (f"Run {self.run_id} may still be going ({self.why}; last alive {_stamp(self.last_alive)}, "
                    f"started {_stamp(self.started_at)}): this report shows what is finished so far.")
        was = "was interrupted" if self.certain else "was probably interrupted"
        return (f"Run {self.run_id} {was} ({self.why}; last alive {_stamp(self.last_alive)}): this report shows "
                "what it finished.")

    def info_line(self) -> str:
        """``beluga store info``'s line."""
        where = " ".join(filter(None, [f"pid {self.pid}" if self.pid is not None else "",
                                       f"on {self.host}" if self.host else ""]))
        if self.running:
            maybe = "" if self.certain else f" ({self.why}; last alive {_stamp(self.last_alive)})"
            return (f"run {self.run_id} is {'running' if self.certain else 'recorded as running'}{maybe}: {where}, "
                    f"started {_stamp(self.started_at)}")
        was = "was interrupted" if self.certain else "was probably interrupted"
        return (f"run {self.run_id} {was} ({self.why}; last alive {_stamp(self.last_alive)}; {where}): the store "
                "records it as running until the next `beluga run` on it records it as interrupted")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (a process of another user counts)."""
    if sys.platform == "win32":  # signal 0 is CTRL_C_EVENT there: no way to ask without acting; the lock decides
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, another user's
        return True
    return True


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
    except OSError:
        return None


def _lock_free(path: Path) -> bool | None:
    """Whether the lock at ``path`` (which exists) can be taken now, without waiting: True, its holder is gone;
    False, a living process holds it; None, it cannot be asked (not readable, or gone meanwhile)."""
    try:
        before = path.stat()
    except OSError:
        return None
    try:
        return _probe(path, before.st_ino)
    finally:
        # Some filelock versions (3.12) open the file truncating it, which stamps it: its time is the heartbeat, so
        # the probe leaves it as it found it.
        with contextlib.suppress(OSError):
            if path.stat().st_mtime_ns != before.st_mtime_ns:
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _probe(path: Path, inode: int) -> bool | None:
    probe = FileLock(str(path))
    try:
        probe.acquire(timeout=0)
    except Timeout:
        return False
    except OSError:
        return None
    try:
        if path.stat().st_ino == inode:
            return True
        # Removed between the look and the probe (its coordinator released it on its way out, and the probe made a
        # new file): the row is about to say how the run ended. The probe's file goes again.
        path.unlink()
        return None
    except OSError:
        return None
    finally:
        probe.release()


def run_liveness(store: Path, run: Mapping[str, Any], *, host: str | None = None,
                 now: datetime | None = None) -> Liveness:
    """Whether the run of ``run`` (a ``runs`` row recorded ``running``: ``run_id``, ``started_at``, ``host``, ``pid``
    and, where known, ``last_model_at``, its last finished model's ``finished_at``) is really running. ``host``: the
    host asking (this one unless said); ``now``: UTC (now unless said)."""
    store = Path(store)
    run_id = str(run["run_id"])
    started = as_utc(run["started_at"]) or utc_now()
    recorded = max(t for t in (started, as_utc(run.get("last_model_at"))) if t is not None)
    here = host or socket.gethostname()
    now = as_utc(now) or utc_now()
    pid = run.get("pid")
    run_host = run.get("host")
    lock = run_lock_path(store, run_id)
    beat = _mtime(lock)

    def seen(running: bool, last: datetime, why: str, certain: bool = True) -> Liveness:
        return Liveness(run_id, running, last, started, why, certain, run_host, None if pid is None else int(pid))

    if run_host == here:
        if beat is not None:
            free = _lock_free(lock)
            if free:
                return seen(False, max(beat, recorded), "its process is gone")
            if free is False:
                return seen(True, now, "its process holds the run lock")
        if pid is not None:
            if pid_alive(int(pid)):
                return seen(True, now, f"its process {pid} is alive")
            return seen(False, max(recorded, beat or recorded), "its process is gone")
    elif beat is not None:
        last = max(beat, recorded)
        if (now - last).total_seconds() > STALE_AFTER_S:
            return seen(False, last, f"no heartbeat from {run_host} for over {STALE_AFTER_S / 60:.0f} minutes")
        return seen(True, now, f"its heartbeat from {run_host} is {max(0, int((now - beat).total_seconds()))} s old")
    why = "no liveness record" + ("" if pid is None else f" on this host (its lock file is on {run_host})")
    if (now - recorded).total_seconds() > NO_RECORD_STALE_AFTER_S:
        hours = NO_RECORD_STALE_AFTER_S / 3600
        return seen(False, recorded, f"{why}; nothing from it for over {hours:.0f} h", certain=False)
    return seen(True, recorded, why, certain=False)


def running_runs(con: duckdb.DuckDBPyConnection, store: Path, *, host: str | None = None,
                 now: datetime | None = None) -> list[Liveness]:
    """Every run ``con``'s store records as ``running``, each judged by ``run_liveness``, in start order."""
    cur = con.execute(RUNNING_RUNS)
    names = [d[0] for d in cur.description]
    return [run_liveness(store, dict(zip(names, row, strict=True)), host=host, now=now) for row in cur.fetchall()]


def discard_lock(store: Path, run_id: str) -> None:
    """Remove a dead run's lock file, if no process holds it (a new run does, once it recorded the run's end)."""
    path = run_lock_path(store, run_id)
    if not path.exists():
        return
    probe = FileLock(str(path))
    try:
        probe.acquire(timeout=0)
    except (Timeout, OSError):
        return
    try:
        with contextlib.suppress(OSError):
            path.unlink()
    finally:
        probe.release()


class RunLock:
    """The lock a run's coordinator holds while it lives, with its heartbeat (a daemon thread touching the file every
    ``heartbeat_s`` seconds). ``acquire`` once the run's row is written; ``release`` on every way out (it also
    removes the file); a context manager does both."""

    def __init__(self, store: Path, run_id: str, *, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.path = run_lock_path(Path(store), run_id)
        self.heartbeat_s = heartbeat_s
        self._lock = FileLock(str(self.path))
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=ACQUIRE_TIMEOUT_S)
        except Timeout as exc:
            raise BelugaError(f"another process holds the run lock {self.path}", source=self.path) from exc
        os.utime(self.path)
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name=f"beluga-heartbeat-{self.path.stem}", daemon=True)
        self._beat.start()
        return self

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            with contextlib.suppress(OSError):  # removed under it (the cache folder deleted): nothing to touch
                os.utime(self.path)

    def release(self) -> None:
        """Stop the heartbeat, remove the file and release the lock; again, or before ``acquire``, it does nothing."""
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        if not self._lock.is_locked:
            return
        # Removed while still held, so that no prober finds the file free and takes it for a dead run's.
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._lock.release()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
