"""Drive the result site (`beluga report --format site`) in a real headless Chromium, from file://.

Debian's `chromium` and `chromium-driver` (apt-get install -y chromium chromium-driver; `.ci/run` installs them)
at explicit paths, with selenium; nothing is downloaded. Shared by benchmarks/report/bench_site.py (page-load times, the
screenshots in docs/images/site/) and tests/e2e/test_site.py (the walk from a heatmap cell down to a failing case).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = ("chromium", "chromium-browser")
DRIVERS = ("chromedriver", "/usr/lib/chromium/chromedriver")
WIDTH, HEIGHT = 1400, 1000


def browser_paths() -> tuple[str, str] | None:
    """(chromium, chromedriver) as Debian installs them, or None when either is missing."""
    chromium = next((p for p in map(shutil.which, CHROMIUM) if p), None)
    driver = next((p for p in (shutil.which(d) or (d if Path(d).is_file() else None) for d in DRIVERS) if p), None)
    return (chromium, driver) if chromium and driver else None


def missing_reason() -> str | None:
    """Why the browser cannot run here (None: it can)."""
    if browser_paths() is None:
        return ("chromium or chromium-driver is not installed (Debian: apt-get install -y chromium chromium-driver; "
                ".ci/run installs them)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


class Browser:
    """One headless Chromium with a fresh profile (so nothing is cached from an earlier load)."""

    def __init__(self, width: int = WIDTH, height: int = HEIGHT) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        paths = browser_paths()
        if paths is None:
            raise RuntimeError(missing_reason() or "no browser")
        self.profile = tempfile.mkdtemp(prefix="beluga-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = paths[0]
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                    "--hide-scrollbars", f"--window-size={width},{height}", f"--user-data-dir={self.profile}"):
            options.add_argument(arg)
        self.driver = webdriver.Chrome(service=Service(executable_path=paths[1]), options=options)

    def close(self) -> None:
        try:
            self.driver.quit()
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, site: Path | str, route: str = "") -> float:
        """Load the site's page at ``route`` (a hash route, e.g. "#/group/0/3"); ``site`` is the site's folder
        (opened from file://) or the URL of its index.html. Returns the milliseconds from the navigation's start to
        the page's first rows on screen (the page's ``beluga:painted`` mark)."""
        # A load that only changes the hash is a same-document navigation: forget the last page's mark first.
        self.driver.execute_script("document.body && document.body.removeAttribute('data-painted')")
        url = site if isinstance(site, str) else (site / "index.html").resolve().as_uri()
        self.driver.get(url + route)
        return self.wait_painted()

    def wait_painted(self, timeout: float = 60.0) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            label = self.driver.execute_script("return document.body && document.body.getAttribute('data-painted')")
            if label:
                if label == "error":
                    raise RuntimeError("the page reported an error: " + self.driver.find_element("css selector",
                                                                                             "p.error").text)
                return float(self.driver.execute_script(
                    "const m = performance.getEntriesByName('beluga:painted'); return m[m.length - 1].startTime"))
            time.sleep(0.02)
        raise TimeoutError(f"the page did not paint within {timeout:.0f} s: {self.driver.current_url}")

    def click(self, element: Any) -> float:
        """Click ``element`` (a link or control that changes the page) and wait for the new page's rows."""
        self.driver.execute_script("document.body.removeAttribute('data-painted')")
        element.click()
        return self.wait_painted()

    def shot(self, path: Path | None) -> None:
        """A screenshot of the whole page (the window grown to the page's height) into ``path``."""
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        height = int(self.driver.execute_script("return Math.min(document.documentElement.scrollHeight, 6000)"))
        self.driver.set_window_size(WIDTH, max(height, HEIGHT))
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(WIDTH, HEIGHT)


@dataclass
class Walk:
    """What the walk from a heatmap cell down to a failing case saw."""

    group_title: str = ""
    case_id: str = ""
    rows: list[dict[str, str]] = field(default_factory=list)   # the case page's models table
    times_ms: dict[str, float] = field(default_factory=dict)


def walk_to_failing_case(browser: Browser, site: Path, cell_href: str, shots: Path | None = None) -> Walk:
    """Overview → the heatmap cell whose link ends with ``cell_href`` → its group page, failing cases only → the
    first failing case; screenshots of each step into ``shots`` (none when None)."""
    from selenium.webdriver.common.by import By

    walk = Walk()
    walk.times_ms["overview"] = browser.open(site)
    browser.shot(shots / "1-overview.png" if shots else None)
    cells = [a for a in browser.driver.find_elements(By.CSS_SELECTOR, "table.heat a.heat")
             if (a.get_attribute("href") or "").endswith(cell_href)]
    if not cells:
        raise AssertionError(f"no heatmap cell links to {cell_href}")
    browser.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cells[0])
    walk.times_ms["group"] = browser.click(cells[0])
    walk.group_title = browser.driver.find_element(By.TAG_NAME, "h1").text
    browser.shot(shots / "2-group.png" if shots else None)
    failing = browser.driver.find_element(By.CSS_SELECTOR, "form.filters input[name=fail]")
    if not failing.is_selected():
        walk.times_ms["failing"] = browser.click(failing)
    browser.shot(shots / "3-failing-cases.png" if shots else None)
    first = browser.driver.find_element(By.CSS_SELECTOR, "table.cases tbody tr td a")
    walk.times_ms["case"] = browser.click(first)
    walk.case_id = browser.driver.find_element(By.TAG_NAME, "h1").text
    browser.shot(shots / "4-case.png" if shots else None)
    header = [th.text for th in browser.driver.find_elements(By.CSS_SELECTOR, "table.models thead th")]
    for tr in browser.driver.find_elements(By.CSS_SELECTOR, "table.models tbody tr"):
        cells_text = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        row = dict(zip(header, cells_text, strict=True))
        row["model id"] = row.get("the model (fold)", "").split("\n")[0]
        walk.rows.append(row)
    return walk


def read_shard(path: Path) -> tuple[str, Any]:
    """The key and the value of one data shard (`BELUGA.add("key", {...});`)."""
    text = path.read_text(encoding="utf-8")
    head = "BELUGA.add("
    if not text.startswith(head) or not text.endswith(");\n"):
        raise ValueError(f"{path} is not one BELUGA.add call")
    key, end = json.JSONDecoder().raw_decode(text, len(head))
    return key, json.loads(text[end + 1:-3])


def failing_cell(site: Path, store: Path) -> tuple[str, str]:
    """(the route of a heatmap cell, its group's name): the first cell, in page order, whose row's models fail some
    case of its group, by the store's rows (`outcomes`)."""
    import duckdb

    _, manifest = read_shard(site / "data" / "site.js")
    _, ov = read_shard(site / "data" / "overview-0.js")
    arms = {a["i"]: a for a in manifest["arms"]}
    cols = ("task", "suite", "model_name", "config", "method", "variant", "scenario", "seed", "split_seed")
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute(f"""SELECT DISTINCT {', '.join('m.' + k for k in cols)}, c.scoring_group
                               FROM outcomes o JOIN models m USING (model_id)
                               JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
                               WHERE m.status = 'done' AND o.outcome = 'fail'""").fetchall()
    failing = {(tuple(r[:9]), r[9]) for r in rows}
    for h in ov["heatmaps"]:
        for r in h["rows"]:
            key = tuple(arms[r["arm"]][k] for k in cols)
            for j, gi in enumerate(h["groups"]):
                if (key, h["names"][j]) in failing:
                    return f"#/group/{h['si']}/{gi}?arm={r['arm']}", h["names"][j]
    raise AssertionError("no heatmap row fails any case of its groups")


ARM_KEY = ("task", "suite", "model_name", "config", "method", "variant", "scenario", "seed", "split_seed")


def check_walk(site: Path, store: Path, walk: Walk, cell_href: str) -> None:
    """The case page the walk ended on shows exactly the store's rows for that case (every model's outcome and
    prediction, labels by name), at least one failing, the cell's own models among them; AssertionError if not."""
    import duckdb

    _, manifest = read_shard(site / "data" / "site.js")
    si, arm = int(cell_href.split("/")[2]), int(cell_href.split("arm=")[1])
    suite = manifest["suites"][si]
    label_space = suite["label_space"]
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("""SELECT o.model_id, o.outcome, o.pred FROM outcomes o JOIN models m USING (model_id)
                              WHERE m.status = 'done' AND o.suite = ? AND o.case_id = ?""",
                           [suite["name"], walk.case_id]).fetchall()

    def label(pred: str | None) -> str:
        return "—" if pred is None else label_space[int(pred)] if pred.isdigit() else pred

    shown = {(r["model id"], r["outcome"], r["prediction"]) for r in walk.rows}
    expected = {(model, outcome, label(pred)) for model, outcome, pred in rows}
    if shown != expected or not shown:
        raise AssertionError(f"case {walk.case_id}: the page shows {sorted(shown)}, the store has {sorted(expected)}")
    if not any(o == "fail" for _, o, _ in shown):
        raise AssertionError(f"case {walk.case_id}: no model fails it, though the walk chose failing cases")
    chosen = [r for r in walk.rows if r["model"] == manifest["arms"][arm]["label"]]
    if not chosen or chosen[0]["outcome"] != "fail":
        raise AssertionError(f"case {walk.case_id}: the heatmap cell's own models do not fail it: {chosen}")
