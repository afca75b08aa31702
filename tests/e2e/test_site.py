"""The result site (`beluga report STORE --format site --out DIR`): its shards hold exactly the store's rows, a real
headless Chromium walks it from file:// (heatmap cell → group → failing case, predictions checked against the
store), and hostile case text renders inert and readable.

The browser tests need Debian's chromium and chromium-driver and selenium (`.ci/run` installs them); they skip,
saying so, where either is missing. The site is the quick store's: `beluga run benchmarks/quick.toml --tiny`
(every configuration, scenario and held-out group of the quick run, at tiny sizes; the every-config test's run of
it, shared through the session). benchmarks/report/bench_site.py walks the full-size quick store the same way and checks
its predictions too. BELUGA_SITE_SHOTS=DIR saves the walk's screenshots into DIR (bench_site.py --screenshots does
it for docs/images/site/).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import ShippedTinyRuns
from store_builder import StoreBuilder, make_cases

from beluga_core.analysis.report.site_files import write_site
from beluga_core.cli.app import main
from beluga_core.store.rows import CaseRow
from benchmarks.report.site_browser import (
    ARM_KEY,
    Browser,
    check_walk,
    failing_cell,
    missing_reason,
    read_shard,
    walk_to_failing_case,
)


def decode(ch: str) -> int:
    cp = ord(ch)
    return cp - 0x30 - (0x800 if cp >= 0xE000 else 0)


def site_facts(site: Path) -> dict[tuple[int, str, str], tuple[str, str | None, str]]:
    """(arm, suite, case id) → (outcome, prediction, model id), decoded from every chunk shard."""
    _, manifest = read_shard(site / "data" / "site.js")
    names = {"p": "pass", "f": "fail", "s": "skip"}
    out: dict[tuple[int, str, str], tuple[str, str | None, str]] = {}
    for suite in manifest["suites"]:
        for g in suite["groups"]:
            for k in range(g["chunks"]):
                key, chunk = read_shard(site / "data" / f"s{suite['si']}" / f"g{g['gi']}-{k}.js")
                assert key == f"chunk/{suite['si']}/{g['gi']}/{k}"
                for arm, e in chunk["arms"].items():
                    assert len(e["o"]) == len(e["p"]) == len(e["m"]) == len(chunk["cases"])
                    for row, case in enumerate(chunk["cases"]):
                        if e["o"][row] == ".":
                            continue
                        pred = None if e["p"][row] == " " else e["pv"][decode(e["p"][row])]
                        model = e["mv"][decode(e["m"][row])][0]
                        k2 = (int(arm), suite["name"], case[0])
                        assert k2 not in out, f"{k2} twice in the site"
                        out[k2] = (names[e["o"][row]], pred, model)
    return out


def store_facts(store: Path, manifest: dict[str, Any], store_index: int = 0) -> dict[tuple[int, str, str],
                                                                                      tuple[str, str | None, str]]:
    arms = {tuple(a[k] for k in ARM_KEY): a["i"] for a in manifest["arms"] if a["store"] == store_index}
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(f"""SELECT {', '.join('m.' + k for k in ARM_KEY)}, o.suite, o.case_id, o.outcome, o.pred,
                                      o.model_id
                               FROM outcomes o JOIN models m USING (model_id) WHERE m.status = 'done'""").fetchall()
    return {(arms[tuple(r[:9])], r[9], r[10]): (r[11], r[12], r[13]) for r in rows}


@pytest.fixture(scope="module")
def quick_store(shipped_tiny_runs: ShippedTinyRuns) -> Path:
    run = shipped_tiny_runs.get("quick.toml")
    assert run.code == 0, f"{run.out[-3000:]}\n{run.err[-3000:]}"
    return run.store


@pytest.fixture(scope="module")
def real_site(quick_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    write_site(quick_store, out)
    return out


def test_the_site_holds_every_outcome_of_the_store_and_its_pass_rates(real_site: Path, quick_store: Path) -> None:
    store = quick_store
    _, manifest = read_shard(real_site / "data" / "site.js")
    assert site_facts(real_site) == store_facts(store, manifest)
    # The search index holds every case of the chunks, in their order.
    for suite in manifest["suites"]:
        _, shard = read_shard(real_site / "data" / f"suite-{suite['si']}.js")
        index = [row for n in range(shard["text_shards"])
                 for row in read_shard(real_site / "data" / f"s{suite['si']}" / f"t{n}.js")[1]]
        chunks = [[g["gi"], k, row, *c[:4]] for g in suite["groups"] for k in range(g["chunks"])
                  for row, c in enumerate(read_shard(real_site / "data" / f"s{suite['si']}" / f"g{g['gi']}-{k}.js")[1]
                                          ["cases"])]
        assert index == chunks and len(index) == suite["n_cases"]
    # Per-arm pass rates are the pass_rates view's rows, as they are.
    arm_of = {a["i"]: a for a in manifest["arms"]}
    with duckdb.connect(str(store), read_only=True) as con:
        view = {(tuple(r[:9]), r[9]): tuple(r[10:]) for r in con.execute(
            f"SELECT {', '.join(ARM_KEY)}, scoring_group, n_pass, n_fail, n_skip, pass_rate FROM pass_rates"
        ).fetchall()}
    for suite in manifest["suites"]:
        _, shard = read_shard(real_site / "data" / f"suite-{suite['si']}.js")
        got = {(tuple(arm_of[r[0]][k] for k in ARM_KEY), suite["groups"][r[1]]["name"]): tuple(r[2:])
               for r in shard["pass_rates"]}
        assert got == {k: v for k, v in view.items() if k[0][1] == suite["name"]}
    # The overview is the report's: Table 3 has the IID baseline first, the heatmap cells link to group pages.
    _, ov = read_shard(real_site / "data" / "overview-0.js")
    assert (ov["table3"]["rows"][0]["config"], ov["table3"]["rows"][0]["method"]) == ("iid", "vanilla")
    assert ov["heatmaps"] and all(r["arm"] is not None for h in ov["heatmaps"] for r in h["rows"])
    assert (real_site / "report-0" / "report.html").is_file()
    # Everything ships in the site: no CDN, no network; and no data ever goes through HTML parsing.
    for name in ("index.html", "assets/site.js", "assets/site.css"):
        text = (real_site / name).read_text(encoding="utf-8")
        assert not re.search(r"https?://|//cdn|@import", text), name
    script = (real_site / "assets" / "site.js").read_text(encoding="utf-8")
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", script, flags=re.S)
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", code)


def test_a_real_chromium_walks_heatmap_to_a_failing_case(real_site: Path, quick_store: Path) -> None:
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    store = quick_store
    href, name = failing_cell(real_site, store)
    shots = Path(os.environ["BELUGA_SITE_SHOTS"]) if os.environ.get("BELUGA_SITE_SHOTS") else None
    with Browser() as browser:
        walk = walk_to_failing_case(browser, real_site, href, shots)
    assert walk.group_title == name
    check_walk(real_site, store, walk, href)   # every model's outcome and prediction as the store has them
    assert all(t < 10_000 for t in walk.times_ms.values()), walk.times_ms


def test_the_same_site_works_from_a_static_http_server(real_site: Path) -> None:
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(real_site))
    handler.log_message = lambda *args: None  # type: ignore[method-assign,assignment]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        with Browser() as browser:
            browser.open(url)
            assert browser.driver.find_elements("css selector", "table.heat a.heat")
            browser.open(url, "#/case/0/0/0/0")
            assert browser.driver.find_elements("css selector", "table.models tbody tr")
    finally:
        server.shutdown()
        server.server_close()


HOSTILE_GROUP = '<b>bold</b> "quoted" & \u202eRTL\u202c group'
HOSTILE = {
    "h-script": '<script>window.__pwned = 1</script> great flight',
    "h-img": '"><img src=x onerror="window.__pwned=1"> it\'s "fine" & </td></tr>',
    "h-rtl": "\u202eRIGHT-TO-LEFT override\u202c then \u200fمرحبا\u200f back",
    "h-long": "long " + "x" * 10_000,
}


def _hostile_store(path: Path) -> None:
    cases = make_cases(3) + [CaseRow(cid, "MFT", {"class": "Negation", "functionality": HOSTILE_GROUP}, "2")
                             for cid in HOSTILE]
    b = StoreBuilder(path, cases)
    outcomes = {c.case_id: "fail" if c.case_id in HOSTILE else ("pass" if i % 3 else "fail")
                for i, c in enumerate(cases)}
    preds = {c.case_id: "0" for c in cases}
    iid = b.add("iid", "vanilla", "standard", outcomes, [True, False, True, True], case_preds=preds)
    b.add("iid-then-t", "vanilla", "functionality", {k: "pass" for k in outcomes}, case_preds=preds)
    specs = [(c.case_id, json.dumps({"id": c.case_id, "inputs": [HOSTILE.get(c.case_id, f"plain {c.case_id}")],
                                     "label": 2, "expectation": {"kind": "eq", "target": "label"}}))
             for c in cases]
    with duckdb.connect(str(path)) as con:
        con.executemany("INSERT INTO case_specs VALUES ('toy', ?, ?::JSON)", specs)
        con.executemany("INSERT INTO case_predictions VALUES (?, 'toy', ?, 0, ?, NULL)",
                        [(iid[0], cid, [0.7, 0.1, 0.2]) for cid in HOSTILE])
        text = HOSTILE["h-script"]
        con.execute("INSERT INTO attribution_inputs VALUES ('tok', 'd1', ?::JSON, ?::JSON, ?::JSON, ?, ?)",
                    [json.dumps(text), json.dumps(["[CLS]", "<script>", "great", "[SEP]"]),
                     json.dumps([[0, 0], [0, 8], [text.index("great"), text.index("great") + 5], [0, 0]]),
                     [-1, 0, 0, -1], [-1, 0, 1, -1]])
        con.execute("INSERT INTO attributions VALUES (?, 'toy', 'h-script', 0, 'ig', '{}', '0', '0', 'tok', 'd1', ?)",
                    [iid[0], [0.0, 0.9, -0.4, 0.0]])


def test_hostile_case_text_renders_inert_and_readable(tmp_path: Path) -> None:
    store, other, out = tmp_path / "hostile.duckdb", tmp_path / "other.duckdb", tmp_path / "site"
    _hostile_store(store)
    b = StoreBuilder(other, make_cases(3))
    b.add("iid", "vanilla", "standard", {c.case_id: "pass" for c in make_cases(3)})
    main(["report", str(store), "--format", "site", "--out", str(out), "--compare", str(other)])
    _, manifest = read_shard(out / "data" / "site.js")
    assert [s["name"] for s in manifest["stores"]] == ["hostile", "other"]
    assert {a["store"] for a in manifest["arms"]} == {0, 1}
    suite = manifest["suites"][0]
    gi = next(g["gi"] for g in suite["groups"] if g["name"] == HOSTILE_GROUP)
    _, chunk = read_shard(out / "data" / "s0" / f"g{gi}-0.js")
    texts = {c[0]: c[3][0] for c in chunk["cases"]}
    assert texts == HOSTILE                                     # the shard keeps the text exactly
    # Both stores' models on a case the two share.
    _, plain = read_shard(out / "data" / "s0" / "g0-0.js")
    assert {manifest["arms"][int(a)]["store"] for a in plain["arms"]} == {0, 1}
    assert site_facts(out).keys() >= store_facts(other, manifest, 1).keys()

    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with Browser() as browser:
        driver = browser.driver
        browser.open(out, f"#/group/0/{gi}?q=script")
        assert driver.execute_script("return document.querySelector('h1').textContent") == HOSTILE_GROUP
        listed = driver.execute_script("return [...document.querySelectorAll('table.cases tbody tr')]"
                                       ".map(tr => tr.cells[0].textContent)")
        assert listed == ["h-script"]
        browser.open(out, "#/search/0?q=%3Cscript%3E")       # the suite's search index, then the rows' chunks
        time.sleep(0.3)                                       # the outcome cells fill in from the chunks
        listed = driver.execute_script("return [...document.querySelectorAll('table.cases tbody tr')]"
                                       ".map(tr => [...tr.cells].map(td => td.textContent))")
        assert listed == [["h-script", HOSTILE["h-script"], "MFT", "positive", "fail negative"]]
        for row, cid in enumerate(c[0] for c in chunk["cases"]):
            browser.open(out, f"#/case/0/{gi}/0/{row}")
            shown = driver.execute_script("return [...document.querySelectorAll('div.text.full')]"
                                          ".map(d => d.textContent)")
            assert shown == [HOSTILE[cid]], cid
            assert driver.execute_script("return document.querySelector('h1').textContent") == cid
            assert driver.execute_script("return window.__pwned === undefined")
            markup = driver.execute_script("return document.querySelectorAll('main img, main script, main b').length")
            assert markup == 0
            models = driver.execute_script("return [...document.querySelectorAll('table.models tbody tr')].length")
            assert models == 2                                  # the IID model and the fold holding the group out
            if cid == "h-script":
                words = driver.execute_script("return [...document.querySelectorAll('.attr .word')]"
                                              ".map(w => w.textContent)")
                assert words[:4] == ["[CLS]", "<script>", "great", "[SEP]"]
                assert "negative 0.700" in driver.find_element("css selector", "table.models").text
        # The list shows a 10 kB input shortened, the case page all of it (checked above).
        browser.open(out, f"#/group/0/{gi}")
        previews = driver.execute_script("return [...document.querySelectorAll('table.cases td.text')]"
                                         ".map(td => td.textContent)")
        assert any(p.startswith("long xxx") and p.endswith("(10,005 characters)") for p in previews)
        assert driver.execute_script("return window.__pwned === undefined")


def test_site_refuses_bad_arguments_and_leaves_no_half_written_site(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.duckdb"
    b = StoreBuilder(store, make_cases(2))
    b.add("iid", "vanilla", "standard", {c.case_id: "pass" for c in make_cases(2)})
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    for args, says in ((["--format", "md", "--out", str(tmp_path / "x"), "--compare", str(store)], "--compare needs"),
                       (["--format", "site", "--out", str(foreign)], "must be a new or empty folder"),
                       (["--format", "site", "--out", str(tmp_path / "y"), "--compare", str(store)],
                        "the store itself"),
                       (["--format", "site", "--out", str(tmp_path / "z"), "--compare", str(tmp_path / "no.duckdb")],
                        "no such result store")):
        with pytest.raises(SystemExit) as exc:
            main(["report", str(store), *args])
        assert exc.value.code == 2
        assert says in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".wal")) == ["foreign", "s.duckdb"]
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    # A site is replaced by the next build.
    out = tmp_path / "site"
    first = write_site(store, out, full_report=False)
    again = write_site(store, out, full_report=False)
    assert first.n_files == again.n_files and (out / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".wal")) == ["foreign", "s.duckdb",
                                                                                          "site"]
