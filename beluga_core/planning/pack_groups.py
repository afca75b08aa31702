"""Which jobs train together as members of one pack (``[executor] pack``; the training is ``training.packed_training``).

Jobs pack when one frozen base serves them all and their steps are the same computation on different rows: the
same task, base model and start weights (the pretrained model, the same parent, or the same external model), the
same method (one that says it packs: LoRA) and the same hyper-parameters except the learning rate (so a grid over
learning rates packs). Packs are formed from the whole plan in its order, so that a resumed run forms the same
packs as the interrupted one and its members pad as they did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from beluga_core.contracts.registries import METHODS, TASKS
from beluga_core.planning.halving import rung_of
from beluga_core.planning.jobs import Job

# The most members "auto" packs, where memory allows more (execution.sizing.plan_pack_size measures it): on a CPU
# where bench_pack's aggregate examples/s stops growing on the 2-core machine (README, "Speed and scale"); on a GPU
# the largest K bench_pack was planned for (no GPU measurement yet).
AUTO_PACK = {"cpu": 8, "cuda": 16}


def why_not_packed(job: Job) -> str | None:
    """Why ``job`` trains alone whatever the pack size (None: it can pack)."""
    method = METHODS.get(job.method)
    if not method.packs:
        return f"method {job.method} does not pack (only LoRA adapters over a frozen base do)"
    if not TASKS.get(job.task).packs:
        return f"task {job.task} does not pack"
    if len(method(job.hparams.get("method", {})).stages(job.hparams)) != 1:
        return f"method {job.method} trains in several stages"
    if rung_of(job.hparams) is not None:
        return "a rung of a halving search trains alone (it stops at its rung's epochs and keeps its state)"
    return None


def pack_key(job: Job) -> str | None:
    """What members of one pack share (None: the job does not pack)."""
    if why_not_packed(job) is not None:
        return None
    # The learning rate may differ (a grid over it packs): it is the training's, and a method with its own default
    # (lora) also keeps it among the method's hyper-parameters.
    hp: dict[str, Any] = {k: v for k, v in job.hparams.items() if k != "learning_rate"}
    if isinstance(hp.get("method"), dict):
        hp["method"] = {k: v for k, v in hp["method"].items() if k != "learning_rate"}
    start = job.start_model or job.parent_id or "pretrained"
    return json.dumps([job.task, job.model, start, job.method, hp], sort_keys=True, default=str)


@dataclass(frozen=True)
class Packs:
    """Each job's pack: the ids of its members, in plan order (a job alone is a pack of one)."""

    size: int
    members: dict[str, tuple[str, ...]]
    note: str = ""   # why nothing packs, where the reason is not the jobs' (the executor's)
    why: str = ""    # how the size was chosen (execution.sizing.PackSize)

    def of(self, job_id: str) -> tuple[str, ...]:
        return self.members.get(job_id, (job_id,))

    def groups(self, jobs: Sequence[Job]) -> list[tuple[str, ...]]:
        """The packs of more than one member among ``jobs``, in plan order."""
        order = {j.id: i for i, j in enumerate(jobs)}
        return sorted({self.of(j.id) for j in jobs if len(self.of(j.id)) > 1}, key=lambda g: order.get(g[0], 0))

    def summary(self, jobs: Sequence[Job]) -> str:
        """"8 trainings in 2 pack(s) (2 × 4 members)": how ``jobs`` pack."""
        groups = self.groups(jobs)
        sizes: dict[int, int] = {}
        for g in groups:
            sizes[len(g)] = sizes.get(len(g), 0) + 1
        shape = ", ".join(f"{n} × {k} members" for k, n in sorted(sizes.items(), reverse=True))
        return f"{sum(len(g) for g in groups)} trainings in {len(groups)} pack(s)" + (f" ({shape})" if groups else "")

    def describe(self) -> list[str]:
        """One line per pack of more than one member (the dry run's)."""
        seen: set[tuple[str, ...]] = set()
        lines = []
        for members in self.members.values():
            if len(members) > 1 and members not in seen:
                seen.add(members)
                lines.append(f"pack of {len(members)}: " + ", ".join(m[:12] for m in members))
        return lines


def form_packs(jobs: Sequence[Job], size: int) -> Packs:
    """The packs of ``jobs`` at ``size`` members at most: jobs with the same ``pack_key``, in plan order, cut into
    consecutive runs of near-equal sizes."""
    if size <= 1:
        return Packs(1, {})
    groups: dict[str, list[str]] = {}
    for job in jobs:
        key = pack_key(job)
        if key is not None:
            groups.setdefault(key, []).append(job.id)
    members: dict[str, tuple[str, ...]] = {}
    for ids in groups.values():
        # As few packs as ``size`` allows, of sizes that differ by one at most (49 jobs at 8: 7 packs of 7, not
        # 6 of 8 and one alone).
        n = -(-len(ids) // size)
        start = 0
        for i in range(n):
            end = start + len(ids) // n + (i < len(ids) % n)
            chunk = tuple(ids[start:end])
            for job_id in chunk:
                members[job_id] = chunk
            start = end
    return Packs(size, members)
