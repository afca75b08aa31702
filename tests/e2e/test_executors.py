"""Parallel executors compute what the local executor computes and survive a lost worker.

One small benchmark (tests/data/tiny-executors.toml: an IID parent, IID→T children that wait for it, IID+T
folds that do not) runs with the local executor (the session fixture ``executors_store``) and, through the
real CLI, with the multi-worker executor (2 CPU worker processes) and Ray (a local cluster of 2 CPUs);
all with 1 torch thread per fold, so the numbers must be identical. Workers die abruptly (SIGKILL, from the
test-only worker of tests/faults.py): in the multi run one before a fold, one in the middle of training and
one in the middle of sending its result (tests/midsend, the fault that once hung this executor); in the Ray
run one before a fold and one in the middle of training. Their folds must be retried, not lost; a fold killed
in the middle of training resumes from its checkpoint (``checkpoint_every = 1``), through the driver on Ray.
(Resuming a killed run whose IID parent's weights were lost is tests/e2e/test_pipeline.py's kill test, on the
same benchmark.)
"""

from __future__ import annotations

import importlib.util
import itertools
import subprocess
from pathlib import Path

import pytest
from helpers import BELUGA, DATA, ENV, REPO, config_text, query, results

CONFIG = DATA / "tiny-executors.toml"
N_JOBS = 9
HAS_RAY = importlib.util.find_spec("ray") is not None


def config_with(tmp: Path, executor: str) -> Path:
    """tiny-executors.toml with another [executor] section (everything after it replaced)."""
    text = config_text(CONFIG)
    text = text[:text.index("[executor]")] + executor
    path = tmp / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


# The test-only worker that dies on cue (tests/faults.py), importable by every worker process.
FAULTY = '[executor.options]\nworker = "faults:FaultyWorker"\n'
FAULT_ENV = {"PYTHONPATH": str(REPO / "tests")}
MID_SEND = str(REPO / "tests" / "midsend")


def run(config: Path, store: Path, env: dict[str, str] | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*BELUGA, "run", str(config), "--store", str(store)], capture_output=True, text=True,
                          env={**ENV, **FAULT_ENV, **(env or {})}, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_two_local_workers_equal_local_executor(executors_store: Path, tmp_path: Path) -> None:
    # Three deaths may hit one job: allow it three retries.
    # A checkpoint after every step: the worker killed in the middle of training (at its second step) leaves one
    # (tests/faults.py), and its retried fold resumes from it.
    config = config_with(tmp_path, '[executor]\nname = "multi"\nworkers = 2\nthreads = 1\ncheckpoint_every = 1\n'
                         + FAULTY + 'max_retries = 3\n')
    store = tmp_path / "multi.duckdb"
    faults = {when: tmp_path / f"crashed-{when}" for when in ("before", "training", "sending")}
    # The worker that dies mid-send leaves half a message in its channel. When workers shared one result
    # queue this hung the run for good (the dead worker held the queue's write lock): the timeout fails it.
    proc = run(config, store, {"BELUGA_FAULT": f"before:{faults['before']},training:{faults['training']}",
                               "BELUGA_DIE_MID_SEND": str(faults["sending"]),
                               "PYTHONPATH": f"{MID_SEND}:{REPO / 'tests'}"}, timeout=240)
    assert [w for w, m in faults.items() if not m.exists()] == [], "a crash hook did not fire"
    assert f"running {N_JOBS}" in proc.stdout
    assert proc.stdout.count("retrying") == 3, proc.stdout
    assert proc.stdout.count("resumed from its checkpoint at step 1 of") == 1, proc.stdout
    assert results(store) == results(executors_store)
    assert not list((tmp_path / "multi.duckdb.cache" / "checkpoints").glob("*"))   # each deleted once stored
    # Two workers really ran folds side by side (each fold records its own start and end).
    spans = query(store, "SELECT started_at, finished_at FROM models ORDER BY started_at")
    assert any(b[0] < a[1] for a, b in itertools.pairwise(spans))
    # The token cache was written once and read by the workers.
    assert list((tmp_path / "multi.duckdb.cache" / "tokens").glob("*/*/*.npz"))


def test_per_configuration_settings_reach_their_folds_only(executors_store: Path) -> None:
    rows = query(executors_store, "SELECT DISTINCT config, n_train_iid, CAST(hparams->>'learning_rate' AS DOUBLE) "
                              "FROM models WHERE config <> 'iid' ORDER BY config")
    # [sizes.iid_mix_of] and [training.configurations.iid-plus-t]; IID→T mixes nothing in, at the base rate.
    assert rows == [("iid-plus-t", 24, 1e-4), ("iid-then-t", 0, 5e-5)]


@pytest.mark.skipif(not HAS_RAY, reason="Ray is not installed (pip install 'beluga[ray]'); the Ray executor "
                                        "is an optional extra")
def test_ray_local_cluster_equals_local_executor(executors_store: Path, tmp_path: Path) -> None:
    # One worker dies before a fold, one in the middle of training (at its second step): with a checkpoint after
    # every step, that one reached the driver (through the keeper) and the retried fold resumes from it.
    config = config_with(tmp_path, '[executor]\nname = "ray"\nthreads = 1\ncheckpoint_every = 1\n\n' + FAULTY
                         + 'num_cpus = 2\nmax_retries = 3\n')
    store = tmp_path / "ray.duckdb"
    crashed = {when: tmp_path / f"crashed-{when}" for when in ("before", "training")}
    proc = run(config, store, {"BELUGA_FAULT": ",".join(f"{w}:{m}" for w, m in crashed.items())})
    assert all(m.exists() for m in crashed.values()), "a crash hook did not fire"
    assert f"running {N_JOBS}" in proc.stdout
    assert proc.stdout.count("retrying") == 2 and "Ray lost its worker" in proc.stdout, proc.stdout
    assert proc.stdout.count("resumed from its checkpoint at step 1 of") == 1, proc.stdout
    assert results(store) == results(executors_store)
    assert not list((tmp_path / "ray.duckdb.cache" / "checkpoints").glob("*"))


def test_worker_slots_per_gpu_and_cpu() -> None:
    from beluga_core.config.executor_spec import ExecutorSpec
    from beluga_core.execution.sizing import Slot, plan_workers

    def slots(spec: ExecutorSpec, cores: int, gpus: int) -> list[Slot]:
        return list(plan_workers(spec, cores=cores, gpus=gpus).slots)

    # CPU: the cores are split between workers unless threads is set.
    assert slots(ExecutorSpec(workers=2), cores=2, gpus=0) == [Slot("cpu", 1)] * 2
    assert slots(ExecutorSpec(workers=2, threads=2), cores=2, gpus=0) == [Slot("cpu", 2)] * 2
    # GPUs: one worker per GPU, or folds_per_gpu of them, round-robin over the devices.
    assert [s.device for s in slots(ExecutorSpec(workers=1), cores=16, gpus=2)] == ["cuda:0", "cuda:1"]
    got = slots(ExecutorSpec(workers=1, options={"folds_per_gpu": 2}), cores=16, gpus=2)
    assert [s.device for s in got] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"] and got[0].threads == 4
    assert [s.device for s in slots(ExecutorSpec(device="cuda:1", workers=2), cores=4, gpus=2)] == ["cuda:1"] * 2
    assert [s.device for s in slots(ExecutorSpec(device="cpu", workers=3), cores=6, gpus=2)] == ["cpu"] * 3
