"""Each generalization method's mechanism, checked directly on toy models (docs/method.md, "Generalization methods").

The toy models run through the real ``Trainer`` / ``train_stage`` and the real method plugins; only the model
(a tiny randomly initialised BERT, or a linear layer) and the encoder (token-id tuples) are stand-ins.
"""

from __future__ import annotations

import copy
import math
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from toys import LinearToy, ToyEncoder, ToyTask, onehot, pair, single, tiny_bert, token_trainset

from beluga_core.config.load import parse_config
from beluga_core.contracts.methods import stage_part
from beluga_core.contracts.registries import METHODS
from beluga_core.contracts.training import Batch
from beluga_core.core.errors import BelugaError
from beluga_core.execution import worker as worker_module
from beluga_core.execution.worker import Worker
from beluga_core.planning.grid_space import job_hparams
from beluga_core.training import loop
from beluga_core.training.loop import Trainer, train_stage
from beluga_core.training.methods.fish import Fish
from beluga_core.training.methods.group_dro import GroupDRO
from beluga_core.training.methods.irm import IRM, irm_penalty
from beluga_core.training.methods.lp import LinearProbing
from beluga_core.training.methods.lp_ft import LinearProbingFineTuning
from beluga_core.training.trainset import TrainSet

CPU = torch.device("cpu")


def float_batch(xs: list[list[float]], targets: np.ndarray, env: str = "a") -> Batch:
    return Batch("mft", "mft", "single", [tuple(x) for x in xs], targets=targets.astype(np.float32),
                 envs=[env] * len(xs))


def toy_trainer(model: torch.nn.Module, method: Any, lr: float = 0.1, n_steps: int = 10,
                **hp: Any) -> Trainer:
    return Trainer(ToyTask(), model, ToyEncoder(floats=True), CPU,
                   {"learning_rate": lr, "batch_size": 4, "epochs": 1, "max_grad_norm": None, **hp}, n_steps, method)


def config(text: str, tmp_path: Path) -> Any:
    tasks = '\n[[tasks]]\nname = "sentiment"\nsuite = "builtin:sst2-phenomena"\niid = "builtin:sst2"\n'
    return parse_config('name = "t"\n' + text + tasks, tmp_path / "t.toml")


# --------------------------------------------------------------------------------------------- lp / lp-ft


def test_lp_freezes_every_encoder_parameter_and_trains_the_head() -> None:
    model = tiny_bert()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    hp = {"learning_rate": 1e-2, "batch_size": 8, "epochs": 2, "max_grad_norm": 1.0}
    stats = train_stage(ToyTask(), model, ToyEncoder(), CPU, token_trainset(), hp, LinearProbing(), seed=1)
    assert stats.steps == 6
    after = model.state_dict()
    encoder = [k for k in before if k.startswith("bert.")]
    head = [k for k in before if k.startswith("classifier.")]
    assert any(".pooler." in k for k in encoder) and head  # the pooler counts as encoder
    assert all(torch.equal(before[k], after[k]) for k in encoder)
    assert all(not torch.equal(before[k], after[k]) for k in head)


def test_lp_ft_second_stage_starts_from_the_probed_head_with_a_fresh_optimizer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = config("[training]\nlearning_rate = 1e-2\nbatch_size = 8\nepochs = 3\nmax_grad_norm = 1.0\n"
                 "[method.lp]\nlearning_rate = 5e-2\n", tmp_path)
    # As after a grid search: lp chose batch size 4, vanilla learning rate 2e-2.
    hp = job_hparams(cfg, "lp-ft", reused={"lp": {"batch_size": 4}, "vanilla": {"learning_rate": 2e-2}})
    method = LinearProbingFineTuning(hp["method"])
    stages = method.stages(hp)
    assert [type(m).__name__ for m, _ in stages] == ["LinearProbing", "Vanilla"]
    (_, lp_hp), (_, ft_hp) = stages
    assert (lp_hp["learning_rate"], lp_hp["batch_size"], lp_hp["epochs"]) == (5e-2, 4, 1.5)
    assert (ft_hp["learning_rate"], ft_hp["batch_size"], ft_hp["epochs"]) == (2e-2, 8, 1.5)

    created: list[dict[str, Any]] = []
    original_init = Trainer.__init__

    def recording_init(self: Trainer, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        created.append({"optimizer": self.optimizer, "state": len(self.optimizer.state),
                        "start": {k: v.clone() for k, v in self.model.state_dict().items()},
                        "lr": self.optimizer.param_groups[0]["lr"],
                        "trainable": sum(p.numel() for g in self.optimizer.param_groups for p in g["params"])})

    ended: list[dict[str, torch.Tensor]] = []

    def recording_train_stage(*args: Any, **kwargs: Any) -> Any:
        stats = train_stage(*args, **kwargs)
        ended.append({k: v.clone() for k, v in args[1].state_dict().items()})
        return stats

    monkeypatch.setattr(loop.Trainer, "__init__", recording_init)
    monkeypatch.setattr(worker_module, "train_stage", recording_train_stage)
    model = tiny_bert()
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    # The production path: the worker trains the job's stages one after the other.
    job = SimpleNamespace(id="lp-ft-job", training_key="lp-ft-job", seed=0, hparams=hp)
    stats, _ = Worker._train(SimpleNamespace(device=CPU, teacher=lambda *_: None), job, ToyTask(), model,
                             ToyEncoder(), token_trainset(), method, None)
    assert len(created) == 2 and len(ended) == 2 and stats.steps > 0
    first, second = created
    probed = ended[0]
    # Stage 2 starts from exactly what stage 1 left (the probed head, the untouched encoder) ...
    assert all(torch.equal(second["start"][k], probed[k]) for k in probed)
    assert not torch.equal(probed["classifier.weight"], initial["classifier.weight"])
    # ... with a new, empty optimizer over all weights, while stage 1's optimizer had accumulated state.
    assert second["optimizer"] is not first["optimizer"] and second["state"] == 0
    assert len(first["optimizer"].state) > 0
    assert first["lr"] == 5e-2 and second["lr"] == 2e-2
    assert second["trainable"] == sum(p.numel() for p in model.parameters()) > first["trainable"]
    # Stage 1 left the encoder alone; stage 2 trained it.
    assert torch.equal(probed["bert.pooler.dense.weight"], initial["bert.pooler.dense.weight"])
    assert not torch.equal(model.state_dict()["bert.pooler.dense.weight"], initial["bert.pooler.dense.weight"])


# --------------------------------------------------------------------------------------------- l2 / dropout


def test_l2_weight_decay_reaches_the_optimizer(tmp_path: Path) -> None:
    cfg = config('methods = ["l2"]\n', tmp_path)
    hp = job_hparams(cfg, "l2")
    assert hp["weight_decay"] == 0.1 and job_hparams(cfg, "vanilla")["weight_decay"] == 0.0
    model = tiny_bert()
    method = METHODS.get("l2")(hp["method"])
    trainer = Trainer(ToyTask(), model, ToyEncoder(), CPU, stage_part(hp), 10, method)
    groups = {g["weight_decay"]: g["params"] for g in trainer.optimizer.param_groups}
    assert set(groups) == {0.1, 0.0}
    decayed = {id(p) for p in groups[0.1]}
    assert id(model.classifier.weight) in decayed and id(model.bert.pooler.dense.weight) in decayed
    # Biases and LayerNorm weights are not decayed (HF's convention).
    assert id(model.classifier.bias) not in decayed
    assert id(model.bert.embeddings.LayerNorm.weight) not in decayed
    overridden = job_hparams(config('methods = ["l2"]\n[method.l2]\nweight_decay = 0.01\n', tmp_path), "l2")
    assert overridden["weight_decay"] == 0.01


def test_per_configuration_training_keys_sit_between_the_suite_step_and_the_method(tmp_path: Path) -> None:
    cfg = config('methods = ["l2", "lp-ft"]\n[training.suite]\nbatch_size = 8\n'
                 '[training.configurations.iid-plus-t]\nlearning_rate = 2e-4\nweight_decay = 0.5\n', tmp_path)
    plus = job_hparams(cfg, "vanilla", configuration="iid-plus-t")
    assert (plus["learning_rate"], plus["batch_size"], plus["weight_decay"]) == (2e-4, 8, 0.5)
    other = job_hparams(cfg, "vanilla", configuration="iid-then-t")
    assert (other["learning_rate"], other["batch_size"], other["weight_decay"]) == (cfg.training.learning_rate, 8, 0.0)
    assert cfg.training.stage("iid")["learning_rate"] == cfg.training.learning_rate  # not a suite step
    # A method's own training key and a grid point are more specific than the configuration's.
    assert job_hparams(cfg, "l2", configuration="iid-plus-t")["weight_decay"] == 0.1
    assert job_hparams(cfg, "vanilla", {"learning_rate": 3e-5}, configuration="iid-plus-t")["learning_rate"] == 3e-5
    lp_stage, ft_stage = job_hparams(cfg, "lp-ft", configuration="iid-plus-t")["stages"]
    assert ft_stage["learning_rate"] == 2e-4 and lp_stage["learning_rate"] != 2e-4  # lp keeps its own rate


def test_dropout_probabilities_reach_the_model_config(tmp_path: Path) -> None:
    method = METHODS.get("dropout")(job_hparams(config("", tmp_path), "dropout")["method"])
    assert method.model_overrides() == {"dropout": 0.3}
    model = ToyTask().build_model("embedded:minilm", **method.model_overrides())
    assert model.config.hidden_dropout_prob == 0.3 and model.config.attention_probs_dropout_prob == 0.3
    probs = {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)}
    assert probs == {0.3}
    custom = config("[method.dropout]\ndropout = 0.2\n", tmp_path)
    assert METHODS.get("dropout")(job_hparams(custom, "dropout")["method"]).model_overrides() == \
        {"dropout": 0.2}


def test_dropout_reaches_models_whose_config_names_it_otherwise(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    from beluga_core.training import models as model_module

    # DistilBERT calls them dropout / attention_dropout, and its head has a dropout of its own (0.2).
    config = DistilBertConfig(vocab_size=50, dim=16, n_layers=1, n_heads=2, hidden_dim=32, max_position_embeddings=32)
    DistilBertForSequenceClassification(config).save_pretrained(tmp_path / "distil")
    model = ToyTask().build_model(str(tmp_path / "distil"), dropout=0.3)
    assert (model.config.dropout, model.config.attention_dropout, model.config.seq_classif_dropout) == (0.3, 0.3, 0.3)
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.3}
    assert "hidden_dropout_prob" not in model.config.to_dict()  # nothing the model would ignore
    # A config with none of the known settings is an error, not a run of vanilla under another name.
    monkeypatch.setattr(model_module, "DROPOUT_KEYS", ("no_such_dropout",))
    with pytest.raises(BelugaError, match="cannot set the dropout of model"):
        ToyTask().build_model(str(tmp_path / "distil"), dropout=0.3)


# --------------------------------------------------------------------------------------------- irm


def _irm_trainer(model: torch.nn.Module, n_steps: int = 10, **hp: Any) -> tuple[IRM, Trainer]:
    irm = IRM(hp)
    trainer = toy_trainer(model, irm, n_steps=n_steps)
    irm.start(trainer, TrainSet({}, {}), n_steps)
    return irm, trainer


XS = [[1.0, 2.0, -1.0], [0.5, -1.0, 2.0], [-2.0, 0.0, 1.0], [1.5, 1.5, 0.5]]
YS = np.array([onehot(0), onehot(1), onehot(1), onehot(0)])


def test_irm_penalty_equals_a_hand_computed_value() -> None:
    model = LinearToy()
    irm, trainer = _irm_trainer(model)
    batch = float_batch(XS, YS)
    penalty = float(irm_penalty(trainer.batch_loss(batch), irm.scale).detach())
    with torch.no_grad():
        z = model.head(torch.tensor(XS)).numpy().astype(np.float64)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    # d/ds_k of mean_i CE(softmax(s ⊙ z_i), y_i) at s = 1 is mean_i (p_ik − y_ik) z_ik.
    grad = ((p - YS) * z).mean(axis=0)
    assert penalty == pytest.approx(float((grad**2).sum()), rel=1e-5)
    assert penalty > 1e-3


def test_irm_penalty_is_zero_for_a_classifier_optimal_in_every_environment() -> None:
    model = LinearToy()
    irm, trainer = _irm_trainer(model)
    with torch.no_grad():
        probs = torch.softmax(model.head(torch.tensor(XS)), dim=1).numpy()
    # Targets equal to the model's own predictions: no rescaling of the logits lowers either env's risk.
    batches = [float_batch(XS[:2], probs[:2], "a"), float_batch(XS[2:], probs[2:], "b")]
    for b in batches:
        assert float(irm_penalty(trainer.batch_loss(b), irm.scale).detach()) == pytest.approx(0.0, abs=1e-12)
    irm.update(trainer, batches)
    assert float(irm.last_penalty) == pytest.approx(0.0, abs=1e-12)


def test_irm_anneals_the_penalty_weight_and_divides_the_loss_by_it() -> None:
    model = LinearToy()
    irm, trainer = _irm_trainer(model, n_steps=10)
    assert [irm.penalty_weight_at(s) for s in range(10)] == [1.0, 1.0] + [1e4] * 8  # the first fifth at 1
    batches = [float_batch(XS[:2], YS[:2], "a"), float_batch(XS[2:], YS[2:], "b")]
    for step in range(3):
        risk = sum(float(trainer.batch_loss(b).detach()) for b in batches) / 2
        penalty = sum(float(irm_penalty(trainer.batch_loss(b), irm.scale).detach()) for b in batches) / 2
        weight = 1.0 if step < 2 else 1e4
        loss = float(irm.update(trainer, batches))
        assert loss == pytest.approx((risk + weight * penalty) / max(weight, 1.0), rel=1e-5)
        assert float(irm.last_penalty) == pytest.approx(penalty, rel=1e-5)
    assert irm.scale.grad is None  # the dummy scale itself never trains
    assert torch.equal(irm.scale, torch.ones(2))


def test_irm_penalty_trains_the_model_through_its_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    model = LinearToy()
    irm, trainer = _irm_trainer(model, n_steps=10)
    irm.step_count = 5  # past the annealing point: weight 1e4, loss divided by it
    batches = [float_batch(XS[:2], YS[:2], "a"), float_batch(XS[2:], YS[2:], "b")]
    params = list(model.parameters())
    # By hand: the gradient of (Σ_e risk_e + 1e4 · penalty_e) / (2 · 1e4), and of the risks alone.
    risks = [trainer.batch_loss(b) for b in batches]
    penalties = [irm_penalty(r, irm.scale) for r in risks]
    objective = sum(r + 1e4 * q for r, q in zip(risks, penalties, strict=True)) / (2 * 1e4)
    expected = torch.autograd.grad(objective, params, retain_graph=True)
    risk_only = torch.autograd.grad(sum(risks) / (2 * 1e4), params)
    seen: list[list[torch.Tensor]] = []
    monkeypatch.setattr(trainer, "step", lambda: seen.append([p.grad.clone() for p in params]))
    irm.update(trainer, batches)
    (got,) = seen
    for g, e, r in zip(got, expected, risk_only, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-8)
        assert not torch.allclose(e, r, rtol=1e-3)  # the penalty's own gradient is a real part of it


def test_fused_forward_gives_each_batch_the_loss_and_gradient_of_its_own_forward(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_bert().eval()  # no dropout: fused and separate passes must agree up to padding
    rng = random.Random(1)

    def ids(n: int) -> tuple[int, ...]:
        return tuple(rng.randrange(5, 45) for _ in range(n))

    batches = [Batch("mft", "mft", "single", [ids(3), ids(9)], targets=np.stack([onehot(0), onehot(1)]),
                     envs=["a", "a"]),
               Batch("inv", "inv", "pair", [ids(4), ids(6)], params=[{}], envs=["b"]),
               Batch("mft", "mft", "single", [ids(12), ids(2), ids(5)],
                     targets=np.stack([onehot(1), onehot(1), onehot(0)]), envs=["c"] * 3)]
    trainer = Trainer(ToyTask(), model, ToyEncoder(), CPU, {"learning_rate": 0.1, "batch_size": 4, "epochs": 1},
                      1, IRM())

    def grads(losses: list[torch.Tensor]) -> list[torch.Tensor]:
        model.zero_grad()
        sum(losses).backward()
        return [p.grad.clone() for p in model.parameters()]

    separate = [trainer.batch_loss(b) for b in batches]
    groups = list(trainer.loss_groups(batches))
    assert len(groups) == 1  # 7 rows: one forward pass
    by_length = sorted(batches, key=lambda b: max(map(len, b.inputs)))  # the groups' order
    fused = {id(b): loss for b, loss in zip(by_length, groups[0], strict=True)}
    for b, loss in zip(batches, separate, strict=True):
        assert float(fused[id(b)].detach()) == pytest.approx(float(loss.detach()), rel=1e-5, abs=1e-7)
    for g_sep, g_fused in zip(grads(separate), grads(groups[0]), strict=True):
        assert torch.allclose(g_sep, g_fused, rtol=1e-4, atol=1e-6)
    monkeypatch.setattr(loop, "FUSED_ROWS", 3)
    assert [len(g) for g in trainer.loss_groups(batches)] == [1, 1, 1]  # no group beyond the row cap


def test_irm_step_takes_one_batch_from_every_environment() -> None:
    trainset = token_trainset(n=30, envs=("a", "b", "c"))
    irm = IRM()
    steps = list(irm.steps(trainset, random.Random(0), batch_size=4, epochs=1))
    # One epoch: as many batches as one pass (3 envs x 3 batches of ≤ 4 of 10 units) = 3 steps of 3 batches.
    assert len(steps) == irm.n_steps(trainset, 4, 1) == 3
    for batches in steps:
        assert [b.envs[0] for b in batches] == ["a", "b", "c"]
        assert all(len(set(b.envs)) == 1 for b in batches)


def test_environment_methods_count_an_epoch_to_the_nearest_step() -> None:
    # Environment "a" has 2 batches of 4 units, b-e one each: 6 batches are one pass. irm (5 batches a step)
    # and fish (5 inner steps) take 1 step, not the 2 that rounding up would give (~2 passes); group-dro 6.
    units = [single((((5 + i, 6), onehot(i % 2)),), "a") for i in range(8)]
    units += [single((((5 + i, 7), onehot(i % 2)),), env) for env in "bcde" for i in range(4)]
    trainset = TrainSet({"mft": units}, {"mft": "mft"})
    assert trainset.batches_per_epoch(4, True) == 6
    assert IRM().n_steps(trainset, 4, 1) == 1
    assert Fish().n_steps(trainset, 4, 1) == 1
    assert GroupDRO().n_steps(trainset, 4, 1) == 6
    assert IRM().n_steps(trainset, 4, 2) == 2  # 2.4 steps
    assert IRM().n_steps(trainset, 4, 0.1) == 1  # never less than one step
    assert IRM().n_steps(TrainSet({}, {}), 4, 1) == 0  # nothing to train on


def test_an_environment_epoch_visits_as_many_units_as_one_pass() -> None:
    # "big": 16 units in 4 batches of 4; s1-s4: one unit each, so a batch drawn from them visits one unit.
    units = [single((((5 + i, 6), onehot(i % 2)),), "big") for i in range(16)]
    units += [single((((5, 7, i), onehot(i % 2)),), f"s{i}") for i in range(1, 5)]
    trainset = TrainSet({"mft": units}, {"mft": "mft"})
    assert trainset.units_per_env_batch(4) == {"big": 4.0, "s1": 1.0, "s2": 1.0, "s3": 1.0, "s4": 1.0}
    # group-dro: a uniformly drawn environment's batch holds (4 + 1 + 1 + 1 + 1) / 5 = 1.6 units on average,
    # so one pass over the 20 units takes 12.5 → 13 steps (8 batches would visit ~13 units).
    dro = GroupDRO()
    assert dro.n_steps(trainset, 4, 1) == 13
    rng = random.Random(0)
    visited = [sum(len(b.envs) for batches in dro.steps(trainset, rng, 4, 1) for b in batches) for _ in range(400)]
    assert sum(visited) / len(visited) == pytest.approx(20.8, rel=0.05)  # 13 × 1.6, i.e. one pass
    # irm: a batch from every environment is 8 units a step: 2.5 → 3 steps; fish: 5 × 1.6 = 8 as well.
    assert IRM().n_steps(trainset, 4, 1) == 3
    assert Fish().n_steps(trainset, 4, 1) == 3


# --------------------------------------------------------------------------------------------- group-dro


def test_group_dro_weights_move_toward_the_group_with_the_highest_loss() -> None:
    model = LinearToy()
    dro = GroupDRO()
    trainer = toy_trainer(model, dro, lr=1e-3)
    trainset = TrainSet({"mft": [single(((tuple(x), YS[0]),), e) for x in XS for e in ("easy", "hard")]},
                        {"mft": "mft"})
    dro.start(trainer, trainset, 10)
    assert dro.env_weights() == {"easy": 0.5, "hard": 0.5}
    # "hard" has the labels flipped relative to "easy": whichever the model prefers, one loss is higher.
    easy = float_batch(XS, YS, "easy")
    hard = float_batch(XS, YS[:, ::-1].copy(), "hard")
    loss_easy, loss_hard = float(trainer.batch_loss(easy).detach()), float(trainer.batch_loss(hard).detach())
    high = "hard" if loss_hard > loss_easy else "easy"
    dro.update(trainer, [hard])
    w = dro.env_weights()
    expected = 0.5 * math.exp(0.01 * loss_hard) / (0.5 * math.exp(0.01 * loss_hard) + 0.5)
    assert w["hard"] == pytest.approx(expected, rel=1e-6)
    history = [dro.env_weights()[high]]
    for _ in range(20):
        dro.update(trainer, [easy])
        dro.update(trainer, [hard])
        history.append(dro.env_weights()[high])
    assert history[-1] > history[0] > 0.5
    assert sum(dro.env_weights().values()) == pytest.approx(1.0)


def test_group_dro_draws_one_environment_per_step() -> None:
    trainset = token_trainset(n=40, envs=("a", "b"))
    steps = list(GroupDRO().steps(trainset, random.Random(0), batch_size=4, epochs=1))
    assert len(steps) == trainset.batches_per_epoch(4, by_env=True) == 10
    assert all(len(b) == 1 and len(set(b[0].envs)) == 1 for b in steps)
    assert {b[0].envs[0] for b in steps} == {"a", "b"}


# --------------------------------------------------------------------------------------------- fish


def test_fish_meta_update_is_theta_plus_epsilon_times_the_inner_displacement() -> None:
    lr = 0.05
    default = Fish()
    default.start(toy_trainer(LinearToy(), default, lr=lr), TrainSet({}, {}), 10)
    assert default.epsilon == pytest.approx(5e-7 / (lr * 5))
    # ε = meta_lr / (lr · inner_steps) = 0.3 here, so the meta step is far above float32 resolution.
    fish = Fish({"meta_lr": 0.3 * lr * 5})
    model = LinearToy()
    trainer = toy_trainer(model, fish, lr=lr)
    fish.start(trainer, TrainSet({}, {}), 10)
    assert fish.epsilon == pytest.approx(0.3)
    # The same model and optimizer state, stepped by hand through the five inner steps.
    shadow_model = copy.deepcopy(model)
    shadow = toy_trainer(shadow_model, fish, lr=lr)
    batches = [float_batch([XS[i % 4], XS[(i + 1) % 4]], YS[[i % 4, (i + 1) % 4]], f"e{i}") for i in range(5)]
    theta = [p.detach().clone() for p in model.parameters()]
    for b in batches:
        shadow.backward_and_step(shadow.batch_loss(b))
    theta_inner = [p.detach().clone() for p in shadow_model.parameters()]
    fish.update(trainer, batches)
    for p, t, ti in zip(model.parameters(), theta, theta_inner, strict=True):
        assert not torch.equal(ti, t)
        torch.testing.assert_close(p.detach(), t + fish.epsilon * (ti - t), rtol=0, atol=1e-6)
        assert (p.detach() - t).abs().max() > 1e-3  # the meta step moved θ, by ε of the inner displacement
    # The run's AdamW keeps its state (five steps so far) into the next outer step.
    state = trainer.optimizer.state[model.head.weight]
    assert int(state["step"]) == 5
    fish.update(trainer, batches)
    assert int(trainer.optimizer.state[model.head.weight]["step"]) == 10


def test_fish_draws_distinct_environments_and_schedules_inner_steps() -> None:
    trainset = token_trainset(n=60, envs=tuple("abcdef"))
    fish = Fish()
    steps = list(fish.steps(trainset, random.Random(0), batch_size=4, epochs=1))
    # 6 envs x 3 batches of ≤ 4 of 10 units = 18 batches = 3.6 steps of 5: 4 steps (the nearest whole number).
    assert trainset.batches_per_epoch(4, True) == 18
    assert len(steps) == fish.n_steps(trainset, 4, 1) == 4
    assert all(len({b.envs[0] for b in batches}) == 5 for batches in steps)
    assert fish.optimizer_steps(len(steps)) == 5 * len(steps)


# --------------------------------------------------------------------------------------------- batches


def test_env_batches_keep_one_loss_and_the_pair_layout() -> None:
    pairs = [pair((f"o{i}",), ((f"p{i}a",), (f"p{i}b",)), {}, "a" if i < 6 else "b") for i in range(10)]
    singles = [single((((f"s{i}",), onehot(i % 2)),), "a" if i % 2 else "b") for i in range(10)]
    trainset = TrainSet({"inv": pairs, "mft": singles}, {"inv": "inv", "mft": "mft"})
    sampler = trainset.env_sampler(random.Random(0), batch_size=4)
    assert sampler.envs == ["a", "b"]
    seen = set()
    for _ in range(20):
        for env in sampler.envs:
            b = sampler.next(env)
            assert set(b.envs) == {env}
            if b.kind == "pair":
                k = len(b.inputs) // 2
                assert b.loss == "inv" and k <= 2
                assert all(p[0].startswith(o[0].replace("o", "p")) for o, p in
                           zip(b.inputs[:k], b.inputs[k:], strict=True))
            else:
                assert b.loss == "mft" and b.targets is not None
            seen.add((env, b.kind))
    assert seen == {("a", "pair"), ("a", "single"), ("b", "pair"), ("b", "single")}
