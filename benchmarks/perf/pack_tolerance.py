"""How far training drifts when its inputs move by one ulp, and how far a pack is from sequential training: the
tolerance of the packs' equivalence tests (issue 40, "tolerance first").

Three LoRA members (the real MiniLM, SST-2 sentences of different numbers and lengths, different seeds and learning
rates, gradient clipping that bites), fp32 on the CPU, deterministic algorithms, no dropout (hidden, attention,
LoRA's):

- sequential: each trained alone (``train_stage``, what ``pack = 1`` runs);
- one ulp: the same, with every weight of the start model moved one ulp up (``torch.nextafter``): the drift any
  change of summation order or padding could cause, since it perturbs the inputs of every product;
- packed: the three as one pack (``train_pack``).

Distances are the largest absolute difference between the updates training made (trained minus start weights,
each run against its own start), and between the logits of 64 held-out sentences. The equivalence tests
(tests/e2e/test_packs.py) require packed-vs-sequential to be within 4× the one-ulp drift of the updates, measured in
the test itself on its own (smaller) setup.

    python -m benchmarks.perf.pack_tolerance
"""

from __future__ import annotations

import copy
import random
from typing import Any

import torch

from beluga_core.contracts.registries import METHODS
from beluga_core.contracts.tasks import TaskSettings
from beluga_core.data.splits import sample_indices
from beluga_core.tasks.sentiment import SentimentTask
from beluga_core.training.encode import Encoder
from beluga_core.training.loop import seed_everything, train_stage
from beluga_core.training.models import load_sequence_classifier, load_tokenizer
from beluga_core.training.packed_training import MemberSpec, train_pack
from beluga_core.training.trainset import SingleUnit, TrainSet
from benchmarks.harness import header, script_parser

CPU = torch.device("cpu")
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def members(task: SentimentTask, sizes: list[int], lrs: list[float], seed: int = 42,
            batch_size: int = 16) -> list[tuple[TrainSet, int, dict[str, Any]]]:
    """One (training set, seed, hyper-parameters) per member: its own sample of SST-2's training sentences."""
    from beluga_core.data.iid.classification_data import IIDExample

    iid = task.load_iid("builtin:sst2", seed)
    out = []
    for m, (n, lr) in enumerate(zip(sizes, lrs, strict=True)):
        idx = sample_indices(len(iid.train), n, seed + m, "pack")
        examples = [IIDExample(str(iid.train[i].inputs), int(iid.train[i].label)) for i in idx]
        hp = {"learning_rate": lr, "batch_size": batch_size, "epochs": 1, "weight_decay": 0.0, "warmup_ratio": 0.0,
              "max_grad_norm": 0.5}
        out.append((task.build_trainset([], examples, None), 1000 + m, hp))
    return out


def sequential(task: SentimentTask, model: torch.nn.Module, encoder: Encoder,
               spec: list[tuple[TrainSet, int, dict[str, Any]]], lora: dict[str, Any]) -> list[torch.nn.Module]:
    out = []
    for trainset, seed, hp in spec:
        m = copy.deepcopy(model)
        seed_everything(seed)
        train_stage(task, m, encoder, CPU, trainset, hp, METHODS.get("lora")(lora), seed)
        out.append(m.eval())
    return out


def packed(task: SentimentTask, model: torch.nn.Module, encoder: Encoder,
           spec: list[tuple[TrainSet, int, dict[str, Any]]], lora: dict[str, Any]) -> list[torch.nn.Module]:
    specs = [MemberSpec(str(i), ts, METHODS.get("lora")(lora), hp, seed, seed) for i, (ts, seed, hp) in enumerate(spec)]
    out: list[torch.nn.Module | None] = [None] * len(spec)
    for m, state, _ in train_pack(task, copy.deepcopy(model), encoder, CPU, specs):
        trained = copy.deepcopy(model)
        trained.load_state_dict(state)
        out[m] = trained.eval()
    return [m for m in out if m is not None]


def update_distance(a: torch.nn.Module, a_start: torch.nn.Module, b: torch.nn.Module,
                    b_start: torch.nn.Module) -> float:
    """The largest difference between what training changed: (a − its start) against (b − its start). The one-ulp
    run starts one ulp away, which a plain weight distance would count as drift."""
    sa, sa0, sb, sb0 = a.state_dict(), a_start.state_dict(), b.state_dict(), b_start.state_dict()
    return max(float(((sa[k] - sa0[k]) - (sb[k] - sb0[k])).abs().max()) for k in sa)


def logit_distance(a: torch.nn.Module, b: torch.nn.Module, probe: dict[str, torch.Tensor]) -> float:
    with torch.no_grad():
        return float((a(**probe).logits - b(**probe).logits).abs().max())


def main() -> None:
    script_parser(__doc__).parse_args()   # no flags: --help, and no run on a stray argument
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(2)
    print(header("fp32"))
    task = SentimentTask()
    task.configure(TaskSettings())
    encoder = Encoder(load_tokenizer("embedded:minilm"), 128)
    model = load_sequence_classifier("embedded:minilm", 2, config_overrides=NO_DROPOUT)
    lora = {"dropout": 0.0}
    spec = members(task, [96, 160, 64], [5e-4, 1e-3, 2e-4])
    held = members(task, [64], [0.0], seed=7)[0][0]
    # i.i.d. examples make single-input units only: the filter drops nothing, it tells mypy so
    probe = encoder.collate([u.choices[0][0] for u in held.streams["iid"] if isinstance(u, SingleUnit)])
    bumped = copy.deepcopy(model)
    with torch.no_grad():
        for p in bumped.parameters():
            p.copy_(torch.nextafter(p, torch.full_like(p, float("inf"))))
    base = sequential(task, model, encoder, spec, lora)
    ulp = sequential(task, bumped, encoder, spec, lora)
    pack = packed(task, model, encoder, spec, lora)
    start = model.eval()
    print("member  steps  update size  one-ulp drift (update, logits)  packed - sequential (update, logits)  ratio")
    for i, (trainset, _, hp) in enumerate(spec):
        moved = update_distance(base[i], start, start, start)
        dw, dl = update_distance(base[i], start, ulp[i], bumped), logit_distance(base[i], ulp[i], probe)
        pw, pl = update_distance(base[i], start, pack[i], start), logit_distance(base[i], pack[i], probe)
        steps = -(-trainset.n_examples // int(hp["batch_size"]))
        print(f"{i:>6}  {steps:>5}  {moved:11.3e}  {dw:12.3e} {dl:12.3e}         {pw:12.3e} {pl:12.3e}       "
              f"{max(pw / dw, pl / dl):.2f}")


if __name__ == "__main__":
    random.seed(0)
    main()
