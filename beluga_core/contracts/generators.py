"""The generator plugin kind: a rule that builds test cases from source instances.

A plugin (``beluga.generators``) is one family of perturbations (entity swaps, context changes, masked entities,
…). beluga reads the source (an i.i.d. dataset, a relation dataset, a suite's MFT cases), hands the generator
every instance with a ``random.Random`` seeded by (seed, generator, instance id), and turns what it returns into
suite cases: an MFT case judged against the gold label on the perturbed input and, for a label-preserving
perturbation, an INV case ``[original, perturbed]``. Levels are ``family ⊃ perturbation``; every case of one
source instance carries the instance id as its ``split_key`` so that a split never separates them.

A generator sees the whole source first (``prepare``: statistics such as cue words or pair frequencies, or a
choice made over all instances, are computed there) and may draw from ``Source.donors`` (e.g. entities of the
same relation from the training data), never from the instances it perturbs.

A generator with ``requires_model`` (adversarial attacks, counterfactual masking, the entity-only de-biased set)
reads a trained model through ``TargetModel`` (``self.model``, set before ``prepare``): probabilities, the loss
gradient at the word embeddings, token attributions; beluga records which model in the suite header
(``source.model``, "generated against") and in each of its cases' meta (``generated_against``: the model's store
id, or ``path:DIR`` for a saved checkpoint), so that a report can tell adaptive robustness (the model attacked is
the one scored) from transfer robustness (another model's adversarial examples), also in a suite put together
from several generated ones.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from beluga_core.contracts.options import DeclaresOptions, NoOptions, PluginOptions, checked_options
from beluga_core.data.iid.relation_instances import RelationInstance
from beluga_core.data.suite.suite_schema import Input

SourceKind = Literal["text", "text_pair", "relation"]


@dataclass(frozen=True)
class SourceInstance:
    """One instance of a source: its id (unique in the source), model input, gold label name and, for
    relation data, its structured form (tokens, entity spans)."""

    id: str
    input: Input
    label: str
    relation: RelationInstance | None = None
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def tokens(self) -> tuple[str, ...]:
        """Whitespace tokens of a single-text input (a relation instance's own tokens)."""
        if self.relation is not None:
            return self.relation.tokens
        if not isinstance(self.input, str):
            raise TypeError(f"instance {self.id} is a pair; it has no single token sequence")
        return tuple(self.input.split())


@dataclass(frozen=True)
class Source:
    """What a generator reads: the instances to perturb, the donors it may draw replacements from (never the
    instances themselves), the label space, and a description for the suite's provenance."""

    name: str
    kind: SourceKind
    instances: tuple[SourceInstance, ...]
    label_space: tuple[str, ...]
    donors: tuple[SourceInstance, ...] = ()
    donors_name: str | None = None
    task: str | None = None


@dataclass(frozen=True)
class Perturbed:
    """One generated input: which perturbation made it, the input, its label (None: the original's — a
    label-preserving perturbation) and a JSON-serialisable note of what changed."""

    perturbation: str
    input: Input
    label: str | None = None
    note: Mapping[str, Any] = field(default_factory=dict)
    # Also emit a DIR case [original, perturbed]: the confidence in the original's gold label must not rise
    # (counterfactual masking: removing the words the model relied on should not make it surer).
    dir_twin: bool = False
    # Emit the MFT case (gold label on the perturbed input); off where no label holds for it (a sentiment
    # input with its most informative words masked has no gold label; only its DIR twin is a test).
    mft: bool = True
    # A generator with its own levels (``Generator.levels``) names the case's group at each of them; the first
    # level's group is then the family the dry run counts under.
    groups: Mapping[str, str] | None = None
    # The MFT case's expectation where it is not "the gold label", e.g. a label set {positive, neutral} as
    # {"kind": "not_eq", "level": "single", "value": 0}: the case keeps ``label`` as given (None: no gold label).
    expectation: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class TokenScores:
    """One input as the model reads it, with a score per token: its pieces, the whitespace word of the input
    each comes from (−1: a special token, an entity marker or the pad of truncation) and the scores."""

    tokens: tuple[str, ...]
    word_of: tuple[int, ...]
    scores: np.ndarray


@dataclass(frozen=True)
class WordGradients:
    """The gradient of the cross-entropy on a label with respect to the word embeddings, per whitespace word
    of the input: the word, its vocabulary ids (empty where truncation cut it off) and the gradient at its
    first piece (zeros where it was cut off)."""

    words: tuple[str, ...]
    ids: tuple[tuple[int, ...], ...]
    gradients: np.ndarray
    loss: float


@runtime_checkable
class TargetModel(Protocol):
    """A trained classifier as a model-dependent generator sees it. Inputs are the suite's own (a relation
    input is its marked text); labels are names of the head's classes. ``queries`` counts the inputs
    evaluated (``probabilities``, ``word_gradients``, ``substituted_gradients``) since the model was loaded:
    attacks report it per success."""

    name: str
    labels: tuple[str, ...]
    queries: int
    unk_token: str

    def probabilities(self, inputs: Sequence[Input]) -> np.ndarray:
        """[len(inputs), len(labels)] class probabilities (fp32, eval mode)."""
        ...

    def word_gradients(self, xs: Sequence[str], label: str) -> list[WordGradients]:
        """Per text, the gradient of the cross-entropy on ``label`` at its word embeddings (one batch)."""
        ...

    def substituted_gradients(self, x: str, label: str, words: Sequence[int],
                              embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each word index in ``words`` and each row e of ``embeddings`` [K, d]: the cross-entropy on
        ``label`` with the word's (first piece's) embedding set to e, and its gradient there — losses
        [len(words), K] and gradients [len(words), K, d]; every (word, row) pair counts one query."""
        ...

    def embeddings(self) -> np.ndarray:
        """The word-embedding matrix [vocabulary, d]."""
        ...

    def vocabulary(self) -> Sequence[str]:
        """The token of every vocabulary id."""
        ...

    def attribute(self, x: str, label: str, method: str, options: Mapping[str, Any]) -> TokenScores:
        """Token attributions of ``x`` towards ``label`` by the attribution plugin ``method``."""
        ...


class Generator(DeclaresOptions, ABC):
    """Base of every generator plugin: ``perturb`` is the one member to implement.

    ``family`` names the family level of the cases; ``perturbations`` the perturbation groups it can emit (for
    the dry run's table); ``kinds`` the source kinds it understands; ``Options`` its options, one strict pydantic
    model (``self.options`` is the validated instance; ``self.option_values`` the values as a dict: the suite
    header records them); ``version`` is recorded in the suite header, so bump it when the output changes.
    ``invariant``: emit an INV twin ``[original, perturbed]`` beside the MFT case of a label-preserving input.
    A generator written before Options (a ``defaults`` dict) gets the dict as ``self.options``, its names checked.
    """

    Options: ClassVar[type[PluginOptions] | None] = NoOptions
    family: ClassVar[str]
    perturbations: ClassVar[tuple[str, ...]] = ()
    kinds: ClassVar[tuple[SourceKind, ...]] = ("text", "text_pair", "relation")
    version: ClassVar[str] = "1"
    invariant: ClassVar[bool] = True
    requires_model: ClassVar[bool] = False
    # Its cases are training data (an augmentation such as CDA's twins of D_train), never tests: each case's meta
    # pins it to T_train (``split_part``), whatever the split's ratios and caps.
    training_data: ClassVar[bool] = False
    # The suite's grouping levels, coarsest first, and the one whose groups are scored; a generator with other
    # levels than family ⊃ perturbation gives every ``Perturbed`` its ``groups``.
    levels: ClassVar[tuple[str, ...]] = ("family", "perturbation")
    scoring_level: ClassVar[str] = "perturbation"
    # Set by beluga before ``prepare`` when ``requires_model``.
    model: TargetModel | None = None

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        given = dict(options or {})
        # Validated by the one options check; its errors name the option as ``options.KEY``.
        self.options: Any = checked_options(type(self), given, "options")
        self.option_values: dict[str, Any] = {**self.defaults, **given}

    def prepare(self, source: Source, seed: int) -> None:
        """Read the whole source before the first ``perturb`` (statistics, choices over all instances)."""
        return None

    @property
    def target(self) -> TargetModel:
        """The model a ``requires_model`` generator works against."""
        if self.model is None:
            raise ValueError("this generator works against a trained model: give one (--model)")
        return self.model

    @abstractmethod
    def perturb(self, instance: SourceInstance, rng: random.Random) -> Iterator[Perturbed]:
        """The inputs generated from one instance (none where the rule does not apply)."""

    def header_fields(self) -> dict[str, Any]:
        """Suite-header fields the generator sets beyond provenance (e.g. ``maps_to`` / ``maps_from``: how its
        groups map onto another suite's, for cross-suite evaluation). Called after the last ``perturb``."""
        return {}

    def notes(self) -> list[str]:
        """Sentences the dry run prints after its tables (e.g. what did not run and why)."""
        return []

    def report(self) -> list[tuple[str, str, float]]:
        """Rows (what, group, value) the dry run prints beside the counts, e.g. the share of instances that
        yielded a swap per relation and role. Filled during ``perturb``."""
        return []
