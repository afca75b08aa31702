"""Significance tests (docs/method.md, "Significance"): exactness of the sign test, the randomization test against
a plain loop
implementation, reproducibility, hand-made stores with known answers, staleness, the CLI and speed."""

from __future__ import annotations

import json
import math
import random
import re
from datetime import datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest
from helpers import REPO
from scipy.stats import binomtest
from store_builder import StoreBuilder, copy_of, known_store, make_cases, perturb, random_outcomes

from beluga_core.analysis.significance import (
    IidCounts,
    Stratum,
    SuiteCounts,
    analyze_store,
    compare,
    randomization_test,
    sign_test,
)
from beluga_core.analysis.significance.tests_on_counts import OUTCOMES, comparison_rng
from beluga_core.cli.app import main
from beluga_core.store.opened import open_handle
from beluga_core.store.significance import SignificanceWriter
from beluga_core.store.writer import StoreWriter

ROUNDS = 2000


# ----------------------------------------------------------------------------------- the plain reference


def plain_g(outcomes: list[tuple[str, str]], correct: list[bool]) -> float:
    """G from (group, outcome) pairs and per-example correctness, the obvious way."""
    passes: dict[str, int] = {}
    evaluable: dict[str, int] = {}
    for group, o in outcomes:
        passes.setdefault(group, 0)
        evaluable.setdefault(group, 0)
        if o != "skip":
            evaluable[group] += 1
            passes[group] += o == "pass"
    rates = [passes[g] / evaluable[g] for g in passes if evaluable[g] > 0]
    if not rates or not correct:
        return math.nan
    s_t = sum(rates) / len(rates)
    s_iid = sum(correct) / len(correct)
    return 0.0 if s_t + s_iid == 0 else 2 * s_t * s_iid / (s_t + s_iid)


def plain_randomization(strata: list[tuple[list[tuple[str, str, str]], int]],
                        iid: list[list[tuple[bool, bool]]], weights: list[float], rounds: int,
                        seed: int) -> float:
    """Loop over rounds, cases and examples, flipping a coin wherever A and B differ (docs/method.md, "Significance").

    ``strata``: ([(group, A outcome, B outcome)], iid unit); ``iid``: per unit [(A correct, B correct)].
    """
    rng = random.Random(seed)

    def statistic(swap_cases: list[list[bool]], swap_iid: list[list[bool]]) -> float:
        total = 0.0
        for (cases, unit), w, sw in zip(strata, weights, swap_cases, strict=True):
            a = [(g, ob if s else oa) for (g, oa, ob), s in zip(cases, sw, strict=True)]
            b = [(g, oa if s else ob) for (g, oa, ob), s in zip(cases, sw, strict=True)]
            ca = [(y if s else x) for (x, y), s in zip(iid[unit], swap_iid[unit], strict=True)]
            cb = [(x if s else y) for (x, y), s in zip(iid[unit], swap_iid[unit], strict=True)]
            total += w * (plain_g(a, ca) - plain_g(b, cb))
        return total

    observed = statistic([[False] * len(c) for c, _ in strata], [[False] * len(u) for u in iid])
    count = 0
    for _ in range(rounds):
        swap_cases = [[oa != ob and rng.random() < 0.5 for _, oa, ob in cases] for cases, _ in strata]
        swap_iid = [[x != y and rng.random() < 0.5 for x, y in unit] for unit in iid]
        if abs(statistic(swap_cases, swap_iid)) >= abs(observed) - 1e-12:
            count += 1
    return (count + 1) / (rounds + 1)


def to_counts(cases: list[tuple[str, str, str]]) -> SuiteCounts:
    rows: dict[tuple[str, str, str], int] = {}
    for key in cases:
        rows[key] = rows.get(key, 0) + 1
    return SuiteCounts.from_rows([(*k, n) for k, n in rows.items()])


def to_iid(pairs: list[tuple[bool, bool]]) -> IidCounts:
    return IidCounts(n11=sum(a and b for a, b in pairs), n10=sum(a and not b for a, b in pairs),
                     n01=sum(b and not a for a, b in pairs), n00=sum(not a and not b for a, b in pairs))


def paired_data(seed: int, groups: int, per_group: int, n_iid: int, shift: float) -> tuple[list, list]:
    """B random; A differs on some cases / examples, better by about ``shift``."""
    rng = random.Random(seed)
    cases = []
    for g in range(groups):
        for _ in range(per_group):
            ob = rng.choices(OUTCOMES, (0.5, 0.35, 0.15))[0]
            # About 30 % of the cases are redrawn for A, leaning towards pass by ``shift``.
            oa = rng.choices(OUTCOMES, (0.5 + shift, 0.35 - shift, 0.15))[0] if rng.random() < 0.3 else ob
            cases.append((f"g{g}", oa, ob))
    iid = []
    for _ in range(n_iid):
        b = rng.random() < 0.75
        a = (rng.random() < 0.75 + shift) if rng.random() < 0.3 else b
        iid.append((a, b))
    return cases, iid


def mc_tolerance(p: float, rounds: int) -> float:
    # Two independent estimates of the same p: their difference has sd sqrt(2 p (1 - p) / R).
    return 4.5 * math.sqrt(2 * max(p * (1 - p), 0.01) / rounds) + 2 / rounds


# ----------------------------------------------------------------------------------------- pure tests


def test_sign_test_equals_scipy_exactly() -> None:
    for n in [1, 2, 3, 7, 10, 25, 100, 436, 1000]:
        for k in sorted({0, 1, n // 3, n // 2, n // 2 + 1, n - 1, n}):
            assert sign_test(k, n) == binomtest(k, n, 0.5).pvalue
    assert sign_test(0, 0) == 1.0


@pytest.mark.parametrize("seed,shift", [(1, 0.08), (2, 0.12), (3, 0.05)])
def test_randomization_matches_plain_loop(seed: int, shift: float) -> None:
    cases, iid = paired_data(seed, groups=4, per_group=25, n_iid=60, shift=shift)
    ours = randomization_test([to_iid(iid)], [Stratum(to_counts(cases), 0)], rounds=ROUNDS,
                              rng=np.random.default_rng(seed))
    plain = plain_randomization([(cases, 0)], [iid], [1.0], ROUNDS, seed)
    assert ours.p_g is not None
    assert abs(ours.p_g - plain) <= mc_tolerance(plain, ROUNDS), (ours.p_g, plain)
    # The observed statistic is the plain one exactly (up to float rounding).
    a = [(g, oa) for g, oa, _ in cases]
    b = [(g, ob) for g, _, ob in cases]
    expected = plain_g(a, [x for x, _ in iid]) - plain_g(b, [y for _, y in iid])
    assert ours.delta_g == pytest.approx(expected, abs=1e-12)


def test_pooled_randomization_matches_plain_loop() -> None:
    # Two tasks (i.i.d. units); task 0 has two scenarios sharing its i.i.d. swap: the Avg. column's test.
    c0, i0 = paired_data(11, groups=3, per_group=20, n_iid=40, shift=0.1)
    c1, _ = paired_data(12, groups=3, per_group=20, n_iid=40, shift=0.05)
    c2, i2 = paired_data(13, groups=5, per_group=10, n_iid=50, shift=0.08)
    weights = [0.25, 0.25, 0.5]
    strata = [(c0, 0), (c1, 0), (c2, 1)]
    ours = randomization_test([to_iid(i0), to_iid(i2)],
                              [Stratum(to_counts(c), u, w) for (c, u), w in zip(strata, weights, strict=True)],
                              rounds=ROUNDS, rng=np.random.default_rng(5))
    plain = plain_randomization(strata, [i0, i2], weights, ROUNDS, 5)
    assert ours.p_g is not None
    assert abs(ours.p_g - plain) <= mc_tolerance(plain, ROUNDS), (ours.p_g, plain)


def test_skips_that_empty_a_group_are_handled() -> None:
    # A group where one model skips everything: swaps make it evaluable or not, round by round.
    cases = [("g0", "skip", "pass")] * 4 + [("g0", "skip", "fail")] * 3 + [("g1", "pass", "fail")] * 5 + \
            [("g1", "fail", "fail")] * 5
    iid = [(True, True)] * 30 + [(True, False)] * 3
    ours = randomization_test([to_iid(iid)], [Stratum(to_counts(cases), 0)], rounds=ROUNDS,
                              rng=np.random.default_rng(3))
    plain = plain_randomization([(cases, 0)], [iid], [1.0], ROUNDS, 3)
    assert ours.p_g is not None
    assert abs(ours.p_g - plain) <= mc_tolerance(plain, ROUNDS)


def test_same_seed_same_p_and_other_seed_differs() -> None:
    cases, iid = paired_data(4, groups=5, per_group=30, n_iid=80, shift=0.06)
    args = ([to_iid(iid)], [Stratum(to_counts(cases), 0)])
    p1 = randomization_test(*args, rounds=ROUNDS, rng=comparison_rng(7, "key")).p_g
    p2 = randomization_test(*args, rounds=ROUNDS, rng=comparison_rng(7, "key")).p_g
    p3 = randomization_test(*args, rounds=ROUNDS, rng=comparison_rng(8, "key")).p_g
    assert p1 == p2
    assert p1 != p3


def test_identical_models_give_p_one() -> None:
    cases = [(f"g{i % 3}", o, o) for i, o in enumerate(["pass", "fail", "skip"] * 10)]
    iid = [(True, True), (False, False)] * 10
    result = randomization_test([to_iid(iid)], [Stratum(to_counts(cases), 0)], rounds=500,
                                rng=np.random.default_rng(0))
    assert result.p_g == 1.0
    assert result.delta_g == 0.0


# ------------------------------------------------------------------------------------ hand-made stores


@pytest.fixture(scope="module")
def known_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    return known_store(tmp_path_factory.mktemp("known") / "known.duckdb", ROUNDS)


@pytest.fixture()
def known(known_template: tuple[Path, dict[str, object]], tmp_path: Path) -> tuple[Path, dict[str, object]]:
    return copy_of(known_template, tmp_path)


def rows(path: Path, sql: str, params: list | None = None) -> list[dict]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def test_identical_models_are_not_marked(known: tuple[Path, dict]) -> None:
    path, _ = known
    got = rows(path, "SELECT * FROM significance WHERE config = 'iid-then-t'")
    # 3 scenarios per replicate, and the mean over tasks of each plus the Avg. (scenario NULL).
    assert len(got) == 3 + 4
    for r in got:
        assert r["status"] == "current"
        assert r["p_iid"] == 1.0 and r["p_g"] == 1.0
        assert r["iid_mark"] is None and r["g_mark"] is None
        assert r["delta_iid"] == 0.0
    # G_standard of the baseline against the held-out scenarios: same outcomes, same G.
    assert all(abs(r["delta_g"]) < 1e-12 for r in got)


def test_model_right_where_baseline_is_wrong_is_marked_better(known: tuple[Path, dict]) -> None:
    path, info = known
    got = rows(path, "SELECT * FROM significance WHERE config = 'iid-plus-t'")
    assert len(got) == 7
    n_wrong = sum(not c for c in info["correct"])
    for r in got:
        assert r["status"] == "current"
        assert r["iid_mark"] == "better" and r["g_mark"] == "better"
        assert r["n_discordant"] == n_wrong and r["k_better"] == n_wrong
        assert r["p_iid"] == binomtest(n_wrong, n_wrong, 0.5).pvalue < 1e-6
        assert r["p_g"] == 1 / (ROUNDS + 1)      # no round as extreme as the observed difference
        assert r["delta_g"] > 0.05


def test_stored_sign_test_p_is_scipy_exactly(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    b = StoreBuilder(path)
    rng = random.Random(5)
    base = random_outcomes(b.cases, rng)
    c0 = [rng.random() < 0.7 for _ in range(200)]
    c1 = [x if rng.random() < 0.8 else not x for x in c0]
    b.add("iid", "vanilla", "standard", base, c0)
    b.add("iid-then-t", "vanilla", "seen", perturb(base, rng, 0.3), c1)
    analyze_store(path, rounds=200, seed=0)
    (r,) = rows(path, "SELECT * FROM significance WHERE scope = 'replicate'")
    k = sum(a and not b for a, b in zip(c1, c0, strict=True))
    n = sum(a != b for a, b in zip(c1, c0, strict=True))
    assert (r["k_better"], r["n_discordant"]) == (k, n)
    assert r["p_iid"] == binomtest(k, n, 0.5).pvalue
    assert r["iid_test"] == "binomial"
    assert r["delta_iid"] == pytest.approx((sum(c1) - sum(c0)) / 200)


def test_store_p_matches_plain_loop_and_is_reproducible(tmp_path: Path) -> None:
    path = tmp_path / "r.duckdb"
    b = StoreBuilder(path, make_cases(15))
    rng = random.Random(9)
    base = random_outcomes(b.cases, rng)
    other = perturb(base, rng, 0.35)
    c0 = [rng.random() < 0.75 for _ in range(80)]
    c1 = [x if rng.random() < 0.85 else not x for x in c0]
    b.add("iid", "vanilla", "standard", base, c0)
    b.add("iid-then-t", "vanilla", "seen", other, c1)
    analyze_store(path, rounds=ROUNDS, seed=3)
    (r,) = rows(path, "SELECT * FROM significance WHERE scope = 'replicate'")
    group = {c.case_id: c.group("functionality") for c in b.cases}
    cases = [(group[cid], other[cid], base[cid]) for cid in base]
    plain = plain_randomization([(cases, 0)], [list(zip(c1, c0, strict=True))], [1.0], ROUNDS, 3)
    assert abs(r["p_g"] - plain) <= mc_tolerance(plain, ROUNDS), (r["p_g"], plain)
    first = rows(path, "SELECT comparison_id, p_g, p_iid FROM significance_tests ORDER BY ALL")
    analyze_store(path, rounds=ROUNDS, seed=3, force=True)
    assert rows(path, "SELECT comparison_id, p_g, p_iid FROM significance_tests ORDER BY ALL") == first


def test_changed_inputs_mark_rows_stale_and_analyze_refreshes(known: tuple[Path, dict]) -> None:
    path, info = known
    b: StoreBuilder = info["builder"]  # type: ignore[assignment]
    # Re-train one fold of iid-plus-t's functionality scenario (a new finished_at).
    better = {cid: "pass" if o == "fail" else o for cid, o in info["base"].items()}
    f1 = {cid: o for cid, o in better.items() if cid.startswith("f1-")}
    b.add("iid-plus-t", "vanilla", "functionality", f1)
    status = {(r["config"], r["scope"], r["scenario"]): r["status"] for r in rows(path, "SELECT * FROM significance")}
    assert status[("iid-plus-t", "replicate", "functionality")] == "stale"
    assert status[("iid-plus-t", "mean_over_tasks", "functionality")] == "stale"
    assert status[("iid-plus-t", "mean_over_tasks", None)] == "stale"          # Avg. uses every scenario
    assert status[("iid-plus-t", "replicate", "seen")] == "current"
    assert status[("iid-then-t", "replicate", "functionality")] == "current"
    marks = rows(path, "SELECT g_mark FROM significance WHERE status = 'stale'")
    assert all(m["g_mark"] is None for m in marks)                                # stale never marks
    summary = analyze_store(path, rounds=ROUNDS, seed=1)
    assert summary.n_computed == 3 and summary.n_kept == summary.n_comparisons - 3
    assert {r["status"] for r in rows(path, "SELECT status FROM significance")} == {"current"}
    # A changed exclusion list changes every comparison of the task.
    StoreWriter(path).set_g_exclusions("sentiment", ["f2"])
    assert {r["status"] for r in rows(path, "SELECT status FROM significance")} == {"stale"}
    # Other rounds or seed: recomputed.
    assert analyze_store(path, rounds=500, seed=1).n_computed == 14
    assert analyze_store(path, rounds=500, seed=2).n_computed == 14
    assert analyze_store(path, rounds=500, seed=2).n_computed == 0


def test_new_model_without_a_test_is_missing_and_views_survive_store_writer(known: tuple[Path, dict]) -> None:
    path, info = known
    b: StoreBuilder = info["builder"]  # type: ignore[assignment]
    b.add("iid-then-iid-plus-t", "vanilla", "seen", info["base"], info["correct"])   # re-creates the views
    got = rows(path, "SELECT status FROM significance WHERE config = 'iid-then-iid-plus-t'")
    assert [r["status"] for r in got] == ["missing"] * 3


def test_write_drops_a_row_whose_inputs_changed_meanwhile(known: tuple[Path, dict]) -> None:
    path, _ = known
    (row,) = rows(path, "SELECT * EXCLUDE (current_digest, stale) FROM significance_pairs "
                        "WHERE scope = 'replicate' AND config = 'iid-plus-t' AND scenario = 'seen'")
    row["inputs_digest"] = "0" * 32       # as if a model had changed between the read and the write
    with open_handle(path, write=True) as opened:
        kept, dropped = SignificanceWriter(opened).write([row])
    assert (kept, dropped) == (0, [row["comparison_id"]])
    (r,) = rows(path, "SELECT status FROM significance WHERE scope = 'replicate' AND config = 'iid-plus-t' "
                      "AND scenario = 'seen'")
    assert r["status"] == "missing"


def test_compare_two_configuration_methods(known: tuple[Path, dict]) -> None:
    path, _ = known
    got = compare(path, "iid-plus-t", "iid-then-t/vanilla", rounds=ROUNDS, seed=1)
    replicate = [r for r in got if r["scope"] == "replicate"]
    assert {r["scenario"] for r in replicate} == {"seen", "functionality", "class"}
    for r in got:
        assert r["base_scenario"] is None                 # scenario against the same scenario
        assert r["p_g"] == 1 / (ROUNDS + 1) and r["delta_g"] > 0
    stored = rows(path, "SELECT * FROM significance_pairs WHERE config = 'iid-plus-t' AND base_config = 'iid-then-t'")
    assert len(stored) == len(got) and not any(r["stale"] for r in stored)
    # Against an IID-style model, B's scenario defaults to 'standard' (its G_standard), as the baseline view.
    vs_iid = compare(path, "iid-plus-t", "iid", rounds=ROUNDS, seed=1, store=False)
    base = {r["comparison_id"]: r for r in rows(path, "SELECT * FROM significance_tests")}
    for r in vs_iid:
        assert r["base_scenario"] == "standard"
        assert r["p_g"] == base[r["comparison_id"]]["p_g"]


def test_mean_over_tasks_pools_tasks(tmp_path: Path) -> None:
    path = tmp_path / "two.duckdb"
    b = StoreBuilder(path)
    rng = random.Random(2)
    for task, shift in (("sentiment", 0.0), ("qqp", 0.3)):
        base = random_outcomes(b.cases, rng)
        c0 = [rng.random() < 0.7 for _ in range(60)]
        b.add("iid", "vanilla", "standard", base, c0, task=task)
        b.add("iid-then-t", "vanilla", "seen", perturb(base, rng, shift), c0, task=task)
    analyze_store(path, rounds=ROUNDS, seed=0)
    reps = rows(path, "SELECT * FROM significance WHERE scope = 'replicate' ORDER BY task")
    (mean,) = rows(path, "SELECT * FROM significance WHERE scope = 'mean_over_tasks' AND scenario = 'seen'")
    assert mean["n_tasks"] == 2 and mean["status"] == "current"
    assert mean["delta_g"] == pytest.approx(sum(r["delta_g"] for r in reps) / 2)
    assert mean["iid_test"] == "randomization" and mean["p_iid"] == 1.0   # same answers on both tasks
    (stored,) = rows(path, "SELECT * FROM significance_tests WHERE scope = 'mean_over_tasks' AND scenario = 'seen'")
    assert stored["n_strata"] == 2
    assert stored["delta_g"] == pytest.approx(mean["delta_g"])


def test_cli_analyze(known: tuple[Path, dict], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = known
    main(["analyze", str(path), "--rounds", "300", "--seed", "4", "--compare", "iid-plus-t", "iid-then-t"])
    out = capsys.readouterr().out
    assert "Against the IID baseline" in out and "iid-plus-t/vanilla against iid-then-t/vanilla" in out
    got = rows(path, "SELECT DISTINCT rounds, rng_seed FROM significance_tests")
    assert got == [{"rounds": 300, "rng_seed": 4}]
    with pytest.raises(SystemExit) as exc:
        main(["analyze", str(path.with_name("nope.duckdb"))])
    assert exc.value.code == 2


def test_comparison_ids_are_json(known: tuple[Path, dict]) -> None:
    path, _ = known
    for r in rows(path, "SELECT comparison_id, scope, config, scenario FROM significance_tests"):
        key = json.loads(r["comparison_id"])
        assert key[0] == r["scope"] and key[6] == r["config"] and key[8] == r["scenario"]
        assert key[9:] == ["iid", "vanilla", "standard"]


def test_provenance_columns(known: tuple[Path, dict]) -> None:
    path, _ = known
    for r in rows(path, "SELECT * FROM significance_tests"):
        assert r["rounds"] == ROUNDS and r["rng_seed"] == 1
        assert len(r["inputs_digest"]) == 32 and isinstance(r["computed_at"], datetime)


def test_compare_without_storing_leaves_the_store_untouched(tmp_path: Path) -> None:
    path = tmp_path / "fresh.duckdb"
    known_store(path)
    before = path.read_bytes()
    got = compare(path, "iid-plus-t", "iid-then-t", rounds=200, seed=0, store=False)
    assert got and all(r["p_g"] == 1 / 201 for r in got)
    assert path.read_bytes() == before
    assert not rows(path, "SELECT * FROM significance_tests")


def test_store_stays_readable_by_duckdb_1x(known: tuple[Path, dict]) -> None:
    import struct

    path, _ = known
    with path.open("rb") as fh:
        magic, version = struct.Struct("<8x4sQ").unpack(fh.read(20))
    assert (magic, version) == (b"DUCK", 64)   # still DuckDB 1.0's storage format after the analysis wrote


def test_documented_queries_run(known: tuple[Path, dict]) -> None:
    path, _ = known
    doc = (REPO / "docs" / "reference" / "store.md").read_text(encoding="utf-8")
    section = doc.split("## Significance\n", 1)[1]
    # Fenced as "sql significance": the general doc test (test_store.py) runs on stores without these views.
    blocks = re.findall(r"```sql significance\n(.*?)```", section, flags=re.S)
    assert blocks
    con = duckdb.connect(str(path), read_only=True)
    try:
        for block in blocks:
            for statement in (s for s in block.split(";") if "SELECT" in s):
                con.execute(statement).fetchall()
    finally:
        con.close()


def test_refresh_after_run(known: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from beluga_core.analysis import refresh as refresh_mod
    from beluga_core.core.errors import BelugaError

    path, _ = known
    console = Console(record=True, width=200)
    refresh_mod.refresh_after_run(path, console)
    text = console.export_text()
    assert "significance:" in text and "intervals over seeds:" in text

    def locked(*args: object, **kwargs: object) -> None:
        raise BelugaError("the result store is held open by another process")

    monkeypatch.setattr(refresh_mod, "analyze_store", locked)
    refresh_mod.refresh_after_run(path, console)          # a warning, not a failed run
    assert "significance tests not updated" in console.export_text()
