"""benchmarks/harness.py, the skeleton the benchmark scripts share: the forced precision in each layout a config
can have, each script's flags as its docstring and the RESULTS.md files use them, and the order of the steps
(header, forced run, figures; or only the figures of --analyze's stores)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from helpers import DATA, REPO, config_with

from beluga_core.config.load import load_config
from benchmarks import harness
from benchmarks.findings import bench_cross, bench_fewshot, bench_quick, bench_regression, bench_relation, bench_s2lct


@pytest.mark.parametrize(("text", "forced"), [
    ('name = "x"\n[executor]\nthreads = 2\nprecision = "auto"\n',
     'name = "x"\n[executor]\nthreads = 2\nprecision = "bf16"\n'),
    ('name = "x"\n[executor]\nthreads = 2\n', 'name = "x"\n[executor]\nprecision = "bf16"\nthreads = 2\n'),
    ('name = "x"\n', 'name = "x"\n\n[executor]\nprecision = "bf16"\n'),
])
def test_the_forced_copy_sets_the_precision_beside_the_config(tmp_path: Path, text: str, forced: str) -> None:
    config = tmp_path / "a.toml"
    config.write_text(text, encoding="utf-8")
    copy = harness.forced_config(config, "bf16")
    assert copy == tmp_path / ".bench-a-bf16.toml"
    assert copy.read_text(encoding="utf-8") == forced
    assert config.read_text(encoding="utf-8") == text


def test_a_forced_config_loads_at_the_forced_precision(tmp_path: Path) -> None:
    config = config_with(DATA / "tiny-sentiment.toml", tmp_path, name="tiny.toml")
    assert load_config(harness.forced_config(Path(config), "bf16")).executor.precision == "bf16"


def _args(bench: harness.Benchmark, *argv: str) -> argparse.Namespace:
    return bench.parser().parse_args(list(argv))


def test_every_benchmark_keeps_its_flags() -> None:
    quick = _args(bench_quick.Quick(bench_quick.__doc__ or ""))
    assert (quick.config, quick.precision, quick.runs, quick.out, quick.compare, quick.analyze) == (
        REPO / "benchmarks" / "quick.toml", "fp32", 2, REPO / "runs" / "bench-quick", [], None)
    quick = _args(bench_quick.Quick(""), "--precision", "bf16", "--runs", "2", "--compare", "old.duckdb")
    assert (quick.precision, quick.runs, quick.compare) == ("bf16", 2, [Path("old.duckdb")])
    assert _args(bench_cross.Cross(""), "--analyze", "a", "b").analyze == [Path("a"), Path("b")]
    regression = _args(bench_regression.Regression(""))
    assert (regression.config, regression.out) == (REPO / "benchmarks" / "regression.toml",
                                                    REPO / "runs" / "bench-regression")
    relation = _args(bench_relation.Relation(""), "--me", "--analyze", "s")
    assert (relation.me, relation.analyze, relation.precision) == (True, Path("s"), "fp32")
    assert _args(bench_s2lct.S2LCT(""), "--analyze", "s").analyze == Path("s")
    fewshot = bench_fewshot.Fewshot("")
    assert _args(fewshot, "para", "--analyze", "s").analyze == Path("s")
    assert fewshot.chosen(_args(fewshot, "sentiment")) == REPO / "benchmarks" / "quick-rank-sentiment.toml"
    with pytest.raises(SystemExit) as exc:
        _args(fewshot, "para", "--precision", "fp16")
    assert exc.value.code == 2


class Recorder(harness.Benchmark):
    def __init__(self, config: Path, out: Path) -> None:
        super().__init__("A benchmark.\n\nMore.")
        self.config, self.out = config, out
        self.reported: list[Path] = []

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        self.reported.append(store)


def test_the_skeleton_runs_the_forced_copy_then_prints_the_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_with(DATA / "tiny-sentiment.toml", tmp_path, name="tiny.toml")
    ran: list[tuple[str, Path]] = []

    def run_once(forced: Path, store: Path) -> harness.Run:
        ran.append((load_config(forced).executor.precision, store))
        store.write_bytes(b"")
        return harness.Run(store, 12.34, "progress\nwall time: 10.0 s (done); store: S\n")

    monkeypatch.setattr(harness, "run_once", run_once)
    monkeypatch.setattr(harness, "version", lambda: "beluga 0.1.0 · commit abc1234")   # git runs in tests/e2e
    bench = Recorder(config, tmp_path / "out")
    bench.main([])
    [(precision, store)] = ran
    assert precision == "fp32" and store.parent == tmp_path / "out" and store.name.startswith("tiny-fp32-")
    assert bench.reported == [store]
    assert not (tmp_path / ".bench-tiny-fp32.toml").exists()          # the forced copy is removed
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{harness.machine('fp32')} · beluga 0.1.0 · commit abc1234",
                     "12.3 s from outside; beluga run printed: wall time: 10.0 s (done); store: S"]

    bench.main(["--analyze", "a.duckdb", "b.duckdb"])                  # figures only: nothing runs
    assert len(ran) == 1 and bench.reported[1:] == [Path("a.duckdb"), Path("b.duckdb")]
    assert capsys.readouterr().out == ""
