"""Every shipped config runs: each ``benchmarks/*.toml``, found by globbing (a new config is covered without a
list to update), goes through ``beluga run CONFIG --tiny`` with its own tasks, configurations, methods,
scenarios, executor, ``[grid]``, ``[fewshot]``, ``[attributions]``, ``[store]`` options and ensembles; then
``beluga store check`` must pass and ``beluga report`` must render its store.

The configs run in this process (suites are parsed once), from a copy of ``benchmarks/`` so that their
``../runs/`` paths land in a temporary folder. Two configs read a suite that a documented step generates
against a trained model (their headers say how); ``GENERATED`` makes each against the session's tiny stored
model of the same task, at a few source sentences.

A config whose tiny run trains more than ``MAX_TRAININGS`` models — ``full.toml``: 3 tasks × 3 suite
configurations × 8 methods × 4 folds plus a grid point each, ~350 — is checked with ``--tiny --dry-run`` (the
plan, every check before training, the hub names replaced) and its training reported as skipped, since it would
take most of an hour on CI's 2 cores; ``BELUGA_EVERY_CONFIG_ALL=1`` runs it too. The rule is the plan's size,
not a list of names: a new config is run whenever it is small enough.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers import ShippedTinyRuns, docs_text, run_cli, shipped_configs

from beluga_core.config.load import load_config
from beluga_core.config.tiny import is_hub_name, tiny_config
from beluga_core.planning.plan import build_plan

# `-m "not every_config"` leaves these out (they are most of the suite's training time; see
# benchmarks/testing/RESULTS.md).
pytestmark = [pytest.mark.slow, pytest.mark.every_config]

CONFIGS = shipped_configs()
MAX_TRAININGS = 100
# Suite file (as a config names it, under ../runs/) → the stored model fixture it is generated against and the
# `beluga suite generate` arguments (the config header's command, with fewer source sentences).
GENERATED = {
    "fewrel16-attacks.jsonl": ("relation_store", ["hotflip", "ig-contrast", "entity-only-debiased", "--source",
                                                  "builtin:fewrel16#pool", "--sample", "40"]),
    "sst2-contrast.jsonl": ("sentiment_store", ["ig-contrast", "--source", "builtin:sst2#val", "--sample", "12"]),
}


def _generate_inputs(config: Path, workdir: Path, request: pytest.FixtureRequest) -> None:
    """Make the files under ../runs/ that ``config`` reads (not its store) and a documented step generates."""
    from beluga_core.cli.app import main

    for name in re.findall(r'"\.\./runs/([^"]+)"', config.read_text(encoding="utf-8")):
        out = workdir / "runs" / name
        if name.endswith(".duckdb") or out.exists():
            continue
        if name not in GENERATED:
            pytest.fail(f"{config.name} reads ../runs/{name}, which nothing makes here: add how to generate it to "
                        "GENERATED")
        fixture, args = GENERATED[name]
        made = request.getfixturevalue(fixture)
        store = made[0] if isinstance(made, tuple) else made  # sentiment_store is (store, printed)
        try:
            main(["suite", "generate", *args, "--model", f"store:{store}#iid/vanilla", "--out", str(out)])
        except SystemExit as exc:
            assert not exc.code, f"generating {name} failed (exit {exc.code})"


def _named_in_the_docs() -> set[str]:
    """The configs the README and the docs name (``benchmarks/NAME.toml``)."""
    return set(re.findall(r"benchmarks/([\w.-]+\.toml)", docs_text()))


def test_every_config_the_docs_name_is_a_shipped_one() -> None:
    """The runnable configs the docs name are files of benchmarks/, so the glob below covers them; their ```toml
    blocks are parts of configs, run with their sections' tests."""
    named = _named_in_the_docs()
    assert "quick.toml" in named and "full.toml" in named
    assert named <= {c.name for c in CONFIGS}, named - {c.name for c in CONFIGS}


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_shipped_config_runs_tiny(config: Path, shipped_tiny_runs: ShippedTinyRuns, capsys: pytest.CaptureFixture[str],
                                  request: pytest.FixtureRequest) -> None:
    workdir = shipped_tiny_runs.work
    _generate_inputs(config, workdir, request)
    path = workdir / "benchmarks" / config.name
    cfg = load_config(path)
    tiny, _ = tiny_config(cfg)
    n = sum(len(t.jobs) + len(t.pending) + len(t.grid_jobs) for t in build_plan(tiny, path).tasks)
    train = n <= MAX_TRAININGS or os.environ.get("BELUGA_EVERY_CONFIG_ALL") == "1"
    run = shipped_tiny_runs.get(config.name, *([] if train else ["--dry-run"]))
    assert run.code == 0, f"{config.name}\n{run.out[-3000:]}\n{run.err[-3000:]}"
    text = " ".join(run.out.split())
    said = "trainings planned" if train else "trainings in all"
    assert "--tiny: tiny sizes:" in text and said in text, text[-2000:]
    # Every hub name is replaced by the offline stand-in, and the run says so.
    names = [t.iid for t in cfg.tasks] + [cfg.model.name, *cfg.model.task_models.values()]
    for name in filter(is_hub_name, names):
        assert f"'{name}' is a hub" in text, (name, text[:3000])
    if not train:
        pytest.skip(f"{config.name}: its tiny run trains {n} models (more than {MAX_TRAININGS}); its plan and checks "
                    "passed (--tiny --dry-run). BELUGA_EVERY_CONFIG_ALL=1 trains it too")
    store = run.store
    assert store.is_file(), (store, text[-2000:])
    code, out, err = run_cli(capsys, "store", "check", store)
    assert code == 0, f"{config.name}: store check\n{out}\n{err}"
    code, out, err = run_cli(capsys, "report", store)
    assert code == 0, f"{config.name}: report\n{err}"
    for task in cfg.tasks:
        assert f"{task.name}: i.i.d. score, then G per scenario" in out, (task.name, out[-3000:])
