"""What successive halving costs in fidelity: benchmarks/findings/halving-fidelity.toml searched with [grid] strategy
= "full" and "halving", for each of 3 seeds (one store each), and the two searches' choices compared.

    python -m benchmarks.findings.halving_fidelity                     # fp32 forced; 3 seeds x both ways (~40 min)
    python -m benchmarks.findings.halving_fidelity --seeds 1 2 3 4 5   # other seeds
    python -m benchmarks.findings.halving_fidelity --analyze DIR       # the figures of the stores in DIR, no run

Figures, per (seed, method) selection of the seen search (the seed is the grid's and every model's):
  - agreement: how often halving chooses the full search's point (batch size, learning rate and epochs), and how
    often its batch size and learning rate (halving always trains the largest epoch count), each with its 95 %
    Clopper-Pearson interval;
  - the chosen points' T_val reference criterion (the selection's value) and the G of their seen fold, halving
    minus full, paired per selection: mean with a 95 % t interval over the selections;
  - the grid phase's training examples x epochs as the dry run counts them, both ways, and their ratio;
  - a check that halving's last rung and the full search's point of the largest budget are one model: their
    T_val scores, where both searches trained the point, are equal.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import duckdb
from scipy import stats

from beluga_core.config.load import load_config
from beluga_core.planning.estimate import job_costs
from beluga_core.planning.plan import build_plan
from benchmarks.harness import REPO, header, run_config, script_parser

CONFIG = REPO / "benchmarks" / "findings" / "halving-fidelity.toml"
OUT = REPO / "runs" / "halving-fidelity"
STRATEGIES = ("full", "halving")


def config_for(seed: int, strategy: str, out: Path) -> Path:
    """The study's config with one seed and one strategy, beside it (its relative paths still resolve)."""
    text = CONFIG.read_text(encoding="utf-8")
    text = re.sub(r"^seeds = .*$", f"seeds = [{seed}]", text, count=1, flags=re.M)
    text = re.sub(r'^strategy = ".*"$', f'strategy = "{strategy}"', text, count=1, flags=re.M)
    path = CONFIG.with_name(f".halving-fidelity-{strategy}-{seed}.toml")
    path.write_text(text, encoding="utf-8")
    return path


def grid_examples(config: Path) -> float:
    """The grid phase's examples x epochs as the dry run counts them (``planning.estimate.job_costs``)."""
    plan = build_plan(load_config(config), config)
    cost = job_costs(plan)
    return sum(cost(j).examples for j in [*plan.grid_jobs, *(j for j, _ in plan.planned_rungs())])


def chosen(store: Path) -> dict[tuple[str, str], tuple[dict[str, object], float, float | None]]:
    """(config, method) → the chosen point, its T_val criterion value and the G of its seen fold."""
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("""
            SELECT s.config, s.method, p.point::VARCHAR, s.value
            FROM grid_selections s JOIN grid_points p USING (grid_id) WHERE s.scope_level IS NULL""").fetchall()
        g = dict(((c, m), v) for c, m, v in con.execute(
            "SELECT config, method, g FROM g_scores WHERE scenario = 'seen'").fetchall())
    finally:
        con.close()
    return {(c, m): (json.loads(p), float(v), None if g.get((c, m)) is None else float(g[(c, m)]))
            for c, m, p, v in rows}


def shared_scores(full: Path, halving: Path) -> tuple[int, int]:
    """(points both searches trained to the largest budget, those whose T_val reference is equal in both)."""
    con = duckdb.connect()
    try:
        con.execute(f"ATTACH '{full}' AS f (READ_ONLY)")
        con.execute(f"ATTACH '{halving}' AS h (READ_ONLY)")
        n, same = con.execute("""
            WITH fl AS (SELECT config, method, point::VARCHAR AS point, reference FROM f.grid_scores),
                 hl AS (SELECT config, method, point::VARCHAR AS point, reference FROM h.grid_scores
                        WHERE rung_epochs = (point->>'epochs')::DOUBLE)
            SELECT count(*), count(*) FILTER (WHERE fl.reference = hl.reference)
            FROM fl JOIN hl USING (config, method, point)""").fetchone() or (0, 0)
    finally:
        con.close()
    return int(n), int(same)


def t_interval(values: list[float]) -> str:
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:+.4f} (one selection: no interval)"
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return f"{mean:+.4f} [{mean - half:+.4f}, {mean + half:+.4f}] (n = {len(values)})"


def share(k: int, n: int) -> str:
    ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    return f"{k}/{n} = {k / n:.2f} [{ci.low:.2f}, {ci.high:.2f}]"


def figures(out: Path) -> None:
    pairs = sorted({int(m.group(1)) for p in out.glob("*.duckdb") if (m := re.match(r"full-(\d+)\.duckdb$", p.name))
                    and (out / f"halving-{m.group(1)}.duckdb").exists()})
    if not pairs:
        raise SystemExit(f"no full-SEED.duckdb / halving-SEED.duckdb pairs in {out}")
    same_point = same_values = 0
    d_val: list[float] = []
    d_g: list[float] = []
    n = 0
    print(f"{'seed':>4}  {'configuration/method':<22} {'full chose':<34} {'halving chose':<34} "
          f"{'T_val full':>10} {'halving':>8} {'G full':>7} {'halving':>7}")
    for seed in pairs:
        f, h = chosen(out / f"full-{seed}.duckdb"), chosen(out / f"halving-{seed}.duckdb")
        for key in sorted(f.keys() & h.keys()):
            (pf, vf, gf), (ph, vh, gh) = f[key], h[key]
            n += 1
            same_point += pf == ph
            same_values += {k: v for k, v in pf.items() if k != "epochs"} == \
                {k: v for k, v in ph.items() if k != "epochs"}
            d_val.append(vh - vf)
            if gf is not None and gh is not None:
                d_g.append(gh - gf)

            def text(p: dict[str, object]) -> str:
                return ", ".join(f"{k[:2]}={v:g}" if isinstance(v, float) else f"{k[:2]}={v}" for k, v in p.items())

            print(f"{seed:>4}  {'/'.join(key):<22} {text(pf):<34} {text(ph):<34} {vf:>10.4f} {vh:>8.4f} "
                  f"{'–' if gf is None else f'{gf:.4f}':>7} {'–' if gh is None else f'{gh:.4f}':>7}")
        both, equal = shared_scores(out / f"full-{seed}.duckdb", out / f"halving-{seed}.duckdb")
        print(f"      seed {seed}: halving's points at the largest budget equal the full search's: {equal} of {both}")
    print(f"\nselections compared: {n} ({len(pairs)} seed(s))")
    print(f"halving chose the full search's point:                      {share(same_point, n)}")
    print(f"... its batch size and learning rate (epochs aside):         {share(same_values, n)}")
    print(f"T_val reference of the chosen point, halving - full:         {t_interval(d_val)}")
    print(f"G of the chosen point's seen fold, halving - full:           {t_interval(d_g) if d_g else 'no G'}")
    full, halving = (grid_examples(config_for(pairs[0], s, out)) for s in STRATEGIES)
    for s in STRATEGIES:
        CONFIG.with_name(f".halving-fidelity-{s}-{pairs[0]}.toml").unlink(missing_ok=True)
    print(f"grid phase examples x epochs (the dry run's count, per seed): full {full:,.0f}, halving {halving:,.0f}: "
          f"{full / halving:.2f}x fewer")


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds (default: 1 2 3)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the stores go (default: {OUT})")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "auto"))
    parser.add_argument("--analyze", type=Path, help="print the figures of the stores in this folder; run nothing")
    args = parser.parse_args()
    if args.analyze is not None:
        print(header(None))
        figures(args.analyze)
        return
    print(header(args.precision))
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        for strategy in STRATEGIES:
            store = args.out / f"{strategy}-{seed}.duckdb"   # an interrupted study resumes: done jobs are kept
            config = config_for(seed, strategy, args.out)
            try:
                run = run_config(config, args.precision, store)
            finally:
                config.unlink(missing_ok=True)
            print(f"seed {seed}, {strategy}: {run.wall:.0f} s", flush=True)
    figures(args.out)


if __name__ == "__main__":
    main()
