"""Fingerprints of the inert expectation functions of a CheckList test.

The importer matches a pickled test to its entry in the vendored table (``known_tests.json``) by name, type
and the fingerprint of its expectation (``fingerprint_test``), so a different test under a known name is
not silently given the wrong expectation. The fingerprint hashes what the pickled code *says* (names,
constants, closure values), never its bytecode, and nothing is run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from beluga_core.data.checklist.standins import InertCell, InertCode, InertFunction

__all__ = ["code_fingerprint", "fingerprint_test", "iter_code"]


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


def fingerprint_test(expect: Any, agg_fn: Any) -> str:
    """Fingerprint of a test's expectation: its inert code plus its ``agg_fn`` (a name or a function)."""
    agg = code_fingerprint(agg_fn) if isinstance(agg_fn, InertFunction) else repr(agg_fn)
    payload = f"{code_fingerprint(expect)}|{agg}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]
