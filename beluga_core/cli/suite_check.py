"""``beluga suite check``: judge a model's predictions on a suite, case by case, and report pass rates."""

from __future__ import annotations

import gzip
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from beluga_core.cli.app import suite_app
from beluga_core.errors import BelugaError
from beluga_core.expectations.base import OUTCOME_NAMES
from beluga_core.expectations.evaluate import GroupRate, evaluate_cases, group_pass_rates, mean_pass_rate
from beluga_core.predictions import read_predictions
from beluga_core.suite.io import Suite, load_suite


@dataclass
class CheckResult:
    suite: Suite  # as evaluated: corrected unless --as-released
    outcomes: np.ndarray
    level: str
    rates: list[GroupRate]
    s_t: float | None
    as_released: bool
    n_corrected: int
    out: Path
    model_id: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)


def check_suite(suite_spec: str | Path, predictions: str | Path, out: str | Path, *, store: str | Path | None = None,
                as_released: bool = False, model_name: str | None = None) -> CheckResult:
    """Load, evaluate, write OUT (and the store); what ``beluga suite check`` does, minus the printing."""
    t0 = time.perf_counter()
    released = load_suite(suite_spec)
    t1 = time.perf_counter()
    preds = read_predictions(predictions, released)
    t2 = time.perf_counter()
    suite = released if as_released else released.effective()
    n_corrected = 0 if as_released else sum(c.correction is not None for c in released.cases)
    try:
        outcomes = evaluate_cases(suite.cases, preds, label_space=suite.header.label_space)
    except ValueError as exc:  # predictions that do not suit an expectation (e.g. strings for a score check)
        raise BelugaError(f"cannot evaluate: {exc}", source=predictions) from None
    t3 = time.perf_counter()
    out = write_outcomes(out, suite, outcomes)
    level = suite.header.scoring_level
    rates = group_pass_rates([suite.group_of(c, level) for c in suite.cases], outcomes)
    result = CheckResult(suite, outcomes, level, rates, mean_pass_rate(rates), as_released, n_corrected, out)
    t4 = time.perf_counter()
    if store is not None:
        result.model_id = _record(store, suite, outcomes, model_name or Path(predictions).name.split(".")[0])
    result.seconds = {"load": t1 - t0, "predictions": t2 - t1, "evaluate": t3 - t2, "write": t4 - t3,
                      "total": time.perf_counter() - t0}
    return result


def write_outcomes(path: str | Path, suite: Suite, outcomes: np.ndarray) -> Path:
    """Per-case outcomes as JSON Lines (gzip when the name ends in .gz), written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    groups_json: dict[tuple[tuple[str, str], ...], str] = {}  # a suite has few distinct group dicts
    names = {k: json.dumps(v) for k, v in OUTCOME_NAMES.items()}
    lines = []
    for case, outcome in zip(suite.cases, outcomes.tolist(), strict=True):
        key = tuple(case.groups.items())
        g = groups_json.get(key)
        if g is None:
            g = groups_json[key] = json.dumps(case.groups, ensure_ascii=False, sort_keys=True)
        lines.append(f'{{"id": {json.dumps(case.id, ensure_ascii=False)}, "groups": {g}, '
                     f'"test_type": {json.dumps(case.test_type)}, "outcome": {names[outcome]}}}\n')
    data = "".join(lines).encode("utf-8")
    try:
        if path.suffix == ".gz":
            with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                gz.write(data)
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise BelugaError(f"cannot write outcomes ({exc})", source=path) from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _record(store: str | Path, suite: Suite, outcomes: np.ndarray, model_name: str) -> str:
    try:
        from beluga_core.store.writer import StoreWriter, case_rows
    except ImportError:
        raise BelugaError("--store is not available yet in this version of beluga (no result-store writer); "
                          "run without --store and keep the --out file") from None
    if not hasattr(StoreWriter, "record_external_evaluation"):
        raise BelugaError("--store is not available yet: this result-store writer cannot record an "
                          "external evaluation")
    writer = StoreWriter(store)
    return writer.record_external_evaluation(
        model_name=model_name, task=suite.header.task or suite.header.name, suite=suite.header.name,
        outcomes={"case_id": [c.id for c in suite.cases],
                  "outcome": [OUTCOME_NAMES[o] for o in outcomes.tolist()]},
        cases=case_rows(suite))


def print_report(result: CheckResult, console: Console) -> None:
    suite = result.suite
    title = (f"{suite.header.name}: pass rate per {result.level} "
             f"({'as released' if result.as_released else f'{result.n_corrected} corrected case(s)'})")
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column(result.level)
    for name in ("cases", "pass", "fail", "skip"):
        table.add_column(name, justify="right")
    table.add_column("pass rate", justify="right")
    for r in result.rates:
        rate = f"{r.rate:.1%}" if r.rate is not None else "[dim]no evaluable case[/]"
        table.add_row(r.group, str(r.cases), str(r.passes), str(r.fails), str(r.skips), rate)
    console.print(table)
    counts = {name: int((result.outcomes == code).sum()) for code, name in OUTCOME_NAMES.items()}
    console.print(f"cases: {len(result.outcomes)} ({counts['pass']} pass, {counts['fail']} fail, "
                  f"{counts['skip']} skip)")
    judged = [r for r in result.rates if r.rate is not None]
    empty = [r.group for r in result.rates if r.rate is None]
    if result.s_t is None:
        console.print("s_T: undefined (no group has an evaluable case)")
    else:
        console.print(f"s_T (unweighted mean over {len(judged)} {result.level} groups): {result.s_t:.4f}")
    if empty:
        console.print(f"left out of s_T (no evaluable case): {', '.join(empty)}")
    console.print(f"outcomes written to {result.out}")
    if result.model_id:
        console.print(f"stored as model {result.model_id}")


@suite_app.command("check")
def check_cmd(
    file: Annotated[str, typer.Argument(help="Suite file (.jsonl / .jsonl.gz) or builtin:NAME.")],
    predictions: Annotated[Path, typer.Option(
        "--predictions", help='PRED file: JSON Lines, per case {"id": case id, "preds": one prediction per input}.')],
    out: Annotated[Path, typer.Option("--out", help="Where to write per-case outcomes (JSON Lines).")],
    store: Annotated[Path | None, typer.Option("--store", help="Also record the evaluation in this store.")] = None,
    as_released: Annotated[bool, typer.Option(
        "--as-released", help="Ignore the suite's documented corrections (reproduce CheckList).")] = False,
    model_name: Annotated[str | None, typer.Option(
        "--model-name", help="Name of the model in the store (default: the PRED file's name).")] = None,
) -> None:
    """Check predictions against a suite: per-case outcomes, pass rate per scoring group, and s_T."""
    result = check_suite(file, predictions, out, store=store, as_released=as_released, model_name=model_name)
    print_report(result, Console())
