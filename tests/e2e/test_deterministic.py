"""Deterministic mode: ``[executor] deterministic = true`` runs give bit-identical models and probabilities, the
store records the mode with every model, and it enters job ids only when set."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch
from helpers import DATA, config_with, query, run_benchmark

from beluga_core.config.load import load_config
from beluga_core.planning.plan import build_plan

# The tiny sentiment config cut to an IID model and one model trained on T (the seen fold): the
# two code paths (i.i.d. training, suite training with the MFT / INV / DIR losses) at the least cost, on the toy BERT.
TINY = {'configurations = ["iid", "iid-then-t"]': 'configurations = ["iid-then-t"]',
        'scenarios = ["standard", "seen", "test_type"]': 'scenarios = ["seen"]',
        "max_length = 64": "max_length = 32",
        "iid_train = 200": "iid_train = 32", "iid_test = 64": "iid_test = 16",
        "suite_train_per_group = 2": "suite_train_per_group = 1",
        'store = "tiny-sentiment.duckdb"':
        'store = { path = "tiny-sentiment.duckdb", keep_probabilities = true, keep_weights = "all" }'}


def _config(tmp: Path, deterministic: bool | None, name: str = "config.toml", device: str = "auto") -> Path:
    replace = dict(TINY)
    key = '[executor]\nname = "local"\n'
    replace[key] = f'{key}device = "{device}"\n'
    if deterministic is not None:
        replace[key] += f"deterministic = {'true' if deterministic else 'false'}\n"
    return config_with(DATA / "tiny-sentiment.toml", tmp, replace, name=name)


def _job_ids(config: Path) -> set[str]:
    plan = build_plan(load_config(config), config)
    return {j.id for tp in plan.tasks for j in tp.jobs} | {i for tp in plan.tasks for i in tp.iid_ids.values()}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_deterministic_runs_are_bit_identical_and_recorded(tmp_path: Path, device: str) -> None:
    config = _config(tmp_path, True, device=device)
    stores = [tmp_path / f"run{i}.duckdb" for i in range(2)]
    for store in stores:
        run_benchmark(config, store)
        assert not torch.are_deterministic_algorithms_enabled()  # the mode stays with the run
    (a, b) = ([query(s, "SELECT model_id, device FROM models ORDER BY model_id") for s in stores])
    # e.g. cpu/fp32/deterministic, or cpu/bf16/deterministic on a CPU with native bf16 (precision auto)
    assert a == b and len(a) == 2 and all(re.fullmatch(rf"{device}/(fp32|bf16)/deterministic", d) for _, d in a)
    for sql in ("SELECT model_id, example_idx, probs FROM iid_probs ORDER BY ALL",
                "SELECT model_id, suite, case_id, probs FROM case_predictions ORDER BY ALL",
                "SELECT model_id, split, metric, value FROM iid_metrics ORDER BY ALL"):
        rows = [query(s, sql) for s in stores]
        assert rows[0] and rows[0] == rows[1], sql   # floats compared exactly
    for model_id, _ in a:
        weights = [torch.load(s.with_name(s.name + ".cache") / f"{model_id}.pt", weights_only=True) for s in stores]
        assert weights[0].keys() == weights[1].keys()
        assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_the_mode_enters_job_ids_only_when_set(tmp_path: Path) -> None:
    unset, off, on = (_job_ids(_config(tmp_path, d, f"{d}.toml")) for d in (None, False, True))
    assert unset == off and len(unset) == 2
    plan = build_plan(load_config(_config(tmp_path, None)), tmp_path / "config.toml")
    assert "deterministic" not in plan.tasks[0].common   # the ids of configs without it are those of before
    assert not set(on) & set(unset)



def test_the_cuda_settings_are_made_before_cuda_starts_and_undone_after(monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.training import determinism

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    try:
        # Flags and environment only: nothing here starts CUDA, so this runs on any machine.
        assert determinism.configure(True, torch.device("cpu")) == "deterministic"
        assert torch.are_deterministic_algorithms_enabled() and torch.backends.cuda.flash_sdp_enabled()
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
        determinism.configure(True, torch.device("cuda", 0))
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8" and torch.backends.cudnn.deterministic
        assert torch.backends.cuda.math_sdp_enabled()
        assert not (torch.backends.cuda.flash_sdp_enabled() or torch.backends.cuda.mem_efficient_sdp_enabled()
                    or torch.backends.cuda.cudnn_sdp_enabled())
        monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")   # the other deterministic setting is kept
        determinism.configure(True, torch.device("cuda", 0))
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    finally:
        assert determinism.configure(False, torch.device("cuda", 0)) == ""
    assert not torch.are_deterministic_algorithms_enabled() and not torch.backends.cudnn.deterministic
    assert all(f() for f in (torch.backends.cuda.flash_sdp_enabled, torch.backends.cuda.mem_efficient_sdp_enabled,
                             torch.backends.cuda.cudnn_sdp_enabled, torch.backends.cuda.math_sdp_enabled))
