"""Checkpoint drills (``run_drills.py fold | fold-cost | ray-fold``): one fold of benchmarks/drills/fold.toml
(600 steps, about 2 minutes of training on 2 idle CPU cores in fp32, deterministic), killed inside its
training and resumed.

- **fold**: SIGKILL `beluga run` at ``--kills`` random moments of the fold's training, with an explicit interval
  (``--every``, default "5 s"), resuming each time. A moment: once the attempt has saved 1 or 2 checkpoints (drawn),
  a uniform time within 1.5 intervals after that save, so kills land before and after the next save. Prints per kill
  the checkpoint's step and the work lost: the training since the last save plus the load time (reading and checking
  the checkpoint, measured here), against its bound: one interval (a save is made at the step that would carry the
  training since the last one past it) plus the load. A kill that lands while a save is being taken or written loses
  the training up to the moment that save took its state (the run's debug line, BELUGA_LOG_LEVEL=DEBUG, says when);
  the save's own time is no training. The start-up of each resumed process (imports, the model) is not training and
  is not counted. The final store must equal an uninterrupted run's bit for bit, and no checkpoint may be left
  behind.
- **fold-cost**: the same fold uninterrupted with ``checkpoint_every = "auto"`` and with "off", alternated
  ``--pairs`` times: the models' recorded training seconds, the saves the auto runs made (the checkpoint file's
  rewrites, polled) and the cost ratio with the spread over pairs.
- **ray-fold**: the fold on a local 2-CPU Ray cluster; once the driver holds a checkpoint, SIGKILL the Ray
  worker process running the fold: the retried fold must resume from that checkpoint (the run says so) and
  end equal to the uninterrupted local run (one fold, two threads: the same numbers on either executor).
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import statistics
import time
from pathlib import Path

import duckdb

from beluga_core.config.executor_spec import CheckpointEvery
from beluga_core.training import checkpoint_file
from benchmarks.drills.drill_runs import DRILLS, Run, digest, result_line, say, store_check

FOLD = DRILLS / "fold.toml"


def fold_config(out: Path, name: str, every: str, executor: str = "local", options: str = "") -> Path:
    """fold.toml with the interval ``every``, on ``executor`` with these ``[executor.options]`` lines."""
    text = FOLD.read_text(encoding="utf-8")
    text = text.replace('name = "local"', f'name = "{executor}"')
    text = text.replace("deterministic = true", f'deterministic = true\ncheckpoint_every = "{every}"')
    if options:
        text += f"[executor.options]\n{options}"
    path = out / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def fresh(store: Path) -> None:
    store.unlink(missing_ok=True)
    shutil.rmtree(store.with_name(store.name + ".cache"), ignore_errors=True)


def checkpoint_of(store: Path) -> Path | None:
    found = sorted(checkpoint_file.checkpoint_folder(store.with_name(store.name + ".cache")).glob("*.safetensors"))
    return found[0] if found else None


def train_seconds(store: Path) -> float:
    con = duckdb.connect(str(store), read_only=True)
    try:
        row = con.execute("SELECT sum(train_seconds) FROM models WHERE status = 'done'").fetchone()
        return float(row[0]) if row and row[0] is not None else float("nan")
    finally:
        con.close()


def load_seconds(path: Path) -> float:
    """What a resume spends reading and checking a checkpoint (the state's copy into the model is ~free)."""
    started = time.perf_counter()
    checkpoint_file.decode(path.read_bytes(), path.name.removesuffix(".safetensors"))
    return time.perf_counter() - started


def save_seconds(path: Path) -> float:
    """What one save of this state takes: encoding it and writing it atomically (as the worker does)."""
    tensors, meta = checkpoint_file.decode(path.read_bytes(), path.name.removesuffix(".safetensors"))
    started = time.perf_counter()
    checkpoint_file.FolderCheckpoints(path.parent / "timing").save("timing", checkpoint_file.encode(tensors, meta))
    seconds = time.perf_counter() - started
    shutil.rmtree(path.parent / "timing", ignore_errors=True)
    return seconds


def reference(out: Path) -> tuple[Path, float]:
    """The uninterrupted run (checkpoints off), and its training seconds; one the fold drill left is reused."""
    store = out / "fold-reference.duckdb"
    with contextlib.suppress(duckdb.Error):
        if store.exists() and train_seconds(store) == train_seconds(store):   # not NaN: its one fold is done
            say(f"  reference (checkpoints off): reused {store}, {train_seconds(store):.1f} s of training")
            return store, train_seconds(store)
    fresh(store)
    run = Run(fold_config(out, "fold-reference", "off"), store)
    if run.wait() != 0:
        raise SystemExit(f"the reference run failed:\n{run.tail()}")
    work = train_seconds(store)
    say(f"  reference (checkpoints off): {time.time() - run.started:.1f} s in all, {work:.1f} s of training")
    return store, work


def drill_fold(out: Path, seed: int, kills: int, every: str) -> bool:
    say(f"\n## fold drill: {kills} SIGKILLs inside one fold, checkpoint_every = \"{every}\", seed {seed}")
    interval = CheckpointEvery.parse(every)
    if interval.mode != "seconds":
        raise SystemExit("the fold drill needs an interval in seconds (--every \"5 s\")")
    ref, work = reference(out)
    config = fold_config(out, "fold", every)
    store = out / "fold.duckdb"
    fresh(store)
    rng = random.Random(seed)
    landed, lost, bounds = 0, [], []
    load = float("nan")
    for k in range(kills):
        run = Run(config, store, env={"BELUGA_LOG_LEVEL": "DEBUG"})
        # The moment: once this attempt has saved 1 or 2 checkpoints (drawn), a uniform time within one and a
        # half intervals after that save; so the kill lands in training, before or after the next save.
        saves_wanted = rng.choice([1, 2])
        seen: list[float] = []
        first = checkpoint_of(store)
        last_mtime = first.stat().st_mtime if first else None
        while run.alive() and len(seen) < saves_wanted:
            path = checkpoint_of(store)
            with contextlib.suppress(OSError):
                if path is not None and path.stat().st_mtime != last_mtime:
                    last_mtime = path.stat().st_mtime
                    seen.append(last_mtime)
            time.sleep(0.02)
        deadline = time.time() + rng.uniform(0, 1.5 * interval.every)
        while run.alive() and time.time() < deadline:
            time.sleep(0.01)
        if not run.alive():
            say(f"  kill {k + 1:2d}: the run finished (exit {run.proc.returncode}) before it")
            break
        killed = time.time()
        run.kill()
        landed += 1
        path = checkpoint_of(store)
        assert path is not None, "a save was seen in this attempt"
        meta = checkpoint_file.peek(path)
        since = killed - path.stat().st_mtime
        # A kill while the next save was being taken or written: the training lost ends where that save took
        # its state (the worker's debug line says when); the save's own time is no training.
        taking = [t for t, line in run.lines if "taking the state" in line and t > path.stat().st_mtime]
        if taking:
            since = min(since, taking[-1] - path.stat().st_mtime)
        load, save = load_seconds(path), save_seconds(path)
        lost.append(since + load)
        # A save is made at the step that would carry the training since the last one past the interval.
        bounds.append(interval.every + load)
        say(f"  kill {k + 1:2d}: {killed - run.started:5.1f} s after the run started, {len(seen)} save(s) in this "
            f"attempt; checkpoint at step {meta['step']} of {meta['n_steps']}; training since it {since:.1f} s + "
            f"load {load:.2f} s = {since + load:.1f} s lost (bound {bounds[-1]:.1f} s: interval + load; a save takes "
            f"{save:.2f} s)")
    final = Run(config, store)
    code = final.wait()
    resumed = [line for _, line in final.lines if "resumed from its checkpoint" in line]
    left = checkpoint_of(store)
    d_ref, d_run = digest(ref), digest(store)
    ok_check = store_check(store)
    within = all(x <= b for x, b in zip(lost, bounds, strict=True))
    result_line("fold", seed=seed, kills=landed, interval=str(interval), fold_training_s=f"{work:.1f}",
                work_lost_s=", ".join(f"{x:.1f}" for x in lost), most_lost_s=f"{max(lost, default=0):.1f}",
                load_s=f"{load:.2f}", within_bound=str(within).lower(), final_exit=code,
                final_run=resumed[0].strip() if resumed else "did not resume",
                checkpoints_left=0 if left is None else 1, digest_uninterrupted=d_ref, digest_interrupted=d_run,
                identical=str(d_ref == d_run).lower(), store_check="passes" if ok_check else "FAILS")
    return code == 0 and d_ref == d_run and within and left is None and ok_check and landed == kills


def drill_cost(out: Path, pairs: int) -> bool:
    say(f"\n## fold cost: checkpoint_every = \"auto\" against \"off\", {pairs} pair(s), alternated")
    ratios, saves, sizes = [], [], []
    for i in range(pairs):
        seconds = {}
        for every in ("off", "auto") if i % 2 == 0 else ("auto", "off"):
            store = out / f"fold-cost-{every}.duckdb"
            fresh(store)
            run = Run(fold_config(out, f"fold-cost-{every}", every), store)
            mtimes = set()
            while run.alive():
                path = checkpoint_of(store)
                with contextlib.suppress(OSError):
                    if path is not None:
                        mtimes.add(path.stat().st_mtime)
                        sizes.append(path.stat().st_size)
                time.sleep(0.05)
            if run.wait() != 0:
                raise SystemExit(f"run failed:\n{run.tail()}")
            seconds[every] = train_seconds(store)
            if every == "auto":
                saves.append(len(mtimes))
        ratios.append(seconds["auto"] / seconds["off"])
        say(f"  pair {i + 1}: training {seconds['off']:.1f} s without checkpoints, {seconds['auto']:.1f} s with "
            f"\"auto\" ({saves[-1]} saves): ratio {ratios[-1]:.3f}")
    mean = statistics.fmean(ratios)
    spread = statistics.stdev(ratios) if len(ratios) > 1 else float("nan")
    result_line("fold-cost", pairs=pairs, ratio_mean=f"{mean:.3f}", ratio_sd=f"{spread:.3f}",
                ratios=", ".join(f"{r:.3f}" for r in ratios), saves_per_run=", ".join(map(str, saves)),
                checkpoint_mb=f"{max(sizes, default=0) / 2**20:.0f}")
    return mean <= 1.05


def ray_workers() -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if cmdline.read_bytes().startswith(b"ray::SlotWorker"):
                pids.append(int(cmdline.parent.name))
    return pids


def drill_ray(out: Path, every: str) -> bool:
    say(f"\n## Ray fold drill: a local 2-CPU cluster; the worker running the fold is killed once the driver "
        f"holds a checkpoint (checkpoint_every = \"{every}\")")
    ref, _ = reference(out)
    config = fold_config(out, "ray-fold", every, "ray", "num_cpus = 2\ncpus_per_fold = 2\nmax_retries = 2\n")
    store = out / "ray-fold.duckdb"
    fresh(store)
    run = Run(config, store)
    path, victims = None, []
    while run.alive() and path is None:   # the driver's copy: the keeper's checkpoints, taken into the cache
        path = checkpoint_of(store)
        time.sleep(0.1)
    step = checkpoint_file.peek(path)["step"] if path is not None else None
    while run.alive() and not (victims := ray_workers()):
        time.sleep(0.05)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    killed = time.time() - run.started
    code = run.wait()
    resumed = [line for _, line in run.lines if "resumed from its checkpoint" in line]
    retried = [line for _, line in run.lines if "retrying" in line]
    d_ref, d_run = digest(ref), digest(store)
    ok_check = store_check(store)
    result_line("ray-fold", killed_at_s=f"{killed:.1f}", checkpoint_step_at_kill=step,
                workers_killed=len(victims), retried=len(retried),
                resumed=resumed[0].strip() if resumed else "did not resume", exit=code,
                digest_uninterrupted=d_ref, digest_interrupted=d_run, identical=str(d_ref == d_run).lower(),
                store_check="passes" if ok_check else "FAILS")
    if code != 0 or not resumed:
        say(run.tail(30))
    return code == 0 and bool(victims) and bool(resumed) and d_ref == d_run and ok_check
