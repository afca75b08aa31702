"""Inert stand-ins: what the restricted unpickler builds in place of pickled code and CheckList objects.

Each stand-in records the arguments or state the pickle gave it; none of them executes, imports or compiles
anything. ``InertCode`` / ``InertFunction`` / ``InertCell`` hold a pickled expectation function as data (the
importer fingerprints them, ``fingerprint.py``); ``StandInObject`` subclasses hold a CheckList object's
pickled ``__dict__`` (``test.data``, ``labels``, ``meta``, ...). The unpickler's table that maps pickled
global names to these classes is in ``unpickler.py``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "InertAttr",
    "InertCall",
    "InertCallError",
    "InertCell",
    "InertCode",
    "InertFunction",
    "InertModule",
    "InertStandIn",
    "InertType",
    "StandInDict",
    "StandInObject",
]


class InertCallError(TypeError):
    """Something tried to call a stand-in for pickled code."""


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


class StandInDict(dict):
    """Stand-in for dict subclasses used as plain containers (``munch.Munch``)."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict):
            self.update(state)
