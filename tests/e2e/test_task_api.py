"""The task API members later plugins build on, checked on every shipped task with a tiny random model:
per-row losses and logits of a batch; the input-embedding layer and a forward from given embeddings; class
probabilities (or answers) per input for suite cases and i.i.d. examples; another model's weights as a
frozen teacher; each training unit's text, label and groups."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from beluga_core.config.load import load_config
from beluga_core.contracts.losses import Loss
from beluga_core.data.pretrained import resolve_model_path
from beluga_core.execution.worker import Worker
from beluga_core.planning.jobs import JobKind
from beluga_core.planning.plan import Plan, build_plan
from beluga_core.training.loop import Trainer
from beluga_core.training.methods.vanilla import Vanilla

CPU = torch.device("cpu")

SUITES: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {
    "classification": (
        {"input_kind": "text", "label_space": ["negative", "neutral", "positive"]},
        [{"inputs": ["a fine film"], "label": 2, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": ["an awful film"], "label": 0, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": ["it is a film"], "expectation": {"kind": "not_eq", "value": 0}},
         {"inputs": ["a good film", "a good movie"], "loss": "inv",
          "expectation": {"kind": "inv", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}}]),
    "sentiment": (
        {"input_kind": "text", "label_space": ["negative", "neutral", "positive"]},
        [{"inputs": ["a fine film"], "label": 2, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": ["a film"], "label": 1, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": ["it is a film"], "expectation": {"kind": "not_eq", "value": 0}},
         {"inputs": ["a good film", "a very good film"], "loss": "dir",
          "expectation": {"kind": "monotonic", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}}]),
    "paraphrase": (
        {"input_kind": "text_pair", "label_space": ["not_duplicate", "duplicate"]},
        [{"inputs": [["Is it red?", "Is it red?"]], "label": 1, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": [["Is it red?", "Is it blue?"]], "label": 0, "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": [["Is it red?", "Is it red?"], ["Is it red?", "Is it rad?"]], "loss": "inv",
          "expectation": {"kind": "inv", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}}]),
    "reading": (
        {"input_kind": "context_question", "label_space": None},
        [{"inputs": [["Anna met Bob at noon in Paris.", "Who met Bob?"]], "label": "Anna",
          "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": [["Carl met Dan at noon in Rome.", "Who met Dan?"]], "label": "Carl",
          "expectation": {"kind": "eq", "target": "label"}},
         {"inputs": [["Anna met Bob.", "Who met Bob?"], ["Anna met Bob.", "Who mte Bob?"]], "loss": "span-inv",
          "expectation": {"kind": "inv", "agg": "all_except_first", "level": "pairwise", "tolerance": 0.1}}]),
}
IID = {"classification": "builtin:sst3", "sentiment": "builtin:sst2", "paraphrase": "builtin:qqp-fixture",
       "reading": "builtin:squad-fixture"}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised 1-layer BERT with the shipped MiniLM's tokenizer (fast to build and run)."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path("embedded:minilm"))
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1,
                         num_attention_heads=2, intermediate_size=32, max_position_embeddings=512)
              ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def plan_for(task: str, model: Path, tmp: Path) -> Plan:
    header, raw = SUITES[task]
    cases = []
    for k in range(3):  # three copies, so every split part gets cases
        for i, c in enumerate(raw):
            loss = c.get("loss", "mft")
            cases.append({"id": f"{task}/{k}/{i}", "groups": {"functionality": f"f{i}"},
                          "test_type": {"mft": "MFT", "dir": "DIR"}.get(loss, "INV"), "loss": loss, **c})
    suite = tmp / f"{task}.jsonl"
    head = {"kind": "suite", "name": f"mini-{task}", "levels": ["functionality"], "scoring_level": "functionality",
            "task": task, **header}
    suite.write_text("\n".join(json.dumps(r) for r in [head, *cases]) + "\n")
    options = "options = {max_length = 48, doc_stride = 16, max_query_length = 16}\n" if task == "reading" else ""
    config = tmp / f"{task}.toml"
    config.write_text(f'name = "api"\nconfigurations = ["iid", "iid-then-t"]\nscenarios = ["seen"]\n'
                      f'[model]\nname = "{model}"\nmax_length = 32\n'
                      f'[[tasks]]\nname = "{task}"\nsuite = "{suite}"\niid = "{IID[task]}"\n{options}'
                      f'[split]\nratios = [0.34, 0.33, 0.33]\n'
                      f'[sizes]\niid_train = 8\niid_test = 6\n[training]\nbatch_size = 4\nepochs = 1\n'
                      f'[executor]\nthreads = 1\n')
    return build_plan(load_config(config), config)


@pytest.mark.parametrize("task_name", list(SUITES))
def test_task_api_members(task_name: str, tiny_model: Path, tmp_path: Path) -> None:
    plan = plan_for(task_name, tiny_model, tmp_path)
    worker = Worker(plan, "cpu", tmp_path / "cache")
    task = worker.tasks[task_name].task
    suite = plan.tasks[0].suite
    iid = worker.iid_data(task_name)
    encoder = worker.encoder(task, str(tiny_model))
    model = worker.model(task, str(tiny_model), {})

    # Units: text, label and groups of every suite case and i.i.d. example.
    cases = list(suite.cases)
    trainset = task.build_trainset(cases, iid.train[:4], "functionality", suite.group_of)
    units = trainset.units()
    suite_units = [u for u in units if u.source == "suite"]
    assert {u.case_id for u in suite_units} == {c.id for c in cases}
    one = next(u for u in suite_units if u.case_id == cases[0].id)
    assert one.text == cases[0].inputs[0] and one.label == cases[0].label
    assert one.groups == {"functionality": "f0", "test_type": "MFT"} and one.env == "f0"
    assert [u.label for u in units if u.source == "iid"] == [ex.label for ex in iid.train[:4]]

    # Per-row losses and logits of a batch, from the trainer's batch_output.
    trainset.length_of = encoder.length
    encoder.encode_many(trainset.inputs())
    trainer = Trainer(task, model, encoder, CPU, {"learning_rate": 1e-3, "batch_size": 4, "epochs": 1}, 1,
                      Vanilla())
    import random

    for batch in trainset.epoch(random.Random(0), 4):
        out = trainer.batch_output(batch)
        assert out.row_losses.shape == (batch.n_rows,) and torch.isfinite(out.row_losses).all()
        assert out.loss.dim() == 0 and torch.allclose(out.loss, trainer.batch_loss(batch))
        logits = out.logits if isinstance(out.logits, tuple) else (out.logits,)
        assert all(t.shape[0] >= len(batch) for t in logits)
        # The batch loss is the rows' mean — for reading, weighted as the task weighs its terms: an input's
        # windows (single), pairs that share a token (pair).
        weights = None
        if task_name == "reading" and batch.kind == "single":
            weights = torch.tensor([float(len(encoder[x])) for x in batch.inputs])  # type: ignore[index]
        elif task_name == "reading":
            k = len(batch.inputs) // 2
            weights = torch.tensor([float(len(encoder.alignment(o, q)[0]) > 0)  # type: ignore[attr-defined]
                                    for o, q in zip(batch.inputs[:k], batch.inputs[k:], strict=True)])
        assert torch.allclose(out.loss, Loss.reduce(out.row_losses, weights), atol=1e-6)

    # The input-embedding layer, and a forward from given embeddings equal to the ordinary forward.
    model.eval()
    inputs = [c.inputs[0] for c in cases[:2]]
    features = task.features(encoder, inputs, CPU)
    layer = task.input_embeddings(model)
    assert isinstance(layer, torch.nn.Embedding)
    with torch.no_grad():
        via_embeddings = task.forward_embeddings(model, features, layer(features["input_ids"]))
        plain = model(**features)
    if task_name == "reading":
        assert isinstance(via_embeddings, tuple)
        assert torch.allclose(via_embeddings[0], plain.start_logits, atol=1e-5)
        assert torch.allclose(via_embeddings[1], plain.end_logits, atol=1e-5)
    else:
        assert isinstance(via_embeddings, torch.Tensor)
        assert torch.allclose(via_embeddings, plain.logits, atol=1e-5)

    # Predictions per input: suite cases in the suite's label space, i.i.d. examples in the data's.
    flat = task.predict_cases(model, encoder, cases, CPU)
    assert flat.n_cases == len(cases)
    examples = list(iid.test[:5])
    preds = task.predict_iid(model, encoder, examples, CPU)
    assert len(preds.labels) == len(examples) == len(preds.confidence)
    if task_name == "reading":
        assert flat.answers is not None and flat.probs is None and preds.probs is None
        assert all(a in ex.inputs[0] for a, ex in zip(preds.labels, examples, strict=True))
        assert ((preds.confidence >= 0) & (preds.confidence <= 1)).all()
    else:
        assert flat.probs is not None and flat.probs.shape[1] == len(suite.header.label_space or [])
        np.testing.assert_allclose(flat.probs.sum(axis=1), 1.0, atol=1e-6)
        assert preds.probs is not None and preds.probs.shape[1] == len(task.head_labels or [])
        np.testing.assert_allclose(preds.probs.max(axis=1), preds.confidence)
    scores = task.score_iid(examples, preds, "test")
    assert len(scores.correct) == len(examples) and scores.primary in scores.metrics

    # A teacher: the run's IID model (trained here), frozen; and a state dict given by path.
    iid_job = next(j for j in plan.jobs if j.is_iid_model)
    worker.run(iid_job)
    child = next(j for j in plan.jobs if j.kind is JobKind.FOLD)
    teacher = worker.teacher(child, "iid")
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    trained = worker.state_of(iid_job.id)
    assert all(torch.equal(teacher.state_dict()[k], v) for k, v in trained.items())
    path = tmp_path / "other.pt"
    torch.save({k: torch.zeros_like(v) if v.is_floating_point() else v for k, v in trained.items()}, path)
    zeros = worker.teacher(child, str(path))
    assert all(float(p.abs().sum()) == 0 for p in zeros.parameters())
