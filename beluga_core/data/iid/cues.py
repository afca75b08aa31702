"""Relation cue words: DiagnoseRE's selection-bias "rules", per relation r the words that give r away.

The rules are the ``num_rules`` words of highest tf·idf per relation, tf(w, r) = occurrences of w in r's
instances / number of r's instances, idf(w) = ln(|R| / (1 + |{r : w occurs in r}|)), over the lower-cased words
outside the marked mentions that contain a letter (``context_words``). Two layers use them: the ``cue-removal``
generator (which deletes them) and the ``reweight`` method (which down-weights the instances holding them), so
they live here, below both.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from beluga_core.data.iid.relation_instances import RelationInstance


def context_words(r: RelationInstance) -> list[tuple[int, str]]:
    """(position, lower-cased word) of the words outside both marked mentions that contain a letter."""
    inside = set(range(*r.head.span)) | set(range(*r.tail.span))
    return [(i, w.lower()) for i, w in enumerate(r.tokens) if i not in inside and any(ch.isalpha() for ch in w)]


def tfidf_rules(instances: list[RelationInstance], num_rules: int) -> dict[str, list[tuple[str, float]]]:
    """Per relation, its ``num_rules`` cue words with their tf·idf scores, highest first (ties: alphabetical)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    n_of: Counter[str] = Counter()
    for r in instances:
        n_of[r.relation] += 1
        counts[r.relation].update(w for _, w in context_words(r))
    n_relations = len(n_of)
    df: Counter[str] = Counter(w for c in counts.values() for w in c)
    rules = {}
    for relation, c in counts.items():
        scored = [(w, (k / n_of[relation]) * math.log(n_relations / (1 + df[w]))) for w, k in c.items()]
        scored.sort(key=lambda x: (-x[1], x[0]))
        rules[relation] = scored[:num_rules]
    return rules
