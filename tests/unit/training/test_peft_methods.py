"""The parameter-efficient methods (lora, ia3 through peft; bitfit): what trains (counted by hand on MiniLM), that
the pretrained body stays frozen bit for bit while the adapters and the head move, that the merged model predicts
as the adapted one, that a checkpoint carries the adapters, and a real lora run through the worker whose kept
weights are a plain model's and export as one.

Checkpoints resumed mid-stage are tested with every other method's in tests/unit/training/test_checkpoints.py.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import DATA, config_with, run_cli
from toys import ToyEncoder, ToyTask, tiny_bert, token_trainset

from beluga_core.contracts.methods import Method
from beluga_core.contracts.registries import METHODS
from beluga_core.core.errors import BelugaError
from beluga_core.training import checkpoint_file as ck_file
from beluga_core.training import checkpoints as ck
from beluga_core.training.loop import seed_everything, train_stage
from beluga_core.training.methods.adapters import adapter_layers
from beluga_core.training.models import load_sequence_classifier, load_tokenizer

CPU = torch.device("cpu")
HP = {"learning_rate": 1e-2, "batch_size": 8, "epochs": 2, "max_grad_norm": 1.0}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def minilm() -> torch.nn.Module:
    """The real MiniLM classifier (6 layers, hidden 384, FFN 1536, 2 classes), as a worker builds it."""
    return load_sequence_classifier("embedded:minilm", 2)


def trainable(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


# Hand counts on MiniLM (L = 6 layers, d = 384, FFN 1536); the head is classifier 384 × 2 + 2 = 770.
#   lora r=8 on query, value: L · 2 modules · (A: r·d + B: d·r) = 6 · 2 · 2 · 8 · 384 = 73,728
#   lora r=4 on query, key, value: 6 · 3 · 2 · 4 · 384 = 55,296
#   ia3: per layer key 384 + value 384 (outputs) + attention output 384 + FFN output 1536 (inputs) = 2,688; · 6
#   bitfit: embeddings LayerNorm 384; per layer q, k, v, attention output, its LayerNorm, FFN output, its
#   LayerNorm 7 · 384 + FFN intermediate 1536 = 4,224, · 6 = 25,344; pooler 384
@pytest.mark.parametrize(("method", "hp", "expected"), [
    ("lora", {}, 73_728 + 770),
    ("lora", {"r": 4, "target_modules": ["query", "key", "value"]}, 55_296 + 770),
    ("lora", {"target_modules": r".*\.self\.(query|value)"}, 73_728 + 770),   # a regular expression, whole names
    ("ia3", {}, 6 * 2_688 + 770),
    ("bitfit", {}, 384 + 25_344 + 384 + 770),
])
def test_what_trains_is_the_hand_counted_adapters_and_the_head(minilm: torch.nn.Module, method: str,
                                                                hp: dict[str, Any], expected: int) -> None:
    model = copy.deepcopy(minilm)
    pristine = {k: v.clone() for k, v in model.state_dict().items()}
    plugin = METHODS.get(method)(hp)
    plugin.prepare(model)
    assert trainable(model) == expected
    assert all(p.requires_grad for p in model.classifier.parameters())
    plugin.prepare(model)   # a second prepare of the same model adds no second set of adapters
    assert trainable(model) == expected
    plugin.finish(model)
    # Untrained adapters are the identity (LoRA's B is zero, IA³'s vectors ones): the model is back bit for bit.
    after = model.state_dict()
    assert after.keys() == pristine.keys() and all(torch.equal(after[k], pristine[k]) for k in pristine)
    assert not adapter_layers(model) and not any("peft_config" in vars(m) for m in model.modules())


class Spy:
    """Wraps a method plugin: keeps the weights the stage leaves before ``finish`` merges them."""

    @staticmethod
    def of(name: str) -> Method:
        base = METHODS.get(name)

        class Spied(base):  # type: ignore[misc, valid-type]
            before_finish: dict[str, torch.Tensor]

            def finish(self, model: torch.nn.Module) -> None:
                self.before_finish = {k: v.clone() for k, v in model.state_dict().items()}
                super().finish(model)

        return Spied()


@pytest.mark.parametrize("name", ["lora", "ia3", "bitfit"])
def test_training_moves_the_adapters_and_the_head_and_leaves_the_body_bit_for_bit(name: str) -> None:
    seed_everything(3)
    model = tiny_bert()
    pretrained = {k: v.clone() for k, v in model.state_dict().items()}
    method = Spy.of(name)
    stats = train_stage(ToyTask(), model, ToyEncoder(), CPU, token_trainset(), HP, method, seed=1)
    assert stats.steps == 6
    trained = {k.replace(".base_layer", ""): v for k, v in method.before_finish.items()}  # type: ignore[attr-defined]
    adapters = {k: v for k, v in trained.items() if k not in pretrained}
    moved = {k for k in pretrained if not torch.equal(trained[k], pretrained[k])}
    head = {k for k in pretrained if k.startswith("classifier.")}
    if name == "bitfit":   # no adapters: the body's biases are its trainable part
        assert not adapters and moved == head | {k for k in pretrained if k.endswith(".bias")}
    else:
        assert adapters and moved == head
        assert all(not torch.equal(v, torch.zeros_like(v)) and not torch.equal(v, torch.ones_like(v))
                   for k, v in adapters.items() if "lora_B" in k or "ia3_l" in k)
    # Merged: the architecture's own keys, the adapted weights changed, nothing else beyond what trained.
    merged = model.state_dict()
    assert merged.keys() == pretrained.keys()
    targets = {"lora": ("query.weight", "value.weight"),
               # IA³ also scales the key and value biases: the toy's are zero, and stay so
               "ia3": ("key.weight", "value.weight", "output.dense.weight"),
               "bitfit": ()}[name]
    assert {k for k in pretrained if not torch.equal(merged[k], pretrained[k])} == \
        moved | {k for k in pretrained if k.startswith("bert.encoder.") and k.endswith(targets)}


@pytest.mark.parametrize("name", ["lora", "ia3"])
def test_the_merged_model_predicts_as_the_adapted_one(minilm: torch.nn.Module, name: str) -> None:
    model = copy.deepcopy(minilm).eval()
    tokenizer = load_tokenizer("embedded:minilm")
    batch = tokenizer(["a gripping, beautifully acted film", "the plot never comes together", "not bad at all"],
                      padding=True, return_tensors="pt")
    with torch.no_grad():
        generator = torch.Generator().manual_seed(0)
        # A head of unit-scale weights (a new head's are ~0.02): logits of order 1, which the adapters move.
        model.classifier.weight.copy_(torch.randn(model.classifier.weight.shape, generator=generator))
        before = model(**batch).logits
        method = METHODS.get(name)()
        method.prepare(model)
        model.eval()   # the injected layers come in training mode (LoRA's dropout)
        for _, layer in adapter_layers(model):   # trained-looking adapters: LoRA's B and IA³'s vectors
            for pname, p in layer.named_parameters():
                if "lora_B" in pname or "ia3_l" in pname:
                    p.copy_((1.0 if "ia3" in pname else 0.0) + 0.3 * torch.randn(p.shape, generator=generator))
        adapted = model(**batch).logits
        method.finish(model)
        merged = model(**batch).logits
    assert (adapted - before).abs().max() > 0.05   # the adapters change the predictions...
    # ...and the merged weights give the same ones, up to fp32 rounding of the reassociated sums (logits of
    # order 1; the differences measured are ~1e-6).
    torch.testing.assert_close(merged, adapted, rtol=1e-5, atol=1e-5)
    assert type(model.bert.encoder.layer[0].attention.self.value) is torch.nn.Linear


def test_a_checkpoint_inside_a_lora_stage_holds_the_adapters(tmp_path: Path) -> None:
    class Stop(Exception):
        pass

    def progress(step: int, n: int) -> None:
        if step == 3:
            raise Stop

    job = ck.JobCheckpoints(ck_file.FolderCheckpoints(tmp_path), "job-a", ck.CheckpointEvery.parse(2), CPU)
    seed_everything(7)
    model = tiny_bert()
    with pytest.raises(Stop):
        train_stage(ToyTask(), model, ToyEncoder(), CPU, token_trainset(), HP, METHODS.get("lora")(), seed=1,
                    progress=progress, checkpoints=ck.StageCheckpoints(job, 0, 1, (0, 0, 0.0)))
    assert not adapter_layers(model)   # a failed stage still leaves a plain model for the worker's next job
    resume = job.resume(n_stages=1)
    assert resume is not None and resume.step == 2
    keys = {k for k in resume.tensors if k.startswith("model/")}
    assert "model/bert.encoder.layer.0.attention.self.query.lora_A.default.weight" in keys
    assert "model/bert.encoder.layer.0.attention.self.query.base_layer.weight" in keys


@pytest.mark.parametrize(("hp", "field"), [
    ({"r": 0}, "method.lora.r"), ({"r": 2.5}, "method.lora.r"), ({"alpha": -1}, "method.lora.alpha"),
    ({"alpha": 1.5}, "method.lora.alpha"),
    ({"dropout": 1.0}, "method.lora.dropout"), ({"target_modules": []}, "method.lora.target_modules"),
    ({"target_modules": ["query", 3]}, "method.lora.target_modules"),
])
def test_bad_lora_hyper_parameters_name_their_field(hp: dict[str, Any], field: str) -> None:
    with pytest.raises(BelugaError) as err:
        METHODS.get("lora")(hp)
    assert err.value.field == field


def test_target_modules_the_model_lacks_are_named_with_the_layers_it_has(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(BelugaError, match=r"target_modules = \['qry'\].*named dense, key, query, value") as err:
        METHODS.get("lora")({"target_modules": ["qry"]}).prepare(tiny_bert())
    assert err.value.field == "method.lora.target_modules"
    # A run stops before anything trains (a dry run at the same point), naming the key's line: each method is
    # tried on the model built on the meta device.
    config = config_with(DATA / "tiny-methods.toml", tmp_path, append='[method.lora]\ntarget_modules = ["qry"]\n',
                         replace={'"group-dro", "fish"]': '"group-dro", "fish", "lora"]'})
    code, _, err_text = run_cli(capsys, "run", config)
    line = config.read_text().splitlines().index('target_modules = ["qry"]') + 1
    assert code == 2 and f"line {line}, field 'method.lora.target_modules'" in err_text and "query, value" in err_text
    assert not (tmp_path / "tiny-methods.duckdb").exists()
    with pytest.raises(BelugaError, match="each must be one of target_modules"):
        METHODS.get("ia3")({"feedforward_modules": ["intermediate.dense"]})
