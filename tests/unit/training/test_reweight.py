"""The ``reweight`` method (DiagnoseRE's de-biased training): known-answer weights, sampling frequencies within
binomial tolerance, the batches ``steps`` yields from a training set built by the relation task, and option
errors. No model is trained."""

from __future__ import annotations

import json
import math
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch
from toys import LinearToy, ToyEncoder

from beluga_core.contracts.registries import METHODS
from beluga_core.contracts.training import UnitInfo
from beluga_core.core.errors import BelugaError
from beluga_core.data.iid import cues
from beluga_core.data.iid.examples import IIDExample
from beluga_core.data.suite.suite_schema import Case, SuiteHeader
from beluga_core.generators.perturbations import context_perturbations as context
from beluga_core.tasks.relation import RelationTask
from beluga_core.training.loop import Trainer
from beluga_core.training.methods.reweight import Reweight, unit_weights, weighted_draw
from beluga_core.training.trainset import TrainSet

NAMES = ["founded_by", "born_in", "capital_of", "no_relation"]
RULES = {"founded_by": {"founded", "company"}, "born_in": {"born"}, "capital_of": {"capital"}}


def iid(text: str, relation: str) -> UnitInfo:
    return UnitInfo("iid", text, NAMES.index(relation), {}, "iid")


def suite(text: Any, label: Any, test_type: str) -> UnitInfo:
    return UnitInfo("suite", text, label, {"functionality": "f", "test_type": test_type}, "f", "c")


def test_weights_known_answers() -> None:
    units = [
        # two cue words of its relation, one capitalised: 0.5²
        iid("[E1] Apple [/E1] was Founded by [E2] Jobs [/E2] , a company man", "founded_by"),
        # "capital" is a cue of another relation; "born" of its own: 0.5
        iid("[E1] Ann [/E1] was born in the capital [E2] Paris [/E2]", "born_in"),
        # cue words inside the mentions are entity words, not context words: 1
        iid("[E1] Capital City [/E1] lies in [E2] Born County [/E2]", "capital_of"),
        # a cue word counts once however often it occurs: 0.5
        iid("[E2] Bo [/E2] born , born and BORN : [E1] Al [/E1]", "born_in"),
        # a suite MFT case labelled by name: 0.5
        suite("[E1] Rome [/E1] , capital of [E2] Italy [/E2]", "capital_of", "MFT"),
        # not relation instances: an INV pair, an unmarked text, a case without a label: 1
        suite("[E1] Rome [/E1] , capital of [E2] Italy [/E2]", "capital_of", "INV"),
        suite("the capital of Italy", "capital_of", "MFT"),
        suite("[E1] Rome [/E1] , capital of [E2] Italy [/E2]", None, "MFT"),
    ]
    assert unit_weights(units, NAMES, RULES, 0.5) == [0.25, 0.5, 1.0, 0.5, 0.5, 1.0, 1.0, 1.0]
    assert unit_weights(units[:2], NAMES, RULES, 0.2) == pytest.approx([0.04, 0.2])
    assert unit_weights(units, NAMES, RULES, 1.0) == [1.0] * len(units)  # base 1: plain uniform sampling


def test_rules_learned_from_the_iid_relation_examples_only() -> None:
    units = [iid("[E1] A [/E1] founded [E2] B [/E2]", "founded_by"),
             iid("[E1] C [/E1] born in [E2] D [/E2]", "born_in"),
             iid("[E1] E [/E1] , capital of the [E2] F [/E2]", "capital_of"),
             # a suite case's words never become cues while the stage has i.i.d. data
             suite("[E1] G [/E1] zebra [E2] H [/E2]", "founded_by", "MFT")]
    method = Reweight({"num_rules": 1})
    method.learn(units, NAMES)
    assert method.rules == {"founded_by": {"founded"}, "born_in": {"born"}, "capital_of": {"capital"}}
    assert method.weights == [0.5, 0.5, 0.5, 1.0]
    # The generator and the method share one implementation of the rules.
    assert context.tfidf_rules is cues.tfidf_rules


def test_weighted_draw_frequencies_within_binomial_tolerance() -> None:
    weights = [1.0, 0.5, 0.25]
    n = 20_000
    counts = Counter(weighted_draw(weights, n, torch.Generator().manual_seed(3)))
    for i, w in enumerate(weights):
        p = w / sum(weights)
        assert abs(counts[i] - n * p) < 4 * math.sqrt(n * p * (1 - p)), (i, counts[i], n * p)


def relation_task() -> RelationTask:
    task = RelationTask()
    task.use_suite(SuiteHeader(name="re", levels=["functionality"], scoring_level="functionality",
                               input_kind="text", label_space=NAMES))
    return task


def relation_trainset(task: RelationTask) -> TrainSet:
    """30 i.i.d. examples, ten each with 0, 1 and 2 cue words, and four INV pairs, as the loop builds them."""
    fillers = {0: "met", 1: "founded", 2: "founded the company"}
    examples = [IIDExample(f"[E1] H{k}x{i} [/E1] {fillers[k]} [E2] T{k}x{i} [/E2]", 0) for k in (0, 1, 2)
                for i in range(10)]
    cases = [Case(id=f"inv{i}", groups={"functionality": "f"}, test_type="INV", loss="inv",
                  inputs=[f"[E1] P{i} [/E1] founded [E2] Q{i} [/E2]", f"[E1] R{i} [/E1] founded [E2] Q{i} [/E2]"],
                  expectation={"kind": "inv"}) for i in range(4)]
    return task.build_trainset(cases, examples, None)


def group_of(text: str) -> str:
    return "inv" if text.startswith("[E1] P") else text.split()[1][1]  # "0", "1" or "2": its cue words


def run_steps(tmp_path: Path, seed: int, epochs: float = 150) -> tuple[list[list[Any]], int, Reweight]:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"founded_by": ["Founded", "company"]}))
    task = relation_task()
    trainset = relation_trainset(task)
    method = METHODS.get("reweight")({"rules": str(rules)})
    assert isinstance(method, Reweight)
    trainset.length_of = len  # as the loop sets it before batching
    trainer = Trainer(task, LinearToy(), ToyEncoder(), torch.device("cpu"), {"learning_rate": 1e-3}, 1, method)
    n_steps = method.n_steps(trainset, 4, epochs)
    method.start(trainer, trainset, n_steps)
    steps = list(method.steps(trainset, random.Random(seed), 4, epochs))
    seen = [[(b.loss, b.kind, b.inputs, [u.text for u in b.units]) for b in batches] for batches in steps]
    return seen, n_steps, method


def test_steps_on_a_relation_trainset_sample_by_the_weights(tmp_path: Path) -> None:
    steps, n_steps, method = run_steps(tmp_path, seed=0)
    assert len(steps) == n_steps == 150 * (math.ceil(30 / 4) + 4 // 2)  # a plain pass: 8 i.i.d. and 2 pair batches
    assert method.weights == [1.0] * 10 + [0.5] * 10 + [0.25] * 10 + [1.0] * 4
    counts: Counter[str] = Counter()
    for (batch,) in steps:
        loss, kind, inputs, texts = batch
        # One loss type per batch: i.i.d. examples with mft, INV pairs (originals, then perturbations) with inv.
        assert {group_of(t) == "inv" for t in texts} == {loss == "inv"} == {kind == "pair"}
        assert len(inputs) == len(texts) * (2 if kind == "pair" else 1) <= 4
        counts.update(group_of(t) for t in texts)
    n = sum(counts.values())
    mass = {"0": 10 * 1.0, "1": 10 * 0.5, "2": 10 * 0.25, "inv": 4 * 1.0}
    for group, m in mass.items():
        p = m / sum(mass.values())
        assert abs(counts[group] - n * p) < 4 * math.sqrt(n * p * (1 - p)), (group, counts, n * p)


def test_steps_are_deterministic_per_seed(tmp_path: Path) -> None:
    first, n, _ = run_steps(tmp_path, seed=5, epochs=2.5)
    again, _, _ = run_steps(tmp_path, seed=5, epochs=2.5)
    other, _, _ = run_steps(tmp_path, seed=6, epochs=2.5)
    assert len(first) == n == math.ceil(2.5 * 10)  # a fractional last epoch stops early
    assert first == again and first != other


@pytest.mark.parametrize(("options", "field"), [
    ({"base": 0}, "method.reweight.base"), ({"base": 1.5}, "method.reweight.base"),
    ({"base": -0.5}, "method.reweight.base"), ({"base": True}, "method.reweight.base"),
    ({"base": "0.5"}, "method.reweight.base"), ({"num_rules": 0}, "method.reweight.num_rules"),
    ({"num_rules": 2.5}, "method.reweight.num_rules"), ({"num_rules": True}, "method.reweight.num_rules"),
    ({"rules": 3}, "method.reweight.rules"), ({"rules": ""}, "method.reweight.rules"),
])
def test_bad_options_name_their_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(BelugaError, match=re.escape(f"field '{field}'")):
        Reweight(options)


def test_bad_rules_file_and_no_relation_instance(tmp_path: Path) -> None:
    units = [iid("[E1] A [/E1] founded [E2] B [/E2]", "founded_by")]
    for content in ("[1, 2]", '{"founded_by": "founded"}', "{not json"):
        path = tmp_path / "rules.json"
        path.write_text(content)
        with pytest.raises(BelugaError, match=r"field 'method\.reweight\.rules'"):
            Reweight({"rules": str(path)}).learn(units, NAMES)
    with pytest.raises(BelugaError, match=r"field 'method\.reweight\.rules'"):
        Reweight({"rules": str(tmp_path / "missing.json")}).learn(units, NAMES)
    # No relation instance at all (sentiment texts, INV pairs): nothing to de-bias.
    with pytest.raises(BelugaError, match=r"field 'method\.reweight'.*no relation instance"):
        Reweight().learn([UnitInfo("iid", "a fine film", 1, {}, "iid"),
                          suite("[E1] A [/E1] founded [E2] B [/E2]", "founded_by", "INV")], NAMES)
