"""``beluga report STORE --format site --out DIR``: a static result site, from the heatmap down to every case.

The site works opened from the file system (``file://``, no server) and from any static host: Chromium blocks
fetch, XHR and workers on ``file://``, so every datum ships as a ``.js`` shard that a ``<script>`` tag loads
(``BELUGA.add("suite/0", {...})``), and the page (``index.html``, ``assets/site.js``, ``assets/site.css``, all
package data: no CDN) builds its DOM with ``textContent`` only, so case text is never markup.

What the pages show is read, not computed: the G table, the heatmaps, worst groups, regression, degeneracy,
cross-suite, alignment and ranking tables are the report's own sections (``sections``, laid out for the page by
``renderers.site``) over ``read_report_data`` (the store's views); per-arm pass rates are the ``pass_rates`` /
``cross_pass_rates`` views; cases, outcomes, predictions, probabilities, attributions and flips are store rows
(``site_cases``). Shards are cut per scoring group and at
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

from beluga_core.analysis.report.renderers.site import render_overview
from beluga_core.analysis.report.report_data import ReportData, read_report_data
from beluga_core.analysis.report.report_files import write_report
from beluga_core.analysis.report.section import pct
from beluga_core.analysis.report.sections import build_report
from beluga_core.analysis.report.site_cases import CHUNK, Arm, CaseShards, SuiteInfo
from beluga_core.core.errors import BelugaError
from beluga_core.store.opened import StoreArg, StoreHandle, held

ASSETS = Path(__file__).with_name("site_assets")
ASSET_FILES = ("site.js", "site.css")
MARKER = Path("data") / "site.js"       # what makes a folder a beluga site (replaced by the next build)
# Cases per search-index shard: a search over a whole suite reads the cases' text only (about a third of the
# chunks' bytes: no outcome strings), 20,000 cases (a few MB) per file.
TEXT_CHUNK = 20_000


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
                        render_overview(build_report(data), i, arms, suite_index,
                                        f"report-{i}/report.html" if full_report else None))
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
