"""Typed, lazy plugin registries over entry-point namespaces.

One ``Registry[T]`` per plugin kind (``beluga_core.contracts.registries`` declares them). Listing reads
entry-point metadata only; a plugin is imported when it is first asked for, so a broken third-party plugin
cannot break the others. On load the class is checked against the kind's base class: a plugin that does not
subclass it, or leaves a required member unimplemented, is rejected then, naming the member, rather than
failing in the middle of a run. Besides installed entry points, ``module:Class`` names a plugin class
directly (a plugin under development, a test double) — HELM's and lm-evaluation-harness's convention.

Built-in plugins register through this project's own ``pyproject.toml`` entry points, exactly as a
third-party package does, so ``beluga plugins list`` shows both the same way.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from dataclasses import dataclass
from importlib.metadata import EntryPoint, distributions, entry_points
from typing import Any, Generic, TypeVar

from stevedore import DriverManager

from beluga_core.core.errors import BelugaError, PluginWarning, did_you_mean

T = TypeVar("T")

# Every registry created, by kind, in creation order (what `beluga plugins list` shows).
ALL: dict[str, Registry[Any]] = {}


@dataclass(frozen=True)
class PluginInfo:
    kind: str
    name: str
    target: str
    distribution: str


def _reraise(_manager: object, _ep: EntryPoint, exc: BaseException) -> None:
    raise exc


def unknown_name_message(kind: str, name: str, available: list[str]) -> str:
    """'unknown KIND 'x'; did you mean 'y'? Available: …' — the one wording of every unknown-name error."""
    msg = f"unknown {kind} '{name}'{did_you_mean(name, available, cutoff=0.5)}"
    msg += f" Available: {', '.join(available) if available else '(none installed)'}"
    return msg


def missing_members(cls: type, base: type) -> list[str]:
    """The members a plugin class must provide but does not: the base's abstract methods and properties it
    leaves abstract, and the class attributes the base lists in ``required_attributes``."""
    missing = sorted(getattr(cls, "__abstractmethods__", ()) or ())
    for name in getattr(base, "required_attributes", ()):
        if not hasattr(cls, name) and name not in missing:
            missing.append(name)
    return missing


class Registry(Generic[T]):
    """The plugins of one kind: entry points of ``namespace`` whose objects subclass ``base``."""

    # ``base`` is a plain ``type``: the kinds' bases are abstract, which ``type[T]`` would refuse.
    def __init__(self, kind: str, namespace: str, base: type) -> None:
        self.kind = kind
        self.namespace = namespace
        self.base = base
        self._loaded: dict[str, type[T]] = {}
        self._listed: dict[str, EntryPoint] | None = None
        ALL[kind] = self

    def _entry_points(self) -> dict[str, EntryPoint]:
        # Listing reads metadata only (nothing imported); stevedore's DriverManager does the loading below.
        # Read once per process, as stevedore's own entry-point cache does.
        if self._listed is None:
            self._listed = {ep.name: ep for ep in entry_points(group=self.namespace)}
        return self._listed

    def names(self) -> list[str]:
        """Installed plugin names (entry points), sorted; nothing is imported."""
        return sorted(self._entry_points())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._entry_points() or _is_reference(name))

    def get(self, name: str) -> type[T]:
        """The plugin class ``name`` (an entry point, or ``module:Class``), imported and checked once."""
        if name not in self._loaded:
            cls = self._import(name)
            self.check(cls, name)
            self._loaded[name] = cls
            if hasattr(self.base, "Options") and getattr(cls, "Options", None) is None:
                # A kind with typed options, and a plugin written before them: it works, unchecked, said once.
                warnings.warn(f"{self.kind} plugin '{name}' ({cls.__module__}:{cls.__qualname__}) declares no "
                              "Options: its defaults are taken as they are and its options are not checked (declare "
                              "them as a beluga_core.api Options model: the documentation's extending guide)",
                              PluginWarning, stacklevel=2)
        return self._loaded[name]

    def check(self, cls: Any, name: str) -> None:
        """Reject an object that is not a complete subclass of the kind's base class, naming what is wrong."""
        where = f"{self.kind} plugin '{name}'"
        api = f"beluga_core.api.{self.base.__name__}"
        if not (inspect.isclass(cls) and issubclass(cls, self.base)):
            what = cls.__name__ if inspect.isclass(cls) else type(cls).__name__
            raise BelugaError(f"{where} ({what}) is not a subclass of {api}; a {self.kind} plugin is a class "
                              f"deriving from it")
        missing = missing_members(cls, self.base)
        if missing:
            raise BelugaError(f"{where} ({cls.__module__}:{cls.__qualname__}) is missing required member(s) "
                              f"{', '.join(missing)} of {api}")

    def _import(self, name: str) -> Any:
        if _is_reference(name):
            module_name, _, attr = name.partition(":")
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:  # the user's own module: its import error is theirs to see
                raise BelugaError(f"{self.kind} '{name}': cannot import module '{module_name}': {exc}") from exc
            obj: Any = module
            for part in attr.split("."):
                if not hasattr(obj, part):
                    raise BelugaError(f"{self.kind} '{name}': module '{module_name}' has no attribute '{attr}'")
                obj = getattr(obj, part)
            return obj
        eps = self._entry_points()
        if name not in eps:
            raise BelugaError(unknown_name_message(self.kind, name, sorted(eps)))
        try:
            return DriverManager(namespace=self.namespace, name=name, invoke_on_load=False,
                                 on_load_failure_callback=_reraise).driver
        except Exception as exc:  # a third-party plugin that fails to import is a user-environment problem
            raise BelugaError(f"{self.kind} plugin '{name}' ({eps[name].value}) failed to load: {exc}") from exc

    def require(self, name: str, *, field: str | None = None) -> None:
        """Fail with the did-you-mean message when ``name`` is neither installed nor a ``module:Class``."""
        if name not in self:
            raise BelugaError(unknown_name_message(self.kind, name, self.names()), field=field)

    def entries(self) -> list[PluginInfo]:
        dists = _distributions({self.namespace})
        return [PluginInfo(self.kind, name, ep.value, dists.get((self.namespace, name), "?"))
                for name, ep in sorted(self._entry_points().items())]


def _is_reference(name: str) -> bool:
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr)


def _distributions(groups: set[str]) -> dict[tuple[str, str], str]:
    """(namespace, plugin name) → the installed package that declares it (stevedore's cache drops it)."""
    out: dict[tuple[str, str], str] = {}
    for dist in distributions():
        for ep in dist.entry_points:
            if ep.group in groups:
                out[(ep.group, ep.name)] = f"{dist.metadata['Name']} {dist.version}"
    return out
