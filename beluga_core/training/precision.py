"""Mixed precision: bf16 autocast where the hardware computes bf16 natively, fp32 elsewhere.

On a GPU with bf16 support and on CPUs with native bf16 instructions (AVX512-BF16, AMX) autocast is a
large speed-up (measured here on 2 cores: training 1.6x, inference 2.2x); on other CPUs bf16 is emulated
and slower, so ``auto`` keeps fp32 there. Weights, optimizer state and losses stay fp32.
"""

from __future__ import annotations

import contextlib
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


def configure(precision: Precision, device: torch.device) -> str:
    """Choose the autocast dtype for ``device``; returns 'bf16' or 'fp32' (recorded with the results)."""
    if precision == "fp32":
        dtype = None
    elif precision == "bf16":
        dtype = torch.bfloat16
    elif device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    else:
        dtype = torch.bfloat16 if cpu_has_native_bf16() else None
    _state[device.type] = dtype
    return "bf16" if dtype is not None else "fp32"


def autocast(device: torch.device) -> contextlib.AbstractContextManager[Any]:
    dtype = _state.get(device.type)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
