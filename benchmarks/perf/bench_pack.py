"""Many trainings on one machine: aggregate throughput of full fine-tuning and LoRA, alone or packed, in one or
more worker processes (issue 40).

K trainings ("members"), each on its own sample of SST-2 training sentences (``--n`` per member, batch 16, one
epoch, MiniLM), run three ways:

- ``full``: full fine-tuning (vanilla), the K trainings one after another (``train_stage``; ``pack = 1``);
- ``lora``: LoRA (r = 8 on query and value), one after another (``train_stage``; ``pack = 1``);
- ``lora-pack``: LoRA, the K trainings as one pack (``train_pack``: the frozen base's passes over every member's
  rows, at most ``CPU_PASS_TOKENS`` tokens a pass on a CPU);
- ``lora-pack-uncapped`` (on request): the same without that bound, each step's members in as few passes as
  padding allows: the measurement behind the bound ("tokens per pass").

With ``workers = W`` the K members are split over W processes (each with cores / W torch threads), as the multi
executor runs them; ``auto`` is what ``[executor] workers = "auto"`` picks on this machine (one worker using every
core on a CPU). Each configuration runs in fresh processes: its wall time (slowest worker, model loading and
tokenization and an untimed warm-up of two steps excluded) gives the aggregate examples/s = K · n / wall, and its
peak resident memory (ru_maxrss)
per worker gives the memory per member: (peak at K − peak at K = 1) / (K − 1), for one worker.

Every line carries the machine line (precision, CPU model, native bf16). The last lines check the CPU goals:
packing against pack = 1 (K trainings packed against the same K trainings each alone, which is what ``pack = 1``
runs; "× alone" in the table) and LoRA against full fine-tuning. A run of a few seconds is noisy on a shared machine:
``--repeats`` runs the modes in turn several times; the table shows the median rate, and each verdict ("faster",
"slower", "not resolved") comes from the paired 95 % interval of the ratio alone, from 3 repeats on.

    python -m benchmarks.perf.bench_pack                          # K = 1,2,4,8,16; fp32 and bf16; workers 1, 2, auto
    python -m benchmarks.perf.bench_pack --ks 1 4 --precisions fp32 --workers 1 --n 64     # a quick look
    python -m benchmarks.perf.bench_pack --ks 2 4 8 16 --precisions fp32 --workers 1 --modes lora lora-pack \
        --repeats 5                                               # the packing goal: paired verdicts
    python -m benchmarks.perf.bench_pack --ks 4 16 --precisions fp32 --workers 1 \
        --modes lora lora-pack lora-pack-uncapped --repeats 3     # tokens per pass: bounded against not
    python -m benchmarks.perf.bench_pack --device cuda --ks 1 2 4 8 16 32                  # on a GPU
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import resource
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:   # beluga_core (torch) is imported in the functions: spawned members import this module
    from beluga_core.training.precision import Precision

MODES = ("full", "lora", "lora-pack", "lora-pack-uncapped")
DEFAULT_MODES = MODES[:3]


def _member_sets(n: int, ids: list[int], batch_size: int) -> tuple[Any, Any, list[tuple[Any, int, dict[str, Any]]]]:
    from beluga_core.contracts.tasks import TaskSettings
    from beluga_core.data.iid.classification_data import IIDExample
    from beluga_core.data.splits import sample_indices
    from beluga_core.tasks.sentiment import SentimentTask
    from beluga_core.training.encode import Encoder
    from beluga_core.training.models import load_tokenizer

    task = SentimentTask()
    task.configure(TaskSettings())
    encoder = Encoder(load_tokenizer("embedded:minilm"), 128)
    iid = task.load_iid("builtin:sst2", 42)
    out = []
    for m in ids:
        idx = sample_indices(len(iid.train), n, 42 + m, "bench_pack")
        examples = [IIDExample(str(iid.train[i].inputs), int(iid.train[i].label)) for i in idx]
        hp = {"learning_rate": 5e-4, "batch_size": batch_size, "epochs": 1, "weight_decay": 0.0,
              "warmup_ratio": 0.0, "max_grad_norm": 1.0}
        trainset = task.build_trainset([], examples, None)
        encoder.encode_many(trainset.inputs())
        out.append((trainset, 1000 + m, hp))
    return task, encoder, out


def _worker(mode: str, precision_name: Precision, device_name: str, threads: int, n: int, ids: list[int],
            batch_size: int, queue: Any) -> None:
    import torch

    from beluga_core.contracts.registries import METHODS
    from beluga_core.training import packed_training, precision
    from beluga_core.training.loop import seed_everything, train_stage
    from beluga_core.training.models import load_sequence_classifier, pick_device
    from beluga_core.training.packed_training import MemberSpec, train_pack

    torch.set_num_threads(threads)
    if mode == "lora-pack-uncapped":
        packed_training.CPU_PASS_TOKENS = 1 << 40  # the name train_pack reads
    device = pick_device(device_name)
    precision.configure(precision_name, device)
    task, encoder, members = _member_sets(n, ids, batch_size)
    model = load_sequence_classifier("embedded:minilm", 2).to(device)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    method = "vanilla" if mode == "full" else "lora"
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    # Untimed warm-up (a few steps of the same kind): the first batches of a process pay one-off kernel selection.
    _, _, (warm,) = _member_sets(32, [99], batch_size)
    if mode.startswith("lora-pack"):
        list(train_pack(task, model, encoder, device, [MemberSpec("warm", warm[0], METHODS.get("lora")(), warm[2],
                                                                  warm[1], warm[1])]))
    else:
        train_stage(task, model, encoder, device, warm[0], warm[2], METHODS.get(method)(), warm[1])
        model.load_state_dict(start)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    sync()
    t0 = time.perf_counter()
    examples = 0
    if mode.startswith("lora-pack"):
        specs = [MemberSpec(str(i), ts, METHODS.get("lora")(), hp, seed, seed) for i, (ts, seed, hp) in
                 enumerate(members)]
        for _, _, stats in train_pack(task, model, encoder, device, specs):
            examples += stats.examples
    else:
        for ts, seed, hp in members:
            model.load_state_dict(start)
            seed_everything(seed)
            stats = train_stage(task, model, encoder, device, ts, hp, METHODS.get(method)(), seed)
            examples += stats.examples
    sync()
    wall = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() if device.type == "cuda"
            else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    queue.put({"wall": wall, "examples": examples, "peak": peak})


def measure(mode: str, precision_name: Precision, device: str, k: int, workers: int, n: int, batch_size: int,
            cores: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    shares = [list(range(w, k, workers)) for w in range(workers)]
    shares = [s for s in shares if s]
    threads = max(1, cores // len(shares)) if device == "cpu" else 1
    procs = [ctx.Process(target=_worker, args=(mode, precision_name, device, threads, n, s, batch_size, queue))
             for s in shares]
    for p in procs:
        p.start()
    got = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    wall = max(g["wall"] for g in got)
    examples = sum(g["examples"] for g in got)
    return {"mode": mode, "precision": precision_name, "k": k, "workers": workers, "wall": wall,
            "examples": examples, "rate": examples / wall, "peak": max(g["peak"] for g in got)}


def main() -> None:
    # here: the spawned members import this module
    from benchmarks.harness import header, script_parser, speed_verdict

    parser = script_parser(__doc__, full=True)
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"])
    parser.add_argument("--workers", nargs="+", default=["1", "2", "auto"])
    parser.add_argument("--modes", nargs="+", default=list(DEFAULT_MODES), choices=MODES)
    parser.add_argument("--n", type=int, default=128, help="training sentences per member")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per configuration, in turn over the modes; its rate is their median")
    parser.add_argument("--json", type=Path, help="also write every row here")
    args = parser.parse_args()

    from beluga_core.config.schema import ExecutorSpec
    from beluga_core.execution.sizing import plan_workers

    cores = len(os.sched_getaffinity(0))
    auto = plan_workers(ExecutorSpec(device=args.device), cores=cores, gpus=0 if args.device == "cpu" else None)
    auto_n = len(auto.slots) or 1
    print(f"bench_pack: MiniLM, {args.n} SST-2 sentences per member, batch {args.batch_size}, 1 epoch; device "
          f"{args.device}, {cores} cores; workers = \"auto\" here: {auto_n} ({auto.why})", flush=True)
    rows = []
    for precision_name in args.precisions:
        print(f"\n{header(precision_name)}", flush=True)
        print(f"{'mode':>10} {'workers':>8} {'K':>4} {'wall s':>8} {'examples/s':>11} {'× alone':>7} {'peak MiB':>9}")
        for w_name in args.workers:
            workers = auto_n if w_name == "auto" else int(w_name)
            if w_name == "auto" and str(auto_n) in args.workers:
                print(f"{'(auto)':>10} {w_name:>8}: {auto_n} worker(s), the rows of workers = {auto_n} above")
                continue
            for k in args.ks:
                if workers > k:
                    continue
                # The modes in turn, repeat after repeat: a drift of the machine's speed hits them alike.
                runs: dict[str, list[dict[str, Any]]] = {mode: [] for mode in args.modes}
                for _ in range(args.repeats):
                    for mode in args.modes:
                        runs[mode].append(measure(mode, precision_name, args.device, k, workers, args.n,
                                                  args.batch_size, cores))
                for mode in args.modes:
                    rates = [r["rate"] for r in runs[mode]]
                    r = {**runs[mode][0], "rate": statistics.median(rates), "rates": rates,
                         "wall": statistics.median(x["wall"] for x in runs[mode]),
                         "peak": max(x["peak"] for x in runs[mode]), "workers_setting": w_name}
                    rows.append(r)
                    alone = next((x["rate"] for x in rows if x["mode"] == "lora" and x["k"] == k
                                  and x["precision"] == precision_name and x["workers"] == workers), None)
                    ratio = f"{r['rate'] / alone:7.2f}" if mode.startswith("lora-pack") and alone else "      -"
                    spread = f"  ({', '.join(f'{x:.0f}' for x in rates)})" if len(rates) > 1 else ""
                    print(f"{mode:>10} {w_name:>8} {k:>4} {r['wall']:8.1f} {r['rate']:11.1f} {ratio} "
                          f"{r['peak'] / 2**20:9.0f}{spread}", flush=True)
    print("\nmemory per member (one worker): (peak at K − peak at K = 1) / (K − 1)")
    for precision_name in args.precisions:
        for mode in args.modes:
            one = {r["k"]: r["peak"] for r in rows if r["mode"] == mode and r["precision"] == precision_name
                   and r["workers"] == 1}
            if 1 in one and len(one) > 1:
                per = [(one[k] - one[1]) / (k - 1) / 2**20 for k in sorted(one) if k > 1]
                print(f"  {mode:>10} {precision_name}: {statistics.median(per):.0f} MiB per member (median over K; "
                      f"{', '.join(f'{p:.0f}' for p in per)})")
    print("\nCPU goals (one worker): packing against pack = 1 (the same K trainings, each alone, one after another), "
          "LoRA against full fine-tuning; verdicts from paired intervals only:")
    for precision_name in args.precisions:
        rates_of = {(r["mode"], r["k"]): r["rates"] for r in rows if r["precision"] == precision_name
                    and r["workers"] == 1}
        for k in args.ks:
            for a, b, what in (("lora-pack", "lora", "packed / alone"),
                               ("lora-pack-uncapped", "lora", "packed without the pass bound / alone"),
                               ("lora", "full", "LoRA / full fine-tuning")):
                if (a, k) in rates_of and (b, k) in rates_of and (k > 1 or a == "lora"):
                    print(f"  {precision_name}, K = {k}: {speed_verdict(rates_of[(a, k)], rates_of[(b, k)], what)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
