"""Packs: K LoRA trainings ("members") over one frozen base in one process, one forward pass of the base per step.

A study trains many small adapters of the same base (folds × seeds × grid points). Trained one by one, each step
asks the device for one small batch; packed, each step runs the frozen base once over every member's batch, the
rows tagged by member, and each member's low-rank update applies to its own rows only. Everything else stays the
member's own, as if it trained alone (``loop.train_stage``):

- its data order (its stage's seeded generator) and its method instance;
- its adapters' initialisation (drawn after seeding the process as its sequential run does, through peft);
- its head (a copy of the start model's), optimizer (AdamW over its parameters only: its learning rate, its step
  count), schedule and gradient clipping (over its own parameters, never the pack's);
- its dropout masks: every dropout of the base (hidden, attention probabilities) and of its adapters draws the
  member's rows from the member's own ``torch.Generator``;
- its checkpoints (``StageCheckpoints``), saved for every member at the same pack step so that a resumed pack
  pads exactly as the uninterrupted one did;
- when it finishes, it leaves the pack: its parameters are never touched again, its adapters are merged into a
  copy of the start weights (as ``adapters.merge_adapters`` merges), and the caller evaluates and commits it.

What differs from sequential training is arithmetic only: a member's rows are padded to the longest row of the
pack rather than of its own batch (the padded keys get exactly zero attention weight, but reductions run over
longer rows), and the base's matrix products run over more rows. The equivalence tests bound the difference by
the drift one ulp of input perturbation causes (benchmarks/perf/pack_tolerance.py).

The stand-ins for the base's layers are ``training.pack_layers``'s, the grouping and padding of a step's rows
``training.pack_rows``', and the pack's clock ``training.pack_clock``'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from beluga_core.contracts.methods import Method
from beluga_core.contracts.tasks import Task
from beluga_core.contracts.training import Batch, Encoder, TrainSet
from beluga_core.core.errors import BelugaError
from beluga_core.training.checkpoint_file import CheckpointRejected
from beluga_core.training.checkpoints import StageCheckpoints
from beluga_core.training.loop import Trainer, TrainStats, seed_everything
from beluga_core.training.methods.adapters import adapter_layers
from beluga_core.training.methods.lp import encoder_of
from beluga_core.training.pack_clock import PackClock
from beluga_core.training.pack_layers import (
    PACK_ATTENTION,
    MemberDropout,
    PackDropout,
    PackedLoRALinear,
    register_pack_attention,
)
from beluga_core.training.pack_rows import CPU_PASS_TOKENS, PackRows, pad_to, row_groups
from beluga_core.training.precision import autocast

_Shape = tuple[float, float]   # an adapted layer's LoRA scaling and dropout probability


class _MemberRows(torch.nn.Module):
    """Stands in for the shared base inside a member's model: returns the member's rows of the base's output of
    the step. It holds the member's adapters, so that the member's parameters (its optimizer's, its clipping's,
    its checkpoint's) are its adapters and its head, in the order a sequential model lists them."""

    def __init__(self, pack: Pack, member: int, adapters: list[torch.nn.Parameter]) -> None:
        super().__init__()
        self.adapters = torch.nn.ParameterList(adapters)
        # The member's dropout generator travels with its checkpoint as a buffer (refreshed before each save).
        self.register_buffer("generator_state", pack.rows.generators[member].get_state())
        self.generator_state: torch.Tensor
        self.rows_of: Callable[[int], Any]
        object.__setattr__(self, "rows_of", pack.rows_of)   # not a submodule: the pack owns its members
        self.member = member

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.rows_of(self.member)


@dataclass
class MemberSpec:
    """One member's training: what its sequential ``train_stage`` call would get."""

    name: str
    trainset: TrainSet
    method: Method
    hp: dict[str, Any]
    init_seed: int      # the process seed its job trains under (``seed_everything``): its adapters' initialisation
    data_seed: int      # its stage's data-order seed
    progress: Callable[[int, int], None] | None = None
    checkpoints: StageCheckpoints | None = None


@dataclass
class _Member:
    spec: MemberSpec
    model: torch.nn.Module
    rows_module: _MemberRows
    trainer: Trainer
    updates: Iterator[list[Batch]]
    n_steps: int
    steps: int = 0
    examples: int = 0
    total: torch.Tensor | None = None
    # Its share of the pack's time (``PackClock``): what its train_seconds records.
    seconds: float = 0.0
    # The collated batches of the step, padded to the pack's length, in the order the task asks for logits.
    pending: list[dict[str, torch.Tensor]] = field(default_factory=list)
    resumed: bool = False


class _MemberTrainer(Trainer):
    """A member's ``Trainer``: its logits are its head over its rows of the pack's base pass."""

    pending: list[dict[str, torch.Tensor]]

    def logits(self, inputs: list[Any]) -> torch.Tensor:
        batch = self.pending.pop(0)
        if int(batch["input_ids"].shape[0]) != len(inputs):
            raise BelugaError(f"a packed member asked for the logits of {len(inputs)} inputs, its step has "
                              f"{int(batch['input_ids'].shape[0])}; the task's batch_outputs must ask once per batch")
        with autocast(self.device):
            logits: torch.Tensor = self.model(**batch).logits
        return logits if self.logit_transform is None else self.logit_transform(logits)


class Pack:
    """The shared base of a pack and its members' models (``train_pack`` drives it)."""

    def __init__(self, task: Task, model: torch.nn.Module, encoder: Encoder, device: torch.device,
                 specs: Sequence[MemberSpec]) -> None:
        register_pack_attention()
        self.task, self.encoder, self.device = task, encoder, device
        self.start_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        shared = copy.deepcopy(model)
        for p in shared.parameters():
            p.requires_grad_(False)
        body = encoder_of(shared)
        self.prefix = next(n for n, m in shared.named_children() if m is body)
        self.rows = PackRows([torch.Generator(device=device) for _ in specs])
        inits = [self._adapters_of(spec, shared, body, i) for i, spec in enumerate(specs)]
        # What a member starts from, to start it afresh when its checkpoint is rejected.
        self._initial = [({n: (a.clone(), b.clone()) for n, (a, b) in init[0].items()}, g.get_state())
                         for init, g in zip(inits, self.rows.generators, strict=True)]
        self.layers: dict[str, PackedLoRALinear] = {}
        for name, (scaling, dropout) in inits[0][1].items():
            parent, _, attr = name.rpartition(".")
            base = body.get_submodule(name)
            assert isinstance(base, torch.nn.Linear)
            layer = PackedLoRALinear(base, [init[0][name][0] for init in inits], [init[0][name][1] for init in inits],
                                     scaling, dropout, self.rows)
            setattr(body.get_submodule(parent) if parent else body, attr, layer)
            self.layers[name] = layer
        for name, module in list(body.named_modules()):
            if isinstance(module, torch.nn.Dropout):
                parent, _, attr = name.rpartition(".")
                setattr(body.get_submodule(parent) if parent else body, attr, PackDropout(module.p, self.rows))
        for module in body.modules():   # the attention function reads the rows from the module it is called by
            object.__setattr__(module, "beluga_pack_rows", self.rows)
        config: Any = shared.config
        config._attn_implementation = PACK_ATTENTION
        self.shared, self.body = shared, body
        self._output: Any = None
        self._blocks: list[tuple[int, int, int]] = []
        # The tokens (rows × padded width) each member put through the base's passes in the current step.
        self.step_tokens: dict[int, int] = {}
        self.members = [self._member(i, spec) for i, spec in enumerate(specs)]

    def _adapters_of(self, spec: MemberSpec, shared: torch.nn.Module, body: torch.nn.Module,
                     member: int) -> tuple[dict[str, tuple[torch.Tensor, torch.Tensor]], dict[str, _Shape]]:
        """Member ``member``'s initial adapters, as its sequential stage would draw them: the process seeded as
        its job is (``seed_everything``), then peft's injection. The injection is taken out again (unmerged); the
        process's generator state after it seeds the member's dropout generator."""
        seed_everything(spec.init_seed)
        spec.method.prepare(shared)    # injects into the body, as its sequential stage's prepare does
        adapters: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        shape: dict[str, _Shape] = {}
        for name, layer in adapter_layers(body):
            if type(layer).__name__ != "Linear" or not hasattr(layer, "lora_A"):
                raise BelugaError(f"packs hold LoRA adapters on linear layers; {name} is a {type(layer).__name__}")
            adapters[name] = (layer.lora_A["default"].weight.detach().clone(),
                              layer.lora_B["default"].weight.detach().clone())
            dropout = layer.lora_dropout["default"]
            shape[name] = (float(layer.scaling["default"]), float(getattr(dropout, "p", 0.0)))
        for name, layer in adapter_layers(body):     # out again, unmerged: the base stays the start model
            parent, _, attr = name.rpartition(".")
            setattr(body.get_submodule(parent) if parent else body, attr, layer.get_base_layer())
        for module in body.modules():
            module.__dict__.pop("peft_config", None)
        for p in shared.parameters():
            p.requires_grad_(False)
        if self.device.type == "cpu":   # the state its sequential run's CPU dropout masks would start from
            self.rows.generators[member].set_state(torch.get_rng_state())
        else:
            self.rows.generators[member].manual_seed(spec.init_seed)
        return adapters, shape

    def _member(self, i: int, spec: MemberSpec) -> _Member:
        adapters = [p for layer in self.layers.values() for p in (layer.lora_A[i], layer.lora_B[i])]
        rows = _MemberRows(self, i, adapters)
        model = copy.copy(self.shared)
        model._modules = {name: (rows if name == self.prefix else copy.deepcopy(module))
                          for name, module in self.shared._modules.items()}
        for name, module in list(model.named_modules()):   # the head's own dropout: the member's generator too
            if isinstance(module, torch.nn.Dropout):
                parent, _, attr = name.rpartition(".")
                setattr(model.get_submodule(parent) if parent else model, attr,
                        MemberDropout(module.p, self.rows.generators[i]))
        for p in model.parameters():
            p.requires_grad_(True)
        model.train()
        batch_size, epochs = int(spec.hp["batch_size"]), float(spec.hp["epochs"])
        n_steps = spec.method.n_steps(spec.trainset, batch_size, epochs)
        import random

        trainer = _MemberTrainer(self.task, model, self.encoder, self.device, spec.hp,
                                 spec.method.optimizer_steps(n_steps), spec.method)
        trainer.pending = []
        spec.method.start(trainer, spec.trainset, n_steps)
        updates = iter(spec.method.steps(spec.trainset, random.Random(spec.data_seed), batch_size, epochs))
        member = _Member(spec, model, rows, trainer, updates, n_steps, total=torch.zeros((), device=self.device))
        member.pending = trainer.pending
        if spec.checkpoints is not None:
            try:
                resumed = spec.checkpoints.resumed(updates, model, trainer.optimizer, trainer.scheduler, spec.method,
                                                   n_steps, self.device)
            except CheckpointRejected as exc:   # found not to fit once built: the member starts over, as a job does
                spec.checkpoints.job.reject(str(exc))
                with torch.no_grad():
                    for name, layer in self.layers.items():
                        layer.lora_A[i].copy_(self._initial[i][0][name][0])
                        layer.lora_B[i].copy_(self._initial[i][0][name][1])
                self.rows.generators[i].set_state(self._initial[i][1])
                return self._member(i, replace(spec, checkpoints=replace(spec.checkpoints, resume=None)))
            if resumed is not None:
                member.steps, member.examples, member.total = resumed
                self.rows.generators[i].set_state(rows.generator_state.cpu())
                member.resumed = True
                if spec.progress is not None:
                    spec.progress(member.steps, n_steps)
        return member

    def rows_of(self, member: int) -> Any:
        """Member ``member``'s rows of the base's output of this step (every tensor field sliced)."""
        s, e = next((s, e) for m, s, e in self.rows.blocks if m == member)
        out = self._output
        return type(out)(**{k: (v[s:e] if isinstance(v, torch.Tensor) else v) for k, v in out.items()})

    def step(self, active: list[tuple[int, list[Batch]]]) -> None:
        """One update of every member in ``active`` (member index, its update's batches): the base's forward
        passes over their rows (``row_groups``), each member's loss from its head over its rows, one backward pass,
        then each member's own clipping, optimizer step and schedule."""
        collated = {m: [self.encoder.collate(b.inputs) for b in batches] for m, batches in active}
        losses: dict[int, torch.Tensor] = {}
        self.step_tokens = {}
        self.body.train()
        for m, _ in active:
            self.members[m].trainer.zero_grad()
        for group in row_groups(collated, max_tokens=CPU_PASS_TOKENS if self.device.type == "cpu" else None):
            self._forward(group, collated)
            # A member whose update has several batches reads them in order: one logits call per batch, each
            # of its batches' rows in turn.
            for m in group:
                batches = dict(active)[m]
                s = next(s for mm, s, _ in self._blocks if mm == m)
                loss = torch.zeros((), device=self.device)
                for b in batches:
                    n = len(b.inputs)
                    self.rows.blocks = [(m, s, s + n)]   # rows_of reads this batch's rows
                    loss = loss + self.members[m].trainer.batch_loss(b)
                    s += n
                losses[m] = loss / len(batches)
            # A group's backward pass before the next group's forward: a member's gradients come from its own
            # rows only (the base is frozen), so this is the one backward over all groups, holding one group's
            # activations at a time.
            torch.stack([losses[m] for m in group]).sum().backward()
            self._output = None
        for m, batches in active:
            member = self.members[m]
            member.trainer.step()
            assert member.total is not None
            member.total += losses[m].detach()
            member.steps += 1
            member.examples += sum(len(b) for b in batches)

    def _forward(self, group: list[int], collated: dict[int, list[dict[str, torch.Tensor]]]) -> None:
        """The base's forward pass over the rows of the members in ``group``, padded to the longest of them."""
        width = max(int(c["input_ids"].shape[1]) for m in group for c in collated[m])
        pad_id = int(getattr(self.encoder, "pad_id", 0))
        blocks, parts, row = [], [], 0
        for m in group:
            padded = [pad_to(c, width, pad_id) for c in collated[m]]
            n = sum(int(c["input_ids"].shape[0]) for c in padded)
            blocks.append((m, row, row + n))
            self.step_tokens[m] = self.step_tokens.get(m, 0) + n * width
            row += n
            parts += padded
            self.members[m].pending[:] = padded
        self.rows.blocks = self._blocks = blocks
        inputs = {k: torch.cat([p[k] for p in parts]).to(self.device, non_blocking=True) for k in parts[0]}
        with autocast(self.device):
            self._output = self.body(**inputs)

    def merged_state(self, member: int) -> dict[str, torch.Tensor]:
        """Member ``member``'s model as plain weights: the start weights with its adapters merged and its head."""
        state = dict(self.start_state)
        for name, layer in self.layers.items():
            state[f"{self.prefix}.{name}.weight"] = layer.merged_weight(member).clone()
        model = self.members[member].model
        for name, module in model.named_children():
            if name != self.prefix:
                for k, v in module.state_dict().items():
                    state[f"{name}.{k}"] = v.detach().clone()
        return state



def train_pack(task: Task, model: torch.nn.Module, encoder: Encoder, device: torch.device,
               specs: Sequence[MemberSpec],
               clock: PackClock | None = None) -> Iterator[tuple[int, dict[str, torch.Tensor], TrainStats]]:
    """Train the members of ``specs`` together from ``model``'s weights (the start model every member starts
    from; left unchanged); yields (member index, its trained weights merged into a plain model, its stats) as each
    member finishes, in the order they finish (a member's update count decides when). A member's stats' seconds
    are its share of the pack's time (``PackClock``; pass ``clock`` to read the pack's own)."""
    clock = clock or PackClock(len(specs))
    clock.resume()
    pack = Pack(task, model, encoder, device, specs)
    for spec in specs:
        spec.trainset.length_of = encoder.length
    encoder.encode_many(x for spec in specs for x in spec.trainset.inputs())
    clock.share(pack.members, {}, clock.take())
    active = list(range(len(pack.members)))
    # Checkpoints are taken for every member at the same pack step (when the first member with checkpoints says
    # one is due), so a resumed pack's steps pad as the uninterrupted pack's did.
    while active:
        step: list[tuple[int, list[Batch]]] = []
        for m in list(active):
            member = pack.members[m]
            batches = next(member.updates, None) if member.steps < member.n_steps else None
            if batches is None:
                active.remove(m)
                merged = pack.merged_state(m)
                member.seconds += clock.take()   # its merge, and drawing its batches since the last step
                clock.pause()
                yield m, merged, _stats(member)
                clock.resume()
                continue
            step.append((m, batches))
        if not step:
            break
        pack.step(step)
        due = False
        for m, _ in step:
            member = pack.members[m]
            if member.spec.progress is not None:
                member.spec.progress(member.steps, member.n_steps)
            ck = member.spec.checkpoints
            if ck is not None and not due:
                due = ck.due(member.steps, member.n_steps)
        if due:
            for m, _ in step:
                member = pack.members[m]
                ck = member.spec.checkpoints
                if ck is not None and member.steps < member.n_steps:
                    member.rows_module.generator_state.copy_(pack.rows.generators[m].get_state())
                    assert member.total is not None
                    ck.save(member.steps, member.n_steps, member.examples, member.total, member.model,
                            member.trainer.optimizer, member.trainer.scheduler, member.spec.method, device)
        clock.share(pack.members, pack.step_tokens, clock.take())


def _stats(member: _Member) -> TrainStats:
    assert member.total is not None
    return TrainStats(member.steps, member.examples, float(member.total) / max(1, member.steps), member.seconds)
