"""``[executor] pack = "auto"``'s probe (issue 55): what its per-member figure is, said in the same words by the
dry run's line and the docs, and its result cached so that a second dry run does not measure again.

The probe itself (a spawned process training a step of 1 and 2 members) is replaced here by a fake that counts its
calls and returns given peaks; tests/e2e/test_packs.py runs the real one."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import DATA, config_with, run_cli

from beluga_core.execution.sizing import PER_MEMBER, PROBE_CACHE_ENV, GiB, MiB, pack_memory, pack_probe, plan_pack_size
from beluga_core.planning.pack_groups import why_not_packed
from beluga_core.planning.plan import Plan

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def plan() -> Plan:
    from beluga_core.config.load import load_config
    from beluga_core.orchestration.teachers import plan_with_stores

    config = DATA / "tiny-packs.toml"   # LoRA at batch 8, max_length 64
    return plan_with_stores(load_config(config), config.resolve())


def _job(plan: Plan) -> str:
    return next(j.id for j in (*plan.jobs, *plan.grid_jobs) if why_not_packed(j) is None)


class _FakeProbe:
    """Stands in for the spawned probe: 16 GiB free, peaks of 1 GiB with 1 member and 1 GiB + 300 MiB with 2."""

    def __init__(self, batch: int = 8) -> None:
        self.calls: list[tuple[str, str]] = []
        self.batch = batch

    def __call__(self, plan: Plan, job_id: str, device: str) -> tuple[int, tuple[int, int], int]:
        self.calls.append((job_id, device))
        return 16 * GiB, (GiB, GiB + 300 * MiB), self.batch


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's cache folder, here the test's own; the cache on (tests/conftest.py turns it off)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv(PROBE_CACHE_ENV, raising=False)
    return tmp_path / "user-cache" / "beluga" / "pack-probes"


def _flat(text: str) -> str:
    return " ".join(text.replace("**", "").replace("`", "").split())


# ------------------------------------------------------------------------------------------- what is measured


def test_the_line_says_what_a_member_is_in_the_docs_words(plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    """A researcher's probe said 311 MiB per member where the docs said 37–62: two different quantities, neither
    named. The line now gives the probe's definition, its peaks and what a member's share holds, and the docs use
    the same definition."""
    monkeypatch.setenv(PROBE_CACHE_ENV, "off")
    monkeypatch.setattr(pack_probe, "_run_pack_probe", _FakeProbe())
    mem = pack_memory(plan, _job(plan), "cpu")
    assert (mem.free, mem.per_member, mem.base) == (16 * GiB, 300 * MiB, GiB - 300 * MiB)
    why = plan_pack_size("auto", "cpu", 8, 1, lambda: mem).why
    # (16 GiB less 10 % − the base 724 MiB) / 300 MiB = (14,745.6 − 724) / 300 = 46.7: 46 members.
    assert why == (
        "auto: 8, the most on a CPU; 16.0 GiB free, 10% kept free, shared by 1 worker(s), holds 46 member(s) of "
        "300 MiB beside 0.71 GiB (measured now: per member, the peak of one training step with 2 members less the "
        "peak with 1, at the batch size of the first training that packs, with every row max_length tokens: at "
        "batch 8 × 64 tokens, the "
        "process's peak resident memory during the step was 1.00 GiB with 1 member and 1.29 GiB with 2; a member's "
        "share holds its adapters, head, gradients and AdamW moments, and its rows' activations (the 2 members' rows "
        "in one base pass; on a CPU a pass takes at most 1,024 tokens, so a larger pack's activations grow less "
        "than this))")
    assert PER_MEMBER in why
    # On a GPU every member's rows share a pass; on a CPU members of 16 × 64 = 1,024 tokens take a pass each.
    gpu = pack_memory(plan, _job(plan), "cuda:0").how
    assert "the GPU allocator's peak reserved bytes was 1.00 GiB" in gpu and gpu.endswith("(the 2 members' rows "
                                                                                          "in one base pass)")
    monkeypatch.setattr(pack_probe, "_run_pack_probe", _FakeProbe(batch=16))
    alone = pack_memory(plan, _job(plan), "cpu").how
    assert alone.endswith("a member's share holds its adapters, head, gradients and AdamW moments (on a CPU each "
                          "member's 1,024 tokens take a base pass of their own, one pass's activations at a time)")
    # The docs define the figure with the same words, and say bench_pack's 37 / 62 MiB is another quantity.
    guide = _flat((REPO / "docs/guides/speed-and-scale.md").read_text(encoding="utf-8"))
    assert PER_MEMBER in guide and PER_MEMBER in _flat((REPO / "docs/reference/config.md").read_text("utf-8"))
    assert "It is not the figure bench_pack reports (37 MiB fp32 / 62 MiB bf16 per member" in guide
    assert "(peak at K − peak at K = 1) / (K − 1) over whole epochs of SST-2 sentences at their own lengths" in \
        _flat((REPO / "README.md").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------------- the cache


def test_a_second_measurement_reads_the_cache_and_a_changed_key_measures_again(
        plan: Plan, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _FakeProbe()
    monkeypatch.setattr(pack_probe, "_run_pack_probe", probe)
    monkeypatch.setattr(pack_probe, "_cpu_free_bytes", lambda: 20 * GiB)   # what a cache hit reads afresh
    job = _job(plan)
    first = pack_memory(plan, job, "cpu")
    assert len(probe.calls) == 1 and first.how.startswith("measured now: ")
    (entry,) = cache.glob("*.json")
    second = pack_memory(plan, job, "cpu")
    assert len(probe.calls) == 1, "the second call measured again"
    assert (second.per_member, second.base, second.free) == (first.per_member, first.base, 20 * GiB)
    when = json.loads(entry.read_text())["measured_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d[+-]\d\d:\d\d", when)
    assert second.how.startswith(f"measured {when}, cached in {entry} (BELUGA_PROBE_CACHE=refresh measures "
                                 "again): per member, the peak of one training step")
    # Anything the measurement depends on changes the key: max_length, the job's hyper-parameters, the device,
    # precision, the torch version.
    longer = dataclasses.replace(plan, config=plan.config.model_copy(update={
        "model": plan.config.model.model_copy(update={"max_length": 128})}))
    pack_memory(longer, job, "cpu")
    assert len(probe.calls) == 2
    pack_memory(plan, job, "cuda:0")
    assert len(probe.calls) == 3
    bf16 = dataclasses.replace(plan, config=plan.config.model_copy(update={
        "executor": plan.config.executor.model_copy(update={"precision": "bf16"})}))
    pack_memory(bf16, job, "cpu")
    assert len(probe.calls) == 4
    key = pack_probe.probe_key(plan, job, "cpu")
    assert key["hparams"]["batch_size"] == 8 and key["hparams"]["method"] is not None   # LoRA's options
    import importlib.metadata

    version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.0.1" if name == "torch" else version(name))
    pack_memory(plan, job, "cpu")
    assert len(probe.calls) == 5
    monkeypatch.undo()
    # Each of them is cached too; the first again reads the cache.
    monkeypatch.setattr(pack_probe, "_run_pack_probe", probe)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache.parents[1]))
    monkeypatch.delenv(PROBE_CACHE_ENV, raising=False)
    pack_memory(plan, job, "cpu")
    pack_memory(longer, job, "cpu")
    assert len(probe.calls) == 5 and len(list(cache.glob("*.json"))) == 5


def test_refresh_measures_again_and_off_leaves_the_cache_alone(
        plan: Plan, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _FakeProbe()
    monkeypatch.setattr(pack_probe, "_run_pack_probe", probe)
    job = _job(plan)
    pack_memory(plan, job, "cpu")
    monkeypatch.setenv(PROBE_CACHE_ENV, "refresh")
    assert pack_memory(plan, job, "cpu").how.startswith("measured now: ") and len(probe.calls) == 2
    monkeypatch.setenv(PROBE_CACHE_ENV, "off")
    for f in cache.glob("*.json"):
        f.unlink()
    pack_memory(plan, job, "cpu")
    assert len(probe.calls) == 3 and not list(cache.glob("*.json"))
    # An unreadable or foreign file is no result: measured again.
    monkeypatch.delenv(PROBE_CACHE_ENV)
    pack_memory(plan, job, "cpu")
    (entry,) = cache.glob("*.json")
    entry.write_text("{not json")
    pack_memory(plan, job, "cpu")
    assert len(probe.calls) == 5
    monkeypatch.setenv(PROBE_CACHE_ENV, "sometimes")
    with pytest.raises(pack_probe.BelugaError, match="BELUGA_PROBE_CACHE must be 'refresh'"):
        pack_memory(plan, job, "cpu")


def test_a_second_dry_run_does_not_measure_again_and_says_from_when(
        tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _FakeProbe()
    monkeypatch.setattr(pack_probe, "_run_pack_probe", probe)
    monkeypatch.setenv("COLUMNS", "2000")
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {"pack = 4": 'pack = "auto"'})
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert len(probe.calls) == 1 and "(measured now: per member, the peak of one training step" in out, out
    code, out, err = run_cli(capsys, "run", config, "--dry-run")
    assert code == 0, err
    assert len(probe.calls) == 1, "the second dry run measured again"
    (entry,) = cache.glob("*.json")
    line: Any = re.search(r"packs: up to 8 members \(auto: 8, the most on a CPU; .* holds \d+ member\(s\) of "
                          r"300 MiB beside 0\.71 GiB \(measured (\S+), cached in (\S+) ", out)
    assert line is not None, out
    assert line[1] == json.loads(entry.read_text())["measured_at"] and line[2] == str(entry)


def test_a_cpu_steps_peak_is_its_own_not_the_processs_since_it_started() -> None:
    """On a CPU the probe read the process's lifetime peak (ru_maxrss): loading the model and data could set it
    before either step, and a test run's probe then read two equal peaks, 0 MiB a member. Each step's peak is now
    its own (Linux's VmHWM, reset before the step)."""
    if not pack_probe._reset_rss_peak():
        pytest.skip("this system cannot reset a process's peak resident memory (/proc/self/clear_refs)")
    big = bytearray(256 * MiB)   # zero-filled: resident
    del big
    lifetime = pack_probe._rss_peak()
    assert pack_probe._reset_rss_peak()
    assert pack_probe._rss_peak() <= lifetime - 200 * MiB
