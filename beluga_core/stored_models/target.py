"""The model a model-dependent generator works against, from ``store:STORE#SELECTOR`` (a stored model whose
weights were kept: a store's IID models, or seen and update models with ``[store] keep_weights``) or
``path:DIR`` (a saved checkpoint, e.g. from ``beluga export``), and what the suite header records about it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from beluga_core.config.schema import TaskSpec
from beluga_core.core.errors import BelugaError
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import SuiteHeader
from beluga_core.generators.attacks.target_model import LoadedModel
from beluga_core.planning.plan import make_task
from beluga_core.store.opened import StoreHandle, held
from beluga_core.store.selectors import select_one
from beluga_core.stored_models.export import stored_model
from beluga_core.training.models import load_tokenizer, pick_device

FORMS = "store:STORE#SELECTOR (a model whose weights the store kept, e.g. store:runs/x.duckdb#iid/vanilla) or " \
        "path:DIR (a saved checkpoint folder)"


def target_store(spec: str) -> Path | None:
    """The store a ``store:STORE#SELECTOR`` spec reads its model from (None for ``path:DIR``), the spec checked."""
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in ("store", "path") or not rest:
        raise BelugaError(f"--model {spec!r}: expected {FORMS}", field="model")
    if kind == "path":
        return None
    store_text, hash_, selector = rest.partition("#")
    store = Path(store_text).expanduser()
    if not hash_ or not selector:
        raise BelugaError(f"--model {spec!r}: name the model after '#', e.g. store:{store_text}#iid/vanilla",
                          field="model")
    if not store.is_file():
        raise BelugaError(f"--model {spec!r}: no store file {store}", field="model")
    return store


def load_target(spec: str, *, label_space: tuple[str, ...], input_kind: str, task_name: str,
                max_length: int = 128, opened: StoreHandle | None = None) -> tuple[LoadedModel, dict[str, Any]]:
    """The model ``spec`` names and its record for the suite header (``source.model``); ``opened``: the store of a
    ``store:`` spec as the command holds it open (None: opened for this call)."""
    store = target_store(spec)
    rest = spec.partition(":")[2]
    device = pick_device("auto")
    if store is not None:
        selector = rest.partition("#")[2]
        with held(opened if opened is not None else store) as handle:
            row = select_one(handle.con, selector, where=str(store))
            sm = stored_model(handle.con, store, row)
        name = f"{store.name}#{row['config']}/{row['method']}@{row['scenario']}"
        model = LoadedModel(sm.build(), load_tokenizer(row["model_name"]), sm.task, sm.max_length, name,
                            device=device)
        record = {"name": name, "store": str(store), "selector": selector, "model_id": row["model_id"],
                  "model_name": row["model_name"], "task": row["task"]}
    else:
        path = Path(rest).expanduser()
        if not (path / "config.json").is_file():
            raise BelugaError(f"--model {spec!r}: {path} is not a checkpoint folder (no config.json)", field="model")
        header = SuiteHeader(name="generated", levels=["family"], scoring_level="family",
                             input_kind="text" if input_kind == "relation" else input_kind,
                             label_space=list(label_space))
        task = make_task(TaskSpec(name=task_name, suite="generated", iid="none"), Suite(header, []))
        model = LoadedModel(task.build_model(str(path), seed=0), load_tokenizer(str(path)), task, max_length,
                            path.name, device=device)
        record = {"name": path.name, "path": str(path), "task": task_name}
    missing = [label for label in label_space if label not in model.labels]
    if missing:
        raise BelugaError(f"--model {spec!r}: the model's classes ({', '.join(model.labels)}) lack the source's "
                          f"label(s) {', '.join(missing[:5])}", field="model")
    return model, record
