"""Splits, scenarios and folds on the shipped CheckList sentiment suite."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from beluga_core.config.load import parse_config
from beluga_core.data.splits import halves, split_counts, split_suite
from beluga_core.data.suite.suite_files import Suite, load_suite
from beluga_core.planning.plan import Plan, build_plan, make_folds

CONFIG = """
name = "t"
configurations = ["iid", "iid-then-t", "iid-plus-t"]
scenarios = ["standard", "seen", "functionality", "class", "test_type"]
[[tasks]]
name = "sentiment"
suite = "builtin:sentiment"
iid = "builtin:sst2"
[sizes]
suite_train_per_group = 5
suite_test_per_group = 4
"""


@pytest.fixture(scope="module")
def sentiment() -> Suite:
    return load_suite("builtin:sentiment").with_corrections()


def test_split_is_50_25_25_within_every_group(sentiment: Suite) -> None:
    split = split_suite(sentiment, 123)
    level = sentiment.header.scoring_level
    sizes = {name: Counter(sentiment.case(c).groups[level] for c in split.of(name))
             for name in ("train", "val", "test")}
    total = Counter(c.groups[level] for c in sentiment.cases)
    for group, n in total.items():
        assert (sizes["train"][group], sizes["val"][group], sizes["test"][group]) == split_counts(n, (0.5, 0.25, 0.25))
        assert sizes["train"][group] == n // 2  # the reference's floor(n/2)
    assert len(set(split.train) | set(split.val) | set(split.test)) == len(sentiment.cases)


def test_split_is_stable_and_seeded(sentiment: Suite) -> None:
    a, b = split_suite(sentiment, 123), split_suite(sentiment, 123)
    assert a == b
    assert split_suite(sentiment, 7).test != a.test
    # A fixed digest: a change here means every stored result's split changed (across versions/machines).
    digest = hashlib.sha256("\n".join(a.test).encode()).hexdigest()[:16]
    assert digest == SENTIMENT_TEST_DIGEST


def test_subsample_is_nested_in_the_full_split(sentiment: Suite) -> None:
    full = split_suite(sentiment, 123)
    small = split_suite(sentiment, 123, per_group=(5, 1, 4))
    assert set(small.train) <= set(full.train) and set(small.test) <= set(full.test)
    level = sentiment.header.scoring_level
    assert max(Counter(sentiment.case(c).groups[level] for c in small.test).values()) == 4
    # A per-group exception replaces that group's T_test cap only, still nested in the full split.
    more = split_suite(sentiment, 123, per_group=(5, 1, 4), test_per_group_of={"reducers": 30})
    counts = Counter(sentiment.case(c).groups[level] for c in more.test)
    assert counts["reducers"] == 30 and max(n for g, n in counts.items() if g != "reducers") == 4
    assert set(more.test) <= set(full.test) and set(small.test) - set(more.test) == set()
    assert more.train == small.train and more.val == small.val


def test_folds_never_train_on_their_heldout_group(sentiment: Suite) -> None:
    split = split_suite(sentiment, 123, per_group=(5, 1, 4))
    folds, _ = make_folds(sentiment, split, ["seen", "functionality", "class", "test_type"])
    assert Counter(f.scenario for f in folds) == {"seen": 1, "functionality": 38, "class": 7, "test_type": 3}
    for fold in folds:
        if fold.heldout_level is None:
            assert fold.train_ids == split.train and fold.eval_ids == split.test
            continue
        train_groups = {sentiment.group_of(sentiment.case(c), fold.heldout_level) for c in fold.train_ids}
        assert fold.heldout_group not in train_groups
        assert all(sentiment.group_of(sentiment.case(c), fold.heldout_level) == fold.heldout_group
                   for c in fold.eval_ids)
        assert not set(fold.train_ids) & set(split.test)
    # Each T_test case gets exactly one held-out outcome per scenario.
    for level in ("functionality", "class", "test_type"):
        evaluated = Counter(c for f in folds if f.scenario == level for c in f.eval_ids)
        assert set(evaluated) == set(split.test) and set(evaluated.values()) == {1}


@pytest.fixture(scope="module")
def plan_and_path(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Path]:
    cfg_path = tmp_path_factory.mktemp("plan") / "t.toml"
    cfg_path.write_text(CONFIG)
    return build_plan(parse_config(CONFIG, cfg_path), cfg_path), cfg_path


def test_plan_counts_and_job_identity(plan_and_path: tuple[Plan, Path]) -> None:
    plan, cfg_path = plan_and_path
    jobs = plan.jobs
    assert len(jobs) == 1 + 2 * 49
    assert len({j.id for j in jobs}) == len(jobs)
    iid = [j for j in jobs if j.config == "iid"]
    assert len(iid) == 1
    assert all(j.parent_id == iid[0].id for j in jobs if j.config == "iid-then-t")
    assert all(j.parent_id is None for j in jobs if j.config == "iid-plus-t")
    again = build_plan(parse_config(CONFIG, cfg_path), cfg_path)
    assert [j.id for j in again.jobs] == [j.id for j in jobs]
    changed = build_plan(parse_config(CONFIG.replace("epochs", "x") + "\n[training]\nepochs = 2\n", cfg_path), cfg_path)
    assert {j.id for j in changed.jobs}.isdisjoint({j.id for j in jobs})


def test_worker_plan_keeps_every_case_a_job_reads_and_little_else(plan_and_path: tuple[Plan, Path]) -> None:
    plan, _ = plan_and_path
    worker_plan = plan.for_workers()
    full, cut = plan.tasks[0].suite, worker_plan.tasks[0].suite
    read = {c for j in plan.jobs for c in (*j.fold.train_ids, *j.fold.eval_ids)}
    assert read <= {c.id for c in cut.cases}
    assert len(cut.cases) < len(full.cases) / 50  # 10 cases per functionality of ~86k
    assert [j.id for j in worker_plan.jobs] == [j.id for j in plan.jobs]
    assert cut.case(next(iter(read))) == full.case(next(iter(read)))


def test_halves_are_seeded() -> None:
    a, b = halves(872, 42)
    assert len(a) == len(b) == 436 and not set(a) & set(b)
    assert halves(872, 42) == (a, b) and halves(872, 1) != (a, b)


SENTIMENT_TEST_DIGEST = "2c53de43d03667a9"
