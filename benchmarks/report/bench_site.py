"""Size and page-load time of the result site (`beluga report STORE --format site`), in a real headless Chromium.

    python -m benchmarks.report.bench_site [--store STORE] [--cases 200000] [--groups 40] [--reps 5] [--out DIR]
                                    [--screenshots docs/images/site] [--skip-large]

(a) A real store: --store (e.g. a `beluga run benchmarks/quick.toml` store); without it, tests/data/tiny-sentiment.toml
    is run into a fresh store first (about a minute on 2 cores).
(b) A large synthetic store, written with DuckDB SQL straight into the store's real schema (a store StoreWriter
    created, so every table, view and macro is the real one): --cases cases in --groups functionalities of 8 classes
    and three test types, each with a generated sentence (case_specs), and 50 arms — the IID baseline and 6
    configuration-methods × {seen, functionality, class, test_type}, 2 seeds each — whose held-out arms are fold
    models, one per group: 50 outcomes per case (10M prediction rows at 200,000 cases). Outcomes follow a latent
    difficulty per case shared by every model, so models agree and disagree as real ones do.

For each site it prints the build time, its size (files, MB, largest shard) and, per page, the time from the
navigation's start to the page's first rows on screen (the page's `beluga:painted` performance mark): mean and 95 %
t-interval over --reps loads, each in a new Chromium with a fresh profile (a cold browser cache; the operating
system's file cache is not dropped, which needs root). Browser start-up is not part of the figure.
--screenshots DIR walks (a)'s site from a heatmap cell to a failing case and saves each step (docs/images/site/).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from scipy import stats

from beluga_core.analysis.report.site_files import SiteSummary, write_site
from beluga_core.store.rows import SuiteRow
from beluga_core.store.writer import StoreWriter
from benchmarks.harness import REPO, header, run_config, script_parser
from benchmarks.report.site_browser import (
    Browser,
    check_walk,
    failing_cell,
    missing_reason,
    read_shard,
    walk_to_failing_case,
)

PAIRS = [("iid-then-t", "vanilla"), ("iid-then-t", "l2"), ("iid-plus-t", "vanilla"), ("iid-plus-t", "l2"),
         ("iid-plus-t", "group-dro"), ("iid-then-iid-plus-t", "vanilla")]
SCENARIOS = {"seen": 0.25, "functionality": 0.08, "class": 0.04, "test_type": -0.05}   # pass-rate shift
SEEDS = (1, 2)
TEST_TYPES = ("MFT", "INV", "DIR")
WORDS = {
    "adj": ["great", "terrible", "slow", "friendly", "late", "clean", "rude", "smooth", "awful", "pleasant"],
    "noun": ["flight", "crew", "seat", "meal", "pilot", "check-in", "lounge", "gate agent", "upgrade", "luggage"],
    "adv": ["really", "not", "never", "quite", "so", "hardly", "truly", "barely", "extremely", "somewhat"],
}


def build_large_store(path: Path, n_cases: int, n_groups: int) -> int:
    """The synthetic store; returns its number of outcome rows."""
    writer = StoreWriter(path)
    writer.ensure_suite(SuiteRow("large", ("class", "functionality"), "functionality", "text",
                                 ("negative", "neutral", "positive")), [])
    writer.set_task_head("sentiment", "large", ["negative", "neutral", "positive"])
    run_id = writer.begin_run("synthetic-large.toml", "# bench_site.py", device="cpu")
    writer.finish_run(run_id)
    import duckdb

    con = duckdb.connect(str(path))
    try:
        con.execute(f"""CREATE TEMP TABLE fx AS
            SELECT f, printf('functionality %02d', f) AS name, printf('class %d', f % 8) AS cls,
                   {list(TEST_TYPES)}[f % 3 + 1] AS tt, 0.2 + 0.75 * ((hash(f) % 1000) / 1000.0) AS base
            FROM range({n_groups}) t(f)""")
        words = {k: "[" + ", ".join(f"'{w}'" for w in v) + "]" for k, v in WORDS.items()}
        con.execute(f"""
            INSERT INTO cases (suite, case_id, test_type, scoring_group, groups, gold)
            SELECT 'large', printf('large/%07d', i), fx.tt, fx.name,
                   json_object('class', fx.cls, 'functionality', fx.name),
                   CASE WHEN fx.tt = 'MFT' THEN CASE WHEN i % 2 = 0 THEN '0' ELSE '2' END END
            FROM range({n_cases}) t(i) JOIN fx ON fx.f = i % {n_groups}""")
        con.execute(f"""
            INSERT INTO case_specs
            SELECT suite, case_id, json_object('id', case_id, 'test_type', test_type, 'groups', groups,
                       'inputs', [concat('The ', {words['noun']}[(hash(case_id, 1) % 10)::BIGINT + 1], ' was ',
                                         {words['adv']}[(hash(case_id, 2) % 10)::BIGINT + 1], ' ',
                                         {words['adj']}[(hash(case_id, 3) % 10)::BIGINT + 1], ' and the ',
                                         {words['noun']}[(hash(case_id, 4) % 10)::BIGINT + 1], ' ',
                                         {words['adj']}[(hash(case_id, 5) % 10)::BIGINT + 1], '.')],
                       'label', CASE WHEN gold IS NULL THEN NULL ELSE gold::INTEGER END,
                       'expectation', CASE WHEN gold IS NULL THEN json_object('kind', 'inv')
                                           ELSE json_object('kind', 'eq', 'target', 'label') END)
            FROM cases WHERE suite = 'large'""")
        models = []
        for seed in SEEDS:
            models.append(("iid", "vanilla", "standard", None, seed, 0.0))
            for k, (config, method) in enumerate(PAIRS):
                for scenario, shift in SCENARIOS.items():
                    shift += 0.02 * k - 0.01 * seed
                    if scenario == "seen":
                        models.append((config, method, scenario, None, seed, shift))
                        continue
                    groups = {"functionality": "SELECT name FROM fx", "class": "SELECT DISTINCT cls FROM fx",
                              "test_type": "SELECT DISTINCT tt FROM fx"}[scenario]
                    models += [(config, method, scenario, g, seed, shift) for (g,) in con.execute(groups).fetchall()]
        con.execute("CREATE TEMP TABLE arm_models (model_id VARCHAR, config VARCHAR, method VARCHAR, scenario VARCHAR, "
                    "heldout_group VARCHAR, seed BIGINT, shift DOUBLE)")
        con.executemany("INSERT INTO arm_models VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [(f"syn/{c}/{m}/{s}/{g}/{seed}", c, m, s, g, seed, sh) for c, m, s, g, seed, sh in models])
        con.execute(f"""
            INSERT INTO models (model_id, run_id, task, suite, model_name, config, method, scenario, heldout_level,
                                heldout_group, seed, split_seed, status, started_at, finished_at, variant)
            SELECT model_id, '{run_id}', 'sentiment', 'large', 'synthetic-minilm', config, method, scenario,
                   CASE WHEN heldout_group IS NOT NULL THEN scenario END, heldout_group, seed, 1, 'done',
                   TIMESTAMP '2026-11-27 00:00:00', TIMESTAMP '2026-11-27 00:00:01' + to_seconds(row_number() OVER ()),
                   '' FROM arm_models""")
        con.execute("""
            INSERT INTO iid_metrics (model_id, split, metric, value, is_primary)
            SELECT model_id, 'test', 'accuracy', 0.82 - 0.1 * shift, true
            FROM arm_models WHERE heldout_group IS NULL""")
        # One latent difficulty per case, shared by all models, plus a little noise per model: 3 % skips.
        con.execute("""
            INSERT INTO outcomes (model_id, suite, case_id, outcome, pred)
            WITH scored AS (
                SELECT m.model_id, c.case_id, c.gold,
                       0.85 * ((hash(c.case_id) % 10007) / 10007.0) + 0.15 * ((hash(c.case_id, m.model_id) % 10007)
                       / 10007.0) < least(greatest(fx.base + m.shift, 0.0), 1.0) AS passed,
                       hash(c.case_id, 7) % 100 < 3 AS skipped
                FROM cases c JOIN fx ON fx.name = c.scoring_group
                JOIN arm_models m ON m.heldout_group IS NULL
                     OR m.heldout_group = CASE m.scenario WHEN 'functionality' THEN c.scoring_group
                                                          WHEN 'class' THEN fx.cls ELSE c.test_type END
                WHERE c.suite = 'large')
            SELECT model_id, 'large', case_id, CASE WHEN skipped THEN 'skip' WHEN passed THEN 'pass' ELSE 'fail' END,
                   CASE WHEN gold IS NULL THEN CASE WHEN passed THEN '2' ELSE '0' END
                        WHEN passed THEN gold ELSE CASE gold WHEN '0' THEN '2' ELSE '0' END END
            FROM scored""")
        (n,) = con.execute("SELECT count(*) FROM outcomes").fetchone() or (0,)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return int(n)


def ci(values: list[float]) -> str:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.0f} ms (one load)"
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:.0f} ms ± {half:.0f} (95 % CI, n = {len(values)}; min {min(values):.0f}, max {max(values):.0f})"


def pages(site: Path) -> dict[str, str]:
    """The pages measured: one of each kind, on the site's largest group."""
    _, manifest = read_shard(site / "data" / "site.js")
    _, ov = read_shard(site / "data" / "overview-0.js")
    suite = manifest["suites"][0]
    g = max(suite["groups"], key=lambda x: x["n_cases"])
    arms = suite["arms"]
    out = {"overview": "#/"}
    h = ov["heatmaps"][-1] if ov["heatmaps"] else None
    if h is not None and len(h["rows"]) > 1:
        r = h["rows"][1]
        out["configuration × method × scenario"] = (f"#/scenario/0/{h['task']}/{r['config']}/{r['method']}/"
                                                     f"{r['from'] or h['scenario']}")
    out[f"group ({g['n_cases']:,} cases)"] = f"#/group/{suite['si']}/{g['gi']}?arm={arms[-1]}"
    out["group, failing only"] = f"#/group/{suite['si']}/{g['gi']}?arm={arms[-1]}&fail=1"
    out["case"] = f"#/case/{suite['si']}/{g['gi']}/{g['chunks'] - 1}/0"
    out["search, a common word"] = f"#/search/{suite['si']}?q=the"
    # A term only the last case holds: its first row is painted after every chunk of the suite was read.
    last = max(suite["groups"], key=lambda x: x["gi"])
    _, chunk = read_shard(site / "data" / f"s{suite['si']}" / f"g{last['gi']}-{last['chunks'] - 1}.js")
    out["search, the last case's id (reads all)"] = f"#/search/{suite['si']}?q={quote(chunk['cases'][-1][0])}"
    out["flips (all cases)"] = f"#/flips/{suite['si']}?a={arms[0]}&b={arms[-1]}"
    return out


def measure(name: str, site: Path, summary: SiteSummary, reps: int) -> None:
    print(f"\n{name}: {summary.line()}")
    # The machine may be shared: the load says how much else ran beside the measurement.
    print("  load average (1, 5, 15 min) before measuring: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    for label, route in pages(site).items():
        times = []
        for _ in range(reps):
            with Browser() as browser:
                times.append(browser.open(site, route))
        print(f"  first rows painted, {label:<42} {ci(times)}")
    print("  load average after: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--store", type=Path, help="a real store (default: run tests/data/tiny-sentiment.toml)")
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--groups", type=int, default=40)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path, help="folder for the stores and sites (default: a temporary one)")
    parser.add_argument("--screenshots", type=Path, help="save the walk's screenshots of (a)'s site here")
    parser.add_argument("--skip-large", action="store_true", help="only (a)")
    args = parser.parse_args()
    reason = missing_reason()
    if reason:
        sys.exit(f"SKIPPED: {reason}")
    print(header(None))
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-site-"))
    work.mkdir(parents=True, exist_ok=True)
    store = args.store
    if store is None:
        store = work / "tiny-sentiment.duckdb"
        if not store.exists():
            run = run_config(REPO / "tests" / "data" / "tiny-sentiment.toml", "fp32", store)
            print(f"(a) trained tests/data/tiny-sentiment.toml in {run.wall:.0f} s")
    site = work / "site-real"
    summary = write_site(store, site)
    measure(f"(a) {store}", site, summary, args.reps)
    if args.screenshots:
        href, _ = failing_cell(site, store)
        with Browser() as browser:
            walk = walk_to_failing_case(browser, site, href, args.screenshots)
        check_walk(site, store, walk, href)
        print(f"  screenshots of the walk to case {walk.case_id!r} in {args.screenshots}; its {len(walk.rows)} "
              "models' outcomes and predictions on the page equal the store's rows")
    if args.skip_large:
        return
    large = work / f"large-{args.cases}.duckdb"
    if not large.exists():
        started = time.perf_counter()
        partial = large.with_suffix(".partial")     # renamed when whole: a failed build is never reused
        partial.unlink(missing_ok=True)
        n = build_large_store(partial, args.cases, args.groups)
        partial.rename(large)
        print(f"\n(b) wrote the synthetic store: {args.cases:,} cases, {n:,} outcome rows, "
              f"{large.stat().st_size / 1e6:.0f} MB, in {time.perf_counter() - started:.0f} s")
    site = work / "site-large"
    summary = write_site(large, site, progress=lambda line: print(f"    {line}", flush=True))
    measure(f"(b) {large.name}", site, summary, args.reps)


if __name__ == "__main__":
    main()
