"""The terminal table of ``beluga report``: one row per configuration-method, i.i.d. score and G per scenario,
like the paper's Table 3 (the IID baseline first, its suite scores being G_standard)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from beluga_core.store.reader import fetch_dicts

BASELINE = ("iid", "vanilla")
FIXED_SCENARIOS = ("standard", "seen")


def scenario_order(scenarios: set[str]) -> list[str]:
    return [s for s in FIXED_SCENARIOS if s in scenarios] + sorted(scenarios - set(FIXED_SCENARIOS))


def g_table(store: Path) -> dict[str, dict[tuple[str, str], dict[str, dict[str, float | None]]]]:
    """task → (config, method) → scenario → {s_suite, s_iid, g}, averaged over seeds."""
    acc: dict[str, dict[tuple[str, str], dict[str, list[dict[str, float | None]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for row in fetch_dicts(store, "g_scores"):
        acc[row["task"]][(row["config"], row["method"])][row["scenario"]].append(row)
    out: dict[str, dict[tuple[str, str], dict[str, dict[str, float | None]]]] = {}
    for task, rows in acc.items():
        out[task] = {}
        for key, per_scenario in rows.items():
            out[task][key] = {sc: {m: _mean([r[m] for r in rs]) for m in ("s_suite", "s_iid", "g")}
                              for sc, rs in per_scenario.items()}
    return out


def _mean(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f}"


def _significance_marks(store: Path) -> dict[tuple[str | None, tuple[str, str], str], str]:
    """Cell → 'better' / 'worse' from the significance view (empty before any `beluga analyze`)."""
    from beluga_core.analysis.report.table3 import agreed, significance_marks
    from beluga_core.store.reader import open_store
    from beluga_core.store.significance import has_significance

    with open_store(store) as con:
        if not has_significance(con):
            return {}
        cur = con.execute("SELECT * FROM significance")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return {k: m for k, v in significance_marks(rows).items() if (m := agreed(v))}


def _marked(text: str, mark: str | None) -> str:
    return {"better": f"[green]{text} ▲[/]", "worse": f"[red]{text} ▼[/]"}.get(mark or "", text)


def print_g_table(store: Path, console: Console) -> None:
    table_data = g_table(store)
    if not table_data:
        console.print(f"no finished models in {store} yet")
        return
    marks = _significance_marks(store)
    for task, rows in sorted(table_data.items()):
        scenarios = scenario_order({sc for per in rows.values() for sc in per} - {"standard"})
        table = Table(title=f"{task}: i.i.d. score and G per scenario (%)", title_justify="left")
        table.add_column("configuration")
        table.add_column("method")
        table.add_column("i.i.d.", justify="right")
        for sc in scenarios:
            table.add_column(f"G {sc}", justify="right")
        table.add_column("s per scenario", justify="left", style="dim")
        keys = sorted(rows, key=lambda k: (k != BASELINE, k))
        for key in keys:
            per = rows[key]
            if key[0] == "iid" and "standard" in per:
                base = per["standard"]
                cells = [_pct(base["g"])] * len(scenarios)
                detail = f"s_standard {_pct(base['s_suite'])}"
                iid = base["s_iid"]
            else:
                cells = [_marked(_pct(per.get(sc, {}).get("g")), marks.get((task, key, sc))) for sc in scenarios]
                detail = " ".join(f"{sc} {_pct(per.get(sc, {}).get('s_suite'))}" for sc in scenarios)
                iid = next((v["s_iid"] for v in per.values() if v["s_iid"] is not None), None)
            table.add_row(key[0], key[1], _marked(_pct(iid), marks.get((task, key, "i.i.d."))), *cells, detail)
        console.print(table)
    if marks:
        console.print("▲ / ▼ significantly better / worse than the IID baseline (p < 0.05; `beluga analyze`)",
                      style="dim")
    print_degeneracy(store, console)


def print_degeneracy(store: Path, console: Console) -> None:
    """One warning line per configuration-method whose predictions collapsed (METHOD.md §6): its G scores
    measure a constant predictor, which passes many INV and DIR tests trivially."""
    from beluga_core.analysis.report.data import read_report_data
    from beluga_core.analysis.report.degeneracy import degeneracy_rows, format_distribution, suite_mft_gold

    d_test: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    mft: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    data = read_report_data(store)
    suite_mft_gold(data)  # the same gold-aware rule and label names as the file reports (~1 s per suite)
    for row in degeneracy_rows(data):
        key = (row.task, row.config, row.method)
        if "D_test" in row.flags:
            d_test[key].append(f"D_test {format_distribution(row.iid)}")
        if "MFT" in row.flags and row.mft is not None and row.mft.top is not None:
            label, share = row.mft.top
            mft[key].append(f"{row.scenario} {row.mft.label_name(label)}: {100 * share:.1f} %")
    flagged = sorted(set(d_test) | set(mft))
    for key in flagged:
        parts = d_test[key] + ([f"MFT cases ({', '.join(mft[key])})"] if mft[key] else [])
        console.print(f"[yellow]degenerate[/] {key[0]} {key[1]}/{key[2]}: one label dominates on "
                      f"{'; '.join(parts)}", highlight=False)
    if flagged:
        console.print("(predicted-label shares; the Markdown/HTML report's degeneracy check has the details)",
                      style="dim")
