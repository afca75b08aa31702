"""Time loading the full sentiment suite and ``beluga suite check`` on random predictions for all of it.

    python -m benchmarks.perf.bench_suite [--suite builtin:sentiment] [--repeat 3] [--binary]

Uses the shipped ``builtin:sentiment`` suite; without it, converts the shared reference JSONL
(``BELUGA_SHARED`` or ``../shared``) into a temporary suite file first. Targets on a 2-core machine:
load < 10 s, check (end to end, through the CLI) < 30 s. Also times loading the shipped SST-2
(``builtin:sst2``: decompress, parse, halve dev), target < 1 s.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from beluga_core.cli import app as app_module
from beluga_core.cli.suite_check_cmd import check_suite
from beluga_core.contracts.expectations import FlatPredictions
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid.classification_data import load_classification_iid
from beluga_core.data.suite.suite_files import Suite, load_suite, resolve_suite_path, write_suite
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.evaluation.evaluate import evaluate_cases
from benchmarks.harness import header, script_parser

LOAD_TARGET_S, CHECK_TARGET_S, SST2_TARGET_S = 10.0, 30.0, 1.0
DOC_KEYS = {"note", "alias", "requires", "fingerprint", "faithful_rule", "intended_rule_per_description"}


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, list[float]]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, times


def reference_suite_file(tmp: Path) -> Path:
    """The shared reference sentiment JSONL as a suite file (when no suite is shipped)."""
    shared = Path(os.environ.get("BELUGA_SHARED", Path(__file__).resolve().parents[3] / "shared"))
    src = shared / "data" / "checklist" / "reference" / "sentiment.jsonl.gz"
    if not src.exists():
        sys.exit(f"no builtin:sentiment suite and no reference file at {src}; set BELUGA_SHARED")
    cases = []
    with gzip.open(src, "rt", encoding="utf-8") as fh:
        for rec in map(json.loads, fh):
            cases.append(Case(
                id=f"sentiment/{rec['functionality']}/{rec['case_id']}",
                groups={"class": rec["capability"], "functionality": rec["functionality"]},
                test_type=rec["test_type"], loss=rec["test_type"].lower(), inputs=rec["inputs"],
                label=rec["label"], expectation={k: v for k, v in rec["expectation"].items() if k not in DOC_KEYS}))
    head = SuiteHeader(name="sentiment", levels=["class", "functionality"], scoring_level="functionality",
                       task="sentiment", input_kind="text", label_space=["negative", "neutral", "positive"])
    return write_suite(tmp / "sentiment.jsonl.gz", head, cases)


def write_random_predictions(suite: Suite, path: Path, seed: int, binary: bool) -> int:
    rng = np.random.default_rng(seed)
    lengths = [len(c.inputs) for c in suite.cases]
    n = sum(lengths)
    if binary:
        p = rng.uniform(size=n)
        probs = np.stack([1 - p, p], axis=1)
    else:
        probs = rng.dirichlet(np.ones(len(suite.header.label_space or [0, 0, 0])), size=n)
    rows = probs.tolist()
    with open(path, "w", encoding="utf-8") as fh:
        pos = 0
        for case, k in zip(suite.cases, lengths, strict=True):
            fh.write(json.dumps({"id": case.id, "preds": rows[pos:pos + k]}) + "\n")
            pos += k
    return n


def run_cli(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        app_module.main(argv)
    return out.getvalue()


def main() -> None:
    ap = script_parser(__doc__, full=True)
    ap.add_argument("--suite", default="builtin:sentiment")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--binary", action="store_true", help="binary [p(neg), p(pos)] vectors (adapter path)")
    args = ap.parse_args()

    print(header(None))
    with tempfile.TemporaryDirectory(prefix="beluga-bench-") as tmp_name:
        tmp = Path(tmp_name)
        spec: str | Path = args.suite
        try:
            resolve_suite_path(spec)
        except BelugaError:
            spec = reference_suite_file(tmp)
            print(f"{args.suite} not shipped; using the reference JSONL converted to {spec}")

        suite, load_times = timed(lambda: load_suite(spec), args.repeat)
        n_inputs = sum(len(c.inputs) for c in suite.cases)
        print(f"suite {suite.header.name}: {len(suite.cases):,} cases, {n_inputs:,} inputs")

        pred = tmp / "pred.jsonl"
        t0 = time.perf_counter()
        write_random_predictions(suite, pred, args.seed, args.binary)
        print(f"random predictions written ({pred.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f} s")

        out = tmp / "out.jsonl"
        argv = ["suite", "check", str(spec), "--predictions", str(pred), "--out", str(out)]
        report, check_times = timed(lambda: run_cli(argv), args.repeat)
        phases = check_suite(spec, pred, out).seconds

        # What the training code calls after inference: evaluation alone, from one probability array.
        probs = np.random.default_rng(args.seed).dirichlet(np.ones(3), size=n_inputs)
        flat = FlatPredictions.from_arrays(probs=probs, lengths=[len(c.inputs) for c in suite.cases])
        eff = suite.with_corrections()
        _, eval_times = timed(lambda: evaluate_cases(eff.cases, flat), args.repeat)

    _, sst2_times = timed(lambda: load_classification_iid("builtin:sst2", text_fields=("sentence",)), args.repeat)

    s_t = next((line for line in report.splitlines() if line.startswith("s_T")), "?")
    print(f"check output: {s_t}")
    rows = [("load_suite", load_times, LOAD_TARGET_S),
            ("suite check (CLI, end to end)", check_times, CHECK_TARGET_S),
            ("evaluate_cases only", eval_times, None),
            ("builtin:sst2 load", sst2_times, SST2_TARGET_S)]
    print(f"\n{'step':32} {'median s':>9} {'min s':>7} {'max s':>7}  target")
    for name, times, target in rows:
        ok = target is None or statistics.median(times) < target
        verdict = "" if target is None else f"< {target:.0f} s: {'ok' if ok else 'MISSED'}"
        print(f"{name:32} {statistics.median(times):9.2f} {min(times):7.2f} {max(times):7.2f}  {verdict}")
    print("one check, by phase: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()))
    print(f"(repeats: {args.repeat}; cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
