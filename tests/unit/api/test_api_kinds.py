"""The public API by kind: one module per registry exporting its base, a top level that re-exports the bases
alone, executor internals in the executor's module only, and the table of kinds — in the package's docstring and
in the plugin guide — equal to what the registries say."""

from __future__ import annotations

import pkgutil
from typing import ClassVar

import pytest
from helpers import REPO

import beluga_core.api as api
from beluga_core.api import executors
from beluga_core.api import kinds_table as kinds
from beluga_core.api.kinds_table import TARGETS, current, table
from beluga_core.contracts.methods import Method
from beluga_core.core.registry import ALL, Registry

INTERNALS = ("order_jobs", "Dependencies", "worker_class", "Plan", "StepFn", "Worker", "Job", "JobResult",
             "Backend")


@pytest.mark.parametrize("target", TARGETS)
def test_the_kinds_table_is_the_registries(target: str) -> None:
    path = REPO / target
    assert current(path.read_text(encoding="utf-8"), target) == table(), \
        f"{target}: the table of plugin kinds is stale: run python -m beluga_core.api.kinds_table"


def test_the_docstring_shows_the_table() -> None:
    assert api.__doc__ is not None and table() in api.__doc__


def test_the_table_rows_name_what_the_registries_check() -> None:
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in table().splitlines()[2:]}
    assert list(rows) == list(ALL)
    assert rows["training configuration"] == ("| training configuration | `beluga.training_configs` | "
                                              "`TrainingConfiguration` | `start`, `uses_iid`, `uses_suite` | "
                                              "`beluga_core.api.training_configs` |")
    # The generator's one abstract member is perturb (the hand-written docstring once said generate).
    assert "| `Generator` | `perturb(instance, rng)` |" in rows["generator"]
    assert "| `Method` | `update(trainer, batches)`; or derive from `EnvironmentMethod`: `update(trainer, batches)` |" \
        in rows["method"]
    assert "or derive from `ClassificationTask`: nothing (override what differs)" in rows["task"]
    assert "`build_model(model_name, *, seed, dropout, config_overrides)`" in rows["task"]
    assert ("`ClassLoss`: `per_row(logits, targets, label_sets)`; `PairLoss`: "
            "`per_row(orig_logits, pert_logits, params)`") in rows["loss"]


def test_a_new_abstract_member_or_kind_changes_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    before = table()
    monkeypatch.setattr(Method, "__abstractmethods__", frozenset({"update", "extra_step"}))
    assert "`extra_step`" in table() and table() != before
    monkeypatch.undo()
    assert table() == before

    class Probe:
        pass

    monkeypatch.setitem(ALL, "probe", None)  # undone after the test: the registry below replaces it
    Registry("probe", "beluga.probes", Probe)
    with pytest.raises(ModuleNotFoundError, match=r"beluga_core\.api\.probes"):
        table()  # a kind needs its API module before the table can be written


def test_each_kind_module_exports_its_base_and_registry() -> None:
    modules = set()
    for kind in kinds.kinds():
        module = kind.module
        modules.add(module.__name__.rpartition(".")[2])
        assert getattr(module, kind.base.__name__) is kind.base
        exported = {getattr(module, name) for name in module.__all__}  # every exported name resolves
        assert kind.registry in exported
        assert getattr(api, kind.base.__name__) is kind.base
    # No other module in the package but the table's own.
    assert {m.name for m in pkgutil.iter_modules(api.__path__)} == modules | {"kinds_table"}


def test_the_top_level_exports_the_bases_and_no_executor_internals() -> None:
    assert set(api.__all__) == {registry.base.__name__ for registry in ALL.values()}
    for name in INTERNALS:
        assert name in executors.__all__
        assert not hasattr(api, name), name
    internals = set(executors.__all__) - {"BelugaError"}
    for kind in kinds.kinds():
        if kind.module is not executors:
            assert not internals & set(kind.module.__all__), kind.module.__name__


class _Marker:
    """A class with every kind of member the table renders."""

    level: ClassVar[int] = 0

    def method(self, a: int, b: int = 0, *, c: int) -> None: ...

    @staticmethod
    def static(x: int) -> None: ...


def test_members_render_as_a_plugin_writes_them() -> None:
    assert kinds.member(_Marker, "method") == "`method(a, b, *, c)`"
    assert kinds.member(_Marker, "static") == "`static(x)`"
    assert kinds.member(_Marker, "level") == "`level`"
    assert kinds.member(_Marker, "missing") == "`missing`"


def test_the_markers_must_be_there() -> None:
    with pytest.raises(ValueError, match=r"README\.md: no table of plugin kinds between"):
        current("# no table here\n", "README.md")
    text = f"intro\n{kinds.BEGIN}\nold table\n{kinds.END}\noutro\n"
    assert kinds.rewrite(text, "x") == f"intro\n{kinds.BEGIN}\n{table()}\n{kinds.END}\noutro\n"
