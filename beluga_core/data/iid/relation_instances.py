"""Relation instances: a tokenized sentence with a head and a tail entity and the relation between them.

A model reads an instance as one text with inline markers around the marked mention of each entity,
``[E1] head [/E1]`` and ``[E2] tail [/E2]``, in surface order (``RelationInstance.marked_text``); the relation
task maps the four markers to single vocabulary ids. Suites store that marked text as an ordinary ``text``
input, so generators and the task recover the spans from it (``parse_marked``).

Spans are token offsets ``[start, end)``; an entity may have several mentions (FewRel lists every one), the first
is the marked one. An empty span (``start == end``) is a masked entity: its markers stay, adjacent. Reading and
writing relation datasets (FewRel, TACRED, OpenNRE) is ``data.iid.relation_data``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from beluga_core.core.errors import BelugaError

HEAD_OPEN, HEAD_CLOSE, TAIL_OPEN, TAIL_CLOSE = "[E1]", "[/E1]", "[E2]", "[/E2]"
MARKERS = (HEAD_OPEN, HEAD_CLOSE, TAIL_OPEN, TAIL_CLOSE)


def mention_words(words: list[str]) -> set[int]:
    """Indices of the whitespace words of a marked text that are entity markers or inside a marked mention: the
    words an attack or a counterfactual mask must leave alone (changing a mention changes what the relation is
    about, so the gold label, or no_relation, no longer follows)."""
    inside: set[int] = set()
    depth = 0
    for i, w in enumerate(words):
        if w in (HEAD_OPEN, TAIL_OPEN):
            depth += 1
        if depth > 0 or w in MARKERS:
            inside.add(i)
        if w in (HEAD_CLOSE, TAIL_CLOSE):
            depth = max(depth - 1, 0)
    return inside
NA_LABEL = "no_relation"

Span = tuple[int, int]


@dataclass(frozen=True)
class Entity:
    """An entity of an instance: its name, knowledge-base id and type where the data gives them, and its
    mentions (the first one is marked)."""

    name: str
    spans: tuple[Span, ...]
    id: str | None = None
    type: str | None = None

    @property
    def span(self) -> Span:
        return self.spans[0]


@dataclass(frozen=True)
class RelationInstance:
    """One relation-classification instance."""

    id: str
    tokens: tuple[str, ...]
    head: Entity
    tail: Entity
    relation: str
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        for role, entity in (("head", self.head), ("tail", self.tail)):
            if not entity.spans:
                raise BelugaError(f"instance {self.id}: the {role} has no mention")
            for start, end in entity.spans:
                if not 0 <= start <= end <= n:
                    raise BelugaError(f"instance {self.id}: {role} span [{start}, {end}) is outside its "
                                      f"{n} tokens")
        (hs, he), (ts, te) = self.head.span, self.tail.span
        if hs < te and ts < he:
            raise BelugaError(f"instance {self.id}: the marked head [{hs}, {he}) and tail [{ts}, {te}) overlap")

    def marked_tokens(self) -> list[str]:
        """The tokens with the four markers around the marked mentions, in surface order. At a shared boundary a
        closing marker comes first; an empty (masked) mention is its two markers, adjacent."""
        marks = ((self.head.span, HEAD_OPEN, HEAD_CLOSE), (self.tail.span, TAIL_OPEN, TAIL_CLOSE))
        out: list[str] = []
        for i in range(len(self.tokens) + 1):
            out += [close for (s, e), _, close in marks if e == i and s < e]
            for (s, e), opening, close in marks:
                if s == e == i:
                    out += [opening, close]
            out += [opening for (s, e), opening, _ in marks if s == i and s < e]
            if i < len(self.tokens):
                out.append(self.tokens[i])
        return out

    def marked_text(self) -> str:
        return " ".join(self.marked_tokens())

    def context_span(self) -> Span:
        """The tokens between the two marked mentions."""
        (hs, he), (ts, te) = self.head.span, self.tail.span
        return (he, ts) if he <= ts else (te, hs)

    def with_tokens(self, tokens: list[str] | tuple[str, ...], head: Entity, tail: Entity,
                    **changes: Any) -> RelationInstance:
        return replace(self, tokens=tuple(tokens), head=head, tail=tail, **changes)


def parse_marked(text: str) -> tuple[list[str], Span, Span]:
    """The tokens (whitespace-split, markers removed) and the head and tail spans of a marked text."""
    tokens: list[str] = []
    found: dict[str, int] = {}
    for word in text.split():
        if word in MARKERS:
            if word in found:
                raise BelugaError(f"marker {word} occurs twice in {text!r}")
            found[word] = len(tokens)
        else:
            tokens.append(word)
    missing = [m for m in MARKERS if m not in found]
    if missing:
        raise BelugaError(f"the text lacks the marker(s) {', '.join(missing)}: {text!r}")
    head = (found[HEAD_OPEN], found[HEAD_CLOSE])
    tail = (found[TAIL_OPEN], found[TAIL_CLOSE])
    if head[0] > head[1] or tail[0] > tail[1]:
        raise BelugaError(f"a closing marker precedes its opening one in {text!r}")
    return tokens, head, tail


def from_marked(instance_id: str, text: str, relation: str) -> RelationInstance:
    """An instance from a marked text (names are the marked mentions' tokens; one mention each)."""
    tokens, head, tail = parse_marked(text)
    return RelationInstance(instance_id, tuple(tokens), Entity(" ".join(tokens[head[0]:head[1]]), (head,)),
                            Entity(" ".join(tokens[tail[0]:tail[1]]), (tail,)), relation)
