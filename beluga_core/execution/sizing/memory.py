"""What sizing counts in: units, the CUDA context's allowance, the share of free memory kept free
(``[executor.options] memory_margin``), the probes' time limit, and the errors that say a memory is unknown."""

from __future__ import annotations

from beluga_core.config.executor_spec import ExecutorSpec

MiB = 2 ** 20
GiB = 2 ** 30
# A CUDA context with torch's kernels loaded lazily (CUDA ≥ 11.7), cuBLAS's workspace included: 0.3–0.6 GiB on
# recent GPUs by NVIDIA's and PyTorch's own accounts. An allowance, not measured here (no GPU in CI).
CONTEXT_BYTES = 512 * MiB
# Kept free of each GPU's free memory: the allocator's fragmentation across batches of other lengths, and the
# evaluation's batches, which the probe does not run.
DEFAULT_MARGIN = 0.1
PROBE_TIMEOUT_S = 600.0


class MemoryUnknown(Exception):
    """The memory one worker takes could be neither measured nor estimated; the message says why."""


class NothingToMeasure(MemoryUnknown):
    """No training of the jobs known so far packs: a pack size is measured on a later phase's."""


def memory_margin(spec: ExecutorSpec) -> float:
    """``[executor.options] memory_margin``: the fraction of free memory that sizing keeps free."""
    # Checked by the executor's Options (a fraction in [0, 1)) before anything is sized.
    return float(spec.options.get("memory_margin", DEFAULT_MARGIN))
