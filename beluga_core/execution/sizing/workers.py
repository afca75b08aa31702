"""How many workers run at once, and where (``[executor] workers``): a number kept, or ``auto`` sized from the
host's cores and, on GPUs, each GPU's free memory at what one worker takes (``sizing.worker_probe`` measures it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.core.machine import usable_cores
from beluga_core.execution.sizing.memory import (
    DEFAULT_MARGIN,
    GiB,
    MemoryUnknown,
    memory_margin,
)


@dataclass(frozen=True)
class Slot:
    """One worker: its torch device and the CPU threads it may use."""

    device: str
    threads: int


@dataclass(frozen=True)
class Workers:
    """The jobs an executor runs at once: its slots (none: its cluster decides), and why. The dry run prints it,
    the store records it with the run (``runs.executor``)."""

    slots: tuple[Slot, ...]
    why: str
    setting: int | str = "auto"   # [executor] workers as the config says

    @property
    def count(self) -> int | None:
        return len(self.slots) or None

    def line(self) -> str:
        return f"workers: {self.count or 'as many as the cluster fits'} ({self.why})"

    def record(self) -> dict[str, Any]:
        return {"workers": self.setting, "slots": [s.device for s in self.slots],
                "threads": [s.threads for s in self.slots], "why": self.why}


@dataclass(frozen=True)
class WorkerMemory:
    """Bytes free on each GPU, and the bytes one worker takes at its peak (CUDA context included)."""

    free: tuple[int, ...]
    per_worker: int
    how: str   # measured or estimated, and from what


def cpu_budget(cores: int, threads: int = 0) -> int:
    """The most workers the cores allow: at least one thread each, ``threads`` each when set."""
    return max(1, cores // threads if threads else cores)


def workers_per_gpu(free: Sequence[int], per_worker: int, budget: int, margin: float = DEFAULT_MARGIN) -> list[int]:
    """Workers on each GPU: as many as its free memory, less ``margin`` of it, holds at ``per_worker`` bytes each,
    and as the CPU allows (``budget`` workers in all, shared out evenly, the first GPUs taking the remainder); at
    least one per GPU, as without auto."""
    if per_worker <= 0:
        raise ValueError(f"per-worker memory must be positive, got {per_worker}")
    gpus = len(free)
    cpu = [budget // gpus + (i < budget % gpus) for i in range(gpus)]
    memory = [int(f * (1 - margin)) // per_worker for f in free]
    return [max(1, min(c, m)) for c, m in zip(cpu, memory, strict=True)]


def interleave(devices: Sequence[str], counts: Sequence[int]) -> list[str]:
    """``counts[i]`` workers on ``devices[i]``, in turns (cuda:0, cuda:1, cuda:0, …): the first jobs, which start
    first and include the IID models the others wait for, go to different GPUs."""
    return [d for r in range(max(counts, default=0)) for d, n in zip(devices, counts, strict=True) if n > r]


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _cores_text(cores: int) -> str:
    return {1: "1 core → one worker using it", 2: "2 cores → one worker using both"}.get(
        cores, f"{cores} cores → one worker using all {cores}")


def plan_workers(spec: ExecutorSpec, cores: int | None = None, gpus: int | None = None,
                 memory: Callable[[], WorkerMemory] | None = None) -> Workers:
    """The workers of the multi executor on this machine (``cores``, ``gpus``: this machine's unless given).

    A number of workers: that many (on GPUs, 1 is one per GPU, ``options.folds_per_gpu`` per GPU), as before
    auto. ``auto``: on a CPU one worker; on GPUs ``options.folds_per_gpu`` per GPU when set, else
    ``workers_per_gpu`` of what ``memory`` measures (called only then, so never on a CPU). CPU threads are split
    between workers (usable cores // workers; ``core.machine.usable_cores``): oversubscribed threads collapse
    throughput (benchmarks/perf/RESULTS.md); ``threads`` in the config overrides the split.
    """
    cores = cores if cores is not None else usable_cores()
    device = spec.device
    if device not in ("auto", "cuda"):
        gpus = 0  # cpu, or one named cuda:N below
    elif gpus is None:
        gpus = gpu_count()
    # Checked by the executor's Options (a whole number ≥ 1) before anything is sized.
    per_gpu_set = spec.options.get("folds_per_gpu") is not None
    per_gpu = int(spec.options.get("folds_per_gpu") or 1)
    gpu_devices = [device] if device.startswith("cuda:") else [f"cuda:{i}" for i in range(gpus)]
    if spec.workers != "auto":
        n = spec.workers
        if device.startswith("cuda:"):
            devices = [device] * max(n, per_gpu)
        elif gpus > 0:
            devices = [f"cuda:{i % gpus}" for i in range(n if n > 1 else gpus * per_gpu)]
        else:
            devices = ["cpu"] * n
        why = f"workers = {n}" + (f", options.folds_per_gpu = {per_gpu}" if per_gpu_set and gpu_devices else "")
    elif not gpu_devices:
        devices = ["cpu"]
        why = f"auto: CPU, {_cores_text(cores)}" if not spec.threads else \
            f"auto: CPU, one worker of threads = {spec.threads}"
    elif per_gpu_set:
        devices = interleave(gpu_devices, [per_gpu] * len(gpu_devices))
        why = f"auto: options.folds_per_gpu = {per_gpu} on each of {len(gpu_devices)} GPU(s)"
    else:
        devices, why = _auto_gpus(spec, gpu_devices, cores, memory)
    threads = spec.threads or max(1, cores // len(devices))
    if spec.workers != "auto":
        why += f"; {threads} thread(s) each"
    return Workers(tuple(Slot(d, threads) for d in devices), why, spec.workers)


def _auto_gpus(spec: ExecutorSpec, gpu_devices: list[str], cores: int,
               memory: Callable[[], WorkerMemory] | None) -> tuple[list[str], str]:
    budget = cpu_budget(cores, spec.threads)
    cpu_why = f"{cores} cores" + (f" at threads = {spec.threads}" if spec.threads else "") + f" allow {budget}"
    margin = memory_margin(spec)
    try:
        if memory is None:
            raise MemoryUnknown("not measured")
        mem = memory()
    except MemoryUnknown as exc:
        return gpu_devices, f"auto: per-worker GPU memory unknown ({exc}): one worker per GPU"
    indexes = [int(d.partition(":")[2]) for d in gpu_devices]
    if max(indexes) >= len(mem.free):
        raise BelugaError(f"device '{spec.device}', but this machine has {len(mem.free)} GPU(s)",
                          field="executor.device")
    free = [mem.free[i] for i in indexes]
    counts = workers_per_gpu(free, mem.per_worker, budget, margin)
    fits = ", ".join(f"{d}: {f / GiB:.1f} GiB free holds {int(f * (1 - margin)) // mem.per_worker}"
                     for d, f in zip(gpu_devices, free, strict=True))
    why = (f"auto: {' + '.join(map(str, counts))} on {len(gpu_devices)} GPU(s); {cpu_why}; "
           f"{mem.per_worker / GiB:.2f} GiB per worker ({mem.how}), {margin:.0%} kept free; {fits}")
    return interleave(gpu_devices, counts), why
