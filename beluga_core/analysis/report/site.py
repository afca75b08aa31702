"""``beluga report STORE --format site --out DIR``: a static result site, from the heatmap down to every case.

The site works opened from the file system (``file://``, no server) and from any static host: Chromium blocks
fetch, XHR and workers on ``file://``, so every datum ships as a ``.js`` shard that a ``<script>`` tag loads
(``BELUGA.add("suite/0", {...})``), and the page (``index.html``, ``assets/site.js``, ``assets/site.css``, all
package data: no CDN) builds its DOM with ``textContent`` only, so case text is never markup.

What the pages show is read, not computed: Table 3, the heatmaps, worst groups, regression, degeneracy,
cross-suite, alignment and ranking tables are the report's own builders over ``read_report_data`` (the store's
views); per-arm pass rates are the ``pass_rates`` / ``cross_pass_rates`` views; cases, outcomes, predictions,
probabilities, attributions and flips are store rows (``site_cases``). Shards are cut per scoring group and at
most ``CHUNK`` cases, so a page paints its first rows after loading one small file whatever the store's size.

The site is built in a folder beside ``--out`` and moved into place when complete: an error leaves no
half-written site (and an earlier site at ``--out`` stays until the new one is whole).

Long: the site's data are one set of shards the page's script reads by name (overview, scenario pages, groups,
case chunks, the search index); writing them in one module keeps the names the script expects in one place.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from beluga_core.analysis.report.alignment import ALIGNMENT_NOTE, SIDES, build_alignment, interval_text
from beluga_core.analysis.report.attribution_tables import ATTRIBUTION_NOTE, failing_groups, word_list
from beluga_core.analysis.report.content import (
    CROSS_NOTE,
    MARKERS,
    ONLY_NOTE,
    PARTIAL,
    ReportContent,
    degeneracy_rule,
    pct,
    worst_groups_of,
)
from beluga_core.analysis.report.cross_tables import basis, build_cross_tables, build_only_matrices
from beluga_core.analysis.report.degeneracy import degeneracy_rows, format_distribution
from beluga_core.analysis.report.fewshot_tables import (
    FEWSHOT_NOTE,
    HEADER,
    SEEDS_HEADER,
    SEEDS_NOTE,
    build_fewshot,
)
from beluga_core.analysis.report.figures import heatmaps
from beluga_core.analysis.report.markdown import SIGNIFICANCE_LEGEND, _rate, seed_legend
from beluga_core.analysis.report.regression import REGRESSION_NOTE, VOTE_NOTE, build_regression
from beluga_core.analysis.report.report_data import ReportData, read_report_data
from beluga_core.analysis.report.report_files import write_report
from beluga_core.analysis.report.site_cases import CHUNK, Arm, CaseShards, SuiteInfo
from beluga_core.analysis.report.table3 import (
    AVG,
    Cell,
    Table3,
    build_table3,
    crossing_notes,
    interval_notes,
    missing_pm_notes,
)
from beluga_core.core.errors import BelugaError
from beluga_core.store.opened import StoreArg, StoreHandle, held

ASSETS = Path(__file__).with_name("site_assets")
ASSET_FILES = ("site.js", "site.css")
MARKER = Path("data") / "site.js"       # what makes a folder a beluga site (replaced by the next build)
# Cases per search-index shard: a search over a whole suite reads the cases' text only (about a third of the
# chunks' bytes: no outcome strings), 20,000 cases (a few MB) per file.
TEXT_CHUNK = 20_000
TableCell = str | list[str] | None      # text, or [text, href]


@dataclass
class SiteSummary:
    path: Path                # the site's index.html
    n_files: int
    n_bytes: int
    largest: tuple[str, int]  # the largest data shard and its size
    n_cases: int
    n_arms: int
    seconds: float

    def line(self) -> str:
        return (f"wrote the site {self.path} ({self.n_files} files, {self.n_bytes / 1e6:.1f} MB; {self.n_cases} "
                f"case(s) × {self.n_arms} arm(s); largest shard {self.largest[0]} {self.largest[1] / 1e3:.0f} kB; "
                f"{self.seconds:.1f} s)")


# -- writing ----------------------------------------------------------------------------------------------------------

def _clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null (the page shows "—"), tuples lists."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return value


def write_shard(root: Path, rel: str, key: str, obj: Any) -> None:
    """``root/rel`` as ``BELUGA.add(key, obj);``. A lone surrogate in case text (possible in Python strings) is
    written as its ``\\uXXXX`` escape, which is what it is inside a JSON string literal."""
    text = f"BELUGA.add({json.dumps(key)},{json.dumps(_clean(obj), ensure_ascii=False, separators=(',', ':'))});\n"
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8", errors="backslashreplace"))


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise BelugaError("--out must be a folder (new, empty, or a site an earlier `beluga report --format site` "
                          "wrote); this is a file", source=out)
    if out.exists() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BelugaError("--out must be a new or empty folder, or a site an earlier `beluga report --format site` "
                          "wrote (it is replaced); this one holds other files", source=out)


def write_site(store: StoreArg, out: Path, *, variant: str | None = None, compare: StoreArg | None = None,
               full_report: bool = True, progress: Callable[[str], None] | None = None) -> SiteSummary:
    """Build the site of ``store`` (and ``compare``, a second store on the same site) into ``out``; each an open
    store, or a path opened for this call."""
    started = time.perf_counter()
    sources = [store] + ([compare] if compare is not None else [])
    paths = [s.path if isinstance(s, StoreHandle) else Path(s) for s in sources]
    for s in paths:
        if not s.exists():
            raise BelugaError("no such result store", source=s)
    if compare is not None and paths[1].resolve() == paths[0].resolve():
        raise BelugaError("--compare names the store itself; give another store", source=paths[1])
    _check_out(out)
    say = progress or (lambda _: None)
    stage = out.parent / f".{out.name}.building-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        with contextlib.ExitStack() as held_open:
            stores = [held_open.enter_context(held(s)) for s in sources]
            n_cases, n_arms = _build(stores, stage, variant, full_report, say)
        if out.exists():
            shutil.rmtree(out)
        stage.rename(out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    files = [p for p in out.rglob("*") if p.is_file()]
    shards = [p for p in files if p.parts[-2:-1] != ("assets",) and p.suffix == ".js"]
    largest = max(((p.relative_to(out).as_posix(), p.stat().st_size) for p in shards), key=lambda x: x[1],
                  default=("", 0))
    return SiteSummary(out / "index.html", len(files), sum(p.stat().st_size for p in files), largest, n_cases,
                       n_arms, time.perf_counter() - started)


def _build(stores: list[StoreHandle], root: Path, variant: str | None, full_report: bool,
           say: Callable[[str], None]) -> tuple[int, int]:
    (root / "assets").mkdir()
    for name in ASSET_FILES:
        shutil.copyfile(ASSETS / name, root / "assets" / name)
    shutil.copyfile(ASSETS / "index.html", root / "index.html")
    paths = [s.path for s in stores]
    names = _store_names(paths)
    datas: list[ReportData] = []
    for i, s in enumerate(stores):
        say(f"reading the report views of {s.path}")
        data = read_report_data(s, variant=variant)
        datas.append(data)
        if full_report:
            say(f"drawing the full report of {s.path}")
            write_report(s, root / f"report-{i}", "html", data.variant, data)
    say("reading cases and outcomes")
    shards = CaseShards(paths, [d.variant for d in datas], [d.layouts for d in datas])
    try:
        arms, suites = shards.arms, shards.suites
        suite_index = {x.name: x for x in suites}
        for i, data in enumerate(datas):
            write_shard(root, f"data/overview-{i}.js", f"overview/{i}",
                        overview(data, i, arms, suite_index, f"report-{i}/report.html" if full_report else None))
        several = len(stores) > 1
        manifest = {
            "title": " vs ".join(names), "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "chunk": CHUNK,
            "stores": [{"name": n, "path": str(s), "variant": d.variant} for n, s, d in zip(names, paths, datas,
                                                                                             strict=True)],
            "arms": [a.as_json(several, names) for a in arms],
            "suites": [{"si": x.index, "name": x.name, "label_space": x.label_space, "scoring_level": x.scoring_level,
                        "parent_level": x.parent_level, "n_cases": x.n_cases, "groups": x.groups, "arms": x.arms}
                       for x in suites],
        }
        write_shard(root, MARKER.as_posix(), "site", manifest)
        for info in suites:
            say(f"writing the cases of suite {info.name} ({info.n_cases} cases)")
            _suite_shards(shards, info, datas, arms, root)
    finally:
        shards.close()
    return sum(info.n_cases for info in suites), len(arms)


def _store_names(stores: list[Path]) -> list[str]:
    names = [s.stem for s in stores]
    if len(set(names)) < len(names):
        names = [str(s) for s in stores]
    return names


def _suite_shards(shards: CaseShards, suite: SuiteInfo, datas: list[ReportData], arms: list[Arm], root: Path) -> None:
    strings = shards.arm_strings(suite)
    probs = shards.probabilities(suite)
    attrs = shards.attributions(suite)
    extras: dict[str, str] = {}
    text: list[list[Any]] = []          # the search index: the cases without their models' outcomes
    n_text = 0
    for (gi, chunk), cases in shards.cases(suite):
        write_shard(root, f"data/s{suite.index}/g{gi}-{chunk}.js", f"chunk/{suite.index}/{gi}/{chunk}",
                    {"cases": cases, "arms": strings.get((gi, chunk), {})})
        text += [[gi, chunk, row, c[0], c[1], c[2], c[3]] for row, c in enumerate(cases)]
        while len(text) >= TEXT_CHUNK:
            write_shard(root, f"data/s{suite.index}/t{n_text}.js", f"text/{suite.index}/{n_text}", text[:TEXT_CHUNK])
            text, n_text = text[TEXT_CHUNK:], n_text + 1
        flags = ""
        if (gi, chunk) in probs:
            write_shard(root, f"data/s{suite.index}/p{gi}-{chunk}.js", f"probs/{suite.index}/{gi}/{chunk}",
                        probs[(gi, chunk)])
            flags += "p"
        if (gi, chunk) in attrs:
            write_shard(root, f"data/s{suite.index}/x{gi}-{chunk}.js", f"attr/{suite.index}/{gi}/{chunk}",
                        attrs[(gi, chunk)])
            flags += "x"
        if flags:
            extras[f"{gi}-{chunk}"] = flags
    if text:
        write_shard(root, f"data/s{suite.index}/t{n_text}.js", f"text/{suite.index}/{n_text}", text)
        n_text += 1
    write_shard(root, f"data/suite-{suite.index}.js", f"suite/{suite.index}",
                {"pass_rates": shards.pass_rates(suite), "summary": _group_summary(suite, datas, arms),
                 "extras": extras, "text_shards": n_text})


def _group_summary(suite: SuiteInfo, datas: list[ReportData], arms: list[Arm]) -> list[dict[str, Any]]:
    """Per store, configuration-method and scenario, each group's pass rate as the report shows it (the
    ``pass_rate_summary`` view: means over replicates) with its 95 % interval over seeds and cases where
    ``beluga analyze`` stored one (``replicate_summary``), for the group page."""
    gi = {g["name"]: g["gi"] for g in suite.groups}
    out: dict[tuple[int, str, str, str], dict[str, Any]] = {}
    for i, data in enumerate(datas):
        intervals: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        for r in data.replicates:
            if r["statistic"] == "pass_rate" and r["base_config"] is None and r["suite"] == suite.name:
                intervals.setdefault((r["config"], r["method"], r["scenario"], r["grp"]), r)
        for r in data.pass_rates:
            if r["suite"] != suite.name or r["scoring_group"] not in gi:
                continue
            key = (i, r["config"], r["method"], r["scenario"])
            row = out.setdefault(key, {"store": i, "task": r["task"], "config": r["config"], "method": r["method"],
                                       "scenario": r["scenario"], "arms": [], "groups": {}})
            interval = intervals.get((r["config"], r["method"], r["scenario"], r["scoring_group"]))
            row["groups"][str(gi[r["scoring_group"]])] = {
                "rate": r["pass_rate"], "t": pct(r["pass_rate"]), "excluded": bool(r["excluded"]),
                "n_replicates": r["n_replicates"],
                "iv": None if interval is None or interval["lo"] is None else
                [pct(interval["lo"]), pct(interval["hi"]), interval["interval_label"], interval["status"]]}
    for a in arms:
        summary = out.get((a.store, a.key["config"], a.key["method"], a.key["scenario"]))
        if summary is not None and a.key["suite"] == suite.name:
            summary["arms"].append(a.index)
    return list(out.values())


# -- the overview: the report's content as data --------------------------------------------------------------------

def _table(title: str, header: list[str], rows: list[list[TableCell]], note: str = "",
           numeric_from: int = 99) -> dict[str, Any]:
    return {"title": title, "note": note, "header": header, "rows": rows, "numeric_from": numeric_from}


def _cell_text(cell: Cell) -> str:
    text = pct(cell.value)
    if cell.pm is not None and cell.value is not None:
        text += f" ± {pct(cell.pm)}"
    if cell.mark:
        text += f" {MARKERS[cell.mark]}"
    if cell.partial:
        text += f" {PARTIAL}"
    return text


def _table3(t: Table3) -> dict[str, Any]:
    return {
        "legend": seed_legend(t).replace("**Bold**", "Bold") if t.n_seeds >= 2 else
        SIGNIFICANCE_LEGEND.replace("**Bold**", "Bold"),
        "notes": [*interval_notes(t), *missing_pm_notes(t), *crossing_notes(t)],
        "columns": [{"task": c.task, "scenario": c.scenario, "label": c.label, "g": c.is_g} for c in t.columns],
        "rows": [{"config": p[0], "method": p[1],
                  "cells": [{"t": _cell_text(t.cell(p, c)), "mark": t.cell(p, c).mark,
                             "bold": t.cell(p, c).bold and t.cell(p, c).value is not None,
                             "from": t.cell(p, c).shown_from} for c in t.columns]} for p in t.rows],
        "avg": AVG,
    }


def _arm_of(arms: list[Arm], store: int, task: str, suite: str, config: str, method: str, scenario: str) -> int | None:
    return next((a.index for a in arms if a.store == store and a.key["task"] == task and a.key["suite"] == suite
                 and a.key["config"] == config and a.key["method"] == method and a.key["scenario"] == scenario), None)


def overview(data: ReportData, store: int, arms: list[Arm], suites: dict[str, SuiteInfo],
             report: str | None) -> dict[str, Any]:
    """One store's report as the site's overview shows it; every number comes from the report's builders."""
    table = build_table3(data)
    maps = heatmaps(data)
    cross = build_cross_tables(data)
    regression, _ = build_regression(data)
    content = ReportContent(data, table, [], degeneracy_rows(data), cross=cross, only=build_only_matrices(data),
                            regression=regression, failing=failing_groups(data.failing_words),
                            alignment=build_alignment(data.alignment_units),
                            fewshot=build_fewshot(data.fewshot, data.fewshot_pairs, None, data.grid_on_seen,
                                                  data.fewshot_seeds))
    heat = []
    for h in maps:
        site_suite = suites.get(h.suite)
        gi = {g["name"]: g["gi"] for g in site_suite.groups} if site_suite else {}
        heat.append({
            "task": h.task, "suite": h.suite, "si": site_suite.index if site_suite else None,
            "scenario": h.scenario, "groups": [gi.get(g.name) for g in h.layout.groups],
            "numbers": [g.number for g in h.layout.groups], "names": [g.name for g in h.layout.groups],
            "test_types": [g.test_type for g in h.layout.groups], "parents": [g.parent for g in h.layout.groups],
            "excluded": sorted(h.excluded), "scoring_level": h.layout.scoring_level,
            "rows": [{"config": p[0], "method": p[1], "from": h.shown_from.get(p),
                      "on": h.cases_of if p in h.shown_from else None,
                      "arm": _arm_of(arms, store, h.task, h.suite, *p, h.shown_from.get(p, h.scenario)),
                      "v": [None if math.isnan(x) else round(float(x), 4) for x in h.values[i]]}
                     for i, p in enumerate(h.rows)]})
    worst = worst_groups_of(data, maps)
    keys = list(worst)
    several = len(table.tasks) > 1
    worst_rows: list[list[TableCell]] = []
    for p in table.rows:
        if any(p in worst[k] for k in keys):
            cells: list[TableCell] = [p[0], p[1]]
            for k in keys:
                w = worst[k].get(p)
                cells.append("—" if w is None or w.value is None else f"{pct(w.value)} (#{w.group})")
            worst_rows.append(cells)
    sections = [_table("Worst-group pass rate per scenario (%)",
                       ["configuration", "method", *[f"{k[0]}: {k[2]}" if several else k[2] for k in keys]],
                       worst_rows, "The lowest pass rate among the scoring groups (G exclusions left out), with the "
                       "group's number.", 2)] if worst_rows else []
    if regression:
        sections.append(_table(
            "Regression: negative flips", ["configuration", "method", "scenario", "D_test NFR", "D_test PFR",
                                           "suite NFR", "suite PFR"],
            [[r.config, r.method + (" †" if r.vote_share else ""), r.scenario, _rate(r.values.get("iid"), "nfr"),
              _rate(r.values.get("iid"), "pfr"), _rate(r.values.get("suite"), "nfr"),
              _rate(r.values.get("suite"), "pfr")] for r in regression],
            REGRESSION_NOTE + (" " + VOTE_NOTE if any(r.vote_share for r in regression) else ""), 3))
    if content.failing:
        sections.append(_table(
            "Attributions of failing groups", ["configuration", "method", "scenario", "group", "attribution",
                                               "failing cases", "most attributed", "least attributed"],
            [[g.config, g.method, g.scenario, g.group, g.attribution, str(g.n_cases), word_list(g.most),
              word_list(g.least)] for g in content.failing], ATTRIBUTION_NOTE))
    sections.append(_table(
        "Degeneracy check", ["task", "configuration", "method", "scenario", "D_test predicted (gold)",
                             "MFT cases predicted (gold)", "flag"],
        [[r.task, r.config, r.method, r.scenario, format_distribution(r.iid), format_distribution(r.mft),
          "collapsed: " + ", ".join(r.flags) if r.flags else ""] for r in content.degeneracy],
        degeneracy_rule(content)))
    return {
        "store": store, "name": data.store.name, "path": str(data.store), "variant": data.variant,
        "status": content.status_lines(), "report": report, "table3": _table3(table), "heatmaps": heat,
        "sections": sections, "alignment": _alignment_sections(content, suites), "ranking": _ranking(content),
        "scenarios": [{k: r[k] for k in ("task", "suite", "config", "method", "scenario", "n_replicates",
                                         "n_incomplete")} | {f"{k}_t": pct(r[k]) for k in ("g", "s_suite", "s_iid")}
                      for r in data.scenario_scores],
        "seeds": [[r["task"], r["config"], r["method"], r["scenario"], r["seed"], pct(r["g"])]
                  for r in data.seed_scores],
    }


def _group_href(suites: dict[str, SuiteInfo], suite: str, group: str) -> str | None:
    s = suites.get(suite)
    g = next((g for g in s.groups if g["name"] == group), None) if s else None
    return None if s is None or g is None else f"#/group/{s.index}/{g['gi']}"


def _alignment_sections(content: ReportContent, suites: dict[str, SuiteInfo]) -> list[dict[str, Any]]:
    out = []
    for t in content.cross:
        rows: list[list[TableCell]] = []
        for p in t.rows:
            cells: list[TableCell] = [p[0], p[1]]
            for c in t.columns:
                cell = t.cell(p, c)
                mark = f" {MARKERS[cell.mark]}" if cell.mark else ""
                cells.append(f"{pct(cell.g)}{mark} ({pct(cell.s)})")
            rows.append(cells)
        out.append(_table(t.title, ["configuration", "method", *[f"{c} (mapped)" if basis(c) else c
                                                                 for c in t.columns]],
                          rows, "G on the eval suite (s on the eval suite), %. " + CROSS_NOTE, 2))
    for a in content.alignment:
        header = ["eval group", f"maps to ({a.level})"]
        for c, m, sc in a.models:
            header += [f"{c}/{m} · {sc}: templates", "eval"]
        rows = []
        for row in a.rows:
            eval_href, mapped_href = _group_href(suites, a.eval_suite, row[0]), _group_href(suites, a.suite, row[1])
            rows.append([[row[0], eval_href] if eval_href else row[0], [row[1], mapped_href] if mapped_href else row[1],
                         *[interval_text(a.cell(row, model, side)) for model in a.models for side in SIDES]])
        out.append(_table(a.title, header, rows, "Pass rate, % [95 % interval]. " + ALIGNMENT_NOTE, 2))
    for matrix in content.only:
        out.append(_table(matrix.title, [f"trained on ({matrix.level})", *matrix.groups],
                          [[name, *[pct(float(v)) for v in matrix.values[i]]] for i, name in enumerate(matrix.trained)],
                          ONLY_NOTE, 1))
    return out


def _ranking(content: ReportContent) -> list[dict[str, Any]]:
    out = []
    for ft in content.fewshot:
        out.append(_table(ft.title, HEADER, [list(r) for r in ft.rows], " ".join([FEWSHOT_NOTE, *ft.notes]), 1))
        if ft.seed_rows:
            out.append(_table(f"{ft.title}: over seeds", SEEDS_HEADER, [list(r) for r in ft.seed_rows], SEEDS_NOTE,
                              1))
    return out
