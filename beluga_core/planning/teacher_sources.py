"""The teachers a job's method loads, and where the weights of those from outside the run are.

A method names its teachers as sources: ``iid`` / ``iid#N`` (an IID model of the run, which planning makes the
job need), ``store:PATH#SELECTOR`` (a model of another store) or ``path:DIR`` (a saved checkpoint). The outside
ones are resolved while the plan is built, so that a missing store, an unknown selector or weights that were not
kept stop the run before anything trains, naming the source. Reading a store is a layer above planning's: the
resolver is given to ``build_plan`` (``orchestration.teachers.plan_with_stores``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.contracts.registries import METHODS
from beluga_core.core.errors import BelugaError
from beluga_core.planning.grid_space import grid_methods, job_hparams
from beluga_core.planning.jobs import Job, JobSpec

OUTSIDE_TEACHERS = ("store:", "path:")


class TeacherResolver(Protocol):
    """Where the weights of an outside teacher ``source`` are, a file or folder (relative paths from ``base``, the
    config's folder; a ``store:`` model must be of ``task`` and the same pretrained ``model``). A ``BelugaError``
    names what is wrong."""

    def __call__(self, source: str, *, task: str, model: str, base: Path) -> str: ...


def method_teachers(method: str, hp: dict[str, Any]) -> tuple[str, ...]:
    """The teacher sources a method with hyper-parameters ``hp`` loads (its stages' too)."""
    plugin = METHODS.get(method)
    sources = plugin(hp.get("method", {})).teacher_sources()
    for reused, stage_hp in zip(plugin.reuses, hp.get("stages", []), strict=False):
        sources += method_teachers(reused, stage_hp)
    return sources


def iid_teacher_seed(source: str, seed: int) -> int | None:
    """The seed whose IID model a source names (``iid``: ``seed``, the job's own; ``iid#N``: N); None for a source
    outside the run."""
    if source == "iid":
        return seed
    return int(source[4:]) if source.startswith("iid#") else None


def iid_teacher_ids(spec: JobSpec, hp: dict[str, Any], iid_ids: dict[int, str]) -> tuple[str, ...]:
    """The IID models (job ids, of ``iid_ids``: seed → id) that ``spec``'s method loads as teachers, so that the
    run trains them first."""
    needs = []
    for source in method_teachers(spec.method, hp):
        seed = iid_teacher_seed(source, spec.seed)
        if seed is None:
            continue
        if seed not in iid_ids:
            raise BelugaError(f"teacher '{source}' of method '{spec.method}': the run has no seed {seed} (seeds "
                              f"{sorted(iid_ids)}); add it to `seeds`", field=f"method.{spec.method}.teacher")
        needs.append(iid_ids[seed])
    return tuple(needs)


def teacher_seeds(cfg: BenchmarkConfig) -> set[int]:
    """The seeds whose IID model a method's teacher names ("iid": every seed, "iid#N": N)."""
    seeds: set[int] = set()
    for method in {*cfg.methods, *grid_methods(cfg.methods)}:
        for source in method_teachers(method, job_hparams(cfg, method)):
            if source == "iid":
                seeds |= set(cfg.seeds)
            elif source.startswith("iid#"):
                seeds.add(int(source[4:]))
    return seeds


def resolve_outside_teachers(jobs: Iterable[Job], resolved: dict[str, str], resolver: TeacherResolver | None,
                             config_path: Path) -> None:
    """Add to ``resolved`` (source → file or folder) the outside teachers of ``jobs`` it lacks; an error names
    the config field of the method's teacher."""
    for job in jobs:
        for source in method_teachers(job.method, job.hparams):
            if source in resolved or not source.startswith(OUTSIDE_TEACHERS):
                continue
            field = f"method.{job.method}.teacher"
            if resolver is None:
                raise BelugaError(f"teacher '{source}' is read from outside the run, and this plan was built without "
                                  "a teacher resolver (build it with orchestration.teachers.plan_with_stores)",
                                  source=config_path, field=field)
            try:
                resolved[source] = resolver(source, task=job.task, model=job.model, base=config_path.parent)
            except BelugaError as exc:
                raise BelugaError(exc.message, source=config_path, field=exc.field or field) from None
