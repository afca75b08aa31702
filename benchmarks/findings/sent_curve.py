"""The SENT study's figures (issue 59): where, along T_train's size, the paper's three SENT findings appear in beluga.

    beluga run benchmarks/sent-curve.toml            # the study (≤ 120 min on 2 CPU cores)
    python -m benchmarks.findings.sent_curve [--store runs/sent-curve.duckdb] \
        [--site-shot docs/images/sent-curve-site.png]

Reads the study's store (it trains nothing) and prints: the run's wall time per point and in all, with the machine
and precision it ran at; G per point of every configuration and scenario (mean over seeds ± half the seed-level
95 % interval) as `beluga report` shows it; the three findings' verdicts per point, from `beluga report`'s verdicts
(Holm over the sweep's tests); the third finding's own comparison, IID→(IID+T)'s s_iid against IID→T's, paired by
seed with its t interval (Holm over the points); and `beluga power` on the first point: whether 3 seeds resolve a
3-point difference of G on held-out functionalities, and how many seeds would. With --site-shot, it builds the store's
result site (`beluga report --format site`) and saves a screenshot of its overview's sweep figure and verdict tables
(headless Chromium: benchmarks/report/site_browser.py).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from beluga_core.analysis.significance.multiplicity import holm
from beluga_core.analysis.sweeps.curves import Estimate, read_curves, t_estimate
from beluga_core.store.opened import held
from benchmarks.harness import REPO, header, script_parser

PAPER = ("iid-then-t", "iid-then-iid-plus-t")


def _pm(e: Estimate) -> str:
    if e.mean is None:
        return "—"
    return f"{100 * e.mean:.1f}" + (f" ± {100 * e.half:.1f}" if e.half is not None else "")


def _interval(e: Estimate) -> str:
    if e.mean is None:
        return "—"
    lo = "—" if e.lo is None else f"{100 * e.lo:+.1f}"
    hi = "—" if e.hi is None else f"{100 * e.hi:+.1f}"
    return f"{100 * e.mean:+.1f} [{lo}, {hi}]"


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--store", type=Path, default=REPO / "runs" / "sent-curve.duckdb")
    parser.add_argument("--site-shot", type=Path, default=None, help="Save the result site's sweep section here.")
    args = parser.parse_args()
    store = args.store.resolve()
    print(header(None))   # this machine; the run's own precision and device are the models' (printed below)
    with held(store) as opened:
        con = opened.con
        runs = con.execute("""SELECT r.run_id, r.started_at, r.finished_at, r.status, r.device, r.executor::VARCHAR,
                                     r.config_changes::VARCHAR
                              FROM runs r ORDER BY r.started_at""").fetchall()
        precision = con.execute("SELECT DISTINCT device FROM models WHERE status = 'done'").fetchall()
        seeds_iid = con.execute("""SELECT variant, config, seed, s_iid FROM sweep_curve_seeds
                                   WHERE scenario = 'seen' ORDER BY ALL""").fetchall()
        sampled = con.execute("""SELECT heldout_level, list(DISTINCT heldout_group ORDER BY heldout_group)
                                 FROM models WHERE heldout_level IS NOT NULL GROUP BY ALL ORDER BY ALL""").fetchall()
        shared = con.execute("""SELECT count(DISTINCT model_id), count(*) FROM point_models
                                WHERE model_id IN (SELECT model_id FROM models WHERE config = 'iid')""").fetchone()
        curves = read_curves(opened)
    print(f"store: {store}")
    print(f"models' devices: {', '.join(sorted(r[0] for r in precision if r[0]))}")
    total = 0.0
    for run_id, started, finished, status, _device, _executor, changes in runs:
        seconds = (finished - started).total_seconds() if finished else float("nan")
        total += seconds if not math.isnan(seconds) else 0.0
        point = next((c for c in json.loads(changes or "[]") if c.startswith("[sweep]")), "")
        print(f"run {run_id}: {status}, {seconds / 60:.1f} min, {point}")
    print(f"wall time of the recorded runs: {total / 60:.1f} min")
    print("held-out groups (a seeded sample of groups_per_level per level):")
    for level, groups in sampled:
        print(f"  {level}: {', '.join(groups)}")
    if shared is not None:
        print(f"IID models: {shared[0]} (one per seed), each a member of {shared[1] // max(1, shared[0])} points")

    print("\nG per point (mean over seeds ± half the 95 % seed-level t interval, percentage points):")
    by_cell: dict[tuple[str, str, str], dict[float, Estimate]] = defaultdict(dict)
    values = sorted({r.value for r in curves.rows})
    for r in curves.rows:
        by_cell[(r.config, r.method, r.scenario)][r.value] = r.g
    print("  " + f"{'configuration / scenario':<40}" + "".join(f"{v:>14g}" for v in values))
    for (config, method, scenario), cells in sorted(by_cell.items(), key=lambda kv: (kv[0][0] != "iid", kv[0])):
        print("  " + f"{config}/{method} {scenario:<14}"[:40].ljust(40)
              + "".join(f"{_pm(cells[v]) if v in cells else '—':>14}" for v in values))

    n_tests = sum(curves.n_tests.values())
    print(f"\nFinding 1, G_functionality above the IID baseline (Holm over the sweep's {n_tests} tests):")
    for v in curves.verdicts:
        if v.kind == "baseline" and v.a == "functionality" and v.config in PAPER:
            print(f"  {v.value:>4g}  {v.config:<22} ΔG {_interval(v.diff):<24} Holm p {v.p_holm or float('nan'):.4f}  "
                  f"{v.verdict}")
    print("\nFinding 2, seen > functionality > class > test_type (G, paired by seed; Holm as above):")
    for v in curves.verdicts:
        if v.kind == "order" and v.config in PAPER:
            print(f"  {v.value:>4g}  {v.config:<22} {v.ordering:<28} {_interval(v.diff):<24} "
                  f"Holm p {v.p_holm or float('nan'):.4f}  {v.verdict}")
    print("\nFinding 3, IID→(IID+T) the most robust for the i.i.d. score: s_iid of IID→(IID+T) − IID→T, paired by "
          "seed (t interval; Holm over the points); and each against the IID baseline (beluga report):")
    per_seed: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for variant, config, seed, s_iid in seeds_iid:
        per_seed[variant][config][seed] = s_iid
    points = {r.variant: r.value for r in curves.rows}
    diffs = {}
    for variant, configs in per_seed.items():
        a, b = configs.get(PAPER[1], {}), configs.get(PAPER[0], {})
        d = [a[s] - b[s] for s in sorted(set(a) & set(b))]
        if len(d) > 1:
            mean = math.fsum(d) / len(d)
            sd = math.sqrt(math.fsum((x - mean) ** 2 for x in d) / (len(d) - 1))
            diffs[variant] = t_estimate(len(d), mean, sd)
    order = sorted(diffs, key=lambda v: points.get(v, 0))
    adjusted = holm([diffs[v].p or 1.0 for v in order])
    for variant, p in zip(order, adjusted, strict=True):
        verdict = ("holds" if (diffs[variant].mean or 0) > 0 else "reversed") if p < 0.05 else "not resolved"
        print(f"  {points.get(variant, float('nan')):>4g}  Δs_iid {_interval(diffs[variant]):<24} Holm p {p:.4f}  "
              f"{verdict}")
    for v in curves.verdicts:
        if v.kind == "iid" and v.config in PAPER:
            print(f"  {v.value:>4g}  {v.config:<22} s_iid − baseline {_interval(v.diff):<24} "
                  f"Holm p {v.p_holm or float('nan'):.4f}  {v.verdict}")

    first = min(curves.rows, key=lambda r: r.position).variant if curves.rows else ""
    print(f"\nbeluga power on the first point ({first}): G of IID→(IID+T) on held-out functionalities against the "
          "baseline, a 3-point difference:")
    done = subprocess.run([sys.executable, "-m", "beluga_core", "power", str(store), "--effect", "0.03",
                           "--statistic", "G", "--a", "iid-then-iid-plus-t/vanilla@functionality", "--variant", first],
                          capture_output=True, text=True, check=False)
    print(done.stdout + done.stderr)
    if args.site_shot is not None:
        site_shot(store, args.site_shot.resolve())


def site_shot(store: Path, out: Path) -> None:
    """The result site's overview from its sweep figure to the end of the sweep's tables, as a PNG."""
    import tempfile

    from benchmarks.report.site_browser import Browser

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        built = subprocess.run([sys.executable, "-m", "beluga_core", "report", str(store), "--format", "site",
                                "--out", str(site)], capture_output=True, text=True, check=False)
        if built.returncode != 0:
            raise SystemExit(f"beluga report --format site failed:\n{built.stderr[-2000:]}")
        with Browser(height=2400) as browser:
            browser.open(site)
            driver = browser.driver
            driver.execute_script("return Promise.all(Array.from(document.images).map(i => i.decode()))")
            figure = driver.find_element("css selector", "figure")
            top = int(driver.execute_script("return arguments[0].getBoundingClientRect().top + window.scrollY",
                                            figure))
            tables = driver.find_elements("xpath", "//section[h2[contains(., ' against ') or "
                                                    "starts-with(., 'Verdicts per point')]]")
            bottom = max([int(driver.execute_script(
                "return arguments[0].getBoundingClientRect().bottom + window.scrollY", t)) for t in tables]
                or [top + 900])
            driver.set_window_size(1400, bottom + 40)
            out.parent.mkdir(parents=True, exist_ok=True)
            full = Path(tmp) / "page.png"
            driver.save_screenshot(str(full))
        from PIL import Image

        with Image.open(full) as image:
            image.crop((0, max(0, top - 60), image.width, min(image.height, bottom + 20))).save(out)
    print(f"screenshot of the result site's sweep section: {out}")


if __name__ == "__main__":
    main()
