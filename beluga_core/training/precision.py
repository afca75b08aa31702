"""Mixed precision: bf16 autocast where the hardware computes bf16 natively, fp32 elsewhere.

On a GPU with bf16 support and on CPUs with native bf16 instructions (AVX512-BF16, AMX) autocast is a
large speed-up (benchmarks/perf/RESULTS.md has the figures); on other CPUs bf16 is emulated and slower, so
``auto`` keeps fp32 there. Weights, optimizer state and losses stay fp32.
"""

from __future__ import annotations

import contextlib
import os
import platform
from functools import cache
from pathlib import Path
from typing import Any, Literal

import torch

Precision = Literal["auto", "fp32", "bf16"]
_state: dict[str, torch.dtype | None] = {"cpu": None, "cuda": None}


@cache
def cpu_has_native_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def resolve(precision: Precision, device: torch.device) -> Literal["bf16", "fp32"]:
    """What ``precision`` means on ``device``: ``auto`` is bf16 where the hardware computes it natively."""
    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_native_bf16() else "fp32"


def machine_line(precision: Precision | None, device: torch.device) -> str:
    """Precision (None: no model computes), processor and whether it has native bf16: what every timing is
    printed beside."""
    cpu = f"{cpu_model()}, {os.cpu_count()} cores"
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu
    head = f"{device.type} · {where}"
    if precision is not None:
        resolved = resolve(precision, device)
        setting = "" if precision == resolved else f" ({precision})"
        head = f"precision {resolved}{setting} on {head}"
    return f"{head} · native bf16 on the CPU: {'yes' if cpu_has_native_bf16() else 'no'} · torch {torch.__version__}"


def configure(precision: Precision, device: torch.device) -> str:
    """Choose the autocast dtype for ``device``; returns 'bf16' or 'fp32' (recorded with the results)."""
    resolved = resolve(precision, device)
    dtype = torch.bfloat16 if resolved == "bf16" else None
    _state[device.type] = dtype
    return resolved


def autocast(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    dtype = _state.get(device.type)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
