"""Helpers shared by the test modules (no test module imports another)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest
from session_builds import built_once, own_copy

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


def shared_root() -> Path | None:
    """The shared data folder, or ``None`` when it is not on this machine."""
    env = os.environ.get("BELUGA_SHARED")
    candidate = Path(env) if env else REPO.parent / "shared"
    return candidate if (candidate / "data").is_dir() else None


def require_shared(*parts: str) -> Path:
    """Path under the shared folder; skips the calling test when it is missing."""
    root = shared_root()
    if root is None:
        pytest.skip("shared data folder not found (set BELUGA_SHARED, or put it at ../shared by the repo)")
    path = root.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data file missing: {path}")
    return path


def shipped_configs() -> list[Path]:
    """benchmarks/*.toml, the configs beluga ships. A benchmark script's forced copy (``.bench-*.toml``) lies beside
    its config while it runs, and a glob sees dotfiles: it is not one of them."""
    return sorted(p for p in (REPO / "benchmarks").glob("*.toml") if not p.name.startswith("."))


def tiny_configs() -> list[Path]:
    return sorted(DATA.glob("tiny-*.toml"))
BELUGA = [sys.executable, "-m", "beluga_core"]
# Wide rich output, so that assertions on printed text do not depend on the terminal's width.
# pack = "auto"'s probe measures in every test and in the runs tests start, never reading or writing the user's
# cache folder (tests/unit/execution/test_pack_probe.py points XDG_CACHE_HOME at its own folder and unsets this).
os.environ.setdefault("BELUGA_PROBE_CACHE", "off")
# Nor does the dry run's calibration of the machine's rates run in every test and run (seconds each): plans are priced
# at the defaults; tests/unit/orchestration/test_pricing.py calibrates, in a cache folder of its own.
os.environ.setdefault("BELUGA_CALIBRATION", "off")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def beluga(*args: str, timeout: float = 600, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``beluga ARGS`` in a subprocess (what a user runs); for kill / resume and multi-process tests."""
    return subprocess.run([*BELUGA, *args], capture_output=True, text=True, env={**ENV, **(env or {})},
                          timeout=timeout, check=False)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """``beluga ARGV`` in this process (no interpreter start-up); returns (exit code, stdout, stderr)."""
    from beluga_core.cli.app import main

    code = 0
    capsys.readouterr()
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def query(store: Path, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def results(store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Everything a run computes, keyed by what it is (exact: the views read the same bits on every read)."""
    return {
        "pass_rates": query(store, "SELECT config, scenario, scoring_group, n_pass, n_fail, n_skip FROM pass_rates "
                                   "ORDER BY ALL"),
        "g": query(store, "SELECT config, scenario, s_suite, s_iid, g FROM g_scores ORDER BY ALL"),
        "models": query(store, "SELECT model_id, status FROM models ORDER BY ALL"),
        "iid": query(store, "SELECT model_id, example_idx, pred FROM iid_predictions ORDER BY ALL"),
    }


def config_text(config: Path) -> str:
    """A config of tests/data, with the toy model's path (relative to tests/data) made absolute: the text of a copy
    that may be written anywhere."""
    from toy_model import TOY_DIR, TOY_NAME

    return config.read_text(encoding="utf-8").replace(f'name = "{TOY_NAME}"', f'name = "{TOY_DIR.as_posix()}"')


def config_with(base: Path, tmp: Path, replace: dict[str, str] | None = None, append: str = "",
                name: str = "config.toml") -> Path:
    """A copy of the config ``base`` with text replaced and appended, written to ``tmp``."""
    text = config_text(base)
    for old, new in (replace or {}).items():
        assert old in text, f"{old!r} not in {base}"
        text = text.replace(old, new)
    path = tmp / name
    path.write_text(text + append, encoding="utf-8")
    return path


def run_benchmark(config: Path, store: Path, plan: Any = None) -> str:
    """What ``beluga run CONFIG --store STORE`` does, in this process; returns what it printed. ``plan``: the
    config's plan with that store, when the test has built it already."""
    import io

    import torch
    from rich.console import Console

    from beluga_core.config.load import load_config
    from beluga_core.orchestration.coordinator import run_plan
    from beluga_core.orchestration.teachers import plan_with_stores
    from beluga_core.training import determinism

    cfg = load_config(config).with_store_path(str(store.resolve()))
    out = io.StringIO()
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    try:
        run_plan(plan or plan_with_stores(cfg, config.resolve()), Console(file=out, width=200))
    finally:
        # A run's [executor] threads and deterministic mode must not leak into the tests after it.
        torch.set_num_threads(threads)
        determinism.configure(deterministic, torch.device("cpu"))
    return out.getvalue()


def recompute_g(store: Path) -> dict[tuple[str, str, str], tuple[float, float, float]]:
    """(task, config, scenario) → (s_T, s_iid, G), computed in Python from the raw tables only (outcomes,
    cases, models, iid_metrics, g_exclusions): an independent check of the store's views."""
    from collections import defaultdict

    outcomes = query(store, """SELECT m.task, m.config, m.method, m.scenario, c.scoring_group, o.outcome
                               FROM outcomes o JOIN models m USING (model_id)
                               JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                               WHERE m.status = 'done'""")
    excluded = {(t, g) for t, g in query(store, "SELECT task, scoring_group FROM g_exclusions")}
    counts: dict[tuple[str, str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for task, config, method, scenario, group, outcome in outcomes:
        if outcome != "skip" and (task, group) not in excluded:
            counts[(task, config, method, scenario, group)][outcome == "pass"] += 1
    rates: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (task, config, _method, scenario, _), (fails, passes) in counts.items():
        rates[(task, config, scenario)].append(passes / (passes + fails))
    iid = {}
    for task, config, scenario, value in query(store, """SELECT m.task, m.config, m.scenario, x.value
                                                        FROM iid_metrics x JOIN models m USING (model_id)
                                                        WHERE x.split = 'test' AND x.is_primary"""):
        if scenario in ("seen", "standard") and (scenario == "seen" or (task, config) not in iid):
            iid[(task, config)] = value
    out = {}
    for (task, config, scenario), values in rates.items():
        s_t = sum(values) / len(values)
        s_iid = iid[(task, config)]
        out[(task, config, scenario)] = (s_t, s_iid, 2 * s_t * s_iid / (s_t + s_iid) if s_t + s_iid else 0.0)
    return out


# ------------------------------------------------------------------------------------------ the documentation

DOCS = REPO / "docs"
# A fenced block's info string: ```LANGUAGE tested, or ```LANGUAGE tested:TAG for a block one feature's tests run.
TESTED_FENCE = re.compile(r"^```(\w+) tested(?::([\w-]+))?\n(.*?)^```", re.M | re.S)


def doc_pages() -> list[Path]:
    """The README, then the documentation site's pages in the order of mkdocs.yml's navigation: the order in which
    tested code blocks are collected (the Python blocks run as one module, so their order matters)."""
    import yaml

    def walk(items: list[Any]) -> list[str]:
        return [page for item in items for value in item.values()
                for page in ([value] if isinstance(value, str) else walk(value))]

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    return [REPO / "README.md", *(DOCS / page for page in walk(nav))]


def doc_blocks(language: str, tag: str = "", page: str | None = None) -> list[str]:
    """The code blocks fenced ```LANGUAGE tested (untagged) or ```LANGUAGE tested:TAG, in doc_pages() order;
    ``page`` ("README.md", or a path under docs/) keeps one page's."""
    pages = doc_pages() if page is None else [REPO / page if page == "README.md" else DOCS / page]
    return [code for path in pages for lang, found, code in TESTED_FENCE.findall(path.read_text(encoding="utf-8"))
            if lang == language and found == tag]


def docs_text() -> str:
    """The README and every page of the documentation site, as one text (for tests that look for a sentence)."""
    return "\n".join(path.read_text(encoding="utf-8") for path in doc_pages())


@dataclass(frozen=True)
class TinyRun:
    """``beluga run benchmarks/NAME --tiny``, as it ended: its exit code, what it printed, its store."""

    code: int
    out: str
    err: str
    store: Path


@dataclass
class ShippedTinyRuns:
    """The shipped configs, each run ``--tiny`` at most once per session (in this process, from a copy of
    ``benchmarks/`` so that their ``../runs/`` paths land under ``work/runs``): the every-config test runs them
    all, and the result site's browser test walks the quick config's store without training it again. The
    configs in ``shared`` (with ``factory``) run once per session across pytest-xdist workers (``built_once``):
    the two modules that read quick.toml's run land on either worker."""

    work: Path
    # The model every model name of a tiny run becomes (tests/toy_model.py), but for the configs in ``minilm``: a
    # test-only override of --tiny's model, which users never get (their tiny runs keep embedded:minilm).
    model: Path
    minilm: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()
    factory: pytest.TempPathFactory | None = None
    _done: dict[str, TinyRun] = field(default_factory=dict)

    def get(self, name: str, *extra: str) -> TinyRun:
        key = " ".join((name, *extra))
        if key not in self._done:
            shared = not extra and name in self.shared and self.factory is not None
            self._done[key] = self._run_once(name) if shared else self._run(name, *extra)
        return self._done[key]

    def _run_once(self, name: str) -> TinyRun:
        """``_run(name)`` once per session, whichever worker asks first; this worker reads its own copy of the
        store (kept weights are not copied: nothing that reads these runs needs them)."""
        assert self.factory is not None

        def build(folder: Path) -> None:
            run = self._run(name)
            if run.store.is_file():
                shutil.copy2(run.store, folder / run.store.name)
            (folder / "run.json").write_text(json.dumps({"code": run.code, "out": run.out, "err": run.err,
                                                         "store": run.store.name}), encoding="utf-8")

        folder = own_copy(self.factory, built_once(self.factory, f"tiny-run-{Path(name).stem}", build))
        ran = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        return TinyRun(ran["code"], ran["out"], ran["err"], folder / ran["store"])

    def _run(self, name: str, *extra: str) -> TinyRun:
        import torch

        from beluga_core.cli.app import main
        from beluga_core.config.load import load_config
        from beluga_core.config.tiny import tiny_store_path

        path = self.work / "benchmarks" / name
        out, err, code = io.StringIO(), io.StringIO(), 0
        threads, cwd, columns = torch.get_num_threads(), Path.cwd(), os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "200"   # wide rich output: assertions on printed text do not depend on the terminal
        os.chdir(self.work)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), self._toy_model(name):
                main(["run", str(path), "--tiny", *extra])
        except SystemExit as exc:
            code = int(exc.code or 0)
        finally:
            os.chdir(cwd)
            torch.set_num_threads(threads)   # an [executor] threads setting must not leak into later tests
            if columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = columns
        store = Path(tiny_store_path(load_config(path).store_spec.path))
        return TinyRun(code, out.getvalue(), err.getvalue(),
                       store if store.is_absolute() else (path.parent / store).resolve())

    @contextlib.contextmanager
    def _toy_model(self, name: str) -> Iterator[None]:
        """``beluga run --tiny`` with every model name replaced by ``self.model`` (unless ``name`` keeps MiniLM)."""
        from beluga_core.cli import run_cmd

        if name in self.minilm:
            yield
            return
        real = run_cmd.tiny_config
        toy = str(self.model)

        def tiny_with_toy_model(cfg: Any) -> Any:
            tiny, notes = real(cfg)
            model = tiny.model.model_copy(update={"name": toy,
                                                  "task_models": dict.fromkeys(tiny.model.task_models, toy)})
            return tiny.model_copy(update={"model": model}), notes

        run_cmd.tiny_config = tiny_with_toy_model   # type: ignore[assignment]
        try:
            yield
        finally:
            run_cmd.tiny_config = real   # type: ignore[assignment]


def as_recorded(now: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """A view's rows (``golden_rows.view_rows``' form) cut to the ``columns`` an earlier beluga recorded, in its order:
    a view that gained columns since (NULL in an older store's rows) still reads the rows it read then. A recorded
    column the view lost is kept out, so the comparison fails on it."""
    keep = [now["columns"].index(c) for c in columns if c in now["columns"]]
    return {"columns": [now["columns"][i] for i in keep], "rows": [[r[i] for i in keep] for r in now["rows"]]}
