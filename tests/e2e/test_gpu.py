"""What only a CUDA GPU can check (marked ``gpu``; skipped without one). ``benchmarks/gpu/run.sh`` runs these first
on a lent GPU machine (benchmarks/gpu/README.md). The other GPU-only tests: CPU and CUDA attributions agree
(test_attributions.py) and deterministic runs are bit-identical on CUDA (test_deterministic.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from helpers import DATA, config_with, query, run_benchmark
from test_deterministic import TINY as DETERMINISTIC_TINY

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.execution.sizing import Slot, plan_workers
from beluga_core.training import precision

pytestmark = pytest.mark.gpu
# cuBLAS reads its workspace setting when the process makes its first handle. The deterministic runs in this process
# come after other GPU tests have made one, so the setting is made here, at collection, before any test runs.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

# test_deterministic's tiny config with the three test-type folds too: enough jobs that two workers sharing the
# GPU both train, at a few seconds.
TINY = {**DETERMINISTIC_TINY,
        'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["seen", "test_type"]'}


def test_bf16_autocast_is_on_where_the_gpu_has_bf16() -> None:
    device = torch.device("cuda")
    assert torch.cuda.is_bf16_supported()
    try:
        assert precision.configure("auto", device) == "bf16"
        layer = torch.nn.Linear(8, 8).to(device)
        with precision.autocast(device):
            out = layer(torch.randn(2, 8, device=device))
        assert out.dtype == torch.bfloat16 and layer.weight.dtype == torch.float32   # weights stay fp32
        assert precision.configure("fp32", device) == "fp32"
        with precision.autocast(device):
            assert layer(torch.randn(2, 8, device=device)).dtype == torch.float32
    finally:
        precision.configure("fp32", device)


def plan_slots(spec: ExecutorSpec, cores: int, gpus: int | None = None) -> list[Slot]:
    return list(plan_workers(spec, cores=cores, gpus=gpus).slots)


def test_workers_are_given_the_gpus_in_turn() -> None:
    spec = ExecutorSpec(name="multi", device="cuda", workers=1, options={"folds_per_gpu": 2})
    assert [s.device for s in plan_slots(spec, cores=16, gpus=1)] == ["cuda:0", "cuda:0"]
    assert [s.device for s in plan_slots(spec, cores=16, gpus=2)] == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]
    assert [s.device for s in plan_slots(spec, cores=16)] == [f"cuda:{i % torch.cuda.device_count()}"
                                                             for i in range(2 * torch.cuda.device_count())]


def test_the_probe_measures_what_one_worker_takes_and_auto_fits_workers_to_it(tmp_path: Path) -> None:
    from toy_model import TOY_DIR

    from beluga_core.config.load import load_config
    from beluga_core.execution.sizing import CONTEXT_BYTES, GiB, gpu_worker_memory
    from beluga_core.orchestration.teachers import plan_with_stores

    # The tiny sentiment run on a 2-layer MiniLM (the config's own toy model is too small for the bounds below).
    config = config_with(DATA / "tiny-sentiment.toml", tmp_path, {
        f'name = "{TOY_DIR.as_posix()}"': 'name = "embedded:minilm"\nconfig_overrides = { num_hidden_layers = 2 }'})
    plan = plan_with_stores(load_config(config), config.resolve())
    memory = gpu_worker_memory(plan, "cuda:0")
    assert memory.how.startswith("measured: a training step of embedded:minilm at batch"), memory.how
    assert len(memory.free) == torch.cuda.device_count() and all(f > GiB for f in memory.free)
    # A 2-layer MiniLM at batch 16 × 64 tokens: its weights, gradients and moments (16 B × 15.6M) and more, well
    # under a GiB.
    assert CONTEXT_BYTES + 16 * 15_000_000 < memory.per_worker < CONTEXT_BYTES + GiB, memory
    workers = plan_workers(ExecutorSpec(name="multi", device="cuda"), memory=lambda: memory)
    assert len(workers.slots) >= torch.cuda.device_count() and "measured" in workers.why, workers.why


def _run(tmp: Path, name: str, executor: str) -> Path:
    replace = dict(TINY)
    replace["threads = 2"] = f"threads = 2\ndevice = \"cuda\"\ndeterministic = true\n{executor}"
    config = config_with(DATA / "tiny-sentiment.toml", tmp, replace, name=f"{name}.toml")
    store = tmp / f"{name}.duckdb"
    run_benchmark(config, store)
    return store


def test_two_folds_sharing_the_gpu_equal_the_folds_run_alone(tmp_path: Path) -> None:
    """Each multi-executor worker binds its slot's device (models.device names it), and under deterministic
    mode two workers sharing one GPU give bit for bit what one worker running the folds in turn gives."""
    alone = _run(tmp_path, "alone", 'name = "local"')
    shared = _run(tmp_path, "shared", 'name = "multi"\nworkers = 2\n[executor.options]\nfolds_per_gpu = 2')
    devices = query(shared, "SELECT DISTINCT device FROM models")
    assert devices == [("cuda:0/bf16/deterministic",)], devices   # the worker's own slot, not a bare "cuda"
    assert query(alone, "SELECT DISTINCT device FROM models") == [("cuda/bf16/deterministic",)]
    assert len(query(shared, "SELECT model_id FROM models WHERE status = 'done'")) >= 4
    for sql in ("SELECT model_id, example_idx, probs FROM iid_probs ORDER BY ALL",
                "SELECT model_id, suite, case_id, probs FROM case_predictions ORDER BY ALL",
                "SELECT model_id, split, metric, value FROM iid_metrics ORDER BY ALL"):
        rows = [query(s, sql) for s in (alone, shared)]
        assert rows[0] and rows[0] == rows[1], sql   # floats compared exactly
    for (model_id,) in query(alone, "SELECT model_id FROM models"):
        weights = [torch.load(s.with_name(s.name + ".cache") / f"{model_id}.pt", weights_only=True)
                   for s in (alone, shared)]
        assert all(torch.equal(weights[0][k], weights[1][k].to(weights[0][k].device)) for k in weights[0])
