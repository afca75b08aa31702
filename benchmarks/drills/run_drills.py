"""Fault drills: kill beluga's coordinator and its workers at random moments, hold its store open, and check
that every interrupted run ends with exactly the facts of an uninterrupted one. Scripts that print figures,
not timed tests (each drill takes a few minutes on 2 CPU cores; see RESULTS.md beside this file).

    python -m benchmarks.drills.run_drills                      # all three drills, seed 0
    python -m benchmarks.drills.run_drills coordinator --seed 7 --kills 25
    python -m benchmarks.drills.run_drills workers
    python -m benchmarks.drills.run_drills reader --lock-timeout 30
    python -m benchmarks.drills.run_drills fold --kills 10 --every "5 s"   # checkpoints inside a fold
    python -m benchmarks.drills.run_drills fold-cost --pairs 2
    python -m benchmarks.drills.run_drills ray-fold
    python -m benchmarks.drills.run_drills ray-nodes --kills 3      # a head and 2 worker nodes; a node killed per run

The fold drills (fold_drills.py, fold.toml) kill one long training and resume it from its checkpoints; the
multi-node drill (node_drill.py, nodes.toml) kills a node of a Ray cluster in the middle of a fold.

All three run benchmarks/drills/drill.toml (55 trainings of about a second each) with `beluga run` in a
subprocess, as a user would, and compare each store with an uninterrupted run of the same config:

- **coordinator**: SIGKILL the whole run at ``--kills`` moments drawn uniformly over its trainings (moment u in
  [0, 1): once the store holds floor(u × 55) models, plus a uniform fraction of one training's time), resuming
  each time. Three of the kills, drawn by the seed, land *inside a store commit* instead: the drill-only
  start-up hook in hooks/ SIGKILLs the coordinator in its first commit, after the model's row and i.i.d. rows
  are written and before its outcomes and the COMMIT (an open transaction on disk); ``beluga store check``
  runs after each of those.
- **workers**: the multi-worker executor (2 workers, 1 thread each, ``max_retries`` above the kill count);
  SIGKILL a random worker process at ``--kills`` moments drawn uniformly over the run, plus two workers killed
  in the middle of sending a result (tests/midsend: half a message in the pipe, then SIGKILL). Prints the
  longest delay from a worker's death to its job's retry (the run's "retrying" line, timestamped on arrival).
- **reader**: a reader opens the store read-only a third of the way into the run and holds it; the run's next
  commit waits, saying every 10 s who holds the store, up to ``--lock-timeout`` seconds, then stops (exit 2);
  ``beluga store check`` must pass on what it left, and a resumed run must end identical.

"Identical" means equal sha256 digests of each store's sorted raw facts: outcomes, i.i.d. predictions and
metrics, and the models' ids and status.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path

import duckdb

from benchmarks.drills import fold_drills, node_drill
from benchmarks.drills.drill_runs import (
    DRILLS,
    MULTI,
    REPO,
    Run,
    config_with,
    digest,
    done_models,
    reference,
    result_line,
    say,
    store_check,
    worker_pids,
)
from benchmarks.harness import header, script_parser

# --------------------------------------------------------------------------------------------- drills

def done_now(store: Path) -> int:
    """Models done so far, read between two of the writer's commits (a commit in progress: try again)."""
    while True:
        try:
            return done_models(store)
        except duckdb.Error:
            time.sleep(0.02)


def drill_coordinator(out: Path, seed: int, kills: int) -> bool:
    say(f"\n## coordinator drill: {kills} SIGKILLs of `beluga run`, seed {seed}")
    config = config_with(out, None, "coordinator")
    ref = out / "coordinator-reference.duckdb"
    _, work = reference(config, ref)
    total = done_models(ref)
    per_model = work / total
    rng = random.Random(seed)
    # Moments uniform over the run's trainings: attempt k is killed once the store holds floor(u_k * total)
    # models, plus a uniform fraction of one training's time (so kills land anywhere in a training, its
    # evaluation or its commit).
    moments = sorted(rng.uniform(0, 1) for _ in range(kills))
    in_commit = set(rng.sample(range(kills), 3))
    store = out / "coordinator.duckdb"
    store.unlink(missing_ok=True)
    shutil.rmtree(out / "coordinator.duckdb.cache", ignore_errors=True)
    landed = commit_kills = finished_early = 0
    checks_ok = True
    for k, u in enumerate(moments):
        target = int(u * total)
        if k in in_commit:
            flag = out / f"commit-kill-{k}"
            flag.unlink(missing_ok=True)
            # Dies in the first commit it makes once the store holds the target.
            before = done_now(store)
            run = Run(config, store, {"PYTHONPATH": str(DRILLS / "hooks"),
                                      "BELUGA_DRILL_DIE_IN_COMMIT_AFTER": "0",
                                      "BELUGA_DRILL_COMMIT_FLAG": str(flag)})
            code = run.wait()
            hit = flag.exists()
            commit_kills += hit
            landed += hit
            ok = store_check(store)
            checks_ok &= ok
            what = "killed inside a commit" if hit else f"finished (exit {code})"
            say(f"  kill {k + 1:2d} (u = {u:.3f}): {what} at {time.time() - run.started:5.1f} s, with {before} "
                f"models in the store; store check {'passes' if ok else 'FAILS'}; {done_now(store)} models after")
        else:
            run = Run(config, store)
            while run.alive() and done_now(store) < target:
                time.sleep(0.1)
            deadline = time.time() + rng.uniform(0, per_model)
            while run.alive() and time.time() < deadline:
                time.sleep(0.01)
            if run.alive():
                run.kill()
                landed += 1
                say(f"  kill {k + 1:2d} (u = {u:.3f}): at {time.time() - run.started:5.1f} s, {done_now(store)} "
                    f"models in the store (target {target})")
            else:
                finished_early += 1
                say(f"  kill {k + 1:2d}: the run finished (exit {run.proc.returncode}) before it")
        if not run.alive() and run.proc.returncode == 0:
            break
    resumed = Run(config, store)
    code = resumed.wait()
    final_check = store_check(store)
    ref_check = store_check(ref)
    d_ref, d_run = digest(ref), digest(store)
    result_line("coordinator", seed=seed, kills=landed, kills_inside_a_commit=commit_kills,
                resumes=landed, finished_before_a_kill=finished_early, final_exit=code,
                digest_uninterrupted=d_ref, digest_interrupted=d_run, identical=str(d_ref == d_run).lower(),
                store_check=("passes on both" if final_check and ref_check and checks_ok else "FAILS"))
    return code == 0 and d_ref == d_run and final_check and ref_check and checks_ok and commit_kills >= 3


def drill_workers(out: Path, seed: int, kills: int) -> bool:
    say(f"\n## worker drill: {kills} SIGKILLs of worker processes + 2 deaths while sending a result, seed {seed}")
    config = config_with(out, MULTI + f"max_retries = {kills + 5}\n", "workers")
    ref = out / "workers-reference.duckdb"
    startup, work = reference(config, ref)
    rng = random.Random(seed)
    moments = sorted(startup + rng.uniform(0, work) for _ in range(kills))
    store = out / "workers.duckdb"
    store.unlink(missing_ok=True)
    markers = [out / f"mid-send-{i}" for i in range(2)]
    for m in markers:
        m.unlink(missing_ok=True)
    run = Run(config, store, {"PYTHONPATH": str(REPO / "tests" / "midsend"),
                              "BELUGA_DIE_MID_SEND": ",".join(map(str, markers))})
    deaths: list[float] = []
    for moment in moments:
        while run.alive() and time.time() < run.started + moment:
            time.sleep(0.02)
        if not run.alive():
            break
        # Wait until a worker is there to kill (a replacement may still be starting).
        pids: list[int] = []
        while run.alive() and not (pids := worker_pids(run.proc.pid)):
            time.sleep(0.02)
        if not pids:
            break
        victim = rng.choice(sorted(pids))
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)
            deaths.append(time.time())
    code = run.wait()
    sent_deaths = [m.stat().st_mtime for m in markers if m.exists()]
    all_deaths = sorted(deaths + sent_deaths)
    retries = [t for t, line in run.lines if "retrying" in line]
    delays = []
    for t in retries:
        before = [d for d in all_deaths if d <= t]
        if before:
            delays.append(t - before[-1])
    final_check, ref_check = store_check(store), store_check(ref)
    d_ref, d_run = digest(ref), digest(store)
    longest = max(delays, default=float("nan"))
    result_line("workers", seed=seed, kills=len(deaths), deaths_while_sending=len(sent_deaths),
                jobs_retried=len(retries), longest_death_to_retry_s=f"{longest:.2f}", run_exit=code,
                digest_uninterrupted=d_ref, digest_interrupted=d_run, identical=str(d_ref == d_run).lower(),
                store_check="passes on both" if final_check and ref_check else "FAILS")
    if code != 0:
        say(run.tail())
    return (code == 0 and d_ref == d_run and final_check and ref_check and len(deaths) >= kills
            and len(sent_deaths) == 2 and longest <= 5.0)


def drill_reader(out: Path, lock_timeout: float) -> bool:
    say(f"\n## reader drill: a reader holds the store open; the run's lock timeout is {lock_timeout:.0f} s")
    config = config_with(out, None, "reader")
    ref = out / "coordinator-reference.duckdb"
    if not ref.exists():
        reference(config, ref)
    store = out / "reader.duckdb"
    store.unlink(missing_ok=True)
    run = Run(config, store, extra=("--lock-timeout", f"{lock_timeout:g}"))
    # A third of the way: once ~18 models are committed, hold the store open between two commits.
    reader = None
    while run.alive() and reader is None:
        time.sleep(0.2)
        with contextlib.suppress(duckdb.Error):
            con = duckdb.connect(str(store), read_only=True)
            row = con.execute("SELECT count(*) FROM models").fetchone()
            if row and row[0] >= 18:
                reader = con
            else:
                con.close()
    if reader is None:
        raise SystemExit(f"the run ended before the reader could hold the store:\n{run.tail()}")
    held = time.time()
    done_when_held = reader.execute("SELECT count(*) FROM models").fetchone()
    code = run.wait(timeout=lock_timeout + 120)
    stopped = time.time()
    reader.close()
    waits = [(t - held, line) for t, line in run.lines if "waiting for the result store" in line]
    say("\n".join(f"  +{t:5.1f} s  {line.strip()[:150]}" for t, line in waits))
    error = next((line for _, line in run.lines if line.startswith("error")), "")
    say(f"  run stopped {stopped - held:.1f} s after the reader took the store (exit {code}): {error[:200]}")
    after_stop = done_models(store)
    check_stopped = store_check(store)
    resumed = Run(config, store)
    resumed_code = resumed.wait()
    final_check = store_check(store)
    d_ref, d_run = digest(ref), digest(store)
    result_line("reader", lock_timeout_s=f"{lock_timeout:g}", models_when_held=done_when_held[0] if done_when_held
                else None, wait_messages=len(waits), stopped_after_s=f"{stopped - held:.1f}", exit=code,
                models_after_stop=after_stop, store_check_after_stop="passes" if check_stopped else "FAILS",
                resumed_exit=resumed_code, digest_uninterrupted=d_ref, digest_interrupted=d_run,
                identical=str(d_ref == d_run).lower(), store_check="passes" if final_check else "FAILS")
    return (code == 2 and len(waits) >= int(lock_timeout // 10) - 1 and check_stopped and resumed_code == 0
            and d_ref == d_run and final_check)


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("drill", nargs="?", default="all",
                        choices=["all", "coordinator", "workers", "reader", "fold", "fold-cost", "ray-fold",
                                 "ray-nodes"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kills", type=int, default=None, help="20 (coordinator, workers), 10 (fold), 3 (ray-nodes)")
    parser.add_argument("--cap", type=float, default=1200.0, help="ray-nodes: the drill's time cap, seconds")
    parser.add_argument("--lock-timeout", type=float, default=30.0)
    parser.add_argument("--every", default="5 s", help="checkpoint interval of the fold drills")
    parser.add_argument("--pairs", type=int, default=2, help="fold-cost: runs with and without checkpoints")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "drills")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    say(header("fp32"))
    results = {}
    for name in (["coordinator", "workers", "reader"] if args.drill == "all" else [args.drill]):
        started = time.time()
        if name == "coordinator":
            ok = drill_coordinator(args.out, args.seed, args.kills or 20)
        elif name == "workers":
            ok = drill_workers(args.out, args.seed, args.kills or 20)
        elif name == "reader":
            ok = drill_reader(args.out, args.lock_timeout)
        elif name == "fold":
            ok = fold_drills.drill_fold(args.out, args.seed, args.kills or 10, args.every)
        elif name == "fold-cost":
            ok = fold_drills.drill_cost(args.out, args.pairs)
        elif name == "ray-fold":
            ok = fold_drills.drill_ray(args.out, args.every)
        else:
            ok = node_drill.drill_nodes(args.out, args.seed, args.kills or 3, args.cap)
        results[name] = ok
        say(f"{name} drill: {'passed' if ok else 'FAILED'} in {time.time() - started:.0f} s")
    sys.exit(0 if all(results.values()) else 1)


if __name__ == "__main__":
    main()
