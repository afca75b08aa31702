"""Token attributions on this CPU: a run that attributes inside its folds, the estimators' throughput, the store's
size per 1,000 attributed inputs, and `beluga explain`'s HTML page in headless Chromium.

    python -m benchmarks.findings.bench_attributions                  # runs benchmarks/attributions.toml at fp32 first
    python -m benchmarks.findings.bench_attributions --store STORE    # an existing run of that config instead

1. Runs benchmarks/attributions.toml (5 trainings; each model attributes its held-out T_test cases with ig,
   occlusion, lime and shap at the in-run budgets) and prints its wall time and rows.
2. Attributions per second per estimator, at the in-run and at the full budgets, on the run's fine-tuned IID
   model (single sentences from the sentiment suite) and on the embedded MiniLM with an untrained 2-class head
   (question pairs from the QQP suite: what it predicts does not change what a pass costs). Attributions always
   compute in fp32 (the run's precision only applies to training).
3. Writes --store-inputs attributed sentences (real occlusion and IG rows) into an empty store and prints its
   size per 1,000 inputs with one estimator and what each further estimator adds.
4. `beluga explain` of the IID and the seen model side by side, as HTML, and its screenshot (Chromium is
   installed from Debian when missing and possible; else the step says SKIPPED).
"""

from __future__ import annotations

import csv
import lzma
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import torch

from beluga_core.attributions.compute import Item, attribute, gold_class, make_methods, tokenizer_id
from beluga_core.data.suite.suite_files import load_suite
from beluga_core.store.attribution_rows import write_attributions
from beluga_core.store.reader import open_store
from beluga_core.store.selectors import select_one
from beluga_core.store.writer import StoreWriter
from beluga_core.stored_models.export import stored_model
from beluga_core.training.models import load_sequence_classifier, load_tokenizer
from benchmarks.harness import REPO, header, run_config, script_parser
from benchmarks.report.screenshot_report import Skip, ensure_chromium, screenshot

CONFIG = REPO / "benchmarks" / "attributions.toml"
GROUP = "simple negations: negative"
# (estimator, options): the in-run budgets, then the full budgets `beluga explain` uses.
RUN_BUDGETS: list[tuple[str, dict[str, Any]]] = [("ig", {"steps": 16}), ("ig-diagnose", {}), ("occlusion", {}),
                                                 ("lime", {"samples": 256}), ("shap", {"samples": 256})]
FULL_BUDGETS: list[tuple[str, dict[str, Any]]] = [("ig", {}), ("lime", {}), ("shap", {})]


def sample_inputs(suite_spec: str, n: int, task: Any = None, seed: int = 0) -> list[Item]:
    """The first inputs of n seeded-sampled MFT cases of a suite, with their gold class under ``task`` (else the
    case's label as it stands: the pair model's head is untrained, only the cost matters)."""
    suite = load_suite(suite_spec)
    cases = [c for c in suite.cases if c.test_type == "MFT"]
    picked = np.random.default_rng(seed).choice(len(cases), size=min(n, len(cases)), replace=False)
    return [Item(suite.header.name, cases[i].id, 0, cases[i].inputs[0],
                 gold_class(task, cases[i], 0) if task is not None else int(cases[i].label or 0))
            for i in sorted(picked)]


def sst2_sentences(n: int) -> list[Item]:
    """The first n sentences of the shipped SST-2 dev set (longer than the suite's templates), with gold."""
    with lzma.open(REPO / "beluga_core" / "data" / "builtin" / "sst2" / "dev.tsv.xz", "rt", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [Item("sst2-dev", str(i), 0, r["sentence"], int(r["label"])) for i, r in enumerate(rows[:n])]


def throughput(model: torch.nn.Module, tokenizer: Any, items: list[Item], name: str,
               options: dict[str, Any], max_length: int) -> tuple[float, float]:
    """Inputs per second of one estimator on items[1:] (items[0] warms up), and their mean number of tokens."""
    methods = make_methods([name], {name: options})
    key = tokenizer_id("bench", tokenizer, max_length)
    with torch.enable_grad():
        attribute(model, tokenizer, key, torch.device("cpu"), items[:1], methods, max_length=max_length)
        started = time.perf_counter()
        rows, _ = attribute(model, tokenizer, key, torch.device("cpu"), items[1:], methods, max_length=max_length)
        wall = time.perf_counter() - started
    return len(rows) / wall, float(np.mean([len(r.x) for r in rows]))


def store_size(rows_by_method: dict[str, list[Any]], tmp: Path) -> list[tuple[str, int, int]]:
    """(methods, attribution rows, bytes above an empty store) as the estimators are added one by one."""
    path = tmp / "size.duckdb"
    writer = StoreWriter(path)
    con = duckdb.connect(str(path))
    con.execute("CHECKPOINT")
    con.close()
    empty = path.stat().st_size
    out = []
    names: list[str] = []
    for name, rows in rows_by_method.items():
        names.append(name)
        with writer.store.transaction() as tx:
            write_attributions(tx, "bench-model", rows)
        con = duckdb.connect(str(path))
        con.execute("CHECKPOINT")
        n = con.execute("SELECT count(*) FROM attributions").fetchall()[0][0]
        con.close()
        out.append(("+".join(names), int(n), path.stat().st_size - empty))
    return out


def main() -> int:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("--store", type=Path, help="an existing run of benchmarks/attributions.toml")
    parser.add_argument("--inputs", type=int, default=24, help="inputs per estimator at the in-run budgets")
    parser.add_argument("--full-inputs", type=int, default=4, help="inputs per estimator at the full budgets")
    parser.add_argument("--store-inputs", type=int, default=1000, help="inputs written for the size figure")
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-attributions", help="output folder")
    parser.add_argument("--no-install", action="store_true", help="never install chromium; skip the screenshot")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(header("fp32"), flush=True)

    # 1. The run.
    store = args.store
    if store is None:
        store = args.out / "attributions.duckdb"
        for stale in (store, store.with_name(store.name + ".wal")):
            stale.unlink(missing_ok=True)
        wall = run_config(CONFIG, "fp32", store).wall
        print(f"run of {CONFIG.name} at fp32: {wall:.1f} s wall", flush=True)
    con = duckdb.connect(str(store), read_only=True)
    per_model = con.execute("""SELECT m.config, m.scenario, m.heldout_group, count(DISTINCT a.case_id), count(*),
                                      round(m.eval_seconds, 1)
                               FROM models m LEFT JOIN attributions a USING (model_id)
                               GROUP BY ALL ORDER BY ALL""").fetchall()
    con.close()
    print("in-run attributions (ig 16 steps, occlusion, lime 256, shap 256): model, cases, rows, eval + "
          "attribution seconds")
    for cfg, scenario, group, cases, rows, secs in per_model:
        print(f"  {cfg}@{scenario}{'=' + group if group else ''}: {cases} cases, {rows} rows, {secs} s")

    # 2. Throughput.
    with open_store(store) as rcon:
        row = select_one(rcon, "iid/vanilla", where=str(store))
        iid = stored_model(rcon, store, row)
    sentiment = iid.build()
    tokenizer = load_tokenizer("embedded:minilm")
    singles = sample_inputs("builtin:sentiment", max(args.inputs, args.store_inputs) + 1, iid.task, seed=1)
    sst2 = sst2_sentences(args.inputs + 1)
    pairs = sample_inputs("builtin:qqp", args.inputs + 1, seed=1)
    pair_model = load_sequence_classifier("embedded:minilm", 2, seed=0).eval()
    print(f"\nattributions per second (torch threads: {torch.get_num_threads()}; inputs per figure: "
          f"{args.inputs} at the in-run budgets, {args.full_inputs} at the full ones; mean tokens in brackets)")
    print(f"  {'estimator':<12} {'budget':<15} {'suite sentences':>21} {'SST-2 sentences':>21} "
          f"{'QQP suite pairs':>21}")
    for budgets, n in ((RUN_BUDGETS, args.inputs), (FULL_BUDGETS, args.full_inputs)):
        for name, options in budgets:
            budget = ", ".join(f"{k} {v}" for k, v in options.items()) or (
                "9 points" if name == "ig-diagnose" else "one per token" if name == "occlusion"
                else "default (full)")
            figures = []
            for model, items in ((sentiment, singles[:n + 1]), (sentiment, sst2[:n + 1]),
                                 (pair_model, pairs[:n + 1])):
                rate, tokens = throughput(model, tokenizer, items, name, options, iid.max_length)
                figures.append(f"{rate:7.2f}/s ({tokens:4.1f})")
            print(f"  {name:<12} {budget:<15} {figures[0]:>21} {figures[1]:>21} {figures[2]:>21}", flush=True)

    # 3. Store size per 1,000 attributed inputs.
    items = singles[1:args.store_inputs + 1]
    key = tokenizer_id("embedded:minilm", tokenizer, iid.max_length)
    rows_by_method = {}
    for name, options in (("occlusion", {}), ("ig", {"steps": 16})):
        with torch.enable_grad():
            rows_by_method[name], _ = attribute(sentiment, tokenizer, key, torch.device("cpu"), items,
                                                make_methods([name], {name: options}), max_length=iid.max_length)
    with tempfile.TemporaryDirectory(prefix="beluga-attr-size-") as tmp:
        sizes = store_size(rows_by_method, Path(tmp))
    print(f"\nstore size for {len(items):,} attributed sentences (mean "
          f"{np.mean([len(r.x) for r in rows_by_method['occlusion']]):.1f} tokens), above an empty store:")
    last = 0
    for names, n_rows, size in sizes:
        per_1000 = size / len(items) * 1000 / 1e6
        print(f"  {names:<14} {n_rows:>6,} rows: {size / 1e6:6.2f} MB, {per_1000:.2f} MB per 1,000 inputs "
              f"(+{(size - last) / 1e6:.2f} MB for this estimator)")
        last = size

    # 4. beluga explain, two models side by side, and its screenshot.
    beluga = Path(sys.executable).with_name("beluga")
    explain_dir = args.out / "explain"
    started = time.perf_counter()
    done = subprocess.run([str(beluga), "explain", str(store), "--model", "iid/vanilla", "--model",
                           "iid-then-t/vanilla@seen", "--group", GROUP, "--method", "ig", "--method", "occlusion",
                           "--max-inputs", "4", "--out", str(explain_dir)], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"beluga explain failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    print(f"\nbeluga explain (IID and seen models, {GROUP!r}, ig at 300 steps + occlusion, 4 inputs each): "
          f"{time.perf_counter() - started:.1f} s → {explain_dir / 'explain.html'}")
    try:
        chromium = ensure_chromium(install=not args.no_install)
    except Skip as exc:
        print(f"screenshot: SKIPPED: {exc}")
        return 0
    png = screenshot(chromium, explain_dir / "explain.html", explain_dir / "explain.png")
    print(f"screenshot: {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
