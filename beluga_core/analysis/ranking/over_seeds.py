"""Ranking accuracy over seeds, for a replicated zoo: a store whose candidates were each trained with several seeds.

What varies with the seed is the ranking's input itself: each seed's models give other pass rates on the group's
T_test cases (the truth) and other predictions on its probe pool (what the signals read). So each seed's candidates
are ranked among themselves, and the spread of that accuracy over the seeds is the spread over training runs.

Per seed, the view ``fewshot_seed_accuracy`` (``store/sql/views/95_fewshot.sql``, defined there once) gives a stored
ranking's accuracy over the pairs whose two candidates are of that seed (one draw: ``same_draw``, the seed with its
split seed, model and variant): the mean over groups of the group's mean PA over those pairs, as ``fewshot_accuracy``
averages every pair. A pair's PA depends on its two models only: every candidate is scored on the group's same
probes, and an order is compared pair by pair (ACC-then-factor too); only ``random`` draws one permutation of all the
group's candidates per probe, whose restriction to a pair is again a fair coin. So the per-seed figure is what
ranking that seed's candidates alone gives, and pairs of two seeds' models (which the pooled ranking includes: two
seeds of one configuration, whose true gap is training noise) are left out.

Over the seeds: their mean and the seed-level t interval of the per-seed figures, ``replicates.intervals.t_interval``
(mean ± t(S−1)·sd/√S, none with one seed or no spread), the interval `beluga analyze` gives verdicts from below 5
seeds. It counts training runs as the replicates and holds the probes, pools and T_test cases fixed: the variation
over those is what the ranking's own two-stage bootstrap interval (groups, then probes) shows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb

from beluga_core.analysis.ranking.save import interval, percent
from beluga_core.analysis.replicates.intervals import Interval, t_interval

VIEW = "fewshot_seed_accuracy"
NOTE = ("Over seeds: each seed's candidates ranked among themselves (pairs of two seeds' models left out); the mean "
        "over seeds with the seed-level t interval (mean ± t(S−1)·sd/√S: training runs as replicates, the probes, "
        "pools and T_test cases held fixed; none with fewer than 2 seeds or no spread between them).")


@dataclass(frozen=True)
class OverSeeds:
    """One signal of one stored ranking over its seeds: each seed's ranking accuracy and the t interval over them."""

    rank_id: str
    signal: str
    attribution: str
    seeds: tuple[str, ...]             # each draw's label: its seed (and variant, model or split where they differ)
    accuracies: tuple[float, ...]      # the draw's ranking accuracy, in ``seeds``' order
    pairs: tuple[int, ...]             # the pairs of candidates of that draw it averages
    interval: Interval                 # mean over the seeds, seed-level t interval (``t_interval``)
    stale: bool = False

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    def text(self) -> str:
        """``mean [lo, hi]`` in percent (the interval empty where it is undefined)."""
        iv = self.interval
        bounds = interval(iv.lo, iv.hi)
        return f"{percent(iv.mean)} {bounds}".rstrip()

    def per_seed_text(self) -> str:
        return ", ".join(f"{s}: {percent(a)}" for s, a in zip(self.seeds, self.accuracies, strict=True))


def _label(row: Mapping[str, Any], varies: set[str]) -> str:
    """A draw as its seed, with what else tells it apart from the ranking's other draws (as selectors write them)."""
    text = str(row["seed"])
    if "variant" in varies and row["variant"]:
        text += f"~{row['variant']}"
    if "model_name" in varies:
        text += f" {row['model_name']}"
    if "split_seed" in varies:
        text += f" split {row['split_seed']}"
    return text


def over_seeds(rows: Iterable[Mapping[str, Any]], *, min_seeds: int = 2) -> dict[tuple[str, str], OverSeeds]:
    """Rows of ``fewshot_seed_accuracy`` → per (ranking, signal), its accuracy over its seeds (those with a figure:
    a seed whose every pair was excluded has none), for the signals of rankings with at least ``min_seeds`` of them."""
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["accuracy"] is not None:
            by_key[(r["rank_id"], r["signal"])].append(r)
    out: dict[tuple[str, str], OverSeeds] = {}
    for key, rs in by_key.items():
        if len(rs) < min_seeds:
            continue
        rs = sorted(rs, key=lambda r: tuple((r[k] is None, str(r[k])) for k in ("seed", "split_seed", "model_name",
                                                                                  "variant")))
        varies = {k for k in ("split_seed", "model_name", "variant") if len({r[k] for r in rs}) > 1}
        accuracies = tuple(float(r["accuracy"]) for r in rs)
        out[key] = OverSeeds(key[0], key[1], str(rs[0]["attribution"]), tuple(_label(r, varies) for r in rs),
                             accuracies, tuple(int(r["pairs"]) for r in rs), t_interval(accuracies),
                             any(bool(r["stale"]) for r in rs))
    return out


def read_over_seeds(con: duckdb.DuckDBPyConnection, rank_id: str | None = None) -> dict[tuple[str, str], OverSeeds]:
    """``over_seeds`` of the store's rankings (or of one)."""
    cur = con.execute(f"SELECT * FROM {VIEW}" + (" WHERE rank_id = ?" if rank_id else ""),
                      [rank_id] if rank_id else [])
    cols = [d[0] for d in cur.description]
    return over_seeds(dict(zip(cols, r, strict=True)) for r in cur.fetchall())


def candidate_seeds(con: duckdb.DuckDBPyConnection, model_ids: Iterable[str]) -> int:
    """How many seeds the given candidate models were trained with."""
    ((n,),) = con.execute("SELECT count(DISTINCT seed) FROM models WHERE model_id IN (SELECT unnest(?::VARCHAR[]))",
                          [sorted(set(model_ids))]).fetchall()
    return int(n)
