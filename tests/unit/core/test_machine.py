"""The CPUs a run may use: OMP_NUM_THREADS caps them, else the affinity mask, and a run's auto threads follow."""

from __future__ import annotations

import os

import pytest
import torch

from beluga_core.core.machine import usable_cores
from beluga_core.training.models import configure_threads


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity mask on this platform")
def test_omp_num_threads_caps_the_cores_else_the_affinity_mask_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert usable_cores() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert usable_cores() == 2
    for unusable in ("0", "-1", "two", ""):   # not a positive whole number: ignored, as OpenMP ignores it
        monkeypatch.setenv("OMP_NUM_THREADS", unusable)
        assert usable_cores() == 3


def test_auto_threads_split_the_usable_cores_between_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = torch.get_num_threads()
    try:
        monkeypatch.setenv("OMP_NUM_THREADS", "4")
        configure_threads(0, workers=2)
        assert torch.get_num_threads() == 2
        configure_threads(0)
        assert torch.get_num_threads() == 4
        configure_threads(3, workers=2)    # set in the config: taken as it is
        assert torch.get_num_threads() == 3
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        configure_threads(0, workers=2)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(saved)
