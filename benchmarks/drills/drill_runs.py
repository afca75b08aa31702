"""What the fault drills share (``run_drills`` and ``fold_drills`` import it; neither imports the other): the
drills' folder and environment, a `beluga run` in a subprocess (`Run`), the digest of a store's raw facts that
"identical" compares, and the process tree a drill kills in.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

DRILLS = Path(__file__).resolve().parent
REPO = DRILLS.parents[1]
CONFIG = DRILLS / "drill.toml"
BELUGA = [sys.executable, "-m", "beluga_core"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
MULTI = '[executor]\nname = "multi"\nprecision = "fp32"\nworkers = 2\nthreads = 1\n[executor.options]\n'
FACTS = {"outcomes": "SELECT * FROM outcomes", "iid_predictions": "SELECT * FROM iid_predictions",
         "iid_metrics": "SELECT * FROM iid_metrics", "models": "SELECT model_id, status FROM models"}


def say(text: str) -> None:
    print(text, flush=True)


def config_with(out: Path, executor: str | None, name: str) -> Path:
    """drill.toml, with another [executor] section if given, written to ``out``."""
    text = CONFIG.read_text(encoding="utf-8")
    if executor is not None:
        text = text[:text.index("[executor]")] + executor
    path = out / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def digest(store: Path) -> str:
    """sha256 of the store's sorted raw facts."""
    h = hashlib.sha256()
    con = duckdb.connect(str(store), read_only=True)
    try:
        for name, sql in FACTS.items():
            h.update(name.encode())
            h.update(repr(con.execute(f"{sql} ORDER BY ALL").fetchall()).encode())
    finally:
        con.close()
    return h.hexdigest()


def done_models(store: Path) -> int:
    if not store.exists():
        return 0
    con = duckdb.connect(str(store), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM models WHERE status = 'done'").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def store_check(store: Path) -> bool:
    proc = subprocess.run([*BELUGA, "store", "check", str(store)], capture_output=True, text=True, env=ENV,
                          check=False)
    if proc.returncode != 0:
        say(proc.stdout[-2000:] + proc.stderr[-2000:])
    return proc.returncode == 0


@dataclass
class Run:
    """``beluga run`` in the background; its output lines timestamped (time.time()) as they arrive."""

    config: Path
    store: Path
    env: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.started = time.time()
        self.proc = subprocess.Popen([*BELUGA, "run", str(self.config), "--store", str(self.store), *self.extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**ENV, **self.env})
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float = 1800) -> int:
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=10)
        return code

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.wait()

    def first(self, pattern: str) -> float | None:
        """When the first line matching ``pattern`` arrived."""
        return next((t for t, line in self.lines if re.search(pattern, line)), None)

    def tail(self, n: int = 15) -> str:
        return "\n".join(line for _, line in self.lines[-n:])


def reference(config: Path, store: Path) -> tuple[float, float]:
    """An uninterrupted run: (start-up seconds until its trainings begin, seconds of training after that)."""
    store.unlink(missing_ok=True)
    run = Run(config, store)
    code = run.wait()
    end = time.time()
    if code != 0:
        raise SystemExit(f"the reference run failed:\n{run.tail()}")
    begun = run.first(r"running \d+") or run.started
    say(f"  reference run: {end - run.started:.1f} s ({begun - run.started:.1f} s start-up, "
        f"{end - begun:.1f} s training), {done_models(store)} models")
    return begun - run.started, end - begun


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def worker_pids(coordinator: int) -> list[int]:
    """The multi executor's workers: children of the fork server the coordinator started (or the coordinator's
    own children that are neither the fork server nor the resource tracker, where workers are spawned)."""
    pids = []
    for child in children(coordinator):
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "forkserver" in cmdline:
                pids += children(child)
            elif "resource_tracker" not in cmdline:
                pids.append(child)
    return pids


def result_line(name: str, **figures: object) -> None:
    say(f"{name}: " + ", ".join(f"{k} = {v}" for k, v in figures.items()))
