"""Is a pack member's recorded time its share of the pack (issue 55, "Pack times apportioned")?

Two measurements:

1. **Members' shares against their trainings alone.** K LoRA trainings of different sizes (``--sizes`` SST-2
   sentences each, batch 16, one epoch, MiniLM's first 2 layers, one worker) are trained each alone
   (``train_stage``) and then as one pack (``train_pack``), in turn, ``--repeats`` times. The pack's speed-up is
   Σ alone / pack wall (what ``bench_pack``'s "× alone" measures). A member's share (``PackClock``, what its
   ``train_seconds`` records) is compared with its time alone divided by that speed-up: the issue's bound is
   ±30 % for every member. Also: the shares sum to the pack's wall time as timed from outside (bound: 5 %).
2. **models_status on a researcher-like config.** ``benchmarks/quick-lora.toml`` (full fine-tuning and LoRA over
   the same folds from one IID model, LoRA in packs of up to 8) cut to one seed, IID→T, the seen and
   functionality scenarios and 2,000 i.i.d. training examples, run once per repeat into a new store: the
   ``models_status`` view's train_seconds per method, summed and per training. The researcher's store had LoRA at
   3× full fine-tuning's total, because each member recorded the pack's elapsed time.

    python -m benchmarks.perf.pack_shares                   # both, 3 repeats
    python -m benchmarks.perf.pack_shares --skip-run        # the shares alone (a few minutes)

Every block prints the machine line (precision, CPU model, native bf16). Timings want an idle machine.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

SHARE_BOUND = 0.30
SUM_BOUND = 0.05


def shares_once(sizes: list[int], batch_size: int) -> dict[str, Any]:
    """One repeat of measurement 1: each member alone, then the pack; times and shares."""
    import torch

    from beluga_core.contracts.registries import METHODS
    from beluga_core.training.loop import seed_everything, train_stage
    from beluga_core.training.models import load_sequence_classifier
    from beluga_core.training.pack_clock import PackClock
    from beluga_core.training.packed_training import MemberSpec, train_pack
    from benchmarks.perf.bench_pack import _member_sets

    device = torch.device("cpu")
    task, encoder, _ = _member_sets(8, [0], batch_size)
    members = []
    for m, n in enumerate(sizes):   # each its own sample and size
        _, _, (member,) = _member_sets(n, [m], batch_size)
        members.append(member)
    for ts, _, _ in members:
        encoder.encode_many(ts.inputs())
    model = load_sequence_classifier("embedded:minilm", 2).to(device)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    # Untimed warm-up of both paths (a process's first batches pay one-off kernel selection).
    _, _, (warm,) = _member_sets(32, [99], batch_size)
    train_stage(task, model, encoder, device, warm[0], warm[2], METHODS.get("lora")(), warm[1])
    model.load_state_dict(start)
    list(train_pack(task, model, encoder, device, [MemberSpec("w", warm[0], METHODS.get("lora")(), warm[2], warm[1],
                                                              warm[1])]))
    alone = []
    for ts, seed, hp in members:
        model.load_state_dict(start)
        seed_everything(seed)
        t0 = time.perf_counter()
        train_stage(task, model, encoder, device, ts, hp, METHODS.get("lora")(), seed)
        alone.append(time.perf_counter() - t0)
    model.load_state_dict(start)
    clock = PackClock(len(members))
    specs = [MemberSpec(str(i), ts, METHODS.get("lora")(), hp, seed, seed) for i, (ts, seed, hp) in enumerate(members)]
    shares = [0.0] * len(members)
    t0 = time.perf_counter()
    for m, _, stats in train_pack(task, model, encoder, device, specs, clock):
        shares[m] = stats.seconds
    wall = time.perf_counter() - t0
    return {"alone": alone, "shares": shares, "pack": clock.seconds, "wall": wall}


RESEARCHER_LIKE = {
    "seeds = [42, 43, 44]": "seeds = [42]",
    'configurations = ["iid", "iid-then-t", "iid-then-iid-plus-t"]': 'configurations = ["iid", "iid-then-t"]',
    'scenarios = ["standard", "seen", "functionality", "class", "test_type"]':
        'scenarios = ["standard", "seen", "functionality"]',
    "iid_train = 8000": "iid_train = 2000",
    'name = "multi"\nworkers = 2': 'name = "local"',
    'precision = "auto"': 'precision = "fp32"',
}


def status_once(out: Path) -> dict[str, tuple[int, float]]:
    """One repeat of measurement 2: the researcher-like config run into a new store; per method (trainings, Σ
    train_seconds) from models_status."""
    import duckdb

    from benchmarks.harness import REPO, run_once

    text = (REPO / "benchmarks" / "quick-lora.toml").read_text(encoding="utf-8")
    for old, new in RESEARCHER_LIKE.items():
        assert old in text, old
        text = text.replace(old, new)
    config = out / "researcher-like.toml"
    config.write_text(text.replace('path = "../runs/quick-lora.duckdb"', 'path = "researcher-like.duckdb"'),
                      encoding="utf-8")
    store = out / f"researcher-like-{time.time_ns()}.duckdb"
    run_once(config, store)
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("""SELECT method, sum(n_done), sum(train_seconds) FROM models_status
                              WHERE config <> 'iid' GROUP BY method ORDER BY method""").fetchall()
    finally:
        con.close()
    return {m: (int(n), float(s)) for m, n, s in rows}


def main() -> None:
    from benchmarks.harness import header, machine, script_parser

    parser = script_parser(__doc__, full=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 96, 128, 160, 192, 224, 256])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-run", action="store_true", help="measurement 1 only")
    args = parser.parse_args()

    import torch

    from benchmarks.harness import paired_ratio

    torch.set_num_threads(len(__import__("os").sched_getaffinity(0)))
    print(header("fp32"), flush=True)
    print(f"\n1. shares: {len(args.sizes)} LoRA members of {args.sizes} SST-2 sentences, batch {args.batch_size}, "
          "MiniLM (2 layers), one process", flush=True)
    worst, worst_sum = 0.0, 0.0
    for r in range(args.repeats):
        got = shares_once(args.sizes, args.batch_size)
        speedup = sum(got["alone"]) / got["pack"]
        print(f"  repeat {r + 1}: pack {got['pack']:.2f} s (timed outside: {got['wall']:.2f} s), Σ alone "
              f"{sum(got['alone']):.2f} s, speed-up {speedup:.2f}×; Σ shares / pack wall "
              f"{sum(got['shares']) / got['wall']:.3f}")
        print(f"    {'n':>5} {'alone s':>8} {'alone/speed-up':>15} {'share s':>8} {'share / expected':>17}")
        worst_sum = max(worst_sum, abs(sum(got["shares"]) / got["wall"] - 1))
        for n, a, s in zip(args.sizes, got["alone"], got["shares"], strict=True):
            expected = a / speedup
            worst = max(worst, abs(s / expected - 1))
            print(f"    {n:>5} {a:8.2f} {expected:15.2f} {s:8.2f} {s / expected:17.2f}")
    print(f"  worst member: {worst:.0%} off its time alone / the speed-up (bound {SHARE_BOUND:.0%}: "
          f"{'holds' if worst <= SHARE_BOUND else 'MISSED'}); worst Σ shares against the pack timed outside: "
          f"{worst_sum:.1%} (bound {SUM_BOUND:.0%}: {'holds' if worst_sum <= SUM_BOUND else 'MISSED'})")
    if args.skip_run:
        return
    print("\n2. models_status on quick-lora.toml cut to one seed, IID→T, seen + functionality, iid_train 2,000, "
          "LoRA packs of up to 8 (fp32, local executor)", flush=True)
    lora, full = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            got = status_once(Path(tmp))
            (n_full, s_full), (n_lora, s_lora) = got["vanilla"], got["lora"]
            full.append(s_full / n_full)
            lora.append(s_lora / n_lora)
            print(f"  repeat {r + 1}: full fine-tuning {n_full} trainings, {s_full:.1f} s ({s_full / n_full:.2f} s "
                  f"each); LoRA {n_lora} trainings, {s_lora:.1f} s ({s_lora / n_lora:.2f} s each)", flush=True)
    if len(lora) >= 3:
        ratio, lo, hi = paired_ratio(lora, full)
        verdict = "LoRA cheaper" if hi < 1 else "LoRA dearer" if lo > 1 else "not resolved"
        print(f"  LoRA / full fine-tuning, recorded seconds per training: {ratio:.2f}× [{lo:.2f}, {hi:.2f}] (95 % "
              f"interval over {len(lora)} paired runs) → {verdict}")
    print("\n" + machine("fp32"))


if __name__ == "__main__":
    main()
