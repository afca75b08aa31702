"""How many jobs run at once, and where: workers sized to the machine (``[executor] workers``).

A number keeps its meaning: that many workers (on GPUs, 1 means one per GPU, ``options.folds_per_gpu`` per GPU).
``"auto"``, the default, keeps a CPU run as it was (one worker using every core) and on GPUs runs as many
workers per GPU as the host's cores and the GPU's free memory allow: one small fold leaves a GPU nearly idle (an
H200 busy 8 % of the time in the quick run) while folds side by side scale almost linearly (7.6× at 8 folds on
one H200; issue 40 has the table).

The memory one worker takes is measured by a probe: one forward and backward pass and one AdamW step of the plan's
largest model at its largest batch size and ``max_length`` tokens (the worst a training batch can be), in a
spawned process. The coordinator so never holds a CUDA context, which would take memory on a GPU that the sizing
counted free for the whole run. The probe's peak is what its caching allocator reserved; a worker also holds a
CUDA context that no allocator statistic sees, added as ``CONTEXT_BYTES``. Where the step fails (a GPU already
full, a model that does not build on it) the memory is estimated from the model's shape
(``estimated_worker_bytes``); where not even the model's config can be read here, auto runs one worker per GPU.

The pack size (``[executor] pack = "auto"``) is sized here too, from a probe of its own (a pack's step at one and
two members; ``PER_MEMBER`` says what a member's figure is): the same free memory, margin and probe process as
the workers'. Its result is kept in the user's cache folder, keyed by everything it depends on (``probe_key``), so
that a second dry run does not measure again (``BELUGA_PROBE_CACHE=refresh`` measures again).

Long: workers and packs are sized from one machine's memory with one margin and the same kind of probe; apart,
each would repeat the probing and the margin's checks.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import platform
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from beluga_core.config.executor_spec import ExecutorSpec
from beluga_core.core.errors import BelugaError
from beluga_core.core.machine import usable_cores
from beluga_core.planning.plan import Plan

MiB = 2 ** 20
GiB = 2 ** 30
# A CUDA context with torch's kernels loaded lazily (CUDA ≥ 11.7), cuBLAS's workspace included: 0.3–0.6 GiB on
# recent GPUs by NVIDIA's and PyTorch's own accounts. An allowance, not measured here (no GPU in CI).
CONTEXT_BYTES = 512 * MiB
# Kept free of each GPU's free memory: the allocator's fragmentation across batches of other lengths, and the
# evaluation's batches, which the probe does not run.
DEFAULT_MARGIN = 0.1
PROBE_TIMEOUT_S = 600.0


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


class MemoryUnknown(Exception):
    """The memory one worker takes could be neither measured nor estimated; the message says why."""


class NothingToMeasure(MemoryUnknown):
    """No training of the jobs known so far packs: a pack size is measured on a later phase's."""


def memory_margin(spec: ExecutorSpec) -> float:
    """``[executor.options] memory_margin``: the fraction of free memory that sizing keeps free."""
    margin = spec.options.get("memory_margin", DEFAULT_MARGIN)
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 1:
        raise BelugaError(f"executor option memory_margin must be a fraction in [0, 1), got {margin!r}",
                          field="executor.options.memory_margin")
    return float(margin)


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


def estimated_worker_bytes(parameters: int, hidden: int, layers: int, heads: int, batch: int, length: int,
                           bf16: bool) -> int:
    """A training worker's peak memory from its model's shape, where the probe cannot measure it.

    Weights, gradients and AdamW's two moments in fp32 (16 bytes a parameter); a transformer layer's activations
    kept for the backward pass, 34·b·s·h + 5·a·b·s² bytes in 16-bit (Korthikanti et al. 2022, "Reducing Activation
    Recomputation in Large Transformer Models", eq. 1), twice that in fp32; and the CUDA context."""
    state = 16 * parameters
    per_layer = batch * length * (34 * hidden + 5 * heads * length)
    return state + layers * per_layer * (1 if bf16 else 2) + CONTEXT_BYTES


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
    per_gpu_set = "folds_per_gpu" in spec.options
    per_gpu = spec.options.get("folds_per_gpu", 1)
    if isinstance(per_gpu, bool) or not isinstance(per_gpu, int) or per_gpu < 1:
        raise BelugaError(f"executor option folds_per_gpu must be a whole number ≥ 1, got {per_gpu!r}",
                          field="executor.options.folds_per_gpu")
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


# ---------------------------------------------------------------------------------------------------- the probe


@dataclass(frozen=True)
class ProbeShape:
    """The largest training step of a plan: its biggest model at its largest batch size and ``max_length``."""

    model: str
    parameters: int
    config_overrides: dict[str, Any]
    batch: int
    length: int
    precision: Literal["auto", "fp32", "bf16"]
    device: str


def probe_shape(plan: Plan, device: str) -> ProbeShape:
    """The plan's largest model (by parameters; read from this machine only) at its largest batch size."""
    from beluga_core.training.models import parameter_count

    cfg = plan.config
    overrides = dict(cfg.model.config_overrides or {})
    sizes = {m: parameter_count(m, overrides) for m in sorted({tp.model for tp in plan.tasks})}
    known = {m: n for m, n in sizes.items() if n is not None}
    if not known:
        raise MemoryUnknown(f"the config of model {', '.join(sizes) or '(none)'} is not on this machine")
    model = max(known, key=lambda m: (known[m], m))
    batches = [int(j.hparams.get("batch_size", 0)) for j in (*plan.jobs, *plan.grid_jobs)]
    grid = list(cfg.grid.batch_size) if cfg.grid.enabled else []
    return ProbeShape(model, known[model], overrides, max([cfg.training.batch_size, *grid, *batches]),
                      cfg.model.max_length, cfg.executor.precision, device)


def gpu_worker_memory(plan: Plan, device: str) -> WorkerMemory:
    """Free memory of every GPU and one worker's peak, measured by the probe (estimated where its step failed).
    Call it only where there is a GPU: it starts CUDA, in a process of its own."""
    shape = probe_shape(plan, device)
    try:
        with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
            free, peak, facts = pool.submit(_probe, shape).result(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:  # the probe process died, CUDA is unusable, the config unreadable: nothing known
        raise MemoryUnknown(f"the probe failed: {type(exc).__name__}: {exc}") from None
    where = f"{shape.model} at batch {shape.batch} × {shape.length} tokens, {facts['precision']}"
    if isinstance(peak, int):
        return WorkerMemory(tuple(free), peak + CONTEXT_BYTES,
                            f"measured: a training step of {where} peaked at {peak / GiB:.2f} GiB, + "
                            f"{CONTEXT_BYTES / GiB:.1f} GiB CUDA context")
    if facts.get("shape") is None:
        raise MemoryUnknown(f"the probe's step failed ({peak}) and the config of {shape.model} has no "
                            "transformer shape to estimate from")
    hidden, layers, heads = facts["shape"]
    estimate = estimated_worker_bytes(shape.parameters, hidden, layers, heads, shape.batch, shape.length,
                                      facts["precision"] == "bf16")
    return WorkerMemory(tuple(free), estimate, f"estimated from {where}: the probe's step failed ({peak})")


def _probe(shape: ProbeShape) -> tuple[list[int], int | str, dict[str, Any]]:
    """In the probe process: every GPU's free bytes, then one training step's peak reserved bytes, or why it failed
    and the model's shape (hidden size, layers, heads) to estimate from."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from beluga_core.training import precision
    from beluga_core.training.models import local_classifier_config

    free = [torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count())]
    config = local_classifier_config(shape.model, config_overrides=shape.config_overrides)
    if config is None:
        raise MemoryUnknown(f"the config of model {shape.model} is not on this machine")
    device = torch.device(shape.device if shape.device.startswith("cuda:") else "cuda:0")
    facts: dict[str, Any] = {"precision": precision.configure(shape.precision, device)}
    try:
        model = AutoModelForSequenceClassification.from_config(config).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        ids = torch.randint(0, config.vocab_size, (shape.batch, shape.length), device=device)
        labels = torch.zeros(shape.batch, dtype=torch.long, device=device)
        for _ in range(2):  # the second step holds AdamW's moments, made by the first, beside its activations
            with precision.autocast(device):
                loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        torch.cuda.synchronize(device)
        return free, int(torch.cuda.max_memory_reserved(device)), facts
    except Exception as exc:  # out of memory, a model that does not build here: estimated instead
        sizes = [_first_int(config, *names) for names in (("hidden_size", "n_embd", "d_model"),
                                                          ("num_hidden_layers", "n_layer", "num_layers"),
                                                          ("num_attention_heads", "n_head", "num_heads"))]
        facts["shape"] = None if None in sizes else sizes
        return free, f"{type(exc).__name__}: {str(exc)[:200]}", facts


# ------------------------------------------------------------------------------------------- pack size ("auto")


@dataclass(frozen=True)
class PackSize:
    """Members per pack (``[executor] pack``), and why: the dry run prints it, the store records it with the run
    (``runs.executor``), and a resumed run keeps an ``auto`` size its store recorded."""

    size: int
    why: str
    setting: int | str = 1
    final: bool = True   # False: "auto" had nothing to measure yet (a later phase measures)

    def record(self) -> dict[str, Any]:
        return {"setting": self.setting, "size": self.size, "why": self.why}


@dataclass(frozen=True)
class PackMemory:
    """What a pack takes on its device: ``base`` bytes whatever its members (the process, the frozen base, one
    member's step) and ``per_member`` bytes for each further member, beside the ``free`` bytes of the device."""

    free: int
    base: int
    per_member: int
    how: str


def members_fit(free: int, workers: int, base: int, per_member: int, margin: float = DEFAULT_MARGIN) -> int:
    """Members one pack may hold: a worker's share of the device's ``free`` bytes less ``margin`` of it, less the
    pack's ``base``, over ``per_member``; at least one (a pack of one is a job alone)."""
    if per_member <= 0:
        return 1 << 30   # members add nothing measurable: memory does not limit the pack
    share = int(free * (1 - margin)) // max(1, workers)
    return max(1, (share - base) // per_member)


def plan_pack_size(setting: int | str, kind: str, cap: int, workers: int,
                   memory: Callable[[], PackMemory] | None, recorded: int | None = None,
                   margin: float = DEFAULT_MARGIN) -> PackSize:
    """The pack size for ``[executor] pack`` on a ``kind`` device ("cpu" or "cuda") with ``workers`` workers
    sharing it. A number is kept. ``auto``: the size its store recorded for an earlier run of it (``recorded``),
    so that a resumed run forms the packs the interrupted one did; else as many members as ``memory`` (a probe of
    one training step at 1 and 2 members) says fit, up to ``cap`` (``planning.pack_groups.AUTO_PACK``)."""
    if setting != "auto":
        return PackSize(int(setting), f"pack = {setting}", setting)
    if recorded is not None:
        return PackSize(recorded, f"auto: {recorded}, as the store's first run of it measured (kept, so that a "
                        "resumed run forms the packs the interrupted one did)", setting)
    where = "a CPU" if kind == "cpu" else "a GPU"
    try:
        if memory is None:
            raise MemoryUnknown("not measured")
        mem = memory()
    except NothingToMeasure as exc:
        return PackSize(cap, f"auto: {cap}, the most on {where}; {exc}", setting, final=False)
    except MemoryUnknown as exc:
        return PackSize(cap, f"auto: {cap}, the most on {where}; the memory a member takes is unknown ({exc})",
                        setting)
    fit = members_fit(mem.free, workers, mem.base, mem.per_member, margin)
    size = min(cap, fit)
    holds = "any number of" if fit >= 1 << 30 else str(fit)
    memory_text = (f"{mem.free / GiB:.1f} GiB free, {margin:.0%} kept free, shared by {workers} worker(s), holds "
                   f"{holds} member(s) of {mem.per_member / MiB:.0f} MiB beside {mem.base / GiB:.2f} GiB ({mem.how})")
    if fit < cap:
        return PackSize(size, f"auto: {size}, what memory holds: {memory_text}", setting)
    return PackSize(size, f"auto: {size}, the most on {where}; {memory_text}", setting)


# What the per-member figure of ``pack = "auto"`` is, said once: the dry run's line and the docs
# (docs/guides/speed-and-scale.md, docs/reference/config.md) use these words.
PER_MEMBER = ("the peak of one training step with 2 members less the peak with 1, at the batch size of the first "
              "training that packs, with every row max_length tokens")
# The probe's result is kept in the user's cache folder, keyed by everything the measurement depends on; this
# variable set to "refresh" measures again (and keeps the new result), "off" neither reads nor writes the cache.
PROBE_CACHE_ENV = "BELUGA_PROBE_CACHE"
PROBE_CACHE_FORMAT = "beluga-pack-probe/1"


def pack_memory(plan: Plan, job_id: str, device: str) -> PackMemory:
    """What a pack of ``job_id``'s kind takes on ``device``, measured by a probe in a process of its own: one
    training step of a pack of one member, then of two, at the plan's largest batch size with every row
    ``max_length`` tokens (the worst a step can be), the real task, model and method. Peaks are the caching
    allocator's reserved bytes on a GPU, the process's peak resident memory during the step on a CPU (Linux; its
    peak since it started elsewhere); a member's share is ``PER_MEMBER``. The result is cached
    (``probe_cache_folder``, keyed by ``probe_key``): a later dry run or run of the same measurement reads it, and
    only the device's free memory is read again."""
    mode = os.environ.get(PROBE_CACHE_ENV, "").strip().lower()
    if mode not in ("", "on", "off", "refresh"):
        raise BelugaError(f"{PROBE_CACHE_ENV} must be 'refresh' (measure again) or 'off' (no cache), got {mode!r}")
    key = probe_key(plan, job_id, device)
    path = probe_cache_folder() / f"{_digest(key)}.json"
    cached = _read_probe_cache(path, key) if mode in ("", "on") else None
    if cached is not None:
        try:
            free = _device_free(device)
        except Exception as exc:  # the device is unusable now: as a failed probe
            raise MemoryUnknown(f"the device's free memory is unreadable: {type(exc).__name__}: "
                                f"{str(exc)[:200]}") from None
        peaks, batch = (int(cached["peaks"][0]), int(cached["peaks"][1])), int(cached["batch"])
        when = f"measured {cached['measured_at']}, cached in {path} ({PROBE_CACHE_ENV}=refresh measures again)"
    else:
        try:
            free, peaks, batch = _run_pack_probe(plan, job_id, device)
        except Exception as exc:  # the probe process died, the device is unusable, the data unreadable
            raise MemoryUnknown(f"the probe failed: {type(exc).__name__}: {str(exc)[:200]}") from None
        when = "measured now"
        if mode != "off":
            _write_probe_cache(path, key, peaks, batch)
    per_member = max(0, peaks[1] - peaks[0])
    return PackMemory(free, max(0, peaks[0] - per_member), per_member,
                      _measurement(when, device, batch, plan.config.model.max_length, peaks))


def _measurement(when: str, device: str, batch: int, length: int, peaks: tuple[int, int]) -> str:
    """What the probe measured, in ``PER_MEMBER``'s terms, and what a member's figure holds on this device."""
    from beluga_core.training.pack_rows import CPU_PASS_TOKENS

    cpu = device == "cpu"
    peak = "the process's peak resident memory during the step" if cpu else "the GPU allocator's peak reserved bytes"
    if not cpu or 2 * batch * length <= CPU_PASS_TOKENS:
        held = ("its adapters, head, gradients and AdamW moments, and its rows' activations (the 2 members' rows in "
                "one base pass" + (f"; on a CPU a pass takes at most {CPU_PASS_TOKENS:,} tokens, so a larger pack's "
                                   "activations grow less than this" if cpu else "") + ")")
    else:
        held = (f"its adapters, head, gradients and AdamW moments (on a CPU each member's {batch * length:,} "
                f"tokens take a base pass of their own, one pass's activations at a time)")
    return (f"{when}: per member, {PER_MEMBER}: at batch {batch} × {length} tokens, {peak} was "
            f"{peaks[0] / GiB:.2f} GiB with 1 member and {peaks[1] / GiB:.2f} GiB with 2; a member's share holds "
            f"{held}")


def _run_pack_probe(plan: Plan, job_id: str, device: str) -> tuple[int, tuple[int, int], int]:
    """The probe itself, in a spawned process (tests replace this function)."""
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_pack_probe, plan, job_id, device).result(timeout=PROBE_TIMEOUT_S)


def probe_cache_folder() -> Path:
    """Where probe results are kept: the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``), as beluga's
    other caches outside a run's own (the WordNet copy)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "beluga" / "pack-probes"


def probe_key(plan: Plan, job_id: str, device: str) -> dict[str, Any]:
    """Everything the pack probe's result depends on: the model (its name, its config as this machine reads it,
    overrides and ``max_length``), the job's method and hyper-parameters (its batch size, the LoRA options), its
    task, the device, precision, determinism and threads, the machine, and the versions of torch, transformers,
    peft and beluga (with a digest of the training code the step runs)."""
    from importlib.metadata import PackageNotFoundError, version

    import beluga_core
    from beluga_core.training.models import local_classifier_config

    cfg = plan.config
    job = next(j for j in (*plan.jobs, *plan.grid_jobs) if j.id == job_id)
    task = next((tp.spec.model_dump(mode="json") for tp in plan.tasks if tp.spec.name == job.task), job.task)
    config = local_classifier_config(job.model, config_overrides=cfg.model.config_overrides)
    versions: dict[str, str | None] = {}
    for package in ("torch", "transformers", "peft"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {"format": PROBE_CACHE_FORMAT, "model": job.model,
            "model_config": None if config is None else _digest(config.to_dict()),
            "model_settings": cfg.model.model_dump(mode="json"), "method": job.method, "hparams": job.hparams,
            "task": task, "device": device, "precision": cfg.executor.precision,
            "deterministic": cfg.executor.deterministic, "threads": cfg.executor.threads,
            "host": platform.node(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "versions": {**versions, "beluga": beluga_core.__version__, "code": _code_digest()}}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _code_digest() -> str:
    """The training code the probe's step runs (a development tree changes it without a new version)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted([*(root / "training").rglob("*.py"), root / "execution" / "worker.py", Path(__file__)]):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def _read_probe_cache(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The cached result for ``key``, or None (none kept, unreadable, or another key's)."""
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        if entry["key"] != json.loads(json.dumps(key, default=str)):
            return None
        int(entry["peaks"][0]), int(entry["peaks"][1]), int(entry["batch"]), str(entry["measured_at"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    return cast(dict[str, Any], entry)


def _write_probe_cache(path: Path, key: dict[str, Any], peaks: tuple[int, int], batch: int) -> None:
    from datetime import datetime

    from beluga_core.core.io import atomic_write

    entry = {"key": key, "peaks": list(peaks), "batch": batch,
             "measured_at": datetime.now().astimezone().isoformat(timespec="minutes")}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(entry, indent=1, sort_keys=True, default=str).encode())
    except OSError:   # a read-only home: the next dry run measures again
        pass


def _device_free(device: str) -> int:
    """The free bytes of ``device`` now: a CPU's read here; a GPU's in a spawned process (the coordinator holds no
    CUDA context)."""
    if device == "cpu":
        return _cpu_free_bytes()
    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(_gpu_free, device).result(timeout=PROBE_TIMEOUT_S)


def _gpu_free(device_name: str) -> int:
    from beluga_core.training.models import pick_device

    return _free_bytes(pick_device(device_name))


def _free_bytes(device: Any) -> int:
    import torch

    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return _cpu_free_bytes()


def _cpu_free_bytes() -> int:
    try:   # Linux: what can be allocated without swapping
        with open("/proc/meminfo", encoding="ascii") as f:
            info = dict(line.split(":", 1) for line in f)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def _pack_probe(plan: Plan, job_id: str, device_name: str) -> tuple[int, tuple[int, int], int]:
    """In the probe process: the device's free bytes, the peaks of a pack's step at 1 and at 2 members, and the
    batch size they ran at."""
    from dataclasses import replace

    import torch

    from beluga_core.contracts.registries import METHODS
    from beluga_core.execution.worker import Worker
    from beluga_core.training.packed_training import MemberSpec, train_pack

    worker = Worker(plan, device_name)
    device = worker.device
    free = _free_bytes(device)
    job = next(j for j in (*plan.jobs, *plan.grid_jobs) if j.id == job_id)
    state = worker.tasks[job.task]
    task = state.task
    def stage() -> tuple[Any, dict[str, Any]]:   # each member has a method instance of its own
        ((stage_method, stage_hp),) = METHODS.get(job.method)(job.hparams.get("method", {})).stages(job.hparams)
        return stage_method, stage_hp

    method = METHODS.get(job.method)(job.hparams.get("method", {}))
    stage_hp = stage()[1]
    batch, length = int(stage_hp["batch_size"]), plan.config.model.max_length
    model = worker.model(task, job.model, method.model_overrides())
    encoder = worker.encoder(task, job.model)
    # One update of every member: a batch of training examples, each long enough to fill max_length tokens.
    train = worker.iid_data(job.task).train[:batch]
    examples = [replace(cast(Any, ex), inputs=_long(ex.inputs, length)) for ex in train]
    hp = {**stage_hp, "epochs": 1}
    peaks = []
    for k in (1, 2):
        specs = [MemberSpec(f"probe {i}", task.build_trainset([], examples, None), stage()[0], hp, i, i)
                 for i in range(k)]
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        else:   # the step's own peak: loading the model and data may have peaked higher than either step
            _reset_rss_peak()
        for _ in train_pack(task, model, encoder, device, specs):
            pass
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            peaks.append(int(torch.cuda.max_memory_reserved(device)))
        else:   # the pack of 2 runs second, reusing what the pack of 1 freed
            peaks.append(_rss_peak())
    return free, (peaks[0], peaks[1]), batch


def _reset_rss_peak() -> bool:
    """Linux: the process's peak resident memory (VmHWM) starts again from what it holds now; False where it
    cannot (then the peak is the process's since it started)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_peak() -> int:
    """The process's peak resident memory since ``_reset_rss_peak`` (Linux), else since it started."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _long(inputs: Any, tokens: int) -> Any:
    """``inputs`` (a text or a pair) repeated to at least ``tokens`` words, so that it fills ``max_length``."""
    if isinstance(inputs, str):
        words = inputs.split() or ["a"]
        return " ".join((words * (tokens // len(words) + 1))[:tokens])
    return type(inputs)(_long(x, tokens // 2) for x in inputs)


def _first_int(config: Any, *names: str) -> int | None:
    return next((v for v in (getattr(config, n, None) for n in names) if isinstance(v, int)), None)
