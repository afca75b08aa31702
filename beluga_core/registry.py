"""One registry over stevedore entry-point namespaces.

Built-in plugins register through this project's own ``pyproject.toml`` entry points, exactly as a
third-party package does, so ``beluga plugins list`` shows both the same way.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import cache
from typing import Any

from stevedore import DriverManager, ExtensionManager

from beluga_core.errors import BelugaError

NAMESPACES: dict[str, str] = {
    "task": "beluga.tasks",
    "loss": "beluga.losses",
    "training configuration": "beluga.training_configs",
    "method": "beluga.methods",
    "expectation kind": "beluga.expectations",
    "executor": "beluga.executors",
}


@dataclass(frozen=True)
class PluginInfo:
    kind: str
    name: str
    target: str
    distribution: str


def _entry_points(kind: str) -> dict[str, Any]:
    # Listing reads entry-point metadata only; plugins are imported one at a time in ``get`` so that a
    # broken third-party plugin cannot break the others.
    return {ep.name: ep for ep in ExtensionManager.list_entry_points(_Namespace(NAMESPACES[kind]))}


class _Namespace:
    """What ``ExtensionManager.list_entry_points`` reads, so entry points are listed without importing them."""

    ENTRY_POINT_CACHE = ExtensionManager.ENTRY_POINT_CACHE

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace


def names(kind: str) -> list[str]:
    return sorted(_entry_points(kind))


def get(kind: str, name: str) -> Any:
    """Load plugin ``name`` of ``kind``; an unknown name lists the available ones with a 'did you mean'."""
    if kind not in NAMESPACES:
        raise KeyError(kind)
    eps = _entry_points(kind)
    if name not in eps:
        raise BelugaError(unknown_name_message(kind, name, sorted(eps)))
    return _load(kind, name)


@cache
def _load(kind: str, name: str) -> Any:
    ep = _entry_points(kind)[name]
    try:
        return DriverManager(namespace=NAMESPACES[kind], name=name, invoke_on_load=False,
                             on_load_failure_callback=_reraise).driver
    except Exception as exc:  # a third-party plugin that fails to import is a user-environment problem
        raise BelugaError(f"{kind} plugin '{name}' ({ep.value}) failed to load: {exc}") from exc


def _reraise(_manager: object, _ep: object, exc: Exception) -> None:
    raise exc


def unknown_name_message(kind: str, name: str, available: list[str]) -> str:
    msg = f"unknown {kind} '{name}'"
    close = difflib.get_close_matches(name, available, n=1, cutoff=0.5)
    if close:
        msg += f"; did you mean '{close[0]}'?"
    msg += f" Available: {', '.join(available) if available else '(none installed)'}"
    return msg


def _distributions() -> dict[tuple[str, str], str]:
    """(namespace, plugin name) → the installed package that declares it (stevedore's cache drops it)."""
    from importlib.metadata import distributions

    groups = set(NAMESPACES.values())
    out: dict[tuple[str, str], str] = {}
    for dist in distributions():
        for ep in dist.entry_points:
            if ep.group in groups:
                out[(ep.group, ep.name)] = f"{dist.metadata['Name']} {dist.version}"
    return out


def list_plugins() -> list[PluginInfo]:
    dists = _distributions()
    out = []
    for kind, namespace in NAMESPACES.items():
        for name, ep in sorted(_entry_points(kind).items()):
            out.append(PluginInfo(kind, name, ep.value, dists.get((namespace, name), "?")))
    return out
