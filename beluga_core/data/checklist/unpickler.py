"""A restricted unpickler for CheckList ``TestSuite`` pickles that never runs pickled code.

The CheckList release suites are dill pickles written by Python 3.6 (dill 0.3.1). Their expectation
functions are Python 3.6 bytecode, which current Pythons cannot rebuild, and rebuilding them would run
code from the file anyway. This unpickler therefore:

* resolves only an explicit allow-list of globals (``ALLOWED_GLOBALS``: numpy array reconstruction,
  a few inert builtins and collections) plus inert stand-ins (``STAND_IN_GLOBALS``) for checklist's
  classes and dill's reconstructors; anything else raises ``DisallowedGlobalError`` naming it;
* replaces dill's code / function / cell / type / module reconstructors with stand-ins that record the
  arguments they were given (``InertCode``, ``InertFunction``, ...) and never build a code object,
  a function or import a module;
* needs neither ``checklist``, ``dill`` nor ``munch`` installed.

The loaded suite keeps its data (``test.data``, ``labels``, ``meta``, ``run_idxs``, ...) as plain Python
objects; its ``expect`` attributes are ``InertFunction`` records that can be fingerprinted, not called.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import hashlib
import importlib
import io
import pickle
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

__all__ = [
    "ALLOWED_GLOBALS",
    "STAND_IN_GLOBALS",
    "DisallowedGlobalError",
    "InertAttr",
    "InertCall",
    "InertCell",
    "InertCode",
    "InertFunction",
    "InertModule",
    "InertStandIn",
    "InertType",
    "RestrictedUnpickler",
    "StandInObject",
    "code_fingerprint",
    "iter_code",
    "load_pickle",
    "loads_pickle",
]


class DisallowedGlobalError(pickle.UnpicklingError):
    """The pickle references a global that is not on the allow-list."""

    def __init__(self, module: str, name: str, spelled: str | None = None) -> None:
        as_spelled = f" (written '{spelled}')" if spelled and spelled != f"{module}.{name}" else ""
        super().__init__(
            f"the pickle references the global '{module}.{name}'{as_spelled}, which is not on the allow-list "
            "of this restricted unpickler (it only loads CheckList suites, and never runs pickled code)")
        self.module = module
        self.name = name


class InertCallError(TypeError):
    """Something tried to call a stand-in for pickled code."""


# ---------------------------------------------------------------------------------------------------------
# Inert stand-ins. Each records what the pickle gave it; none of them executes, imports or compiles anything.
# ---------------------------------------------------------------------------------------------------------


class _Recorder:
    """Base of the stand-ins: accepts pickle state (BUILD) by storing it, never by running setters."""

    def __setstate__(self, state: Any) -> None:
        # dill may send (dict_state, slot_state); both are only recorded.
        if isinstance(state, tuple) and len(state) == 2 and all(isinstance(s, dict | None) for s in state):
            merged: dict[str, Any] = {}
            for part in state:
                if part:
                    merged.update(part)
            state = merged
        if isinstance(state, dict):
            self.__dict__.setdefault("state", {}).update(state)
        else:
            self.__dict__["state"] = state


# Field names of ``types.CodeType(...)`` positional arguments; 3.8 added posonlyargcount.
_CODE_FIELDS_36 = ("co_argcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags", "co_code",
                   "co_consts", "co_names", "co_varnames", "co_filename", "co_name", "co_firstlineno",
                   "co_lnotab", "co_freevars", "co_cellvars")
_CODE_FIELDS_38 = ("co_argcount", "co_posonlyargcount", *_CODE_FIELDS_36[1:])


class InertCode(_Recorder):
    """The arguments of a pickled ``CodeType(...)`` call; exposes the usual ``co_*`` names when it can."""

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args = args
        fields = {15: _CODE_FIELDS_36, 16: _CODE_FIELDS_38}.get(len(args), ())
        self.fields: dict[str, Any] = dict(zip(fields, args, strict=True)) if fields else {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("co_") and name in self.__dict__.get("fields", {}):
            return self.__dict__["fields"][name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"<inert code {self.fields.get('co_name', '?')!r}>"


class InertFunction(_Recorder):
    """A pickled function (dill ``_create_function``): its code, globals, name, defaults and closure."""

    def __init__(self, code: Any = None, globals_: Any = None, name: Any = None, defaults: Any = None,
                 closure: Any = None, *rest: Any) -> None:
        self.code = code
        self.globals = globals_
        self.name = name
        self.defaults = defaults
        self.closure = closure
        self.rest = rest

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Callable only so that containers that demand a callable (defaultdict) accept it.
        raise InertCallError(f"{self!r} is an inert stand-in for pickled code and cannot be called")

    def __repr__(self) -> str:
        name = self.name if isinstance(self.name, str) else getattr(self.code, "co_name", "?")
        return f"<inert function {name!r}>"


class InertCell(_Recorder):
    """A closure cell (dill ``_create_cell``)."""

    def __init__(self, *contents: Any) -> None:
        self.contents = contents[0] if contents else None

    def __repr__(self) -> str:
        return f"<inert cell {type(self.contents).__name__}>"


class InertCall(_Recorder):
    """A recorded call of a stand-in (e.g. ``_load_type('ClassType')(...)``); nothing was called."""

    def __init__(self, callee: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None) -> None:
        self.callee = callee
        self.args = args
        self.kwargs = kwargs or {}

    def __repr__(self) -> str:
        return f"<inert call of {self.callee!r}>"


class InertType(_Recorder):
    """A type named by dill's ``_load_type``; calling it records the call (``CodeType`` → ``InertCode``)."""

    def __init__(self, name: Any) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.name == "CodeType" and not kwargs:
            return InertCode(args)
        return InertCall(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<inert type {self.name!r}>"


class InertModule(_Recorder):
    """A module named by dill's ``_import_module``; the module is not imported."""

    def __init__(self, name: Any, *rest: Any) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<inert module {self.name!r}>"


class InertAttr(_Recorder):
    """``getattr(owner, name)`` as recorded by dill's ``_get_attr``; calling it only records the call."""

    def __init__(self, owner: Any, name: Any) -> None:
        self.owner = owner
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return InertCall(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<inert attribute {self.name!r} of {self.owner!r}>"


class InertStandIn(_Recorder):
    """A global that pickled code referred to by name (e.g. ``checklist.expect.iter_with_optional``)."""

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return InertCall(self, args, kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return (InertStandIn, (self.qualname,))

    def __repr__(self) -> str:
        return f"<inert stand-in {self.qualname}>"


class StandInObject(_Recorder):
    """Base of the stand-in classes for CheckList objects: an instance is just its pickled ``__dict__``."""

    checklist_class = "?"

    def __getattr__(self, name: str) -> Any:
        state = self.__dict__.get("state", {})
        if isinstance(state, dict) and name in state:
            return state[name]
        raise AttributeError(f"{self.checklist_class} stand-in has no attribute '{name}'")

    def __repr__(self) -> str:
        return f"<{self.checklist_class} stand-in>"


def _stand_in_class(qualname: str) -> type[StandInObject]:
    cls_name = qualname.rsplit(".", 1)[-1]
    return type(cls_name, (StandInObject,), {"checklist_class": qualname, "__module__": __name__,
                                             "__qualname__": f"StandIn.{cls_name}"})


class StandInDict(dict):
    """Stand-in for dict subclasses used as plain containers (``munch.Munch``)."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.update(state)


# ---------------------------------------------------------------------------------------------------------
# Stand-ins for dill's reconstructors.
# ---------------------------------------------------------------------------------------------------------


def _numpy_attr(name: str, *modules: str) -> Callable[[], Any]:
    """Resolver of a numpy data reconstructor; numpy 2 moved numpy.core to numpy._core."""

    def resolve() -> Any:
        for module in modules:
            try:
                return getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                continue
        raise ImportError(f"numpy's {name} is not available in {' or '.join(modules)}")

    return resolve


_numpy_reconstruct = _numpy_attr("_reconstruct", "numpy._core.multiarray", "numpy.core.multiarray")
_numpy_scalar = _numpy_attr("scalar", "numpy._core.multiarray", "numpy.core.multiarray")
# Protocol-5 pickles of arrays rebuild them from a buffer.
_numpy_frombuffer = _numpy_attr("_frombuffer", "numpy._core.numeric", "numpy.core.numeric")

_NUMPY_MULTIARRAY = ("numpy.core.multiarray", "numpy._core.multiarray", "numpy.core._multiarray_umath",
                     "numpy._core._multiarray_umath")
# Attributes that dill's ``_get_attr(_import_module(m), name)`` may resolve to the REAL object: only numpy's
# data reconstructors. Every other ``_get_attr`` yields an ``InertAttr``.
_REAL_VIA_GET_ATTR: dict[tuple[str, str], Callable[[], Any]] = {
    **{(m, "_reconstruct"): _numpy_reconstruct for m in _NUMPY_MULTIARRAY},
    **{(m, "scalar"): _numpy_scalar for m in _NUMPY_MULTIARRAY},
}


def _dill_get_attr(owner: Any, name: Any) -> Any:
    if isinstance(owner, InertModule) and isinstance(name, str):
        real = _REAL_VIA_GET_ATTR.get((str(owner.name), name))
        if real is not None:
            return real()
    return InertAttr(owner, name)


def _dill_create_code(*args: Any) -> InertCode:
    # dill >= 0.3.6 pickles code as _create_code(lnotab, linetable, *fields); only recorded.
    return InertCode(args)


def _dill_create_type(*args: Any) -> InertCall:
    return InertCall(InertType("type"), args)


def _dill_create_ftype(*args: Any) -> InertCall:
    return InertCall(InertType("functools.partial"), args)


_DILL_MODULES = ("dill._dill", "dill.dill", "dill")
_DILL_STAND_INS: dict[str, Any] = {
    "_create_function": InertFunction,
    "_create_code": _dill_create_code,
    "_create_cell": InertCell,
    "_load_type": InertType,
    "_import_module": InertModule,
    "_get_attr": _dill_get_attr,
    "_create_type": _dill_create_type,
    "_create_ftype": _dill_create_ftype,
}

# CheckList classes: stand-ins that keep the pickled state (``test.data``, ``test.labels``, ...).
_CHECKLIST_CLASSES = (
    "checklist.test_suite.TestSuite",
    "checklist.abstract_test.AbstractTest",
    "checklist.test_types.MFT",
    "checklist.test_types.INV",
    "checklist.test_types.DIR",
    "checklist.expect.Expect",
)
# Functions that pickled code refers to by name; kept as names only.
_CHECKLIST_FUNCTIONS = (
    "checklist.expect.iter_with_optional",
)


def _build_stand_ins() -> dict[tuple[str, str], Any]:
    table: dict[tuple[str, str], Any] = {}
    for qualname in _CHECKLIST_CLASSES:
        module, name = qualname.rsplit(".", 1)
        table[module, name] = _stand_in_class(qualname)
    for qualname in _CHECKLIST_FUNCTIONS:
        module, name = qualname.rsplit(".", 1)
        table[module, name] = InertStandIn(qualname)
    for module in _DILL_MODULES:
        for name, stand_in in _DILL_STAND_INS.items():
            table[module, name] = stand_in
    table["munch", "Munch"] = StandInDict
    return table


def _build_allowed() -> dict[tuple[str, str], Callable[[], Any]]:
    import numpy

    # Real objects that only rebuild data. Looked up lazily so a numpy layout change fails at use, not import.
    allowed: dict[tuple[str, str], Callable[[], Any]] = {
        ("numpy", "ndarray"): lambda: numpy.ndarray,
        ("numpy", "dtype"): lambda: numpy.dtype,
        ("collections", "OrderedDict"): lambda: collections.OrderedDict,
        ("collections", "defaultdict"): lambda: collections.defaultdict,
        ("builtins", "set"): lambda: set,
        ("builtins", "frozenset"): lambda: frozenset,
        ("builtins", "slice"): lambda: slice,
        # Protocol-2 pickles store bytes as _codecs.encode(text, "latin1").
        ("_codecs", "encode"): lambda: codecs.encode,
    }
    for module in _NUMPY_MULTIARRAY:
        allowed[module, "_reconstruct"] = _numpy_reconstruct
        allowed[module, "scalar"] = _numpy_scalar
    for module in ("numpy.core.numeric", "numpy._core.numeric"):
        allowed[module, "_frombuffer"] = _numpy_frombuffer
    return allowed


STAND_IN_GLOBALS: dict[tuple[str, str], Any] = _build_stand_ins()
ALLOWED_GLOBALS: dict[tuple[str, str], Callable[[], Any]] = _build_allowed()


def standin_class(qualname: str) -> type[StandInObject]:
    """The stand-in class used for a CheckList class, e.g. ``standin_class('checklist.test_types.MFT')``."""
    module, name = qualname.rsplit(".", 1)
    cls = STAND_IN_GLOBALS.get((module, name))
    if not (isinstance(cls, type) and issubclass(cls, StandInObject)):
        raise KeyError(qualname)
    return cls


def _py3_name(module: str, name: str) -> tuple[str, str]:
    """Python-2 spelling → Python 3 (``__builtin__.set`` → ``builtins.set``), as pickle's fix_imports does."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[module, name]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


class RestrictedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that resolves only allow-listed globals and inert stand-ins."""

    def find_class(self, module: str, name: str) -> Any:
        py3 = _py3_name(module, name)
        for key in ((module, name), py3):
            if key in STAND_IN_GLOBALS:
                return STAND_IN_GLOBALS[key]
            if key in ALLOWED_GLOBALS:
                return ALLOWED_GLOBALS[key]()
        raise DisallowedGlobalError(*py3, spelled=f"{module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError(f"the pickle uses a persistent id ({pid!r}), which is not supported")


def load_pickle(fh: BinaryIO) -> Any:
    """Unpickle one object from ``fh`` with ``RestrictedUnpickler``."""
    return RestrictedUnpickler(fh).load()


def loads_pickle(data: bytes) -> Any:
    return load_pickle(io.BytesIO(data))


# ---------------------------------------------------------------------------------------------------------
# Fingerprints of the inert expectation functions.
# ---------------------------------------------------------------------------------------------------------


def iter_code(obj: Any, _seen: set[int] | None = None) -> Iterator[InertCode]:
    """Every ``InertCode`` reachable from ``obj`` through functions, cells, closures, defaults and consts.

    Function globals are not followed: they hold module-level names, not the function's own logic.
    """
    seen = _seen if _seen is not None else set()
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, InertCode):
        yield obj
        for const in obj.fields.get("co_consts", ()) or ():
            yield from iter_code(const, seen)
    elif isinstance(obj, InertFunction):
        for part in (obj.code, obj.defaults, obj.closure):
            yield from iter_code(part, seen)
        state = obj.__dict__.get("state")
        if isinstance(state, dict):
            for key in sorted(k for k in state if isinstance(k, str)):
                if key in ("__defaults__", "__kwdefaults__", "__closure__"):
                    yield from iter_code(state[key], seen)
    elif isinstance(obj, InertCell):
        yield from iter_code(obj.contents, seen)
    elif isinstance(obj, list | tuple):
        for item in obj:
            yield from iter_code(item, seen)
    elif isinstance(obj, dict):
        for key in sorted(obj, key=repr):
            yield from iter_code(obj[key], seen)


def _canonical_const(value: Any) -> Any:
    # numpy scalars as Python values: their repr changed between numpy versions (np.float64(0.1) vs 0.1).
    if hasattr(value, "item") and type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        value = value.item()
    if isinstance(value, InertCode):
        return ("<code>", value.fields.get("co_name"))
    if isinstance(value, tuple | list | frozenset | set):
        items = [_canonical_const(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, frozenset | set) else items
    if isinstance(value, bytes | str | int | float | bool) or value is None:
        return value
    return f"<{type(value).__name__}>"


def code_fingerprint(fn: Any, length: int = 12) -> str | None:
    """A short, stable hash of the code reachable from a pickled function (``None`` if there is none).

    It hashes each code object's name, names and constants (not the bytecode, which depends on the
    Python version that wrote the pickle), plus the plain values held in closure cells (tolerances, labels,
    flags), so two tests whose expectations differ in logic or parameters get different fingerprints.
    """
    codes = list(iter_code(fn))
    if not codes:
        return None
    parts: list[Any] = []
    for code in codes:
        f = code.fields
        parts.append([f.get("co_name"), list(f.get("co_names") or ()),
                      _canonical_const(list(f.get("co_consts") or ()))])
    parts.append(_closure_values(fn))
    return hashlib.sha256(repr(parts).encode("utf-8")).hexdigest()[:length]


def _closure_values(obj: Any, _seen: set[int] | None = None) -> list[Any]:
    """The non-code values in the closures reachable from ``obj``, in a stable order."""
    seen = _seen if _seen is not None else set()
    if id(obj) in seen:
        return []
    seen.add(id(obj))
    out: list[Any] = []
    if isinstance(obj, InertFunction):
        for part in (obj.defaults, obj.closure):
            out.extend(_closure_values(part, seen))
    elif isinstance(obj, InertCell):
        if isinstance(obj.contents, InertFunction | InertCell | tuple | list):
            out.extend(_closure_values(obj.contents, seen))
        else:
            out.append(_canonical_const(obj.contents))
    elif isinstance(obj, tuple | list):
        for item in obj:
            out.extend(_closure_values(item, seen))
    return out
