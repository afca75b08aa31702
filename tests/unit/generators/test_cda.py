"""DiagnoseRE's counterfactual data augmentation over D_train (``cda``), per-case provenance of generated cases
(``generated_against``) and ``beluga run``'s adaptive-or-transfer line, the T_train pin of training data, and
``beluga explain`` on a relation model reading whole entity markers."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any, ClassVar

import numpy as np
import pytest
from toy_targets import PartialTarget

from beluga_core.contracts.generators import Source, SourceInstance, TokenScores
from beluga_core.core.errors import BelugaError
from beluga_core.data.splits import PART_KEY, split_suite
from beluga_core.data.suite.suite_files import Suite
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.generators.attacks.counterfactual import CounterfactualAugmentation, IGContrast
from beluga_core.generators.perturbations.entity_perturbations import EntitySwap
from beluga_core.generators.suite_build import GENERATED_AGAINST, generate

LABELS = ("founded_by", "located_in", "no_relation")


class ScoredWords(PartialTarget):
    """A ``TargetModel`` whose attribution of a word is fixed by a table (markers: none), and whose prediction is
    ``located_in`` for any text containing "near", else ``founded_by``."""

    SCORES: ClassVar[dict[str, float]] = {"started": 0.9, "springfield": 0.5, "acme": 0.3, "jo": 0.25,
                                          "near": 0.8, "town": 0.1}

    def __init__(self) -> None:
        self.name = "scored words"
        self.labels: tuple[str, ...] = LABELS
        self.queries = 0
        self.unk_token = "[UNK]"
        self.attributed: list[tuple[str, str, str, dict[str, Any]]] = []

    def probabilities(self, inputs: Sequence[Any]) -> np.ndarray:
        self.queries += len(inputs)
        return np.array([[0.1, 0.8, 0.1] if "near" in str(x).split() else [0.8, 0.1, 0.1] for x in inputs])

    def attribute(self, x: str, label: str, method: str, options: Mapping[str, Any]) -> TokenScores:
        self.attributed.append((x, label, method, dict(options)))
        words = x.split()
        real = [i for i, w in enumerate(words) if not w.startswith("[")]
        return TokenScores(tuple(words[i].lower() for i in real), tuple(real),
                           np.array([self.SCORES.get(words[i].lower(), 0.0) for i in real]))



def _instances() -> tuple[SourceInstance, ...]:
    return (SourceInstance("t0", "[E1] Acme [/E1] was started by [E2] Jo [/E2] in Springfield", "founded_by"),
            # misclassified (the model says located_in): twinned all the same, as Algorithm 1 masks every x in X
            SourceInstance("t1", "[E1] Acme [/E1] near [E2] Springfield [/E2] town", "founded_by"),
            SourceInstance("t2", "[E1] Bo [/E1] , [E2] Town [/E2]", "located_in"),    # no candidate ≥ 0.2
            SourceInstance("t3", "[E1] Acme [/E1] and [E2] Jo [/E2]", "no_relation"))       # NA: nothing to remove


def test_cda_twins_every_training_sentence_by_hand() -> None:
    model = ScoredWords()
    made = generate(Source("train", "relation", _instances(), LABELS), [("cda", CounterfactualAugmentation())],
                    seed=0, name="cda", model=model, model_record={"name": "m", "model_id": "model-0123456789"})
    got = sorted((c.meta["split_key"], c.test_type, c.groups["family"], c.groups["perturbation"], c.label,
                  c.inputs[0]) for c in made.cases)
    # k = 1: the top candidate ≥ 0.2 of each sentence, deleted; markers and "," never candidates.
    assert got == [("t0", "MFT", "cda", "cda-k1", "no_relation", "[E1] Acme [/E1] was by [E2] Jo [/E2] in Springfield"),
                   ("t1", "MFT", "cda", "cda-k1", "no_relation", "[E1] Acme [/E1] [E2] Springfield [/E2] town")]
    for c in made.cases:
        assert c.meta[PART_KEY] == "train" and c.meta[GENERATED_AGAINST] == "model-0123456789"
        assert c.meta["note"]["masked"] in (["started"], ["near"])
    # Attributed towards the gold label (ig-diagnose by default), not the prediction.
    assert [(x[1], x[2]) for x in model.attributed] == [("founded_by", "ig-diagnose")] * 2 + [("located_in",
                                                                                                 "ig-diagnose")]
    assert dict((what, v) for _, what, _, v in made.reports) == {
        "instances twinned": 2, "instances no candidate": 1, "instances skipped (NA)": 1,
        "instances skipped (misclassified)": 0}
    assert made.header.source["model"] == {"name": "m", "model_id": "model-0123456789"}


def test_cda_options_k_only_correct_and_a_cheaper_attribution() -> None:
    model = ScoredWords()
    gen = CounterfactualAugmentation({"k": [1, 2], "only_correct": True, "threshold": 0.26,
                                      "attribution_options": {"steps": 2, "rule": "riemann_right"}})
    made = generate(Source("train", "relation", _instances(), LABELS), [("cda", gen)], seed=0, name="cda",
                    model=model)
    got = sorted((c.groups["perturbation"], c.inputs[0]) for c in made.cases)
    # t1 and t2 are misclassified (predicted located_in, founded_by): skipped. t0's words by score: started (0.9),
    # springfield (0.5), acme (0.3), jo (0.25, under the threshold).
    assert got == [("cda-k1", "[E1] Acme [/E1] was by [E2] Jo [/E2] in Springfield"),
                   ("cda-k2", "[E1] Acme [/E1] was by [E2] Jo [/E2] in")]
    assert {x[3]["steps"] for x in model.attributed} == {2}
    assert dict((what, v) for _, what, _, v in made.reports)["instances skipped (misclassified)"] == 2
    for bad, said in (({"k": 0}, r"field 'options.k': Input should be greater than 0 \(got 0\); or Input should "
                                 r"be a valid list"),
                      ({"threshold": 2}, r"field 'options.threshold': Input should be less than or equal to 1"),
                      ({"attribution": "no-such-estimator"}, "field 'options.attribution': .*no-such-estimator"),
                      ({"attribution_options": {"steps": 1}}, "field 'options.attribution_options': steps "
                                                              "must be ≥ 2 with rule riemann_trapezoid"),
                      ({"only_correct": "yes"}, r"field 'options.only_correct': Input should be a valid boolean")):
        with pytest.raises(BelugaError, match=said):
            CounterfactualAugmentation(bad)
    with pytest.raises(BelugaError, match=r"'nope'.*not in the source's label space"):
        generate(Source("train", "relation", _instances(), LABELS),
                 [("cda", CounterfactualAugmentation({"na_label": "nope"}))], seed=0, name="cda", model=model)


def test_cda_of_a_seeded_sample_of_d_train() -> None:
    """A fraction of D_train: ``--sample N`` draws N instances (seeded, in source order); the twins are those of
    exactly the drawn instances that have a candidate."""
    many = tuple(SourceInstance(f"t{i}", f"[E1] Acme{i} [/E1] was started by [E2] Jo [/E2]", "founded_by")
                 for i in range(10))
    made = generate(Source("train", "relation", many, LABELS), [("cda", CounterfactualAugmentation())], seed=7,
                    name="cda", sample=4, model=ScoredWords())
    # The draw, pinned (Python's seeded Mersenne Twister, the same on every platform): instances 5, 6, 7 and 9.
    assert sorted(random.Random("7\x1fsample").sample(range(10), 4)) == [5, 6, 7, 9]
    assert sorted(c.meta["split_key"] for c in made.cases) == ["t5", "t6", "t7", "t9"]
    assert made.header.source["sample"] == 4 and made.instances == 4


def _suite(cases: list[Case]) -> Suite:
    header = SuiteHeader(name="s", levels=["family", "perturbation"], scoring_level="perturbation", task="relation",
                         input_kind="text", label_space=list(LABELS), split_by="split_key")
    return Suite(header, cases)


def _case(i: int, perturbation: str, part: str | None = None) -> Case:
    return Case.model_validate({"id": f"{perturbation}/{i}", "groups": {"family": perturbation[:3],
                                                                        "perturbation": perturbation},
                                "test_type": "MFT", "loss": "mft", "expectation": {"kind": "eq", "target": "label"},
                                "inputs": [f"x {perturbation} {i}"], "label": "no_relation",
                                "meta": {"split_key": f"{perturbation}{i}", **({PART_KEY: part} if part else {})}})


def test_pinned_training_cases_are_all_in_t_train_and_leave_the_others_split_as_before() -> None:
    others = [_case(i, "contrast-k1") for i in range(40)]
    twins = [_case(i, "cda-k1", "train") for i in range(30)]
    before = split_suite(_suite(others), 123, (0.5, 0.25, 0.25), (5, 5, 5))
    after = split_suite(_suite([*others, *twins]), 123, (0.5, 0.25, 0.25), (5, 5, 5))
    # Every twin in T_train, uncapped; the other cases' split (caps included) is the one without twins.
    assert set(after.train) == set(before.train) | {c.id for c in twins}
    assert (after.val, after.test) == (before.val, before.test)
    assert {after.parts[c.id] for c in twins} == {"train"}
    with pytest.raises(BelugaError, match=r"case 'cda-k1/0': meta split_part is 'later'"):
        split_suite(_suite([_case(0, "cda-k1", "later")]), 123)


def test_model_independent_cases_carry_no_provenance_and_model_dependent_ones_theirs() -> None:
    labels = ("founded_by", "no_relation")
    x = SourceInstance("r1", "[E1] Acme [/E1] was started by [E2] Jo [/E2] in Springfield", "founded_by")
    made = generate(Source("toy", "relation", (x,), labels), [("ig-contrast", IGContrast({"k": 1}))], seed=0,
                    name="t", model=ScoredWords(), model_record={"name": "p", "path": "/models/m"})
    assert {c.meta[GENERATED_AGAINST] for c in made.cases} == {"path:/models/m"}
    assert all(PART_KEY not in c.meta for c in made.cases)
    swapped = generate(Source("toy", "relation", (x,), labels, donors=(x,)), [("entity-swap", EntitySwap())], seed=0,
                       name="t")
    assert all(GENERATED_AGAINST not in c.meta for c in swapped.cases)


def test_the_adaptive_or_transfer_line_reads_each_case() -> None:
    from beluga_core.orchestration.coordinator import generated_against_lines

    def plan(cases: list[Case], header_model: dict[str, Any] | None, job_ids: set[str],
             starts: dict[str, str] | None = None) -> Any:
        suite = _suite(cases)
        suite.header.source = {"model": header_model} if header_model else {}
        return SimpleNamespace(jobs=[SimpleNamespace(id=j, config="iid", start_model=None) for j in job_ids]
                               + [SimpleNamespace(id=f"j-{c}", config=c, start_model=m)
                                  for c, m in (starts or {}).items()],
                               tasks=[SimpleNamespace(suite=suite)])

    def against(c: Case, model_id: str) -> Case:
        return c.model_copy(update={"meta": {**c.meta, GENERATED_AGAINST: model_id}})

    adv = [against(_case(i, "hotflip"), "iid-of-this-run") for i in range(3)]
    twins = [against(_case(i, "cda-k1", "train"), "an-external-model") for i in range(2)]
    swaps = [_case(i, "swap") for i in range(4)]
    lines = generated_against_lines(plan([*adv, *twins, *swaps], {"name": "old", "model_id": "an-external-model"},
                                         {"iid-of-this-run", "another-job"}))
    assert lines == [
        "suite 's': 2 of its cases were generated against old: that model is not one of this run's, so every model "
        "here is scored on them by transfer.",
        "suite 's': 3 of its cases were generated against model iid-of-this-run: they score that model adaptively and "
        "every other model of the run by transfer."]
    # One model for every case: one line, as before; a suite without per-case provenance reads its header.
    assert generated_against_lines(plan(adv, None, {"iid-of-this-run"})) == [
        "suite 's': it was generated against model iid-of-this-run: its cases score that model adaptively and every "
        "other model of the run by transfer."]
    assert generated_against_lines(plan(swaps, {"name": "m", "model_id": "x"}, {"y"})) == [
        "suite 's': it was generated against m: that model is not one of this run's, so every model here is scored "
        "on them by transfer."]
    assert generated_against_lines(plan(swaps, None, {"y"})) == []
    # A configuration that starts from the attacked model ([training.configurations] start): adaptive for it.
    assert generated_against_lines(plan(twins, None, {"y"}, {"iid-plus-t": "an-external-model"})) == [
        "suite 's': it was generated against model an-external-model: the models of iid-plus-t start from that model "
        "([training.configurations] start) and train on its own attacks (adaptive); every other model here is scored "
        "on them by transfer."]


# ------------------------------------------------------------------------------------------- a real model


def test_attacks_and_masks_leave_entity_mentions_alone() -> None:
    import numpy as np

    from beluga_core.data.iid.relation_instances import mention_words
    from beluga_core.generators.attacks.counterfactual import select_tokens

    words = ["the", "[E2]", "soprano", "[/E2]", "sang", "with", "[E1]", "Maria", "Callas", "[/E1]", "loudly"]
    assert mention_words(words) == {1, 2, 3, 6, 7, 8, 9}
    assert mention_words(["no", "markers", "here"]) == set()
    # The mention word scores highest, yet the mask takes the best context words.
    tokens = ["the", "[E2]", "soprano", "[/E2]", "sang", "with", "[E1]", "maria", "callas", "[/E1]", "loudly"]
    scores = np.array([0.1, 0.0, 0.99, 0.0, 0.7, 0.3, 0.0, 0.95, 0.9, 0.0, 0.5])
    chosen = select_tokens(tokens, list(range(11)), scores, k=2, threshold=0.2, keep_words=mention_words(words))
    assert [tokens[i] for i in chosen] == ["sang", "loudly"]
