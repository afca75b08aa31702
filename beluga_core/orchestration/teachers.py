"""Teachers from outside the run: the ``store:PATH#SELECTOR`` and ``path:DIR`` sources of a method's ``teacher``
resolved, before anything trains, to the file or folder holding the weights (``Plan.teachers``), so that a
missing store, an unknown selector or weights that were not kept stop the run at once, naming the source."""

from __future__ import annotations

from pathlib import Path

from beluga_core.core.errors import BelugaError
from beluga_core.execution.worker import weights_path
from beluga_core.planning.plan import Plan, method_teachers
from beluga_core.store.reader import open_store
from beluga_core.store.selectors import select_one


def cache_dir_for(store: Path) -> Path:
    """Next to the store: the kept weights and the token cache."""
    return store.with_name(store.name + ".cache")


def resolve_teachers(plan: Plan) -> None:
    base = plan.config_path.parent
    for tp in plan.tasks:
        for job in [*tp.jobs, *tp.grid_jobs]:
            for source in method_teachers(job.method, job.hparams):
                if source in plan.teachers or not source.startswith(("store:", "path:")):
                    continue
                field = f"method.{job.method}.teacher"
                kind, _, rest = source.partition(":")
                if kind == "path":
                    path = Path(rest).expanduser()
                    path = path if path.is_absolute() else base / path
                    if not path.exists():
                        raise BelugaError(f"teacher '{source}': no such file or folder {path}", field=field)
                    plan.teachers[source] = str(path)
                    continue
                store_text, _, selector = rest.partition("#")
                store = Path(store_text).expanduser()
                store = store if store.is_absolute() else base / store
                with open_store(store) as con:
                    row = select_one(con, selector, where=str(store), task=job.task)
                if row["model_name"] != job.model:
                    raise BelugaError(f"teacher '{source}' is a {row['model_name']} model; the run trains "
                                      f"{job.model}: a teacher read from a store must be the same model",
                                      field=field)
                weights = weights_path(cache_dir_for(store), row["model_id"])
                if not weights.exists():
                    raise BelugaError(f"teacher '{source}': model {row['model_id'][:12]} is in {store} but its "
                                      f"weights were not kept ({weights}); keep them with [store] keep_weights, or "
                                      "name a saved checkpoint with path:DIR", field=field)
                plan.teachers[source] = str(weights)
