"""Workers sized to the machine (``[executor] workers = "auto"``) and the critical path started first.

The sizing arithmetic is checked against hand-computed answers; the GPU probe itself is tests/e2e/test_gpu.py's (a GPU
measures it), here its result is given. The order jobs start in is checked on a hand-drawn dependency graph."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import DATA, config_with, run_cli
from pydantic import ValidationError

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.execution import sizing
from beluga_core.execution.executors.base import check_executor_options
from beluga_core.execution.scheduling import critical_path_order, order_jobs
from beluga_core.execution.sizing import (
    CONTEXT_BYTES,
    GiB,
    MemoryUnknown,
    MiB,
    NothingToMeasure,
    PackMemory,
    Slot,
    WorkerMemory,
    cpu_budget,
    estimated_worker_bytes,
    interleave,
    members_fit,
    plan_pack_size,
    plan_workers,
    workers_per_gpu,
)
from beluga_core.execution.sizing import workers as worker_sizing


def _unmeasurable() -> WorkerMemory:
    raise AssertionError("the GPU memory was asked for where no GPU is used")


# ------------------------------------------------------------------------------------------------ the arithmetic


def test_workers_per_gpu_is_the_smaller_of_what_cores_and_memory_allow() -> None:
    assert cpu_budget(16) == 16 and cpu_budget(16, threads=3) == 5 and cpu_budget(2, threads=4) == 1
    # Cores bind: 80 GiB less 10 % holds 36 workers of 2 GiB; 16 cores share out 8 per GPU.
    assert workers_per_gpu([80 * GiB, 80 * GiB], 2 * GiB, budget=16) == [8, 8]
    # Memory binds: 11 GiB less 10 % is 9.9 GiB, three workers of 3 GiB.
    assert workers_per_gpu([11 * GiB], 3 * GiB, budget=16) == [3]
    assert workers_per_gpu([11 * GiB], 3 * GiB, budget=16, margin=0.5) == [1]   # 5.5 GiB: one
    # Each GPU on its own memory: 40 GiB → 18 (cores: 8); 5 GiB less 10 % → 2.
    assert workers_per_gpu([40 * GiB, 5 * GiB], 2 * GiB, budget=16) == [8, 2]
    # 10 workers' cores over 4 GPUs: the first two take the remainder.
    assert workers_per_gpu([80 * GiB] * 4, GiB, budget=10) == [3, 3, 2, 2]
    # Never fewer than one per GPU (as without auto): fewer cores than GPUs, or a GPU too full for one.
    assert workers_per_gpu([80 * GiB] * 4, GiB, budget=2) == [1, 1, 1, 1]
    assert workers_per_gpu([GiB], 2 * GiB, budget=16) == [1]
    with pytest.raises(ValueError, match="positive"):
        workers_per_gpu([GiB], 0, budget=1)


def test_pack_auto_is_what_memory_holds_up_to_the_devices_most() -> None:
    # A worker's share: 10 GiB free less 10 % over 2 workers = 4.5 GiB; less the pack's 1 GiB base, 3.5 GiB at
    # 500 MiB a member = 3,584 / 500 = 7.17 → 7 members.
    assert members_fit(10 * GiB, 2, GiB, 500 * MiB, 0.1) == 7
    assert members_fit(10 * GiB, 1, GiB, 500 * MiB, 0.1) == 16          # (9 − 1) GiB = 8,192 MiB / 500 = 16.4
    assert members_fit(GiB, 1, 2 * GiB, 500 * MiB, 0.1) == 1            # not even the base fits: one, alone
    measured = PackMemory(10 * GiB, GiB, 500 * MiB, "measured: …")
    seven = plan_pack_size("auto", "cuda", 16, 2, lambda: measured)
    assert (seven.size, seven.final) == (7, True)
    assert seven.why == ("auto: 7, what memory holds: 10.0 GiB free, 10% kept free, shared by 2 worker(s), holds 7 "
                         "member(s) of 500 MiB beside 1.00 GiB (measured: …)")
    assert plan_pack_size("auto", "cpu", 4, 2, lambda: measured).why.startswith("auto: 4, the most on a CPU; ")
    # A number is kept; a recorded auto size is kept without measuring; nothing measurable: the device's most.
    assert plan_pack_size(3, "cpu", 8, 1, _unmeasurable_pack).size == 3
    assert plan_pack_size("auto", "cpu", 8, 1, _unmeasurable_pack, recorded=5).size == 5

    def unknown() -> PackMemory:
        raise MemoryUnknown("the probe failed: …")

    def later() -> PackMemory:
        raise NothingToMeasure("no training packs before the grid search; measured after it")

    assert plan_pack_size("auto", "cuda", 16, 1, unknown) == sizing.PackSize(
        16, "auto: 16, the most on a GPU; the memory a member takes is unknown (the probe failed: …)", "auto")
    assert not plan_pack_size("auto", "cuda", 16, 1, later).final


def _unmeasurable_pack() -> PackMemory:
    raise AssertionError("a pack's memory was measured where the size was known")


def test_the_estimate_is_state_activations_and_context() -> None:
    # 1M parameters × 16 B = 16,000,000. Per layer 16 · 128 · (34 · 384 + 5 · 12 · 128) = 2048 · 20,736
    # = 42,467,328 B in 16-bit; 6 layers = 254,803,968; fp32 twice that. Plus the 512 MiB context.
    assert CONTEXT_BYTES == 536_870_912
    shape = {"parameters": 1_000_000, "hidden": 384, "layers": 6, "heads": 12, "batch": 16, "length": 128}
    assert estimated_worker_bytes(**shape, bf16=True) == 16_000_000 + 254_803_968 + 536_870_912 == 807_674_880
    assert estimated_worker_bytes(**shape, bf16=False) == 16_000_000 + 509_607_936 + 536_870_912


def test_devices_take_workers_in_turn() -> None:
    assert interleave(["cuda:0", "cuda:1"], [3, 1]) == ["cuda:0", "cuda:1", "cuda:0", "cuda:0"]
    assert interleave(["cuda:0", "cuda:1"], [2, 2]) == ["cuda:0", "cuda:1", "cuda:0", "cuda:1"]


# ------------------------------------------------------------------------------------------------ the choice


def test_auto_on_a_cpu_is_todays_single_worker() -> None:
    for cores in (1, 2, 16):
        auto = plan_workers(ExecutorSpec(name="multi"), cores=cores, gpus=0, memory=_unmeasurable)
        assert auto.slots == plan_workers(ExecutorSpec(name="multi", workers=1), cores=cores, gpus=0).slots
        assert auto.slots == (Slot("cpu", cores),)
    two = plan_workers(ExecutorSpec(name="multi"), cores=2, gpus=0, memory=_unmeasurable)
    assert two.line() == "workers: 1 (auto: CPU, 2 cores → one worker using both)"
    # device = "cpu" on a GPU machine: no GPU is measured either.
    cpu = plan_workers(ExecutorSpec(name="multi", device="cpu"), cores=16, gpus=2, memory=_unmeasurable)
    assert cpu.slots == (Slot("cpu", 16),) and cpu.why == "auto: CPU, 16 cores → one worker using all 16"
    assert cpu.record() == {"workers": "auto", "slots": ["cpu"], "threads": [16], "why": cpu.why}


def test_auto_on_gpus_fits_cores_and_measured_memory() -> None:
    measured = WorkerMemory((80 * GiB, 80 * GiB), 2 * GiB, "measured: a test's")
    auto = plan_workers(ExecutorSpec(name="multi"), cores=16, gpus=2, memory=lambda: measured)
    assert [s.device for s in auto.slots] == ["cuda:0", "cuda:1"] * 8 and {s.threads for s in auto.slots} == {1}
    assert auto.why.startswith("auto: 8 + 8 on 2 GPU(s); 16 cores allow 16; 2.00 GiB per worker (measured: a "
                               "test's), 10% kept free; cuda:0: 80.0 GiB free holds 36"), auto.why
    # threads = 4 leaves 16 cores for 4 workers; options.memory_margin = 0.5 leaves 40 GiB (20 workers).
    four = plan_workers(ExecutorSpec(name="multi", threads=4, options={"memory_margin": 0.5}), cores=16, gpus=2,
                        memory=lambda: measured)
    assert [s.device for s in four.slots] == ["cuda:0", "cuda:1"] * 2 and four.slots[0].threads == 4
    # device = "cuda:1": that GPU's memory alone (1 GiB free: one worker).
    one = plan_workers(ExecutorSpec(name="multi", device="cuda:1"), cores=16, gpus=2,
                       memory=lambda: WorkerMemory((80 * GiB, GiB), 2 * GiB, "x"))
    assert one.slots == (Slot("cuda:1", 16),)
    # A bad margin never reaches sizing: the executor's Options refuse it when the run starts.
    for margin, said in ((1, "less than 1"), (-0.1, "greater than or equal to 0"), ("10 %", "valid number")):
        with pytest.raises(BelugaError, match=f"field 'executor.options.memory_margin': Input should be .*{said}"):
            check_executor_options(ExecutorSpec(name="multi", options={"memory_margin": margin}))
    with pytest.raises(BelugaError, match="device 'cuda:2', but this machine has 2 GPU"):
        plan_workers(ExecutorSpec(name="multi", device="cuda:2"), cores=2, memory=lambda: measured)


def test_auto_on_gpus_without_a_measure_or_with_folds_per_gpu() -> None:
    def unknown() -> WorkerMemory:
        raise MemoryUnknown("the probe failed: a test's")

    fallback = plan_workers(ExecutorSpec(name="multi"), cores=16, gpus=2, memory=unknown)
    assert fallback.slots == (Slot("cuda:0", 8), Slot("cuda:1", 8))
    assert fallback.why == "auto: per-worker GPU memory unknown (the probe failed: a test's): one worker per GPU"
    fixed = plan_workers(ExecutorSpec(name="multi", options={"folds_per_gpu": 3}), cores=12, gpus=2,
                         memory=_unmeasurable)
    assert [s.device for s in fixed.slots] == ["cuda:0", "cuda:1"] * 3 and fixed.slots[0].threads == 2
    for bad, shown in (("x", "'x'"), (0, "0"), (1.5, "1.5"), (True, "true")):   # a boolean as TOML writes it
        with pytest.raises(BelugaError, match=rf"field 'executor.options.folds_per_gpu': .*\(got {shown}\)"):
            check_executor_options(ExecutorSpec(name="multi", options={"folds_per_gpu": bad}))


def test_workers_setting_is_auto_by_default_or_a_whole_number() -> None:
    assert ExecutorSpec().workers == "auto" and ExecutorSpec(workers=" Auto ").workers == "auto"
    assert ExecutorSpec(workers=3).workers == 3
    for bad in (0, True, "many", 2.5, "2"):
        with pytest.raises(ValidationError, match=r'expected "auto" or a whole number of workers ≥ 1'):
            ExecutorSpec(workers=bad)


# ------------------------------------------------------------------------------------------------ the order


@dataclass(frozen=True)
class _Job:
    """What the order reads of a job: its id and what it requires."""

    id: str
    requires: tuple[str, ...] = ()


# A (an IID model) ← B, C (its children); T (a teacher) ← D (a student) ← E (a child of D); F, G alone.
GRAPH = [_Job("A"), _Job("B", ("A",)), _Job("C", ("A",)), _Job("T"), _Job("D", ("T",)), _Job("E", ("D",)),
         _Job("F"), _Job("G"), _Job("H", ("done-earlier",))]
COST = {"A": 1, "B": 5, "C": 1, "T": 2, "D": 2, "E": 4, "F": 6, "G": 1, "H": 1}


def _ids(jobs: list[_Job]) -> str:
    return "".join(j.id for j in jobs)


def test_the_longest_chain_starts_first() -> None:
    # Today's order: parents first, then plan order.
    assert _ids(order_jobs(GRAPH)) == "ATDBCEFGH"  # type: ignore[arg-type]
    # Chains (cost + longest dependent chain): T 2+2+4 = 8; A 1+5 = 6; D 2+4 = 6; F 6; B 5; E 4; C, G, H 1.
    # Ties keep today's order (A before D before F; C, G, H).
    assert _ids(critical_path_order(GRAPH, lambda j: COST[j.id])) == "TADFBECGH"  # type: ignore[arg-type]
    # Unit costs: the chains' lengths in jobs, T 3, A 2, D 2, the rest 1.
    assert _ids(critical_path_order(GRAPH)) == "TADBCEFGH"  # type: ignore[arg-type]
    with pytest.raises(BelugaError, match="cycle"):
        critical_path_order([_Job("X", ("Y",)), _Job("Y", ("X",))])  # type: ignore[list-item]


def test_jobs_are_weighed_by_what_they_train_on_and_the_iid_model_starts_first() -> None:
    from beluga_core.config.load import load_config
    from beluga_core.orchestration.teachers import plan_with_stores
    from beluga_core.planning.estimate import job_seconds

    config = DATA / "tiny-executors.toml"
    plan = plan_with_stores(load_config(config), config.resolve())
    cost = job_seconds(plan)
    from beluga_core.contracts.registries import LOSSES

    cases = {c.id: c for c in plan.tasks[0].suite.cases}
    inputs = {i: len(c.inputs) for i, c in cases.items()}

    def rows(case_id: str) -> int:   # what a case trains: an MFT's inputs, one of another single-input test, a pair
        c = cases[case_id]
        if LOSSES.get(c.loss).kind == "single":
            return len(c.inputs) if c.test_type == "MFT" else 1
        return 2 if len(c.inputs) >= 2 else 0

    iid, fold = plan.jobs[0], next(j for j in plan.jobs if j.config == "iid-plus-t")
    # At the default 64 training examples/s and 350 inputs/s: the IID model trains on iid_train = 64 examples for
    # 1 epoch; an IID+T fold on its suite cases' rows and iid_mix_of = 24 i.i.d. examples.
    assert cost(iid) == pytest.approx(64 / 64 + sum(inputs[c] for c in iid.fold.eval_ids) / 350)
    assert cost(fold) == pytest.approx((sum(rows(c) for c in fold.fold.train_ids) + 24) / 64
                                       + sum(inputs[c] for c in fold.fold.eval_ids) / 350)
    ordered = critical_path_order(plan.jobs, cost)
    assert ordered[0] is iid and sorted(j.id for j in ordered) == sorted(j.id for j in plan.jobs)


def test_one_worker_keeps_todays_order_several_start_the_critical_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from beluga_core.execution.executors import base
    from beluga_core.execution.executors.local import LocalExecutor
    from beluga_core.execution.executors.multi import MultiExecutor

    seen: list[object] = []
    monkeypatch.setattr(base, "dispatch", lambda *a, **kw: seen.append(kw["critical_path"]))
    monkeypatch.setattr(base, "job_seconds", lambda plan: len)
    for executor, expected in ((LocalExecutor(ExecutorSpec(workers=3)), None),
                               (MultiExecutor(ExecutorSpec(name="multi", device="cpu")), None),
                               (MultiExecutor(ExecutorSpec(name="multi", device="cpu", workers=2)), len)):
        monkeypatch.setattr(executor, "open", lambda *a: _Nothing())
        executor.run(None, [GRAPH[0]], print, None, "")  # type: ignore[arg-type]
        assert seen.pop() is expected


class _Nothing:
    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


# ------------------------------------------------------------------------------------------------ the dry run


def test_the_dry_run_prints_the_choice_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    local = config_with(DATA / "tiny-executors.toml", tmp_path, name="local.toml")
    code, out, err = run_cli(capsys, "run", local, "--dry-run")
    assert code == 0, err
    assert "workers: 1 (local executor: one process, jobs in turn, 1 thread(s))" in out
    multi = config_with(DATA / "tiny-executors.toml", tmp_path, {'name = "local"\nthreads = 1': 'name = "multi"'},
                        name="multi.toml")
    code, out, err = run_cli(capsys, "run", multi, "--dry-run")
    assert code == 0, err
    assert "workers: 1 (auto: CPU, 2 cores → one worker using both)" in out
    # On a machine with two GPUs, with the probe's measure given.
    monkeypatch.setattr(worker_sizing, "gpu_count", lambda: 2)
    monkeypatch.setenv("OMP_NUM_THREADS", "16")
    from beluga_core.execution.executors import multi as multi_executor

    monkeypatch.setattr(multi_executor, "gpu_worker_memory",
                        lambda plan, device: WorkerMemory((40 * GiB, 11 * GiB), 3 * GiB, "measured: given"))
    code, out, err = run_cli(capsys, "run", multi, "--dry-run")
    assert code == 0, err
    assert re.search(r"workers: 11 \(auto: 8 \+ 3 on 2 GPU\(s\); 16 cores allow 16; 3\.00 GiB per worker "
                     r"\(measured: given\), 10% kept free; cuda:0: 40\.0 GiB free holds 12, cuda:1: 11\.0 GiB free "
                     r"holds 3\)", out), out
