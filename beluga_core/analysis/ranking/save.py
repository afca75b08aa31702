"""Writing a ranking to a store (``fewshot_rankings`` and its tables), and printing it."""

from __future__ import annotations

import math
from typing import Any

from beluga_core import __version__ as BELUGA_VERSION
from beluga_core.analysis.ranking.rank import REFERENCE, Ranking
from beluga_core.core.hashing import digest
from beluga_core.store.connection import utc_now
from beluga_core.store.opened import StoreArg, held
from beluga_core.store.rows import canonical_json


def _num(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def ranking_id(source: str, task: str | None, suite: str, split_id: str | None, ranking: Ranking) -> str:
    """Ranking the same candidates again with the same settings replaces the stored ranking; anything else (another
    task, split, zoo, signal option) is a ranking of its own."""
    return digest({"source": source, "task": task, "suite": suite, "split": split_id, "level": ranking.level,
                   "signals": sorted(ranking.specs), "options": ranking.options, "n": ranking.n,
                   "B": ranking.bootstrap, "seed": ranking.seed, "ties": ranking.ties,
                   "candidates": sorted({c.model_id for g in ranking.groups for c in g.candidates})})[:24]


def inputs_digest(ranking: Ranking) -> str:
    """What the ranking was computed from: every group's pool and candidates with their true scores."""
    return digest([[g.group, g.pool, [[c.model_id, c.truth, c.n_truth, str(c.finished_at)] for c in g.candidates]]
                   for g in ranking.groups])[:32]


def save_ranking(store: StoreArg, ranking: Ranking, *, source: str, task: str | None, suite: str,
                 split_id: str | None = None) -> str:
    """Store a ranking (replacing one with the same id, ``ranking_id``) in the store the command holds open for
    writing (a path: opened for this call); returns its id."""
    rid = ranking_id(source, task, suite, split_id, ranking)
    now = utc_now()
    with held(store, write=True) as opened, opened.transaction() as con:
        for table in ("fewshot_results", "fewshot_groups", "fewshot_summary", "fewshot_candidates",
                      "fewshot_rankings"):
            con.execute(f"DELETE FROM {table} WHERE rank_id = ?", [rid])
        con.execute("INSERT INTO fewshot_rankings VALUES (?, ?, ?, ?, ?, ?, ?::JSON, ?::JSON, ?, ?, ?, ?, ?, ?, ?)",
                    [rid, source, task, suite, split_id, ranking.level, canonical_json(sorted(ranking.specs)),
                     canonical_json(ranking.options), ranking.n, ranking.bootstrap, ranking.seed, ranking.ties,
                     inputs_digest(ranking), now, BELUGA_VERSION])
        con.executemany("INSERT INTO fewshot_candidates VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [[rid, g.group, c.model_id, c.label, c.truth, c.n_truth, c.finished_at]
                         for g in ranking.groups for c in g.candidates])
        result_rows: list[list[Any]] = []
        group_rows: list[list[Any]] = []
        for name, results in ranking.results.items():
            spec = ranking.specs[name]
            by_group = {g.group: g for g in ranking.groups}
            for r in results:
                rk = r.ranking
                if rk is None:
                    group_rows.append([rid, r.group, name, spec.attribution, r.n_models, r.n_pool, 0, 0, None, None,
                                       None, None, None, None, None, r.skipped])
                    continue
                cands = by_group[r.group].candidates
                pa = rk.pair_accuracy()
                tied = rk.tied.mean(axis=0) if rk.tied.size else []
                for k, (i, j) in enumerate(rk.pairs):
                    result_rows.append([rid, r.group, name, spec.attribution, cands[i].model_id, cands[j].model_id,
                                        float(rk.truth[i] - rk.truth[j]), _num(float(pa[k])), float(tied[k])])
                group_rows.append([rid, r.group, name, spec.attribution, r.n_models, r.n_pool, rk.n_pairs,
                                   rk.excluded, _num(rk.accuracy), _num(r.ci[0]), _num(r.ci[1]), _num(rk.tie_rate),
                                   _num(rk.mean_tau), _num(rk.tau_undefined), _num(float(rk.top1.mean())), None])
        if result_rows:
            con.executemany("INSERT INTO fewshot_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", result_rows)
        if group_rows:
            con.executemany(f"INSERT INTO fewshot_groups VALUES ({', '.join('?' * 16)})", group_rows)
        summary_rows = []
        for name, s in ranking.summaries.items():
            spec = ranking.specs[name]
            summary_rows.append([rid, name, spec.attribution, spec.direction, s.n_groups, s.pairs_used,
                                 s.pairs_excluded, _num(s.accuracy), _num(s.ci[0]), _num(s.ci[1]), _num(s.tie_rate),
                                 _num(s.tau_b), _num(s.top1), _num(s.top1_ci[0]), _num(s.top1_ci[1]),
                                 _num(s.diff), _num(s.diff_ci[0]), _num(s.diff_ci[1]), _num(s.p_one_sided),
                                 _num(s.p_two_sided), _num(s.near), _num(s.far)])
        if summary_rows:
            con.executemany(f"INSERT INTO fewshot_summary VALUES ({', '.join('?' * 22)})", summary_rows)
    return rid


def percent(x: Any) -> str:
    """A share as a percentage with one decimal; "–" for none."""
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def interval(lo: Any, hi: Any) -> str:
    """``[lo, hi]`` in percent; empty for none."""
    return "" if lo is None or (isinstance(lo, float) and math.isnan(lo)) else f"[{percent(lo)}, {percent(hi)}]"


def skip_lines(ranking: Ranking, skipped: dict[str, str]) -> list[str]:
    """What was not ranked and why: a signal skipped everywhere once (with its ACC-then-signal), one skipped on
    some groups with the first such group and how many more."""
    lines = [f"{name}: {why}" for name, why in {**skipped, **ranking.skipped}.items()]
    everywhere: dict[str, str] = {}
    partly: dict[str, list[str]] = {}
    for name, results in ranking.results.items():
        reasons = [f"{r.group}: {r.skipped}" for r in results if r.skipped]
        if reasons and len(reasons) == len(results):
            everywhere[name] = results[0].skipped or ""
        elif reasons:
            partly[name] = reasons
    for name, why in everywhere.items():
        base = name.removeprefix(f"{REFERENCE}+")
        if base != name and base in everywhere:
            continue
        also = f" (and {REFERENCE}+{name})" if f"{REFERENCE}+{name}" in everywhere else ""
        lines.append(f"{name}{also} on every group: {why}")
    for name, reasons in partly.items():
        base = name.removeprefix(f"{REFERENCE}+")
        if base != name and partly.get(base) == reasons:
            continue
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        lines.append(f"{name} on {len(reasons)} of {len(ranking.results[name])} groups, e.g. {reasons[0]}{more}")
    return lines
