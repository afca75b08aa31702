"""Parse trees, a reference grammar and S²LCT's Algorithm 1: where a seed sentence's tree can take more words.

A seed's production lhs → s_rhs can grow into a reference production lhs → r_rhs of which it is an
order-preserving subsequence; the extra word-level symbols become masks (``masked_expansions``), which
``beluga_core.generators.s2lct.expansion`` fills with a masked language model and validates. Everything here is plain
Python on nltk trees: it runs offline on any trees and grammar a user supplies (``load_grammar``).

Long: tree reading, grammar induction and Algorithm 1 share one normalised tree form (``_Node``); apart, that
private form would have to become public.
"""


from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from beluga_core.core.errors import BelugaError

if TYPE_CHECKING:
    import random

    import nltk

MASK = "{mask}"
"""The placeholder a mask takes in ``Masked.tokens``."""

DEFAULT_TOP = 5
DEFAULT_K = 10

WORD_LEVEL_TAGS = frozenset({
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP", "NNPS", "PDT", "POS",
    "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "WDT",
    "WP", "WP$", "WRB",
})
"""The Penn Treebank word-level POS tags (ALiCT's ``WORD_LEVEL_POS``): the only symbols that become masks.
Everything else (phrase and clause labels, punctuation tags, ``-NONE-``, ``$``, ``#``) is not maskable."""

_WRAPPER_LABELS = frozenset({"", "TOP", "ROOT"})
NLTK_INSTALL = "reading parse trees needs nltk: pip install 'beluga[wordnet]' (or pip install nltk)"


# ----------------------------------------------------------------------------------------------------------
# Trees


@dataclass(frozen=True)
class _Node:
    """A normalised constituent: base label and children (nodes or words)."""

    label: str
    children: tuple[_Node | str, ...]

    def leaves(self) -> Iterator[str]:
        for c in self.children:
            if isinstance(c, str):
                yield c
            else:
                yield from c.leaves()

    def production(self) -> tuple[str, ...] | None:
        """The rhs of this node's production when it is non-lexical (only constituents below), else None."""
        if not self.children or any(isinstance(c, str) for c in self.children):
            return None
        return tuple(c.label for c in self.children if isinstance(c, _Node))


def base_label(label: str) -> str:
    """A Penn label without function tags and co-indices ("NP-SBJ-1" → "NP", "NP=2" → "NP"); labels that start
    with "-" ("-NONE-", "-LRB-") are kept whole. The parsers beluga expects (benepar) emit no function tags, so
    the grammar and the seed trees are compared on base labels, as ALiCT does."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def _convert(tree: Any, *, drop_empty: bool) -> _Node | str | None:
    if isinstance(tree, str):
        return tree
    label = base_label(str(tree.label()))
    if drop_empty and label == "-NONE-":
        return None
    kids = [k for k in (_convert(c, drop_empty=drop_empty) for c in tree) if k is not None]
    if drop_empty and not kids:
        return None
    return _Node(label, tuple(kids))


def _normalise(tree: Any, *, drop_empty: bool) -> _Node | None:
    """Labels reduced to base labels, wrapper roots ("", TOP, ROOT over one constituent) removed and, with
    ``drop_empty``, the empty elements (``-NONE-`` traces) and constituents left empty by them removed: a seed
    sentence has no traces, so its tree must not either."""
    node = _convert(tree, drop_empty=drop_empty)
    if not isinstance(node, _Node):
        return None
    while node.label in _WRAPPER_LABELS and len(node.children) == 1 and isinstance(node.children[0], _Node):
        node = node.children[0]
    return node


def tree_leaves(tree: nltk.Tree) -> tuple[str, ...]:
    """The words of a tree as the expansion reads them (traces left out)."""
    node = _normalise(tree, drop_empty=True)
    return tuple(node.leaves()) if node is not None else ()


def _import_nltk() -> Any:
    try:
        import nltk
    except ImportError:
        raise BelugaError(NLTK_INSTALL) from None
    return nltk


def read_bracketed_trees(path: str | Path) -> list[tuple[int, nltk.Tree]]:
    """The trees of a file in Penn bracket format, with the line each starts on. A tree may span lines and a
    line may hold several; PTB's empty outer bracket "( (S ...) )" is allowed. A bad file raises BelugaError
    naming the file and the line."""
    nk = _import_nltk()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BelugaError("no such file of bracketed trees", source=p) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BelugaError(f"cannot read bracketed trees: {exc}", source=p) from None
    out: list[tuple[int, nltk.Tree]] = []
    depth, start, start_line, line = 0, -1, 0, 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "(":
            if depth == 0:
                start, start_line = i, line
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise BelugaError("unbalanced ')' outside any tree", source=p, line=line)
            if depth == 0:
                chunk = text[start:i + 1]
                try:
                    tree = nk.Tree.fromstring(chunk)
                except ValueError as exc:
                    raise BelugaError(f"not a bracketed tree: {exc}", source=p, line=start_line) from None
                out.append((start_line, tree))
        elif depth == 0 and not ch.isspace():
            raise BelugaError(f"text outside a bracketed tree ({ch!r})", source=p, line=line)
    if depth > 0:
        raise BelugaError("tree not closed: missing ')'", source=p, line=start_line)
    return out


# ----------------------------------------------------------------------------------------------------------
# Reference grammar


class ReferenceGrammar:
    """A probabilistic reference grammar: lhs → [(rhs, P(rhs | lhs))], nonterminal productions only.

    ``from_trees`` counts the productions of the trees as ``nltk.induce_pcfg`` does, P(rhs | lhs) =
    count(lhs → rhs) / count(lhs), after reducing labels to base labels (``base_label``). Lexical productions
    (a POS tag over a word) are left out; they never share a lhs with a phrase production, so the
    probabilities of the others are those ``induce_pcfg`` gives. Empty elements (``-NONE-``) stay, as in the
    treebank. Each lhs's productions are ordered by decreasing probability, then rhs.
    """

    def __init__(self, rules: Mapping[str, Iterable[tuple[Sequence[str], float]]]) -> None:
        self.rules: dict[str, tuple[tuple[tuple[str, ...], float], ...]] = {}
        self._index: dict[tuple[str, tuple[str, ...]], float] = {}
        for lhs in sorted(rules):
            entries = sorted(((tuple(r), float(p)) for r, p in rules[lhs]), key=lambda e: (-e[1], e[0]))
            self.rules[lhs] = tuple(entries)
            for rhs, prob in entries:
                self._index[(lhs, rhs)] = prob

    @classmethod
    def from_trees(cls, trees: Iterable[nltk.Tree]) -> ReferenceGrammar:
        counts: Counter[tuple[str, tuple[str, ...]]] = Counter()
        for tree in trees:
            root = _normalise(tree, drop_empty=False)
            if root is not None:
                _count_productions(root, counts)
        lhs_totals: Counter[str] = Counter()
        for (lhs, _), n in counts.items():
            lhs_totals[lhs] += n
        rules: dict[str, list[tuple[Sequence[str], float]]] = {}
        for (lhs, rhs), n in counts.items():
            rules.setdefault(lhs, []).append((rhs, n / lhs_totals[lhs]))
        return cls(rules)

    @classmethod
    def from_dict(cls, data: Any, *, source: str | Path | None = None) -> ReferenceGrammar:
        """A grammar from its JSON form ``{lhs: [[rhs list, prob], …]}``; malformed data raises BelugaError."""
        if not isinstance(data, dict):
            raise BelugaError("a grammar must be a JSON object {lhs: [[rhs list, prob], ...]}", source=source)
        rules: dict[str, list[tuple[Sequence[str], float]]] = {}
        for lhs, entries in data.items():
            if not isinstance(entries, list):
                raise BelugaError("expected a list of [rhs list, prob] pairs", source=source, field=lhs)
            seen: set[tuple[str, ...]] = set()
            for entry in entries:
                ok = (isinstance(entry, list | tuple) and len(entry) == 2 and isinstance(entry[0], list)
                      and entry[0] and all(isinstance(s, str) and s for s in entry[0])
                      and isinstance(entry[1], int | float) and not isinstance(entry[1], bool))
                if not ok:
                    raise BelugaError(f"expected [rhs list of symbols, prob], got {entry!r}", source=source,
                                      field=lhs)
                rhs, prob = tuple(entry[0]), float(entry[1])
                if not 0.0 < prob <= 1.0:
                    raise BelugaError(f"probability {prob} of {lhs} -> {' '.join(rhs)} is not in (0, 1]",
                                      source=source, field=lhs)
                if rhs in seen:
                    raise BelugaError(f"{lhs} -> {' '.join(rhs)} is listed twice", source=source, field=lhs)
                seen.add(rhs)
                rules.setdefault(lhs, []).append((rhs, prob))
        return cls(rules)

    def to_dict(self) -> dict[str, list[list[Any]]]:
        """The JSON form ``load_grammar`` reads back (save an induced grammar to avoid re-reading trees)."""
        return {lhs: [[list(rhs), p] for rhs, p in entries] for lhs, entries in self.rules.items()}

    def expansions(self, lhs: str) -> tuple[tuple[tuple[str, ...], float], ...]:
        return self.rules.get(lhs, ())

    def prob(self, lhs: str, rhs: Sequence[str]) -> float | None:
        """P(rhs | lhs), or None when the production is not in the grammar."""
        return self._index.get((lhs, tuple(rhs)))

    def __len__(self) -> int:
        return len(self._index)

    def __repr__(self) -> str:
        return f"ReferenceGrammar({len(self.rules)} lhs, {len(self)} productions)"


def _count_productions(node: _Node, counts: Counter[tuple[str, tuple[str, ...]]]) -> None:
    rhs = node.production()
    if rhs is not None:
        counts[(node.label, rhs)] += 1
    for c in node.children:
        if isinstance(c, _Node):
            _count_productions(c, counts)


TREEBANK_MISSING = (
    "the reference grammar 'nltk-treebank' needs NLTK's Penn Treebank sample, which is not in nltk_data on "
    "this machine (searched: {paths}). On a machine with internet run "
    "python -c \"import nltk; nltk.download('treebank')\" and copy the nltk_data folder here (or set "
    "NLTK_DATA to it); or give grammar = PATH to a file of bracketed trees or a grammar .json"
)


def load_grammar(spec: str | Path) -> ReferenceGrammar:
    """The reference grammar named by ``spec``: ``"nltk-treebank"`` (NLTK's Penn Treebank sample from the
    user's nltk_data; never downloaded), ``PATH.json`` (``{lhs: [[rhs list, prob], …]}``), a folder (its
    ``*.mrg`` files) or a file of bracketed trees."""
    if str(spec) == "nltk-treebank":
        return ReferenceGrammar.from_trees(_treebank_trees())
    path = Path(spec).expanduser()
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BelugaError("no such grammar file", source=path) from None
        except json.JSONDecodeError as exc:
            raise BelugaError(f"not valid JSON: {exc.msg}", source=path, line=exc.lineno) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise BelugaError(f"cannot read the grammar: {exc}", source=path) from None
        return ReferenceGrammar.from_dict(data, source=path)
    if path.is_dir():
        files = sorted(path.glob("*.mrg"))
        if not files:
            raise BelugaError("no *.mrg tree files in this folder", source=path)
        return ReferenceGrammar.from_trees(t for f in files for _, t in read_bracketed_trees(f))
    if not path.exists():
        raise BelugaError("unknown grammar: expected 'nltk-treebank', a .json grammar, a file of bracketed "
                          "trees or a folder of .mrg files, and no such file exists", source=path)
    trees = [t for _, t in read_bracketed_trees(path)]
    if not trees:
        raise BelugaError("no bracketed trees in this file", source=path)
    return ReferenceGrammar.from_trees(trees)


def _treebank_trees() -> list[nltk.Tree]:
    nk = _import_nltk()
    from nltk.corpus.reader import BracketParseCorpusReader

    # The same reader nltk.corpus.treebank is, built here rather than through that lazy module object, which
    # rewrites itself on first load and would cache one nltk_data path for the whole process.
    try:
        root = nk.data.find("corpora/treebank/combined")
    except LookupError:
        raise BelugaError(TREEBANK_MISSING.format(paths=", ".join(map(str, nk.data.path)))) from None
    reader = BracketParseCorpusReader(root, r"wsj_.*\.mrg", tagset="wsj", encoding="ascii")
    trees = list(reader.parsed_sents())
    if not trees:
        raise BelugaError(TREEBANK_MISSING.format(paths=str(root)))
    return trees


# ----------------------------------------------------------------------------------------------------------
# Algorithm 1


@dataclass(frozen=True)
class Masked:
    """A masked sentence: the seed's words with ``MASK`` at inserted positions, each mask's Penn tag, the seed
    production expanded and the reference production it was expanded to, and P(r_rhs | lhs) × Π P(ancestor
    productions)."""

    tokens: tuple[str, ...]
    masks: tuple[tuple[int, str], ...]
    cfg_from: str
    cfg_to: str
    prob: float

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(tag for _, tag in self.masks)

    def fill(self, words: Sequence[str]) -> tuple[str, ...]:
        """The tokens with the masks replaced by ``words``, left to right."""
        if len(words) != len(self.masks):
            raise ValueError(f"{len(words)} words for {len(self.masks)} masks in {self.text!r}")
        out = list(self.tokens)
        for (pos, _), word in zip(self.masks, words, strict=True):
            out[pos] = word
        return tuple(out)


def _embedding_counts(s: Sequence[str], r: Sequence[str]) -> list[list[int]]:
    """f[i][j]: the number of order-preserving embeddings of s[i:] into r[j:]."""
    m, n = len(s), len(r)
    f = [[0] * (n + 1) for _ in range(m + 1)]
    for j in range(n + 1):
        f[m][j] = 1
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            f[i][j] = f[i][j + 1] + (f[i + 1][j + 1] if s[i] == r[j] else 0)
    return f


def _choose_embedding(s: Sequence[str], r: Sequence[str], f: list[list[int]], rng: random.Random
                      ) -> tuple[int, ...]:
    """The positions in r of s's symbols: the only embedding, or one drawn uniformly over all of them (one
    ``rng`` draw) when a symbol can map to several positions. ALiCT picks each repeated symbol's position with
    ``random.choice`` independently, which can break the order; a uniform draw over order-preserving
    embeddings is the consistent form of that choice."""
    total = f[0][0]
    x = rng.randrange(total) if total > 1 else 0
    out: list[int] = []
    i = j = 0
    while i < len(s):
        if s[i] == r[j]:
            if x < f[i + 1][j + 1]:
                out.append(j)
                i += 1
            else:
                x -= f[i + 1][j + 1]
        j += 1
    return tuple(out)


def masked_expansions(tree: nltk.Tree, grammar: ReferenceGrammar, rng: random.Random, *, top: int = DEFAULT_TOP,
                      k: int | None = DEFAULT_K, maskable: frozenset[str] = WORD_LEVEL_TAGS) -> list[Masked]:
    """Algorithm 1: the masked sentences of a seed tree.

    The tree is first normalised: base labels, no wrapper root (TOP/ROOT/""), no empty elements. Then, for
    every node of the tree in pre-order whose production lhs → s_rhs is non-lexical, and every reference
    production lhs → r_rhs with |s_rhs| < |r_rhs| and s_rhs an order-preserving subsequence of r_rhs:

    * r_rhs is rejected unless every extra symbol (r_rhs minus s_rhs, as multisets: the same for every
      mapping) is in ``maskable``, the word-level POS tags. This drops productions that add phrase or clause
      symbols and those that add punctuation, ``-NONE-`` and the like. (ALiCT lets an extra symbol through
      when the seed production already has it and would then insert a mask tagged, e.g., PP; here only
      word-level tags ever become masks.)
    * The rest are ranked by P(r_rhs | lhs) × Π P(ancestor productions), the product running over the seed
      productions at the node's ancestors; **an ancestor production absent from the grammar contributes 1**
      (ALiCT's ``get_rule_prob``), so it neither ranks nor zeroes the candidates. Ties go by r_rhs. The top
      ``top`` per node are kept (the ancestor product is the same for all of one node's candidates, so it
      changes ``Masked.prob``, not the choice).
    * For each kept r_rhs the seed's children take their positions in r_rhs (one mapping drawn with ``rng``
      when several exist) and the other positions become masks; the leaves read left to right give the
      masked sentence.

    Each occurrence of a production is expanded at its own place (ALiCT expands the first occurrence's words
    wherever the phrase recurs). Identical masked sentences are kept once (the first). If more than ``k``
    remain (``k=None``: no cap), ``k`` are sampled uniformly with ``rng`` and returned in pre-order.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    if k is not None and k < 1:
        raise ValueError(f"k must be at least 1 (or None), got {k}")
    root = _normalise(tree, drop_empty=True)
    if root is None:
        return []
    tokens = tuple(root.leaves())
    out: list[Masked] = []
    seen: set[tuple[tuple[str, ...], tuple[tuple[int, str], ...]]] = set()

    def visit(node: _Node, start: int, parents_prob: float) -> int:
        """Expands ``node`` (its words start at ``start``) and its subtree; returns where its words end."""
        s_rhs = node.production()
        spans: list[tuple[int, int]] = []
        pos = start
        for child in node.children:
            width = 1 if isinstance(child, str) else sum(1 for _ in child.leaves())
            spans.append((pos, pos + width))
            pos += width
        if s_rhs is not None:
            _expand_node(node, s_rhs, spans, start, pos, parents_prob)
            own = grammar.prob(node.label, s_rhs)
            child_prob = parents_prob * (own if own is not None else 1.0)
        else:
            child_prob = parents_prob
        for child, (c_start, _) in zip(node.children, spans, strict=True):
            if isinstance(child, _Node):
                visit(child, c_start, child_prob)
        return pos

    def _expand_node(node: _Node, s_rhs: tuple[str, ...], spans: list[tuple[int, int]], start: int, end: int,
                     parents_prob: float) -> None:
        s_counts = Counter(s_rhs)
        candidates: list[tuple[float, tuple[str, ...], float, list[list[int]]]] = []
        for r_rhs, p in grammar.expansions(node.label):
            if len(r_rhs) <= len(s_rhs):
                continue
            extra = Counter(r_rhs) - s_counts
            if any(sym not in maskable for sym in extra):
                continue
            f = _embedding_counts(s_rhs, r_rhs)
            if f[0][0] == 0:
                continue
            candidates.append((p * parents_prob, r_rhs, p, f))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        for score, r_rhs, _, f in candidates[:top]:
            placed = _choose_embedding(s_rhs, r_rhs, f, rng)
            at = dict(zip(placed, spans, strict=True))
            new: list[str] = list(tokens[:start])
            masks: list[tuple[int, str]] = []
            for j, sym in enumerate(r_rhs):
                if j in at:
                    a, b = at[j]
                    new.extend(tokens[a:b])
                else:
                    masks.append((len(new), sym))
                    new.append(MASK)
            new.extend(tokens[end:])
            key = (tuple(new), tuple(masks))
            if key in seen:
                continue
            seen.add(key)
            out.append(Masked(tokens=tuple(new), masks=tuple(masks),
                              cfg_from=f"{node.label} -> {' '.join(s_rhs)}",
                              cfg_to=f"{node.label} -> {' '.join(r_rhs)}", prob=score))

    visit(root, 0, 1.0)
    if k is not None and len(out) > k:
        keep = sorted(rng.sample(range(len(out)), k))
        out = [out[i] for i in keep]
    return out
