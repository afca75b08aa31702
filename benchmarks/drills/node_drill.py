"""The multi-node drill (``run_drills.py ray-nodes``): a Ray cluster of a head and two worker nodes on this machine
(``ray.cluster_utils.Cluster``: each node its own raylet and processes), `beluga run` of benchmarks/drills/nodes.toml
against it, and one worker node SIGKILLed (its raylet and every process on it, ``remove_node(allow_graceful=False)``)
in the middle of a fold, once per run, ``--kills`` runs in all, each from an empty store.

Each run must end with the digest of an uninterrupted run (the local executor's: one thread per fold, fp32, the same
numbers on either executor) and pass ``store check``. The work a kill loses is counted in training steps: the last
step the killed fold logged on the dead node (``step_log.StepLogWorker``: a line per step, written as the step ends)
less the step its retry resumed from (the run's "resumed from its checkpoint at step K" line; 0 without one), against
the checkpoint interval (``checkpoint_every`` steps). Ray declares a node dead after its health checks fail: the head
is started with checks every second, three failures to declare (Ray's defaults take about 15 s). The drill's own time
is capped (``--cap``, seconds): a run still going then is killed and the drill fails.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from pathlib import Path
from typing import Any

from benchmarks.drills.drill_runs import DRILLS, REPO, Run, digest, result_line, say, store_check

NODES = DRILLS / "nodes.toml"
WORKER = "benchmarks.drills.step_log:StepLogWorker"
# Ray's node failure detection, sped up for a drill on one machine (GCS health checks).
HEALTH = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000, "health_check_timeout_ms": 1000,
          "health_check_failure_threshold": 3}


def interval_steps() -> int:
    match = re.search(r"^checkpoint_every = (\d+)$", NODES.read_text(encoding="utf-8"), re.M)
    assert match, "nodes.toml sets checkpoint_every to a number of steps"
    return int(match.group(1))


def nodes_config(out: Path, address: str | None) -> Path:
    """nodes.toml; with ``address``, on the Ray executor joining that cluster with the step-logging worker."""
    text = NODES.read_text(encoding="utf-8")
    if address is not None:
        text = text.replace('name = "local"', 'name = "ray"')
        text += f'[executor.options]\naddress = "{address}"\nworker = "{WORKER}"\nmax_retries = 3\n'
    path = out / ("nodes-ray.toml" if address else "nodes-local.toml")
    path.write_text(text, encoding="utf-8")
    return path


def read_steps(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:   # a line cut by the kill
            continue
    return lines


def drill_nodes(out: Path, seed: int, kills: int, cap: float) -> bool:
    import ray
    from ray.cluster_utils import Cluster

    rng = random.Random(seed)
    every = interval_steps()
    deadline = time.time() + cap
    say(f"\n## Ray cluster of a head and 2 worker nodes; one worker node SIGKILLed mid-fold in each of {kills} runs "
        f"(checkpoint_every = {every} steps)")
    ref = out / "nodes-reference.duckdb"
    _fresh(ref)
    started = time.time()
    reference = Run(nodes_config(out, None), ref)
    if reference.wait(timeout=max(60.0, deadline - time.time())) != 0:
        say(reference.tail())
        return False
    say(f"  reference (local executor): {time.time() - started:.1f} s")
    d_ref = digest(ref)
    # The nodes' processes import the step-logging worker from this repository.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    lost_steps: list[int] = []
    ok = True
    for k in range(1, kills + 1):
        store, steps = out / f"nodes-ray-{k}.duckdb", out / f"nodes-steps-{k}.jsonl"
        # The nodes' processes (not `beluga run`'s) run the folds: they read where to log from their own start.
        os.environ["BELUGA_STEP_LOG"] = str(steps)
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False,
                                                                "_system_config": HEALTH})
        try:
            workers = [cluster.add_node(num_cpus=1) for _ in range(2)]
            cluster.wait_for_nodes()
            _fresh(store)
            steps.unlink(missing_ok=True)
            run = Run(nodes_config(out, cluster.address), store)
            # The victim: the node of the first fold to pass a drawn step, at least one checkpoint in (so that its
            # retry has one to resume from) and short of its last step.
            target = every + 1 + rng.randrange(every)
            victim = None
            while run.alive() and victim is None and time.time() < deadline:
                for line in read_steps(steps):
                    if line["step"] >= target and line["step"] < line["total"]:
                        victim = next((w for w in workers if w.node_id == line["node"]), None)
                        if victim is not None:
                            break
                time.sleep(0.05)
            if victim is None:
                say(f"  kill {k}: no fold reached step {target} on a worker node before the run ended")
                run.kill()
                ok = False
                continue
            cluster.remove_node(victim, allow_graceful=False)
            killed_at = time.time()
            on_dead = [s for s in read_steps(steps) if s["node"] == victim.node_id]
            code = run.wait(timeout=max(60.0, deadline - time.time()))
            retry = run.first("retrying")
            resumed = [text for _, text in run.lines if "resumed from its checkpoint at step" in text]
            # The fold(s) the dead node was training: its last job's last step, less where the retry resumed.
            last = on_dead[-1]
            done_on_dead = {s["job"] for s in on_dead if s["step"] == s["total"]}
            cut = [j for j in dict.fromkeys(s["job"] for s in on_dead) if j not in done_on_dead]
            resumed_at = 0
            for text in resumed:
                match = re.search(r"job (\w+) .*resumed from its checkpoint at step (\d+) of", text)
                if match and last["job"].startswith(match.group(1)):
                    resumed_at = int(match.group(2))
            lost = last["step"] - resumed_at
            lost_steps.append(lost)
            d_run, checked = digest(store) if code == 0 else "", store_check(store) if code == 0 else False
            say(f"  kill {k}: node {victim.node_id[:8]} at {killed_at - run.started:.1f} s, its fold "
                f"{last['job'][:12]} at step {last['step']} of {last['total']}; retried "
                f"{(retry - killed_at) if retry else float('nan'):.1f} s after the kill; resumed from step "
                f"{resumed_at}: "
                f"{lost} step(s) lost (interval {every}); folds cut on the node: {len(cut)}; exit {code}; "
                f"identical: {str(d_run == d_ref).lower()}; store check: {'passes' if checked else 'FAILS'}")
            if code != 0:
                say(run.tail(30))
            ok = ok and code == 0 and d_run == d_ref and checked and lost <= every and len(cut) == 1
        finally:
            ray.shutdown()
            cluster.shutdown()
    result_line("ray-nodes", kills=kills, interval_steps=every, steps_lost=", ".join(map(str, lost_steps)),
                most_lost=max(lost_steps, default=None), digest_uninterrupted=d_ref,
                identical_and_checked=str(ok).lower())
    return ok and len(lost_steps) == kills


def _fresh(store: Path) -> None:
    import shutil

    store.unlink(missing_ok=True)
    shutil.rmtree(store.with_name(store.name + ".cache"), ignore_errors=True)
