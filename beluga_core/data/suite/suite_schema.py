"""The grouped-suite format: the single source of truth for suite files and their JSON Schema.

A suite file is JSON Lines (optionally gzip): the first record is a ``SuiteHeader``, every other record
one ``Case``. Nothing here knows about CheckList or sentiment: levels, label space and test types are
declared by the suite.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

FORMAT_VERSION = 1

# Scenario names that a level may not take, since they name the non-held-out scenarios.
RESERVED_LEVEL_NAMES = frozenset({"standard", "seen"})
# ``test_type`` is a case field, and every suite can hold it out as if it were a level.
TEST_TYPE_LEVEL = "test_type"

Scalar = int | float | str | bool
# One model input: a text, or a pair (text pair, or context + question).
Input = str | tuple[str, str]


class Expectation(BaseModel):
    """Declarative data deciding pass / fail / skip from a case's predictions.

    ``kind`` names an expectation-kind plugin; the remaining fields are that kind's parameters and are
    validated by the plugin (so third-party kinds can add their own).
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    kind: str = Field(description="Name of an expectation-kind plugin (entry point group beluga.expectations).")
    agg: Literal["all", "all_except_first"] = Field(
        "all", description="How per-input results combine into the case outcome (CheckList's agg_fn).")

    def params(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if k not in {"kind", "agg"}}


class Correction(BaseModel):
    """A documented fix of a released suite defect; applied by default, ignored with ``--as-released``.

    Only the fields that are set replace the case's own.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: str = Field(description="Why the released case is wrong, with a reference.")
    test_type: str | None = None
    loss: str | None = None
    label: Scalar | list[Scalar] | None = None
    expectation: Expectation | None = None


class Case(BaseModel):
    """One test case: one or more model inputs judged together by one expectation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, description="Stable, unique within the suite.")
    groups: dict[str, str] = Field(description=(
        "Group of this case at every level the header declares; a level of the header's crossing_levels may be "
        "left out (the case is then in no group of that level)."))
    test_type: str = Field(min_length=1, description="MFT, INV, DIR, or a plugin's type.")
    loss: str = Field(min_length=1, description="Loss plugin this case trains with.")
    loss_params: dict[str, Any] = Field(default_factory=dict,
                                        description="Parameters for the loss, e.g. a DIR comparison.")
    inputs: list[Input] = Field(min_length=1, description="Model inputs; for INV/DIR the original first.")
    label: Scalar | list[Scalar] | None = Field(
        None, description="Gold label of the case (a scalar), or one per input (a list as long as inputs).")
    expectation: Expectation
    correction: Correction | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _label_shape(self) -> Case:
        if isinstance(self.label, list) and len(self.label) != len(self.inputs):
            raise ValueError(f"label has {len(self.label)} entries but the case has {len(self.inputs)} inputs; "
                             "a list label must give one label per input")
        return self

    def with_corrections(self) -> Case:
        """This case with its correction applied (itself when it has none)."""
        if self.correction is None:
            return self
        c = self.correction
        update: dict[str, Any] = {"correction": None}
        for name in ("test_type", "loss", "label", "expectation"):
            value = getattr(c, name)
            if value is not None:
                update[name] = value
        return self.model_copy(update=update)


class SuiteHeader(BaseModel):
    """First record of a suite file."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["suite"] = "suite"
    format_version: int = Field(FORMAT_VERSION, description="Suite format version this file follows.")
    name: str = Field(min_length=1)
    description: str = ""
    levels: list[str] = Field(min_length=1,
                              description="Grouping levels, coarsest first. test_type is always holdable too.")
    scoring_level: str = Field(description="Level whose groups' pass rates are averaged into s_T.")
    task: str | None = Field(None, description="Task plugin whose models this suite tests (e.g. sentiment).")
    input_kind: Literal["text", "text_pair", "context_question"]
    label_space: list[str] | None = Field(
        None, description="Names of the label ids, in id order; null for free-text answers.")
    test_types: list[str] = Field(default_factory=list, description="Test types present in the suite.")
    losses: list[str] = Field(default_factory=list, description="Loss plugins the cases train with.")
    source: dict[str, Any] = Field(default_factory=dict, description="Provenance (e.g. the imported file).")
    maps_to: dict[str, dict[str, str]] | None = Field(None, description=(
        "Used when this suite is another suite's eval suite: per level of the training suite (or test_type), the "
        "training group each of this suite's groups maps to, e.g. {\"functionality\": {\"negation\": \"Simple "
        "negations: negative\"}}. A config's eval_suites entry may replace it."))
    maps_from: str | None = Field(None, description=(
        "The level of this suite whose groups maps_to names (default: the scoring level)."))
    crossing_levels: list[str] = Field(default_factory=list, description=(
        "Levels that cut across the others instead of nesting in them (a target group across functionalities), "
        "at which a case may have no group. Such a case is in no group of the level: every fold that holds one of "
        "the level's groups out trains on it, the level's held-out scenario leaves it out, and every other "
        "scenario scores it. The scoring level cannot be one."))
    split_by: str | None = Field(None, min_length=1, description=(
        "A key of the cases' meta whose value ties cases together: cases with the same value (e.g. generated from "
        "one source instance) always fall in the same part of a split. A case without it is a unit of its own."))

    @field_validator("format_version")
    @classmethod
    def _supported(cls, v: int) -> int:
        if v > FORMAT_VERSION:
            raise ValueError(f"format_version {v} is newer than this beluga supports ({FORMAT_VERSION})")
        return v

    @model_validator(mode="after")
    def _levels_ok(self) -> SuiteHeader:
        if len(set(self.levels)) != len(self.levels):
            raise ValueError(f"levels must be distinct, got {self.levels}")
        bad = RESERVED_LEVEL_NAMES.intersection(self.levels) | ({TEST_TYPE_LEVEL} & set(self.levels))
        if bad:
            raise ValueError(f"level names {sorted(bad)} are reserved (scenario names / the test_type field)")
        if self.scoring_level not in self.levels:
            raise ValueError(f"scoring_level '{self.scoring_level}' is not one of the levels {self.levels}")
        crossing = [lv for lv in self.crossing_levels if lv not in self.levels]
        if crossing:
            raise ValueError(f"crossing_levels {crossing} are not among the levels {self.levels}")
        if self.scoring_level in self.crossing_levels:
            raise ValueError(f"the scoring level '{self.scoring_level}' cannot be a crossing level: every case "
                             "needs a scoring group (pass rates and s_T are per scoring group)")
        if self.maps_from is not None and self.maps_from not in self.holdable_levels():
            raise ValueError(f"maps_from '{self.maps_from}' is not one of the levels {self.holdable_levels()}")
        return self

    def holdable_levels(self) -> list[str]:
        return [*self.levels, TEST_TYPE_LEVEL]
