"""What a pack takes on its device, measured by a probe in a process of its own (one training step of a pack of
one member, then of two), and the probe's cache in the user's cache folder, keyed by everything it depends on
(``probe_key``), so that a second dry run does not measure again (``BELUGA_PROBE_CACHE=refresh`` measures again)."""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import platform
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, cast

from beluga_core.core.errors import BelugaError
from beluga_core.execution.sizing.memory import (
    PROBE_TIMEOUT_S,
    GiB,
    MemoryUnknown,
)
from beluga_core.execution.sizing.pack_size import PER_MEMBER, PackMemory
from beluga_core.planning.plan import Plan

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
    root = Path(__file__).resolve().parents[2]
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
