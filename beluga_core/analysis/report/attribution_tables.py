"""The report's attribution section: per failing scoring group, the words its failing cases' attributions
weigh most and least (the ``failing_words`` view: mean score over occurrences, pooled over replicates and
folds)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

ATTRIBUTION_NOTE = ("Per configuration-method-scenario and scoring group, over the T_test cases it fails that the run "
                    "attributed ([attributions]): the words with the highest and the lowest mean attribution (a "
                    "word's score is the sum over its pieces, for the class the model predicted unless the method "
                    "says otherwise; occurrences in brackets). Groups with the most attributed failing cases first.")
TOP = 5
GROUPS = 8


@dataclass
class FailingGroup:
    task: str
    config: str
    method: str
    scenario: str
    group: str
    attribution: str
    n_cases: int
    most: list[tuple[str, float, int]]
    least: list[tuple[str, float, int]]


def failing_groups(rows: list[dict[str, Any]]) -> list[FailingGroup]:
    by: dict[tuple[str, str, str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[(r["task"], r["config"], r["method"], r["scenario"], r["scoring_group"], r["attribution"])].append(r)
    groups = []
    for key, words in by.items():
        ranked = sorted(words, key=lambda r: (-r["mean_score"], r["word"]))
        cases = max(r["n_cases"] for r in words)
        task, config, method, scenario, group, attribution = key
        groups.append(FailingGroup(task, config, method, scenario, group, attribution, cases,
                                   [(r["word"], r["mean_score"], r["n"]) for r in ranked[:TOP]],
                                   [(r["word"], r["mean_score"], r["n"]) for r in ranked[::-1][:TOP]]))
    groups.sort(key=lambda g: (g.task, g.config, g.method, g.scenario, g.attribution, -g.n_cases, g.group))
    out: list[FailingGroup] = []
    shown: dict[tuple[str, ...], int] = defaultdict(int)
    for g in groups:
        scope = (g.task, g.config, g.method, g.scenario, g.attribution)
        if shown[scope] < GROUPS:
            out.append(g)
            shown[scope] += 1
    return out


def word_list(words: list[tuple[str, float, int]]) -> str:
    return ", ".join(f"{w} {s:+.3g} ({n})" for w, s, n in words)
