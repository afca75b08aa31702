"""Loading a benchmark config: TOML syntax, schema, and plugin names, each error naming file and line."""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from beluga_core.config.plugin_options import (
    check_grid_axes,
    check_method_table,
    check_task_options,
    warn_unused,
)
from beluga_core.config.schema import BenchmarkConfig, TaskSpec
from beluga_core.config.sweep import check_sweep
from beluga_core.contracts.registries import ATTRIBUTIONS, CONFIGURATIONS, METHODS, TASKS
from beluga_core.core.constants import SEEN
from beluga_core.core.errors import BelugaError
from beluga_core.core.registry import Registry, unknown_name_message


def load_config(path: str | Path) -> BenchmarkConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BelugaError("config file not found", source=path) from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise BelugaError(f"cannot read config ({exc})", source=path) from None
    return parse_config(text, path)


def parse_config(text: str, path: Path) -> BenchmarkConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = _toml_error_line(exc)
        raise BelugaError(f"not valid TOML: {exc}", source=path, line=line) from None
    try:
        cfg = BenchmarkConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err.get("loc", ()))
        field = ".".join(str(p) for p in loc) or None
        if loc[:1] == ("sweep",):   # a swept key is one dotted name: its parts are the TOML key's
            loc = tuple(p for part in loc for p in (part.split(".") if isinstance(part, str) else [part]))
        got = err.get("input")
        got_txt = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
        more = f" (and {len(exc.errors()) - 1} more problem(s))" if len(exc.errors()) > 1 else ""
        raise BelugaError(f"{err.get('msg', 'invalid')}{got_txt}{more}", source=path,
                          line=locate_key(text, loc), field=field) from None
    _check_plugins(cfg, text, path)
    try:
        check_sweep(cfg)
    except BelugaError as exc:
        loc = tuple(exc.field.split(".")) if exc.field else ()
        raise BelugaError(exc.message, source=path, line=locate_key(text, loc), field=exc.field) from None
    return _resolve_references(cfg, text, path)


def attribution_options(cfg: BenchmarkConfig, name: str, *, run: bool) -> dict[str, Any]:
    """The options of attribution method ``name`` in a run: its cheaper run budget (``run``), then
    ``[attributions.options.NAME]``, then the section's ``target``."""
    cls = ATTRIBUTIONS.get(name)
    spec = cfg.attributions
    return {**(cls.run_budget if run else {}), **spec.options.get(name, {}),
            **({"target": spec.target} if spec.target else {})}


def _toml_error_line(exc: tomllib.TOMLDecodeError) -> int | None:
    lineno = getattr(exc, "lineno", None)
    if lineno:
        return int(lineno)
    m = re.search(r"line (\d+)", str(exc))
    return int(m.group(1)) if m else None


def _check_plugins(cfg: BenchmarkConfig, text: str, path: Path) -> None:
    # The executor's name is checked where executors are known (`beluga run`), a layer above the config.
    checks: list[tuple[Registry[Any], list[str], tuple[Any, ...]]] = [
        (CONFIGURATIONS, cfg.configurations, ("configurations",)),
        (METHODS, cfg.methods, ("methods",)),
    ]
    checks += [(TASKS, [t.name], ("tasks", i, "name")) for i, t in enumerate(cfg.tasks)]
    # Tables named after a plugin: a misspelt name would otherwise be silently ignored. A table of an
    # installed method the run does not use is fine (methods come and go from the list).
    checks += [(METHODS, [m], ("method", m)) for m in cfg.methods_hparams]
    checks += [(METHODS, [m], ("grid", "methods", m)) for m in cfg.grid.methods]
    checks += [(TASKS, [t], ("grid", "tasks", t)) for t in cfg.grid.tasks]
    checks += [(ATTRIBUTIONS, cfg.attributions.methods, ("attributions", "methods"))]
    checks += [(ATTRIBUTIONS, [m], ("attributions", "options", m)) for m in cfg.attributions.options]
    for registry, wanted, loc in checks:
        for name in wanted:
            if name not in registry:
                raise BelugaError(unknown_name_message(registry.kind, name, registry.names()), source=path,
                                  line=locate_key(text, loc), field=".".join(map(str, loc)))
    _check_plugin_options(cfg, text, path)
    # Each estimator's options as a run gives them (its run budget, the config's table, the section's target),
    # checked by its Options; a table for an estimator the run does not compute is checked too, and said.
    spec = cfg.attributions
    for name in [*spec.methods, *(m for m in spec.options if m not in spec.methods)]:
        try:
            ATTRIBUTIONS.get(name)(attribution_options(cfg, name, run=True))
        except (BelugaError, ValueError, TypeError) as exc:
            message = exc.message if isinstance(exc, BelugaError) else str(exc)
            # The estimator's key under its registered name (a class may call itself otherwise).
            key = exc.field.split(".")[3:] if isinstance(exc, BelugaError) and exc.field else []
            field = ".".join(["attributions", "options", name, *key])
            loc = tuple(field.split("."))
            raise BelugaError(message, source=path, line=locate_key(text, loc) or locate_key(text, loc[:3]),
                              field=field) from None
    warn_unused(spec.options, set(spec.methods), "attributions.options")
    for i, scenario in enumerate(cfg.scenarios):
        if not scenario:
            raise BelugaError("empty scenario name", source=path, line=locate_key(text, ("scenarios", i)),
                              field="scenarios")
    if SEEN not in cfg.scenarios and (cfg.heldout_levels or cfg.only_levels):
        # Held-out and only:LEVEL folds reuse the seen scenario's hyper-parameters, and their G its s_iid, so they
        # are meaningless without it.
        raise BelugaError("held-out and only:LEVEL scenarios need the 'seen' scenario too (folds reuse its setup "
                          "and G its i.i.d. score)",
                          source=path, line=locate_key(text, ("scenarios",)), field="scenarios")


def _check_plugin_options(cfg: BenchmarkConfig, text: str, path: Path) -> None:
    """Every plugin table against its plugin's Options (``config.plugin_options``), each error at its line."""
    used = {r for m in cfg.methods for r in (m, *METHODS.get(m).reuses)}
    searched = sorted({r for m in cfg.methods for r in (METHODS.get(m).reuses or (m,))})
    checks: list[tuple[str, Callable[[], None]]] = []
    for i, spec in enumerate(cfg.tasks):
        checks.append((f"tasks.{i}.options", functools.partial(check_task_options, spec.name, spec.options,
                                                               f"tasks.{i}.options")))
    for name, values in cfg.methods_hparams.items():
        checks.append((f"method.{name}", functools.partial(check_method_table, name, values)))
    for name, axes in cfg.grid.methods.items():
        if METHODS.get(name).reuses:  # one that reuses others' choices has no search: the plan says so
            continue
        checks.append((f"grid.methods.{name}", functools.partial(
            check_grid_axes, name, axes, f"grid.methods.{name}", cfg.methods_hparams.get(name, {}))))
    for task, axes in cfg.grid.tasks.items():
        for name in searched:
            checks.append((f"grid.tasks.{task}", functools.partial(
                check_grid_axes, name, axes, f"grid.tasks.{task}", cfg.methods_hparams.get(name, {}))))
    for where, check in checks:
        try:
            check()
        except BelugaError as exc:   # the field's line (a plugin that does not load: its table's)
            field = exc.field or where
            loc = tuple(int(p) if p.isdigit() else p for p in field.split("."))
            raise BelugaError(exc.message, source=path, line=locate_key(text, loc), field=field) from None
    warn_unused(cfg.methods_hparams, used, "method")
    warn_unused(cfg.grid.methods, used, "grid.methods")


# A Hugging Face hub id: [org/]name, and for datasets [org/]name[/config] (the hub's repo-name characters).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*){0,2}$")
# Endings of data and model files: a value ending so names a file, never a hub id.
_FILE_SUFFIXES = (".jsonl", ".json", ".gz", ".csv", ".tsv", ".parquet", ".arrow", ".txt", ".zip", ".tar", ".pt",
                  ".pth", ".bin", ".safetensors", ".onnx", ".ckpt", ".duckdb", ".toml")


def _reference(value: str, base: Path, prefix: str, hub: str | None) -> tuple[str | None, str | None]:
    """(the value to use, None) or (None, what is wrong) for a config value naming a file or folder, a
    ``prefix``ed built-in, or (where ``hub`` names what) a hub id. Relative paths are relative to ``base``."""
    if value.startswith(prefix):
        return value, None
    candidate = Path(value).expanduser()
    candidate = candidate if candidate.is_absolute() else base / candidate
    if candidate.exists():
        return str(candidate.resolve()), None
    looks_like_path = value.startswith((".", "/", "~")) or value.lower().endswith(_FILE_SUFFIXES) or "\\" in value
    if looks_like_path or hub is None:
        return None, (f"no such file or folder: {candidate} (relative paths are relative to the config file's "
                      f"folder, {base})")
    if not _HUB_ID.match(value):
        return None, (f"'{value}' is neither an existing path nor a {hub} ([org/]name"
                      f"{'[/config]' if 'dataset' in hub else ''}); relative paths are relative to {base}")
    return value, None


def _store_problem(store: Path) -> str | None:
    if store.is_dir():
        return f"{store} is a folder; the store is a file, e.g. runs/NAME.duckdb"
    folder = store.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the run creates the missing folders: the nearest existing one must be writable
    if not folder.is_dir():
        return f"{folder} is not a folder, so {store} cannot be created"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable, so {store} cannot be created there"
    return None


def _resolve_references(cfg: BenchmarkConfig, text: str, path: Path) -> BenchmarkConfig:
    """The config with every path made absolute (relative to the config file's folder), after checking that
    each value names an existing path, a built-in or a hub id; the store must be a file in a writable folder."""
    base = path.resolve().parent

    def resolved(value: str, loc: tuple[Any, ...], prefix: str, hub: str | None) -> str:
        out, problem = _reference(value, base, prefix, hub)
        if problem is not None or out is None:
            raise BelugaError(problem or "invalid reference", source=path, line=locate_key(text, loc),
                              field=".".join(map(str, loc)))
        return out

    tasks: list[TaskSpec] = []
    for i, spec in enumerate(cfg.tasks):
        evals = []
        for j, entry in enumerate(spec.eval_specs()):
            loc = ("tasks", i, "eval_suites", j) + (() if isinstance(spec.eval_suites[j], str) else ("suite",))
            evals.append(entry.model_copy(update={"suite": resolved(entry.suite, loc, "builtin:", None)}))
        tasks.append(spec.model_copy(update={
            "suite": resolved(spec.suite, ("tasks", i, "suite"), "builtin:", None),
            "iid": resolved(spec.iid, ("tasks", i, "iid"), "builtin:", "Hugging Face dataset id"),
            "eval_suites": evals}))
    hub_model = "Hugging Face model id"
    model = cfg.model.model_copy(update={
        "name": resolved(cfg.model.name, ("model", "name"), "embedded:", hub_model),
        "task_models": {k: resolved(v, ("model", "task_models", k), "embedded:", hub_model)
                        for k, v in cfg.model.task_models.items()}})
    store = Path(cfg.store_spec.path).expanduser()
    problem = _store_problem(store if store.is_absolute() else base / store)
    if problem is not None:
        loc = ("store",) if isinstance(cfg.store, str) else ("store", "path")
        raise BelugaError(problem, source=path, line=locate_key(text, loc), field=".".join(loc))
    return cfg.model_copy(update={"tasks": tasks, "model": model})


# A table header, and a key: bare or quoted parts (a quoted one may hold a colon, as a module:Class method's table),
# dotted or not (``method.lora.r = 4`` sets lora's r as its table would).
_TABLE = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"': /]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.:/ ]+?)\s*=")


def locate_key(text: str, loc: tuple[Any, ...]) -> int | None:
    """Best-effort line number of the TOML key at pydantic location ``loc`` (None when not found).

    Handles the shapes beluga configs use: top-level keys, [table] keys, [[array-of-tables]] entries
    (``loc`` = ('tasks', 2, 'suite')), and inline values of a key (``('scenarios', 3)`` → the key's line).
    """
    names = [p for p in loc if isinstance(p, str)]
    if not names:
        return None
    lines = text.splitlines()
    table: list[str] = []
    array_counts: dict[str, int] = {}
    best: int | None = None
    index_in_loc = next((p for p in loc[1:2] if isinstance(p, int)), None)
    for i, raw in enumerate(lines, start=1):
        m = _TABLE.match(raw)
        if m:
            table = [s.strip().strip("\"'") for s in m.group(2).split(".")]
            if m.group(1) == "[[":
                key = ".".join(table)
                array_counts[key] = array_counts.get(key, -1) + 1
            if table == names[: len(table)] and best is None and len(table) == len(names):
                best = i
            continue
        km = _KEY.match(raw)
        if not km:
            continue
        parts = [p.strip().strip("\"'") for p in km.group(1).split(".")]
        key = parts[0]
        full = [*table, *parts]
        if table and index_in_loc is not None and len(table) == 1 \
                and array_counts.get(table[0], 0) != index_in_loc:
            continue
        if full == names:
            return i
        if full == names[: len(full)] and len(full) >= 1 and best is None:
            best = i
        if not table and names and key == names[0] and best is None:
            best = i
    return best


# Top-level names of a benchmark config, as written in TOML (field aliases).
_CONFIG_TABLES = {f.alias or name for name, f in BenchmarkConfig.model_fields.items()}


def with_config_line(exc: BelugaError, config_path: Path) -> BelugaError:
    """``exc`` with the line of its config field added, when it names one of ``config_path`` and lacks it.

    An error raised without a file (checks that see the config, not its path) whose field is a config
    field is taken as one of ``config_path``."""
    field = exc.field
    if exc.line is not None or not field:
        return exc
    if exc.source is None and field.split(".")[0] in _CONFIG_TABLES:
        exc = BelugaError(exc.message, source=config_path, field=field)
    if exc.source is None or Path(exc.source) != config_path:
        return exc
    try:
        # "tasks.0.iid": the index of an array of tables is a number in a pydantic location.
        loc = tuple(int(p) if p.isdigit() else p for p in field.split("."))
        line = locate_key(config_path.read_text(encoding="utf-8"), loc)
    except OSError:
        return exc
    return exc if line is None else BelugaError(exc.message, source=exc.source, line=line, field=field)
