"""Teachers from outside the run: the ``store:PATH#SELECTOR`` and ``path:DIR`` sources of a method's ``teacher``
resolved, while the plan is built, to the file or folder holding the weights (``Plan.teachers``), so that a
missing store, an unknown selector or weights that were not kept stop the run at once, naming the source.

Planning may not read stores (a lower layer): ``plan_run`` is the one place that gives it this layer's resolver.
"""

from __future__ import annotations

from pathlib import Path

from beluga_core.config.schema import BenchmarkConfig
from beluga_core.core.errors import BelugaError
from beluga_core.execution.worker import weights_path
from beluga_core.planning.plan import Plan, build_plan
from beluga_core.store.reader import open_store
from beluga_core.store.selectors import select_one


def cache_dir_for(store: Path) -> Path:
    """Next to the store: the kept weights and the token cache."""
    return store.with_name(store.name + ".cache")


def plan_run(cfg: BenchmarkConfig, config_path: Path, *, allow_missing_tasks: bool = False) -> Plan:
    """The complete plan of a run: planning's, with the outside teachers resolved by ``teacher_weights``."""
    return build_plan(cfg, config_path, allow_missing_tasks=allow_missing_tasks, teachers=teacher_weights)


def teacher_weights(source: str, *, task: str, model: str, base: Path) -> str:
    """The file or folder of an outside teacher: a ``path:`` as given (relative to ``base``), a ``store:``
    model's kept weights (it must be a model of ``task``, the same pretrained ``model`` as the run's)."""
    kind, _, rest = source.partition(":")
    if kind == "path":
        path = Path(rest).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.exists():
            raise BelugaError(f"teacher '{source}': no such file or folder {path}")
        return str(path)
    store_text, _, selector = rest.partition("#")
    store = Path(store_text).expanduser()
    store = store if store.is_absolute() else base / store
    with open_store(store) as con:
        row = select_one(con, selector, where=str(store), task=task)
    if row["model_name"] != model:
        raise BelugaError(f"teacher '{source}' is a {row['model_name']} model; the run trains {model}: a teacher "
                          "read from a store must be the same model")
    weights = weights_path(cache_dir_for(store), row["model_id"])
    if not weights.exists():
        raise BelugaError(f"teacher '{source}': model {row['model_id'][:12]} is in {store} but its weights were not "
                          f"kept ({weights}); keep them with [store] keep_weights, or name a saved checkpoint with "
                          "path:DIR")
    return str(weights)
