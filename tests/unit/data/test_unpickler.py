"""The restricted unpickler loads the CheckList release pickles and never runs what a pickle asks for."""

from __future__ import annotations

import collections
import pickle
import sys
import tarfile
import types
from pathlib import Path

import numpy as np
import pytest
from helpers import require_shared

from beluga_core.data.checklist.fingerprint import code_fingerprint, iter_code
from beluga_core.data.checklist.standins import InertCall, InertCode, InertFunction, StandInObject
from beluga_core.data.checklist.unpickler import (
    DisallowedGlobalError,
    RestrictedUnpickler,
    loads_pickle,
    standin_class,
)

SUITES = {"sentiment": 38, "qqp": 53, "squad": 24}


def _load_release(name: str) -> StandInObject:
    tarball = require_shared("data", "checklist", f"{name}_suite.tar.gz")
    with tarfile.open(tarball) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".pkl"))
        fh = tar.extractfile(member)
        assert fh is not None
        with fh:
            return RestrictedUnpickler(fh).load()


def _walk(obj: object, seen: set[int] | None = None):
    """Every object reachable through containers, stand-in state and inert records."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, list | tuple | set | frozenset):
        children = list(obj)
    elif hasattr(obj, "__dict__") and not isinstance(obj, type | types.ModuleType):
        children = list(vars(obj).values())
    else:
        children = []
    for child in children:
        yield from _walk(child, seen)


# --------------------------------------------------------------------------------------------------------
# The release suites.
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SUITES))
def test_loads_release_suite_without_checklist_or_dill(name: str) -> None:
    # Other tests' imports (torch pulls in dill) may already be loaded: what counts is that loading imports
    # neither package.
    before = set(sys.modules)
    suite = _load_release(name)
    assert isinstance(suite, standin_class("checklist.test_suite.TestSuite"))
    new = set(sys.modules) - before
    assert not {m for m in new if m.split(".")[0] in ("checklist", "dill")}
    assert len(suite.tests) == SUITES[name]
    for test in suite.tests.values():
        assert type(test).__name__ in {"MFT", "INV", "DIR"}
        assert isinstance(test.data, list) and test.data
        assert isinstance(test.expect, InertFunction)
        # Every pickled code object is an inert record with Python 3.6's 15 CodeType fields.
        codes = list(iter_code(test.expect))
        assert codes and all(isinstance(c, InertCode) and len(c.args) == 15 for c in codes)
        assert code_fingerprint(test.expect) is not None


def test_release_suite_holds_no_real_code_or_functions() -> None:
    suite = _load_release("sentiment")
    real = [o for o in _walk(suite) if isinstance(o, types.CodeType | types.FunctionType | types.ModuleType)]
    assert real == []


def test_release_suite_data_is_plain_python() -> None:
    suite = _load_release("qqp")
    test = suite.tests["Testing implications"]
    assert test.data[0][0] == (
        "I am 25 years old. I have never had a girlfriend. Is something wrong with me?",
        "How do I stop being desperate for love. I'm 25, male living in NYC. Have never had any girlfriend "
        "or even girls who are friends?")
    assert isinstance(test.labels[0], np.ndarray) and test.labels[0].tolist() == [0, 1, 0]
    assert isinstance(test.run_idxs, np.ndarray) and len(test.run_idxs) == 500
    assert isinstance(suite.tests, collections.OrderedDict)


def test_fingerprints_tell_expectations_apart() -> None:
    suite = _load_release("sentiment")
    fp = {name: code_fingerprint(t.expect) for name, t in suite.tests.items()}
    assert fp["single positive words"] == fp["single negative words"]  # both Expect.eq on the label
    assert fp["intensifiers"] != fp["reducers"]  # monotonic increasing vs decreasing
    assert fp["add positive phrases"] != fp["add negative phrases"]
    assert fp["typos"] != fp["single positive words"]


# --------------------------------------------------------------------------------------------------------
# Malicious pickles: rejected (or neutralised), and nothing runs.
# --------------------------------------------------------------------------------------------------------


def _marker_command(tmp_path: Path) -> tuple[Path, str]:
    marker = tmp_path / "pwned"
    return marker, f"touch {marker}"


def _str_op(text: str) -> bytes:
    return b"X" + len(text.encode()).to_bytes(4, "little") + text.encode()  # BINUNICODE


def test_rejects_os_system_global(tmp_path: Path) -> None:
    marker, cmd = _marker_command(tmp_path)
    payload = b"cos\nsystem\n(" + _str_op(cmd) + b"tR."
    with pytest.raises(DisallowedGlobalError, match=r"'os\.system'") as info:
        loads_pickle(payload)
    assert (info.value.module, info.value.name) == ("os", "system")
    assert not marker.exists()


def test_rejects_reduce_to_os_system_written_by_pickle(tmp_path: Path) -> None:
    marker, cmd = _marker_command(tmp_path)
    import os

    class Exploit:
        def __reduce__(self):
            return (os.system, (cmd,))

    payload = pickle.dumps(Exploit(), protocol=3)
    with pytest.raises(DisallowedGlobalError, match=r"system") as info:
        loads_pickle(payload)
    assert info.value.module in {"os", "posix", "nt"}
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [0, 2, 4])
def test_rejects_builtins_eval(tmp_path: Path, protocol: int) -> None:
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (eval, (f"open({str(marker)!r}, 'w').write('x')",))

    payload = pickle.dumps(Exploit(), protocol=protocol)
    with pytest.raises(DisallowedGlobalError, match=r"builtins\.eval"):
        loads_pickle(payload)
    assert not marker.exists()


@pytest.mark.parametrize(("module", "name"), [
    ("builtins", "exec"), ("builtins", "getattr"), ("builtins", "__import__"), ("subprocess", "Popen"),
    ("copyreg", "_reconstructor"), ("dill._dill", "_eval_repr"), ("dill._dill", "_setattr"),
    ("checklist.editor", "Editor"), ("numpy", "load"),
])
def test_rejects_other_globals(module: str, name: str) -> None:
    with pytest.raises(DisallowedGlobalError, match=rf"'{module}\.{name}'"):
        loads_pickle(f"c{module}\n{name}\n.".encode())


def test_dill_getattr_import_module_chain_stays_inert(tmp_path: Path) -> None:
    """dill's ``_get_attr(_import_module('os'), 'system')(cmd)`` only records, never imports or calls."""
    marker, cmd = _marker_command(tmp_path)
    payload = (b"\x80\x03"
               b"cdill._dill\n_get_attr\n"
               b"cdill._dill\n_import_module\n" + _str_op("os") + b"\x85R"  # _import_module('os')
               + _str_op("system") + b"\x86R"  # _get_attr(module, 'system')
               + _str_op(cmd) + b"\x85R.")  # (...)(cmd)
    result = loads_pickle(payload)
    assert isinstance(result, InertCall)
    assert result.args == (cmd,)
    assert not marker.exists()


def test_calling_a_pickled_function_fails_without_running_it(tmp_path: Path) -> None:
    """A pickle that REDUCEs on a dill-built function gets an error, not a call."""
    marker, cmd = _marker_command(tmp_path)
    payload = (b"\x80\x03"
               b"cdill._dill\n_create_function\n"
               b"cdill._dill\n_load_type\n" + _str_op("CodeType") + b"\x85R"  # CodeType stand-in
               + _str_op("code bytes") + b"\x85R"  # "CodeType(...)" → InertCode
               + b"}" + _str_op("f") + b"\x87R"  # _create_function(code, {}, 'f')
               + _str_op(cmd) + b"\x85R.")  # f(cmd)
    with pytest.raises(TypeError, match="inert stand-in"):
        loads_pickle(payload)
    assert not marker.exists()


def test_codetype_reconstruction_builds_no_code_object() -> None:
    payload = (b"\x80\x03cdill._dill\n_load_type\n" + _str_op("CodeType") + b"\x85R"
               + b"(K\x01K\x00" + _str_op("x") + b"tR.")
    code = loads_pickle(payload)
    assert isinstance(code, InertCode) and not isinstance(code, types.CodeType)
    assert code.args == (1, 0, "x")


def test_checklist_stand_ins_keep_state_only() -> None:
    payload = (b"\x80\x03cchecklist.test_types\nMFT\n)\x81}(" + _str_op("data") + b"]"
               + _str_op("a") + b"a" + _str_op("labels") + b"K\x02ub.")
    test = loads_pickle(payload)
    assert isinstance(test, standin_class("checklist.test_types.MFT"))
    assert test.data == ["a"] and test.labels == 2


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_plain_data_round_trips(protocol: int) -> None:
    value = {"array": np.arange(4), "text": np.array(["a", "bb"]), "scalar": np.int64(3),
             "ordered": collections.OrderedDict(a=1), "set": {1, 2}, "frozen": frozenset({3}), "bytes": b"xy"}
    loaded = loads_pickle(pickle.dumps(value, protocol=protocol))
    assert loaded["array"].tolist() == [0, 1, 2, 3] and loaded["text"].tolist() == ["a", "bb"]
    assert loaded["scalar"] == 3 and loaded["ordered"] == {"a": 1} and loaded["set"] == {1, 2}
    assert loaded["frozen"] == frozenset({3}) and loaded["bytes"] == b"xy"
