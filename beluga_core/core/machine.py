"""The CPUs this process may use."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The CPU cores this process should use: ``OMP_NUM_THREADS`` when it is set to a positive whole number (the
    usual cap where a machine is shared: a scheduler's allocation, test workers side by side), else the CPUs of
    its affinity mask (``taskset``, Slurm, a container's cpuset), else every core of the machine.

    Oversubscribed torch threads collapse throughput (two tiny runs side by side on 2 cores, each on 2 threads,
    took 126 s each against 32 s on one thread each: benchmarks/testing/RESULTS.md), so the cap is honoured, not the
    machine's count."""
    capped = os.environ.get("OMP_NUM_THREADS", "").strip()
    if capped.isdigit() and int(capped) > 0:
        return int(capped)
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
