"""Packs of LoRA members (``[executor] pack``; ``training.packed_training``, ``planning.pack_groups``).

Equivalence with sequential training is measured against the drift one ulp of input perturbation causes in
sequential training itself, on the same setup (benchmarks/perf/pack_tolerance.py measures both on the full model):
fp32, CPU, deterministic algorithms, no dropout anywhere. Dropout under a pack is tested exactly: with every dropout
on, each member draws bit for bit the masks it draws alone (and, on the dropout function, at its rate and independently
of its mates, statistically). Then a real packed run through the worker, executor and store, and the packed SIGKILL
drill.
"""

from __future__ import annotations

import copy
import importlib.util
import io
import json
import math
import random
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import DATA, REPO, beluga, config_with, query, results, run_benchmark
from rich.console import Console
from toys import ToyEncoder, ToyTask, onehot, single

from beluga_core.cli.plan_view import print_plan
from beluga_core.config.load import load_config
from beluga_core.contracts.registries import METHODS
from beluga_core.execution.executors.base import EXECUTORS
from beluga_core.orchestration.plan_summary import summarize_plan
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.planning.pack_groups import form_packs, pack_key, why_not_packed
from beluga_core.training import pack_layers, pack_rows, packed_training
from beluga_core.training.loop import seed_everything, train_stage
from beluga_core.training.models import load_sequence_classifier
from beluga_core.training.trainset import TrainSet

CPU = torch.device("cpu")
NO_DROPOUT = {"num_hidden_layers": 2, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
# The equivalence bound, in units of the one-ulp drift measured beside it (benchmarks/perf/pack_tolerance.py found
# packed-vs-sequential at 0.83–1.18× the drift on the full model).
DRIFT_MARGIN = 4.0

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def minilm() -> torch.nn.Module:
    """The real MiniLM classifier, its first 2 layers, no dropout."""
    return load_sequence_classifier("embedded:minilm", 2, config_overrides=NO_DROPOUT)


@pytest.fixture
def deterministic() -> Iterator[None]:
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(False)


def trainset(n: int, seed: int, lengths: tuple[int, int]) -> TrainSet:
    """``n`` token-id sentences of MiniLM's vocabulary, ``lengths`` tokens long, labelled by their token range."""
    rng = random.Random(seed)
    units = []
    for i in range(n):
        label = i % 2
        ids = (101, *(rng.randrange(2000, 2500) + 500 * label for _ in range(rng.randrange(*lengths))), 102)
        units.append(single(((ids, onehot(label)),), "a"))
    return TrainSet({"mft": units}, {"mft": "mft"})


# Three members: different data, numbers of steps (5, 7, 3), lengths, seeds and learning rates; clipping at a norm
# small enough to bite on every step (so a clip over the pack's gradients instead of each member's would show).
MEMBERS = [(trainset(20, 1, (3, 8)), 11, 2e-3), (trainset(28, 2, (8, 20)), 22, 5e-4),
           (trainset(12, 3, (2, 5)), 33, 1e-3)]


def hp(lr: float) -> dict[str, Any]:
    return {"learning_rate": lr, "batch_size": 4, "epochs": 1, "max_grad_norm": 0.05}


def sequential(model: torch.nn.Module, start: torch.nn.Module | None = None) -> list[dict[str, torch.Tensor]]:
    out = []
    for ts, seed, lr in MEMBERS:
        m = copy.deepcopy(start if start is not None else model)
        seed_everything(seed)
        train_stage(ToyTask(), m, ToyEncoder(), CPU, ts, hp(lr), METHODS.get("lora")({"dropout": 0.0}), seed)
        out.append({k: v.clone() for k, v in m.state_dict().items()})
    return out


def specs() -> list[packed_training.MemberSpec]:
    return [packed_training.MemberSpec(str(i), ts, METHODS.get("lora")({"dropout": 0.0}), hp(lr), seed, seed)
            for i, (ts, seed, lr) in enumerate(MEMBERS)]


def furthest(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def test_three_members_match_training_them_one_by_one_within_the_one_ulp_drift(minilm: torch.nn.Module,
                                                                                deterministic: None) -> None:
    alone = sequential(minilm)
    bumped = copy.deepcopy(minilm)
    with torch.no_grad():
        for p in bumped.parameters():
            p.copy_(torch.nextafter(p, torch.full_like(p, math.inf)))
    start, bumped_start = minilm.state_dict(), bumped.state_dict()
    # The drift of what training changed (each run against its own start: the start itself moved one ulp).
    drift = [max(float(((a[k] - start[k]) - (b[k] - bumped_start[k])).abs().max()) for k in a)
             for a, b in zip(alone, sequential(minilm, bumped), strict=True)]
    together = {m: state for m, state, _ in packed_training.train_pack(ToyTask(), copy.deepcopy(minilm), ToyEncoder(),
                                                                       CPU, specs())}
    for m, state in enumerate(alone):
        moved = furthest(state, start)
        assert moved > 1e-4   # the members trained: a difference of 0 would prove nothing
        assert 0 < drift[m] < moved / 100
        assert together[m].keys() == state.keys()
        assert furthest(together[m], state) <= DRIFT_MARGIN * drift[m], (m, furthest(together[m], state), drift[m])


def test_a_finished_member_is_frozen_bit_for_bit_while_the_others_train(minilm: torch.nn.Module) -> None:
    made: list[packed_training.Pack] = []

    class Kept(packed_training.Pack):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            made.append(self)

    original = packed_training.Pack
    packed_training.Pack = Kept   # type: ignore[misc]
    try:
        at_finish: dict[int, dict[str, torch.Tensor]] = {}
        order = []
        for m, _, stats in packed_training.train_pack(ToyTask(), copy.deepcopy(minilm), ToyEncoder(), CPU, specs()):
            pack = made[0]
            at_finish[m] = {k: v.clone() for k, v in pack.members[m].model.state_dict().items()}
            order.append((m, stats.steps))
    finally:
        packed_training.Pack = original   # type: ignore[misc]
    assert order == [(2, 3), (0, 5), (1, 7)]   # the members leave the pack as their steps run out
    pack = made[0]
    for m, state in at_finish.items():
        after = pack.members[m].model.state_dict()
        assert all(torch.equal(after[k], state[k]) for k in state), m
        assert pack.members[m].trainer.optimizer.state_dict()["state"][0]["step"] == pack.members[m].n_steps


def test_pack_dropout_draws_each_members_rows_from_its_own_generator() -> None:
    p, n = 0.1, 200_000
    rows = pack_rows.PackRows([torch.Generator().manual_seed(s) for s in (1, 2, 3)], [(0, 0, 2), (1, 2, 4), (2, 4, 6)])
    dropped = pack_layers.member_dropout(torch.ones(6, n), p, rows) == 0
    # The rate per member: each row's share of zeros is Binomial(n, p) / n (4 standard deviations: ±0.27 %).
    sd = math.sqrt(p * (1 - p) / n)
    for row in dropped:
        assert abs(float(row.float().mean()) - p) < 4 * sd
    # Independence between members: where member 0 drops, member 1 drops at rate p, not more, not less.
    both = dropped[0] & dropped[2]
    assert abs(float(both.float().mean()) - p * p) < 4 * math.sqrt(p * p * (1 - p * p) / n)
    # A member's masks do not depend on its pack mates: alone, member 1 draws the same masks.
    alone = pack_rows.PackRows([torch.Generator().manual_seed(9), torch.Generator().manual_seed(2)], [(1, 0, 2)])
    assert torch.equal(pack_layers.member_dropout(torch.ones(2, n), p, alone) == 0, dropped[2:4])


# Every dropout on: the base's hidden and attention-probability dropout, the head's (hidden_dropout_prob), LoRA's.
WITH_DROPOUT = {"num_hidden_layers": 2, "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
# Three members whose every sentence is 12 tokens: different data, numbers of steps (3, 4, 2) and seeds.
EVEN_MEMBERS = [(trainset(12, 4, (10, 11)), 44, 2e-3), (trainset(16, 5, (10, 11)), 55, 1e-3),
                (trainset(8, 6, (10, 11)), 66, 5e-4)]
# What the pack's drop-in layers are to the dropout they draw (pack_attention, a function, draws the fourth kind).
DROPOUT_KINDS = {pack_layers.PackDropout: "hidden", pack_layers.PackedLoRALinear: "lora",
                 pack_layers.MemberDropout: "head"}
Masks = dict[int, list[tuple[str, torch.Tensor]]]


def masks_drawn(model: torch.nn.Module, members: list[tuple[TrainSet, int, float]],
                share_generator: bool = False) -> tuple[Masks, set[tuple[int, ...]]]:
    """Train ``members`` as one pack; every dropout mask each member drew, in order (kind, kept elements), and the
    members of each forward pass of the base. ``share_generator``: every member draws from member 0's generator."""
    drawn: Masks = {m: [] for m in range(len(members))}
    passes: set[tuple[int, ...]] = set()
    heads: dict[int, int] = {}   # a member's head dropout (its id) → the member
    draw = pack_layers.member_dropout

    def recording(x: torch.Tensor, p: float, rows: pack_rows.PackRows) -> torch.Tensor:
        caller = sys._getframe(1)
        owner = caller.f_locals.get("self")
        kind = DROPOUT_KINDS.get(type(owner)) or ("attention" if caller.f_code.co_name == "pack_attention" else "")
        assert kind, f"member_dropout called by {caller.f_code.co_name}"
        # The same draws, from the same generators, on ones: x times what comes back is what member_dropout returns on
        # x, bit for bit (a product with 1 is exact), and its zeros are the mask, whatever x's values.
        scale = draw(torch.ones_like(x), p, rows)
        kept = scale != 0
        if kind == "head":
            drawn[heads[id(owner)]].append((kind, kept))
        else:
            passes.add(tuple(m for m, _, _ in rows.blocks))
            for m, s, e in rows.blocks:
                drawn[m].append((kind, kept[s:e]))
        return x * scale

    class Recorded(packed_training.Pack):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            shared = self.rows.generators[0]
            for m, member in enumerate(self.members):
                for module in member.model.modules():
                    if isinstance(module, pack_layers.MemberDropout):
                        heads[id(module)] = m
                        if share_generator:
                            module.generator = shared
            if share_generator:
                self.rows.generators[:] = [shared] * len(self.members)

    specs = [packed_training.MemberSpec(str(i), ts, METHODS.get("lora")({"dropout": 0.1}), hp(lr), seed, seed)
             for i, (ts, seed, lr) in enumerate(members)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packed_training, "Pack", Recorded)
        patch.setattr(pack_layers, "member_dropout", recording)
        # A pass takes at most two members' 4 × 12 tokens: a step of three members takes two passes.
        patch.setattr(packed_training, "CPU_PASS_TOKENS", 100)
        finished = [m for m, _, _ in packed_training.train_pack(ToyTask(), copy.deepcopy(model), ToyEncoder(), CPU,
                                                                specs)]
    assert sorted(finished) == list(range(len(members)))
    return drawn, passes


def same_masks(a: list[tuple[str, torch.Tensor]], b: list[tuple[str, torch.Tensor]]) -> bool:
    return len(a) == len(b) and all(ka == kb and torch.equal(x, y) for (ka, x), (kb, y) in zip(a, b, strict=True))


def test_each_member_of_a_pack_draws_bit_for_bit_the_dropout_masks_it_draws_alone() -> None:
    """Every dropout on (hidden, attention probabilities, LoRA, the head's): each member's masks in a pack of three
    equal, bit for bit, the masks it draws trained alone (a pack of one), and differ from its pack mates'.

    Equal by construction: a mask is a function of the member's generator state and of the shape of its rows
    only, never of the values masked (``masks_drawn`` reads it off a draw on ones). Every sentence is 12 tokens, so
    no batch is padded, alone or beside its mates, and a member's rows have the same shape in both. Its draws come
    in the same order: a pass of the base draws each member's rows from its own generator, module by module, and
    its head draws after the pass its rows were in; the pack's three members take two passes a step (members 0
    and 1, then 2: ``row_groups`` under a lowered ``CPU_PASS_TOKENS``), which changes no member's order. The
    variant where every member draws from one generator shows the comparison has power: it fails there."""
    model = load_sequence_classifier("embedded:minilm", 2, config_overrides=WITH_DROPOUT)
    together, passes = masks_drawn(model, EVEN_MEMBERS)
    assert {(0, 1), (2,)} <= passes   # a pass of two members, and one the third took alone
    alone = [masks_drawn(model, [member])[0][0] for member in EVEN_MEMBERS]
    for m in range(len(EVEN_MEMBERS)):
        assert same_masks(together[m], alone[m]), m
        for kind in ("hidden", "attention", "lora", "head"):   # some elements dropped, some kept, in every kind
            kept = torch.cat([x.flatten() for k, x in together[m] if k == kind])
            assert 0 < int(kept.sum()) < kept.numel(), (m, kind)
        for other in range(m):   # the members' masks differ from each other, call by call
            assert not any(torch.equal(x, y) for (_, x), (_, y) in zip(together[m], together[other], strict=False))
    shared, _ = masks_drawn(model, EVEN_MEMBERS, share_generator=True)
    for m in range(len(EVEN_MEMBERS)):
        assert not same_masks(shared[m], alone[m]), m


def test_packs_group_jobs_by_base_start_method_and_hyper_parameters(tmp_path: Path) -> None:
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {'configurations = ["iid-plus-t"]':
                                                              'configurations = ["iid", "iid-plus-t", "iid-then-t"]'},
                         append='\n[training.configurations.iid-then-t]\nlearning_rate = 2e-4\n')
    plan = plan_with_stores(load_config(config), config)
    jobs = plan.jobs
    lora = [j for j in jobs if j.method == "lora"]
    assert why_not_packed(next(j for j in jobs if j.method == "vanilla")) == \
        "method vanilla does not pack (only LoRA adapters over a frozen base do)"
    made = form_packs(jobs, 3)
    plus = [j.id for j in lora if j.config == "iid-plus-t"]
    then = [j.id for j in lora if j.config == "iid-then-t"]
    # IID+T starts from the pretrained model, IID→T from the IID model: different bases, never one pack; the
    # learning rate (2e-4 against lora's 5e-4) is no reason to split; plan order, at most 3 per pack, as even as
    # can be (2 + 2, not 3 + 1).
    assert len(plus) == len(then) == 4
    assert {made.of(i) for i in plus} == {tuple(plus[:2]), tuple(plus[2:])}
    assert {made.of(i) for i in then} == {tuple(then[:2]), tuple(then[2:])}
    assert [len(form_packs(jobs, 8).of(i)) for i in plus] == [4] * 4
    assert pack_key(next(j for j in lora if j.id == then[0])) != pack_key(next(j for j in lora if j.id == plus[0]))
    assert form_packs(jobs, 1).of(plus[0]) == (plus[0],)
    # The dry run shows the packs its executor will form, and why the rest train alone.
    out = io.StringIO()
    executor = EXECUTORS.get("local")(plan.config.executor)
    print_plan(summarize_plan(plan, packs=executor.packs_of(plan, jobs)), Console(file=out, width=300))
    printed = out.getvalue()
    assert "packs ([executor] pack = 4, up to 4 members): 8 trainings in 2 pack(s) (2 × 4 members);" in printed
    assert "; 1 alone: method vanilla does not pack (only LoRA adapters over a frozen base do)" in printed
    assert printed.count("  pack: ") == 2 and f"  pack: {plus[0][:12]} (iid-plus-t/lora/" in printed
    # Ray forms the same packs (a number needs no cluster to ask: nothing starts here).
    ray = EXECUTORS.get("ray")(plan.config.executor.model_copy(update={"name": "ray"}))
    assert ray.packs_of(plan, jobs) == executor.packs_of(plan, jobs)


def test_grid_points_over_learning_rates_pack(tmp_path: Path) -> None:
    # lora keeps its learning rate among its own hyper-parameters too: neither copy may split a grid's points.
    config = config_with(DATA / "tiny-packs.toml", tmp_path, append=(
        "\n[grid]\nenabled = true\nbatch_size = [8]\nepochs = [1]\n"
        "[grid.methods.lora]\nlearning_rate = [2e-4, 5e-4, 1e-3]\n"))
    plan = plan_with_stores(load_config(config), config)
    grid = plan.grid_jobs
    assert len(grid) == 3 and len({json.dumps(j.hparams, sort_keys=True) for j in grid}) == 3
    assert {form_packs(grid, 4).of(j.id) for j in grid} == {tuple(j.id for j in grid)}


@pytest.fixture(scope="module")
def packed_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/tiny-packs.toml run once: its 4 LoRA folds in one pack."""
    store = tmp_path_factory.mktemp("packs") / "packed.duckdb"
    run_benchmark(DATA / "tiny-packs.toml", store)
    return store


def test_a_packs_members_share_its_time_and_the_pack_records_it_once(packed_store: Path) -> None:
    """Each member's train_seconds is its share of the pack's time (``PackClock``), not the pack's elapsed time
    when it left: the shares sum to the pack's wall time, stored once in ``packs``."""
    (pack_id, members, size, finished, wall), = query(packed_store, "SELECT pack_id, members, size, finished, "
                                                      "train_seconds FROM packs")
    rows = query(packed_store, "SELECT model_id, train_seconds, pack->>'id' FROM models ORDER BY finished_at")
    assert sorted(json.loads(members)) == sorted(m for m, _, _ in rows) and size == finished == 4
    assert {p for _, _, p in rows} == {pack_id}
    shares = [t for _, t, _ in rows]
    assert all(t > 0 for t in shares)
    assert abs(sum(shares) - wall) <= 0.05 * wall
    # The first member to leave holds a share of the steps it was in, not the time since the pack began: the last
    # one's elapsed time was the whole pack's, what each member recorded before.
    assert max(shares) < 0.9 * wall


@pytest.mark.slow
def test_a_packed_run_stores_what_the_sequential_run_does(packed_store: Path, tmp_path: Path) -> None:
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {"pack = 4": "pack = 1"})
    alone = tmp_path / "alone.duckdb"
    run_benchmark(config, alone)
    packed, sequential = results(packed_store), results(alone)
    assert packed["models"] == sequential["models"] and len(packed["models"]) == 4   # same job ids
    assert packed["pass_rates"] == sequential["pass_rates"] and packed["iid"] == sequential["iid"]
    pack = [json.loads(p) for (p,) in query(packed_store, "SELECT pack FROM models")]
    ids = sorted(m for m, _ in packed["models"])
    assert all(p["setting"] == p["size"] == 4 and sorted(p["members"]) == ids for p in pack)
    assert query(alone, "SELECT count(*) FROM models WHERE pack IS NULL") == [(4,)]


@pytest.mark.slow
def test_packs_in_two_worker_processes_store_what_one_pack_does(packed_store: Path, tmp_path: Path) -> None:
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {'name = "local"': 'name = "multi"\nworkers = 2',
                                                              "pack = 4": "pack = 2"})
    store = tmp_path / "multi.duckdb"
    run_benchmark(config, store)
    assert results(store) == results(packed_store)
    packs_of = {tuple(json.loads(p)["members"]) for (p,) in query(store, "SELECT pack FROM models")}
    assert sorted(len(p) for p in packs_of) == [2, 2]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="Ray is not installed (pip install 'beluga[ray]'); the Ray executor is an optional extra")
def test_packs_on_ray_are_the_multi_executors_and_a_ray_worker_killed_mid_pack_resumes(packed_store: Path,
                                                                                      tmp_path: Path) -> None:
    # Two Ray workers on a local 2-CPU cluster, packs of 2; the test-only worker SIGKILLs its actor inside a pack once
    # the pack's first member finished: that member is committed, the other's retried fold resumes from the
    # checkpoint it sent to the driver (checkpoint_every = 1), and the actor is replaced.
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {'name = "local"': 'name = "ray"', "pack = 4": "pack = 2"},
                         append='\n[executor.options]\nworker = "faults:FaultyWorker"\nnum_cpus = 2\n')
    store = tmp_path / "ray.duckdb"
    marker = tmp_path / "killed"
    proc = beluga("run", str(config), "--store", str(store),
                  env={"PYTHONPATH": str(REPO / "tests"), "BELUGA_FAULT": f"training:{marker}"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert marker.exists(), "the crash hook did not fire"
    assert proc.stdout.count("retrying") == 1 and "Ray lost its worker" in proc.stdout, proc.stdout
    assert proc.stdout.count("resumed from its checkpoint at step") == 1, proc.stdout
    assert "workers: 2 (Ray, per node: " in proc.stdout and "packs: up to 2 members (pack = 2)" in proc.stdout
    # The packs the multi executor forms of the same config, member for member, and what one pack of 4 stores.
    multi = config_with(DATA / "tiny-packs.toml", tmp_path, {'name = "local"': 'name = "multi"\nworkers = 2',
                                                             "pack = 4": "pack = 2"}, name="multi.toml")
    plan = plan_with_stores(load_config(multi), multi)
    expected = EXECUTORS.get("multi")(plan.config.executor).packs_of(plan, plan.jobs)
    stored = {m: tuple(json.loads(p)["members"]) for m, p in query(store, "SELECT model_id, pack FROM models")}
    # The member retried after its worker died trained on as a pack of one (its pack-mate was done) and says so.
    (retried,) = [m for m, members in stored.items() if members == (m,)]
    assert len(expected.of(retried)) == 2
    assert {m: p for m, p in stored.items() if m != retried} == \
        {j.id: expected.of(j.id) for j in plan.jobs if j.id != retried}
    assert sorted(len(set(expected.of(j.id))) for j in plan.jobs) == [2, 2, 2, 2]
    assert results(store) == results(packed_store)


@pytest.mark.slow
def test_a_pack_killed_mid_pack_and_resumed_equals_the_uninterrupted_pack(packed_store: Path, tmp_path: Path) -> None:
    # The test-only worker of tests/faults.py SIGKILLs the run inside the pack once its first member finished and
    # was committed; the others have checkpoints of their last step (checkpoint_every = 1). At pack = "auto" the
    # first run measures the size (8 on a CPU where memory holds more: one pack of the 4 folds, as pack = 4 forms)
    # and records it; the resumed run keeps it without measuring again.
    config = config_with(DATA / "tiny-packs.toml", tmp_path, {"pack = 4": 'pack = "auto"'},
                         append='\n[executor.options]\nworker = "faults:FaultyWorker"\n')
    store = tmp_path / "killed.duckdb"
    env = {"PYTHONPATH": str(REPO / "tests"), "BELUGA_FAULT": f"training:{tmp_path / 'killed'}"}
    killed = beluga("run", str(config), "--store", str(store), env=env)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert query(store, "SELECT count(*) FROM models WHERE status = 'done'") == [(1,)]
    assert "packs: up to 8 members (auto: 8, the most on a CPU; " in killed.stdout
    assert ("(measured now: per member, the peak of one training step with 2 members less the peak with 1, at the "
            "batch size of the first training that packs, with every row max_length tokens: at batch 8 × 64 tokens, "
            "the process's peak "
            "resident memory during the step was ") in " ".join(killed.stdout.split())
    resumed = beluga("run", str(config), "--store", str(store), env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "packs: up to 8 members (auto: 8, as the store's first run of it measured" in resumed.stdout
    recorded = [json.loads(e)["pack"] for (e,) in query(store, "SELECT executor FROM runs ORDER BY started_at")]
    assert [(r["setting"], r["size"]) for r in recorded] == [("auto", 8)] * 2
    assert "running 3 (3 from their checkpoints)" in resumed.stdout
    assert resumed.stdout.count("resumed from its checkpoint at step") == 3
    assert results(store) == results(packed_store)
    assert {(p["setting"], p["size"]) for p in (json.loads(r) for (r,) in query(store, "SELECT pack FROM models"))} \
        == {("auto", 8)}
    assert "packs of this phase: 4 trainings in 1 pack(s) (1 × 4 members)" in killed.stdout
    # A dry run on the store shows the size the run keeps, not a new measurement.
    dry = beluga("run", str(config), "--store", str(store), "--dry-run", env=env)
    assert "packs: up to 8 members (auto: 8, as the store's first run of it measured" in dry.stdout, dry.stdout


def test_exporting_a_model_whose_weights_were_not_kept_names_the_setting_that_keeps_it(packed_store: Path) -> None:
    """A held-out fold is kept by keep_weights = "all" only: the error must not send its user to "seen"."""
    (held,), = query(packed_store, "SELECT model_id FROM models WHERE heldout_group = 'long'")
    fold = beluga("export", str(packed_store), held, "--out", str(packed_store.parent / "x"))
    seen = beluga("export", str(packed_store), "iid-plus-t/lora@seen", "--out", str(packed_store.parent / "y"))
    assert fold.returncode == seen.returncode == 2, fold.stderr + seen.stderr
    assert 'keep_weights = "all" (the one setting that keeps held-out folds)' in " ".join(fold.stderr.split())
    assert 'keep_weights = "seen" or "all" and re-run' in " ".join(seen.stderr.split())
