"""Reading a CheckList suite: a release tarball or a pickle → ``LoadedSuite`` → one ``RawTest`` per test.

The pickle is loaded with the restricted unpickler (``unpickler.py``), so no pickled code runs; tarball
members are read in memory and never extracted.
"""

from __future__ import annotations

import hashlib
import pickle
import tarfile
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from beluga_core.core.errors import BelugaError
from beluga_core.data.checklist.fingerprint import fingerprint_test
from beluga_core.data.checklist.standins import StandInObject
from beluga_core.data.checklist.unpickler import DisallowedGlobalError, load_pickle, standin_class

__all__ = ["TEST_TYPES", "LoadedSuite", "RawTest", "raw_tests", "read_checklist_file"]

TEST_TYPES = ("MFT", "INV", "DIR")
_PICKLE_SUFFIXES = (".pkl", ".pickle")


# ---------------------------------------------------------------------------------------------------------
# Reading the pickle.
# ---------------------------------------------------------------------------------------------------------


@dataclass
class LoadedSuite:
    suite: StandInObject
    file_name: str
    sha256: str
    member: str | None = None
    path: Path | None = None     # where it was read from, for error messages


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _pickle_member(tar: tarfile.TarFile, path: Path) -> tarfile.TarInfo:
    files = [m for m in tar.getmembers() if m.isfile()]
    pickles = [m for m in files if m.name.endswith(_PICKLE_SUFFIXES)]
    if len(pickles) == 1:
        return pickles[0]
    if len(pickles) > 1:
        raise BelugaError(f"the tarball holds several pickles ({', '.join(m.name for m in pickles)}); "
                          "extract the one to import and pass it directly", source=path)
    listed = ", ".join(m.name for m in files[:10]) or "no files"
    raise BelugaError(f"the tarball holds no CheckList suite pickle (*.pkl); it holds: {listed}", source=path)


def _unpickle(fh: Any, path: Path) -> Any:
    try:
        return load_pickle(fh)
    except DisallowedGlobalError as exc:
        raise BelugaError(f"refusing to load: {exc}", source=path) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError,
            KeyError, ImportError, OverflowError, MemoryError) as exc:
        raise BelugaError("neither a tarball nor a readable pickle of a CheckList suite "
                          f"({type(exc).__name__}: {exc}); expected e.g. sentiment_suite.tar.gz",
                          source=path) from None


def read_checklist_file(path: str | Path) -> LoadedSuite:
    """Load a CheckList suite from a release tarball (``*.tar.gz`` holding one pickle) or a ``.pkl``."""
    path = Path(path)
    if not path.exists():
        raise BelugaError("file not found", source=path)
    if not path.is_file():
        raise BelugaError("not a file; expected a CheckList suite tarball or pickle", source=path)
    digest = _sha256(path)
    member_name = None
    if tarfile.is_tarfile(path):
        # Members are read in memory, never extracted, so member paths cannot escape anywhere.
        try:
            with tarfile.open(path, "r:*") as tar:
                member = _pickle_member(tar, path)
                member_name = member.name
                fh = tar.extractfile(member)
                assert fh is not None  # a regular file member always has a file object
                with fh:
                    obj = _unpickle(fh, path)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BelugaError(f"cannot read the tarball ({exc})", source=path) from None
    else:
        with open(path, "rb") as fh:
            obj = _unpickle(fh, path)
    if not isinstance(obj, standin_class("checklist.test_suite.TestSuite")):
        raise BelugaError(f"the pickle holds {_describe(obj)}, not a CheckList TestSuite", source=path)
    return LoadedSuite(suite=obj, file_name=path.name, sha256=digest, member=member_name, path=path)


def _describe(obj: Any) -> str:
    if isinstance(obj, StandInObject):
        return f"a {obj.checklist_class}"
    return f"a {type(obj).__module__}.{type(obj).__qualname__}"


# ---------------------------------------------------------------------------------------------------------
# One CheckList test, read from the stand-in.
# ---------------------------------------------------------------------------------------------------------


@dataclass
class RawTest:
    name: str
    test_type: str
    capability: str
    description: str
    data: list[Any]
    labels: Any
    meta: Any
    run_idxs: Any
    expect: Any
    agg_fn: Any

    @property
    def fingerprint(self) -> str:
        return fingerprint_test(self.expect, self.agg_fn)


def raw_tests(suite: StandInObject) -> list[RawTest]:
    tests = getattr(suite, "tests", None)
    if not isinstance(tests, Mapping):
        raise BelugaError("the TestSuite has no 'tests' mapping; is it a CheckList suite?")
    out = []
    for key, test in tests.items():
        test_type = _test_type(test, key)
        state = test.__dict__.get("state", {})
        data = state.get("data")
        if not isinstance(data, list):
            raise BelugaError(f"test '{key}' has no list of cases (data is {type(data).__name__})")
        out.append(RawTest(name=str(state.get("name") or key), test_type=test_type,
                           capability=str(state.get("capability") or "unknown"),
                           description=str(state.get("description") or ""), data=data,
                           labels=state.get("labels"), meta=state.get("meta"), run_idxs=state.get("run_idxs"),
                           expect=state.get("expect"), agg_fn=state.get("agg_fn")))
    names = Counter(t.name for t in out)
    dup = sorted(n for n, c in names.items() if c > 1)
    if dup:
        raise BelugaError(f"several tests share the name(s) {dup}; test names must be unique")
    return out


def _test_type(test: Any, key: str) -> str:
    for test_type in TEST_TYPES:
        if isinstance(test, standin_class(f"checklist.test_types.{test_type}")):
            return test_type
    raise BelugaError(f"test '{key}' is {_describe(test)}, not a CheckList MFT, INV or DIR")
