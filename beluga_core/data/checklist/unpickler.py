"""A restricted unpickler for CheckList ``TestSuite`` pickles that never runs pickled code.

The CheckList release suites are dill pickles written by Python 3.6 (dill 0.3.1). Their expectation
functions are Python 3.6 bytecode, which current Pythons cannot rebuild, and rebuilding them would run
code from the file anyway. This unpickler therefore:

* resolves only an explicit allow-list of globals (``ALLOWED_GLOBALS``: numpy array reconstruction,
  a few inert builtins and collections) plus inert stand-ins (``STAND_IN_GLOBALS``) for checklist's
  classes and dill's reconstructors; anything else raises ``DisallowedGlobalError`` naming it;
* replaces dill's code / function / cell / type / module reconstructors with stand-ins that record the
  arguments they were given (``InertCode``, ``InertFunction``, ... in ``standins.py``) and never build a
  code object, a function or import a module;
* needs neither ``checklist``, ``dill`` nor ``munch`` installed.

The loaded suite keeps its data (``test.data``, ``labels``, ``meta``, ``run_idxs``, ...) as plain Python
objects; its ``expect`` attributes are ``InertFunction`` records that can be fingerprinted
(``fingerprint.py``), not called.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import importlib
import io
import pickle
from collections.abc import Callable
from typing import Any, BinaryIO

from beluga_core.data.checklist.standins import (
    InertAttr,
    InertCall,
    InertCell,
    InertCode,
    InertFunction,
    InertModule,
    InertStandIn,
    InertType,
    StandInDict,
    StandInObject,
)

__all__ = [
    "ALLOWED_GLOBALS",
    "STAND_IN_GLOBALS",
    "DisallowedGlobalError",
    "RestrictedUnpickler",
    "load_pickle",
    "loads_pickle",
    "standin_class",
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


# ---------------------------------------------------------------------------------------------------------
# Stand-in classes for CheckList's classes (an instance is just the object's pickled state).
# ---------------------------------------------------------------------------------------------------------


def _stand_in_class(qualname: str) -> type[StandInObject]:
    cls_name = qualname.rsplit(".", 1)[-1]
    return type(cls_name, (StandInObject,), {"checklist_class": qualname, "__module__": __name__,
                                             "__qualname__": f"StandIn.{cls_name}"})


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
