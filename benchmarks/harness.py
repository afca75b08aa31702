"""The skeleton every measurement script shares: the header it prints first (``header``: precision, CPU model,
native bf16, torch, beluga's version and commit), its argument parser (``script_parser``), the forced precision,
running a config into a fresh store with `beluga run`, and the report (or only the report, of stores given to
--analyze). A script that runs one config subclasses `Benchmark` and keeps what it measures; the others (several
runs of edited configs, no run at all) use `header`, `script_parser`, `machine`, `forced_config`, `run_once` and
`run_config` alone.

The precision is forced (fp32 unless --precision says otherwise) because a config's own `precision = "auto"`
would pick bf16 on a CPU with native bf16 and fp32 elsewhere: figures and timings from two machines would then
differ for a reason the script did not choose.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from scipy import stats

import beluga_core
from beluga_core.training.precision import Precision, machine_line

REPO = Path(__file__).resolve().parents[1]
PRECISIONS = ("fp32", "bf16", "auto")


def machine(precision: Precision | None, device: str = "cpu") -> str:
    """The line every figure is printed beside: precision (None: no model computes), CPU model (or ``device``'s
    GPU), native bf16, torch's version."""
    return machine_line(precision, torch.device(device))


def version() -> str:
    """beluga's version and the checkout's commit ("+" when tracked files differ from it): the code measured."""
    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = "+" if git("status", "--porcelain", "--untracked-files=no") else ""
    return f"beluga {beluga_core.__version__} · commit {commit}{changed}"


def header(precision: Precision | None, device: str = "cpu") -> str:
    """The first line a measurement script prints: ``machine`` and ``version``, so that every recorded figure says
    which machine, precision and code made it."""
    return f"{machine(precision, device)} · {version()}"


def script_parser(doc: str | None, full: bool = False) -> argparse.ArgumentParser:
    """A script's argument parser: --help shows its docstring's first paragraph, or with ``full`` all of it."""
    text = doc or ""
    if full:
        return argparse.ArgumentParser(description=text, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=text.split("\n\n")[0])


def clone_at(commit: str, into: Path) -> Path:
    """A fresh clone of this repository at ``commit`` (side-by-side runs of two commits' code)."""
    subprocess.run(["git", "clone", "-q", str(REPO), str(into)], check=True)
    subprocess.run(["git", "-C", str(into), "checkout", "-q", commit], check=True)
    return into


def short_commit(ref: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", ref], check=True, capture_output=True,
                          text=True).stdout.strip()


def forced_config(config: Path, precision: str) -> Path:
    """A copy of ``config`` with ``[executor] precision`` set, beside it (relative paths in it still resolve)."""
    text = config.read_text(encoding="utf-8")
    line = f'precision = "{precision}"'
    if re.search(r"^precision\s*=", text, flags=re.M):
        text = re.sub(r"^precision\s*=.*$", line, text, flags=re.M)
    elif re.search(r"^\[executor\]\s*$", text, flags=re.M):
        text = re.sub(r"^\[executor\]\s*$", f"[executor]\n{line}", text, count=1, flags=re.M)
    else:
        text += f"\n[executor]\n{line}\n"
    out = config.with_name(f".bench-{config.stem}-{precision}.toml")
    out.write_text(text, encoding="utf-8")
    return out


@dataclass(frozen=True)
class Run:
    """One `beluga run`: its store, its wall time measured from outside (process start to exit) and its output."""

    store: Path
    wall: float
    printed: str

    def line(self, prefix: str) -> str:
        """The first line beluga run printed that starts with ``prefix`` ("?" if none)."""
        return next((line for line in self.printed.splitlines() if line.startswith(prefix)), "?")


def run_once(config: Path, store: Path) -> Run:
    """`beluga run CONFIG --store STORE` in a new process; exits with its output if it fails."""
    started = time.perf_counter()
    beluga = Path(sys.executable).with_name("beluga")  # the console script of this environment
    done = subprocess.run([str(beluga), "run", str(config), "--store", str(store)],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0 or not store.exists():
        sys.exit(f"beluga run failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return Run(store, wall, done.stdout)


def run_config(config: Path, precision: str, store: Path) -> Run:
    """`run_once` of ``config`` at a forced precision; the forced copy is removed afterwards."""
    forced = forced_config(config.resolve(), precision)
    try:
        return run_once(forced, store)
    finally:
        forced.unlink(missing_ok=True)


def new_store(out: Path, config: Path, precision: str, suffix: str = "") -> Path:
    """A store path in ``out`` that no earlier run used: config, precision and the time in its name."""
    out.mkdir(parents=True, exist_ok=True)
    return out / f"{config.stem}-{precision}-{time.strftime('%Y%m%d-%H%M%S')}{suffix}.duckdb"


class Benchmark:
    """One benchmark script: `main` parses the common arguments, prints the figures of --analyze's stores, or
    prints the machine line, runs the config at the forced precision and prints the figures of the new store.

    A script sets the class attributes and overrides `figures` (what it measures), and where it differs:
    `arguments` (its own flags), `chosen` (the config), `runs`/`store` (how many stores, named how), `shown`
    (what is printed after each run) and `after` (what is printed once all runs are done)."""

    config: Path | None = None          # --config's default; None: no --config flag (`chosen` picks the config)
    out: Path | None = None             # --out's default; None: no --out flag (`store` names the store)
    analyze_many = True                 # --analyze takes several stores (else one)
    full_help = False                   # --help shows the whole docstring (else its first paragraph)
    run_line = "{wall:.1f} s from outside; beluga run printed: {own}"   # `shown`'s line, {own}: run's wall time

    def __init__(self, doc: str) -> None:
        self.doc = doc

    def parser(self) -> argparse.ArgumentParser:
        made = script_parser(self.doc, full=self.full_help)
        if self.config is not None:
            made.add_argument("--config", type=Path, default=self.config)
        made.add_argument("--precision", choices=PRECISIONS, default="fp32")
        if self.out is not None:
            made.add_argument("--out", type=Path, default=self.out,
                              help="folder for the runs' stores (each run gets a new one)")
        if self.analyze_many:
            made.add_argument("--analyze", type=Path, nargs="*", help="only print the figures of these stores")
        else:
            made.add_argument("--analyze", type=Path, help="only print the figures of this store")
        self.arguments(made)
        return made

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        """The script's own flags."""

    def chosen(self, args: argparse.Namespace) -> Path:
        """The config to run."""
        return Path(args.config)

    def runs(self, args: argparse.Namespace) -> int:
        return 1

    def store(self, args: argparse.Namespace, config: Path, i: int) -> Path:
        """Where run ``i`` writes (called just before it starts)."""
        return new_store(args.out, config, args.precision)

    def shown(self, args: argparse.Namespace, i: int, run: Run) -> None:
        """Printed as soon as run ``i`` is done."""
        print(self.run_line.format(wall=run.wall, own=run.line("wall time:")))

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        """What the benchmark measures, printed from one store."""
        raise NotImplementedError

    def after(self, args: argparse.Namespace, runs: list[Run]) -> None:
        """Printed once every run is done: the first store's figures."""
        self.figures(args, runs[0].store)

    def main(self, argv: list[str] | None = None) -> None:
        args = self.parser().parse_args(argv)
        if args.analyze:
            for store in args.analyze if self.analyze_many else [args.analyze]:
                self.figures(args, store)
            return
        print(header(args.precision))
        config = self.chosen(args)
        runs: list[Run] = []
        for i in range(self.runs(args)):
            runs.append(run_config(config, args.precision, self.store(args, config, i)))
            self.shown(args, i, runs[-1])
        self.after(args, runs)


# Paired runs below which no interval, so no verdict, is given.
MIN_PAIRED = 3


def paired_ratio(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The ratio of rates a / b over runs paired by repeat (each repeat ran both, one after the other, so a drift of
    the machine's speed cancels): its geometric mean and 95 % t-interval (needs MIN_PAIRED runs)."""
    logs = [math.log(x / y) for x, y in zip(a, b, strict=True)]
    mean = statistics.fmean(logs)
    half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def speed_verdict(a: list[float], b: list[float], what: str) -> str:
    """"faster", "slower" or "not resolved" for rates a against b, from the paired interval alone (never from
    medians: two medians of runs this noisy differ by chance); with fewer than MIN_PAIRED paired runs, none."""
    if len(a) < MIN_PAIRED:
        return (f"{what}: no verdict ({len(a)} run(s); a verdict needs {MIN_PAIRED} or more paired runs: "
                f"--repeats {MIN_PAIRED})")
    ratio, lo, hi = paired_ratio(a, b)
    verdict = "faster" if lo > 1 else "slower" if hi < 1 else "not resolved"
    return (f"{what}: {ratio:.2f}× [{lo:.2f}, {hi:.2f}] (95 % interval over {len(a)} paired runs: "
            f"{', '.join(f'{x / y:.2f}' for x, y in zip(a, b, strict=True))}) → {verdict}")
