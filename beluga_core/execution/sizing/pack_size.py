"""Members per pack (``[executor] pack``): a number kept; ``auto`` the size a store recorded for the run, else as
many members as the device's free memory holds at what a member takes (``sizing.pack_probe`` measures it), up to a
cap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from beluga_core.execution.sizing.memory import (
    DEFAULT_MARGIN,
    GiB,
    MemoryUnknown,
    MiB,
    NothingToMeasure,
)


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
