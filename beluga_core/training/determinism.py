"""Deterministic mode (``[executor] deterministic = true``): the same job gives bit-identical numbers run after run
on the same machine, device type, precision and ``threads``.

On the CPU that is ``torch.use_deterministic_algorithms``. On CUDA also: cuBLAS's fixed workspace
(``CUBLAS_WORKSPACE_CONFIG``, read when a process makes its first cuBLAS handle, so it is set before the worker
touches CUDA), cuDNN without autotuning, and attention through scaled-dot-product attention's math backend (the
flash and memory-efficient kernels may accumulate in another order from one run to the next).
"""

from __future__ import annotations

import os

import torch

# The two settings cuBLAS documents as deterministic; ":4096:8" is the one torch's error message recommends.
CUBLAS_DETERMINISTIC = (":4096:8", ":16:8")


def configure(deterministic: bool, device: torch.device) -> str:
    """Set this process's mode for a worker on ``device``, before anything touches CUDA; returns what the store
    records beside the device and precision ("deterministic" or ""). Off restores torch's defaults, so a process
    that runs a deterministic plan and then another does not carry the mode over."""
    cuda = deterministic and device.type == "cuda"
    if cuda and os.environ.get("CUBLAS_WORKSPACE_CONFIG") not in CUBLAS_DETERMINISTIC:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = CUBLAS_DETERMINISTIC[0]
    torch.use_deterministic_algorithms(deterministic)
    torch.backends.cudnn.deterministic = cuda
    torch.backends.cudnn.benchmark = False
    # The math backend alone on CUDA; every backend (torch's default) otherwise. The switches are process-wide
    # and the CPU's kernels read them too: a CPU run keeps its usual (deterministic) attention.
    torch.backends.cuda.enable_flash_sdp(not cuda)
    torch.backends.cuda.enable_mem_efficient_sdp(not cuda)
    torch.backends.cuda.enable_cudnn_sdp(not cuda)
    torch.backends.cuda.enable_math_sdp(True)
    return "deterministic" if deterministic else ""
