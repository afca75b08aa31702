"""Shared test helpers.

The real data lives in the shared folder (``BELUGA_SHARED``, or ``../shared`` beside the repository root);
users do not have it, so tests that need it skip with a clear reason when it is absent.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import require_shared
from session_builds import built_once, own_copy
from toy_model import toy_model

if TYPE_CHECKING:
    from helpers import ShippedTinyRuns

REPO_ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (marked gpu; benchmarks/gpu/run.sh runs these on a GPU machine)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_autocast_left_by_an_earlier_run() -> Iterator[None]:
    """A run in this process sets its device's autocast dtype (``training.precision``; bf16 under
    ``precision = "auto"`` on a CPU with native bf16). Tests that build a ``Trainer`` themselves compare with
    hand-computed fp32 values: they must not inherit it from whichever run happened to come before them."""
    from beluga_core.training import precision

    saved = dict(precision._state)
    precision._state.clear()
    yield
    precision._state.clear()
    precision._state.update(saved)


@pytest.fixture
def one_thread() -> Iterator[None]:
    """torch on one thread for the test: toy models are far too small for two (one is faster, and spares a busy
    machine). Modules of toy-model tests use it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# The shipped configs whose tiny run keeps embedded:minilm (the rest train the toy model): the README's main job,
# on the real architecture end to end (docs/project/development.md lists every test that keeps MiniLM).
MINILM_TINY_RUNS = frozenset({"quick.toml"})


def pytest_configure(config: pytest.Config) -> None:
    """The toy model's folder exists before any test (or config under tests/data) names it. A pytest-xdist worker
    keeps torch to one thread: the workers share the machine's cores (pyproject.toml's addopts). OMP_NUM_THREADS
    = 1 caps the runs it starts too, in this process and in the processes it spawns (CLIs, multi and Ray
    workers): a run's auto threads are the usable cores (``beluga_core.core.machine``), and two workers' runs
    on two threads each took 4× as long as on one (benchmarks/testing/RESULTS.md)."""
    toy_model()
    # A test process holds large long-lived heaps (the shipped suites, parsed once per process: 86k cases for
    # sentiment), and every full collection walks them all: at the default thresholds tests/unit spent 35 s of its
    # 300 CPU seconds in the collector (gc.callbacks; benchmarks/testing/RESULTS.md). Rarer collections still free every
    # cycle, only later.
    gc.set_threshold(100_000, 50, 100)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        os.environ["OMP_NUM_THREADS"] = "1"
        torch.set_num_threads(1)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """pytest collects garbage five times at its end (to report unraisable exceptions): 1.4 s each over a heap
    holding the shipped suites. Frozen, the heap is not walked again; the price: an error in the finaliser of a
    cycle still uncollected at the very end goes unreported (errors raised during a test are reported with it)."""
    gc.freeze()


@pytest.fixture(autouse=True, scope="session")
def _new_stores_from_a_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[staticmethod]:
    """A store a test creates in this process is a copy of one empty store, made once per process by beluga's own
    ``StoreWriter._create_new``: creating one (sixteen migrations, 65 views bound) took 0.2 s, and tests/unit
    created 95 of them. The copy is moved into place as the real one is; processes a test starts (CLIs, workers)
    create theirs for real, and so do tests that ask for ``real_store_creation``. The copy's ``created_at`` is the
    template's."""
    from beluga_core.store.writer import StoreWriter

    real = StoreWriter.__dict__["_create_new"]
    template = tmp_path_factory.mktemp("store-template") / "empty.duckdb"
    real.__func__(template)

    def copy_of_template(path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.template.tmp")
        try:
            shutil.copyfile(template, tmp)
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)   # as the real one: never over a store that appeared meanwhile
        finally:
            tmp.unlink(missing_ok=True)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(StoreWriter, "_create_new", staticmethod(copy_of_template))
        yield real


@pytest.fixture
def real_store_creation(_new_stores_from_a_template: staticmethod, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores created in this test go through ``StoreWriter._create_new`` itself, not the session's template."""
    from beluga_core.store.writer import StoreWriter

    monkeypatch.setattr(StoreWriter, "_create_new", _new_stores_from_a_template)


@pytest.fixture
def figures_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Report figures written as empty files instead of drawn: for tests of what a command opens or where a section
    shows, whose figures' pixels are not what they check (matplotlib's drawing is most of a report's time)."""
    from matplotlib.figure import Figure

    def placeholder(self: Figure, fname: Any, *args: Any, **kwargs: Any) -> None:
        Path(fname).write_bytes(b"")

    monkeypatch.setattr(Figure, "savefig", placeholder)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return require_shared()


def _trained(factory: pytest.TempPathFactory, config: str, name: str) -> tuple[Path, str]:
    """tests/data/CONFIG run once per session (``session_builds``), as this worker's copy: (store, what it printed)."""
    from helpers import DATA, run_benchmark

    def build(folder: Path) -> None:
        (folder / "printed.txt").write_text(run_benchmark(DATA / config, folder / name), encoding="utf-8")

    folder = own_copy(factory, built_once(factory, Path(config).stem, build))
    return folder / name, (folder / "printed.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def sentiment_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One tiny trained sentiment run (tests/data/tiny-sentiment.toml) that every test reading a real store
    shares: (store path, what the run printed). Tests must not write to it."""
    return _trained(tmp_path_factory, "tiny-sentiment.toml", "s.duckdb")


@pytest.fixture(scope="session")
def relation_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny-relation.toml run once: a tiny FewRel-16 run whose IID model's weights are kept (the
    relation task's tests, and the model the attack and counterfactual generators are tested against). Tests
    must not write to it."""
    return _trained(tmp_path_factory, "tiny-relation.toml", "r.duckdb")[0]


@pytest.fixture(scope="session")
def paraphrase_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny-paraphrase.toml run once: the paraphrase task end to end (tests/e2e/test_pipeline_tasks.py), and
    a store whose i.i.d. metric is the duplicate class's F1 (tests/e2e/test_verdicts_recomputed.py). Tests must not
    write to it."""
    return _trained(tmp_path_factory, "tiny-paraphrase.toml", "p.duckdb")[0]


@pytest.fixture(scope="session")
def executors_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny-executors.toml run with the local executor (one torch thread): the reference that the
    parallel executors and a killed-and-resumed run must equal, and the own-levels end-to-end store (the shipped
    example suite, its length level held out). Tests must not write to it."""
    return _trained(tmp_path_factory, "tiny-executors.toml", "local.duckdb")[0]


@pytest.fixture(scope="session")
def shipped_tiny_runs(tmp_path_factory: pytest.TempPathFactory) -> ShippedTinyRuns:
    """The shipped configs run ``--tiny``, each at most once per session (see ``helpers.ShippedTinyRuns``)."""
    from helpers import ShippedTinyRuns

    work = tmp_path_factory.mktemp("shipped-tiny")
    (work / "benchmarks").mkdir()
    for config in (REPO_ROOT / "benchmarks").glob("*.toml"):
        if not config.name.startswith("."):   # a benchmark script's forced copy, not a shipped config
            shutil.copy(config, work / "benchmarks")
    (work / "runs").mkdir()
    return ShippedTinyRuns(work, toy_model(), MINILM_TINY_RUNS, shared=frozenset({"quick.toml"}),
                           factory=tmp_path_factory)
