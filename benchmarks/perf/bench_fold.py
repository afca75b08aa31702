"""Fold training and whole-suite evaluation: beluga against two Hugging Face ``Trainer`` baselines.

The same fold for all three (same model, SST-2 training sentences, epochs, batch size, learning rate, seed):

- beluga: ``training.loop.train_stage`` as a worker runs it (length-grouped batches, dynamic padding, fused
  AdamW, bf16 autocast on GPUs and on CPUs with native bf16, no per-step host sync); tokenization is
  cached (timed apart).
- (a) the reference implementation's way: ``Trainer``, inputs padded to max_length=128, fp32, plain AdamW
  (``adamw_torch``, the default of the transformers releases the reference used).
- (b) a tuned ``Trainer``: ``DataCollatorWithPadding``, ``train_sampling_strategy="group_by_length"``,
  ``optim="adamw_torch_fused"``, bf16 on a GPU; on a CPU both fp32 and bf16 (``bf16=True, use_cpu=True``) are
  measured, and the ratio line compares with the faster of the two (beluga uses bf16 where the CPU has it).

Then the whole sentiment suite (178,578 inputs) through one model: beluga's ``predict_probs`` (each distinct
input once, length-sorted batches, inference mode, autocast) against batched inference padded to 128 without
deduplication, in input order, fp32, at the same batch size. The padded baseline costs the same per input
whatever the text (every row is 128 tokens), so it runs on a random sample and is extrapolated
(``--baseline-eval-sample``); ``--eval-fraction`` subsamples beluga's side too, for quick runs.

Examples/s are medians over ``--repeats`` runs. On a GPU the script also prints MFU:
6 · parameters · mean real tokens per training example · examples/s / peak dense bf16 FLOP/s of the device.

    python -m benchmarks.perf.bench_fold                      # MiniLM, 1,024 sentences, batch 16
    python -m benchmarks.perf.bench_fold --model bert-base-random --n-train 4096 --batch-size 32   # GPU

Needs ``accelerate`` for the Trainer baselines (``pip install -e ".[perf]"``). The last line is
``ratio_vs_tuned_trainer: <beluga training examples/s over baseline (b)>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import header, script_parser

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np
import torch

from beluga_core.contracts.tasks import TaskSettings
from beluga_core.data.splits import sample_indices
from beluga_core.data.suite.suite_files import load_suite
from beluga_core.tasks.sentiment import SentimentTask
from beluga_core.training import precision
from beluga_core.training.encode import Encoder
from beluga_core.training.loop import seed_everything, train_stage
from beluga_core.training.methods.vanilla import Vanilla
from beluga_core.training.models import load_sequence_classifier, load_tokenizer, pick_device
from beluga_core.training.predict import eval_batch_size, predict_probs

SEED = 42
LR = 5e-5
# Dense bf16 peak FLOP/s (no sparsity), from the vendors' data sheets.
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12, "L40": 181e12,
             "V100": 125e12}


@dataclass
class Fold:
    texts: list[str]
    labels: list[int]


def build_model(name: str, num_labels: int = 2) -> torch.nn.Module:
    if name == "bert-base-random":  # BERT-base shape, random weights: no download needed
        from transformers import BertConfig, BertForSequenceClassification

        torch.manual_seed(0)
        config = BertConfig()
        config.num_labels = num_labels   # the setter: transformers 5's typed constructor has no such keyword
        return BertForSequenceClassification(config)
    return load_sequence_classifier(name, num_labels, seed=0)


def tokenizer_for(name: str) -> Any:
    # bert-base-random uses MiniLM's tokenizer: it is BERT's uncased WordPiece vocabulary.
    return load_tokenizer("embedded:minilm" if name == "bert-base-random" else name)


@dataclass
class Row:
    name: str
    rate: float  # examples per wall second (median)
    rates: list[float]
    cpu_rate: float  # examples per CPU second of this process (median): steadier on a shared machine


def row(name: str, n: int, runs: list[tuple[float, float]]) -> Row:
    rates = [n / wall for wall, _ in runs]
    r = Row(name, statistics.median(rates), rates, statistics.median(n / cpu for _, cpu in runs))
    print(f"  measured {name}: {r.rate:.1f} examples/s (runs: {', '.join(f'{x:.1f}' for x in rates)}); "
          f"{r.cpu_rate:.1f} examples per CPU-second", flush=True)
    return r


# -- beluga ---------------------------------------------------------------------------------------------
def beluga_train(args: argparse.Namespace, fold: Fold,
                 device: torch.device) -> tuple[list[tuple[float, float]], float, int]:
    task = SentimentTask()
    task.configure(TaskSettings())
    encoder = Encoder(tokenizer_for(args.model), 128)
    t0 = time.perf_counter()
    encoder.encode_many(fold.texts)
    tokenize_s = time.perf_counter() - t0
    tokens = sum(encoder.length(t) for t in fold.texts)
    from beluga_core.data.iid.classification_data import IIDExample

    examples = [IIDExample(t, y) for t, y in zip(fold.texts, fold.labels, strict=True)]
    hp = {"learning_rate": LR, "batch_size": args.batch_size, "epochs": args.epochs, "weight_decay": 0.0,
          "warmup_ratio": 0.0, "max_grad_norm": 1.0}
    runs = []
    for i in range(args.repeats + 1):
        # Run 0 warms up (untimed): the first batches of each shape pay one-off kernel selection, for
        # beluga and, as they run later in the same process, for the baselines alike.
        model = build_model(args.model).to(device)
        trainset = task.build_trainset([], examples, None)
        seed_everything(SEED)
        _sync(device)
        c0 = time.process_time()
        stats = train_stage(task, model, encoder, device, trainset, hp, Vanilla(), SEED)
        _sync(device)
        if i > 0:
            runs.append((stats.seconds, time.process_time() - c0))
        del model
    return runs, tokenize_s, tokens


# -- Trainer baselines ------------------------------------------------------------------------------------
def trainer_train(args: argparse.Namespace, fold: Fold, device: torch.device, *, padded: bool,
                  bf16: bool, repeats: int) -> list[tuple[float, float]]:
    import datasets
    from datasets import Dataset
    from transformers import (
        DataCollatorWithPadding,
        PrinterCallback,
        Trainer,
        TrainingArguments,
        default_data_collator,
    )

    datasets.disable_progress_bars()
    tok = tokenizer_for(args.model)
    ds = Dataset.from_dict({"sentence": fold.texts, "label": fold.labels})
    if padded:
        ds = ds.map(lambda b: tok(b["sentence"], padding="max_length", truncation=True, max_length=128), batched=True)
    else:
        ds = ds.map(lambda b: tok(b["sentence"], truncation=True, max_length=128), batched=True)
    ds = ds.remove_columns(["sentence"])
    runs = []
    for _ in range(repeats):
        model = build_model(args.model)
        with tempfile.TemporaryDirectory() as out:
            targs = TrainingArguments(
                output_dir=out, per_device_train_batch_size=args.batch_size, num_train_epochs=args.epochs,
                learning_rate=LR, weight_decay=0.0, warmup_steps=0, max_grad_norm=1.0, seed=SEED,
                use_cpu=device.type == "cpu", bf16=bf16, report_to="none", save_strategy="no",
                logging_strategy="no", disable_tqdm=True, dataloader_num_workers=0,
                optim="adamw_torch" if padded else "adamw_torch_fused",
                train_sampling_strategy="random" if padded else "group_by_length")
            collator = default_data_collator if padded else DataCollatorWithPadding(tok)
            trainer = Trainer(model=model, args=targs, train_dataset=ds, data_collator=collator)
            trainer.remove_callback(PrinterCallback)
            c0 = time.process_time()
            out_metrics = trainer.train().metrics
            cpu = time.process_time() - c0
        runs.append((float(out_metrics["train_runtime"]), cpu))
        del trainer, model
    return runs


# -- whole-suite evaluation -----------------------------------------------------------------------------
def suite_inputs() -> list[Any]:
    suite = load_suite("builtin:sentiment")
    return [x for c in suite.cases for x in c.inputs]


def beluga_eval(model: torch.nn.Module, name: str, inputs: list[Any],
                device: torch.device) -> tuple[float, float, float]:
    encoder = Encoder(tokenizer_for(name), 128)
    t0 = time.perf_counter()
    encoder.encode_many(inputs)
    tokenize_s = time.perf_counter() - t0
    _sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    predict_probs(model, encoder, inputs, device)
    _sync(device)
    return time.perf_counter() - t0, tokenize_s, time.process_time() - c0


def padded_eval(model: torch.nn.Module, name: str, inputs: list[Any], device: torch.device,
                batch_size: int) -> tuple[float, float]:
    """Reference-style inference: every input (duplicates too), padded to 128, in input order, fp32."""
    tok = tokenizer_for(name)
    enc = tok(list(inputs), padding="max_length", truncation=True, max_length=128, return_tensors="pt")
    model.eval()
    _sync(device)
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        for start in range(0, len(inputs), batch_size):
            batch = {k: v[start:start + batch_size].to(device) for k, v in enc.items()}
            torch.softmax(model(**batch).logits.float(), dim=-1).cpu()
    _sync(device)
    return time.perf_counter() - t0, time.process_time() - c0


# -- helpers --------------------------------------------------------------------------------------------
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def peak_flops(device: torch.device) -> tuple[float | None, str]:
    if device.type != "cuda":
        return None, "n/a (CPU)"
    name = torch.cuda.get_device_name(device)
    for key, flops in PEAK_BF16.items():
        if key in name:
            return flops, f"{name}: {flops / 1e12:.0f} TFLOP/s dense bf16"
    return None, f"{name}: peak unknown"


def load(cmd: Callable[[], str]) -> str:
    try:
        return cmd()
    except Exception:
        return "?"


def evaluate(args: argparse.Namespace, device: torch.device) -> None:
    """The whole sentiment suite through one (untrained) model: beluga against padded inference."""
    inputs = suite_inputs()
    total = len(inputs)
    rng = np.random.default_rng(SEED)
    model = build_model(args.model).to(device)
    sub = inputs if args.eval_fraction >= 1 else \
        [inputs[i] for i in sorted(rng.choice(total, int(total * args.eval_fraction), replace=False))]
    bs = eval_batch_size(device)
    b_s, tok_s, b_cpu = beluga_eval(model, args.model, sub, device)
    scale = total / len(sub)
    sample = [inputs[i] for i in sorted(rng.choice(total, min(total, args.baseline_eval_sample), replace=False))]
    p_wall, p_cpu = padded_eval(model, args.model, sample, device, bs)
    p_s, p_cpu = p_wall * total / len(sample), p_cpu * total / len(sample)
    print(f"\nwhole sentiment suite: {total:,} inputs ({len(set(inputs)):,} distinct), eval batch size {bs} "
          f"for both")
    print("| evaluation | wall seconds, whole suite | inputs/s | beluga speed-up (wall) | CPU seconds | "
          "beluga speed-up (CPU time) |")
    print("| --- | --- | --- | --- | --- | --- |")
    note = "" if scale == 1 else f" (measured on {len(sub):,}, scaled ×{scale:.2f})"
    print(f"| beluga predict_probs{note} | {b_s * scale:.1f} | {total / (b_s * scale):.0f} | 1.00 | "
          f"{b_cpu * scale:.1f} | 1.00 |")
    print(f"| padded to 128, no dedup, fp32 (measured on {len(sample):,}, scaled) | {p_s:.1f} | "
          f"{total / p_s:.0f} | {p_s / (b_s * scale):.2f} | {p_cpu:.1f} | {p_cpu / (b_cpu * scale):.2f} |")
    print(f"beluga tokenization of the suite (cold; a disk-cache hit in real runs): {tok_s * scale:.1f} s")


def main() -> None:
    ap = script_parser(__doc__)
    ap.add_argument("--model", default="embedded:minilm", help="embedded:minilm, a local path, or bert-base-random")
    ap.add_argument("--n-train", type=int, default=1024, help="SST-2 training sentences in the fold")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=3, help="beluga training runs (median)")
    ap.add_argument("--repeats-trainer", type=int, default=3, help="runs of baseline (b) (median)")
    ap.add_argument("--repeats-reference", type=int, default=1,
                    help="runs of baseline (a) (median; ~10x slower than the others, its ratio is far from 1)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default, all cores)")
    ap.add_argument("--eval-fraction", type=float, default=1.0,
                    help="share of the suite's inputs beluga evaluates (times scaled up to the whole suite)")
    ap.add_argument("--baseline-eval-sample", type=int, default=4096,
                    help="inputs the padded baseline evaluates (time scaled up to the whole suite)")
    ap.add_argument("--skip-eval", action="store_true", help="training only")
    ap.add_argument("--only-eval", action="store_true", help="whole-suite evaluation only")
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    prec = precision.configure("auto", device)
    print(f"{header('auto', device.type)}; torch threads {torch.get_num_threads()}; beluga precision: {prec}")
    print(f"load before: {load(lambda: subprocess.check_output(['uptime'], text=True).strip())}")
    print(f"model: {args.model}; fold: {args.n_train} SST-2 training sentences, {args.epochs:g} epoch(s), "
          f"batch size {args.batch_size} for all three, lr {LR}, seed {SEED}")

    iid = SentimentTask().load_iid("builtin:sst2", SEED)
    idx = sample_indices(len(iid.train), args.n_train, SEED, "perf")
    fold = Fold([str(iid.train[i].inputs) for i in idx], [int(iid.train[i].label) for i in idx])
    n = int(args.n_train * args.epochs)

    if args.only_eval:
        evaluate(args, device)
        return
    b_runs, tokenize_s, tokens = beluga_train(args, fold, device)
    beluga = row("beluga", n, b_runs)
    tuned = [row(f"(b) Trainer, dynamic pad + group_by_length, fused AdamW, {'bf16' if bf16 else 'fp32'}", n,
                 trainer_train(args, fold, device, padded=False, bf16=bf16, repeats=args.repeats_trainer))
             for bf16 in ([True] if device.type == "cuda" else [False, True])]
    ref = row("(a) Trainer, pad 128, fp32, adamw_torch", n,
              trainer_train(args, fold, device, padded=True, bf16=False, repeats=args.repeats_reference))
    rows = [beluga, ref, *tuned]
    best_b = max(tuned, key=lambda r: r.rate)

    params = sum(p.numel() for p in build_model(args.model).parameters())
    peak, peak_note = peak_flops(device)
    per_example = tokens / len(fold.texts)
    print(f"\nparameters: {params / 1e6:.1f}M; mean real tokens per training example: {per_example:.1f}; "
          f"beluga tokenization of the fold (cold, then cached on disk in real runs): {tokenize_s:.2f} s")
    print(f"peak used for MFU: {peak_note}")
    print(f"\n| training ({args.n_train} examples, batch {args.batch_size}) | examples/s (median) | runs | "
          f"beluga ÷ this | examples per CPU-s | beluga ÷ this (CPU time) | MFU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        mfu = f"{6 * params * per_example * r.rate / peak:.1%}" if peak else "n/a"
        print(f"| {r.name} | {r.rate:.1f} | {', '.join(f'{x:.1f}' for x in r.rates)} | {beluga.rate / r.rate:.2f} | "
              f"{r.cpu_rate:.1f} | {beluga.cpu_rate / r.cpu_rate:.2f} | {mfu} |")

    if not args.skip_eval:
        evaluate(args, device)
    print(f"load after: {load(lambda: subprocess.check_output(['uptime'], text=True).strip())}")
    print(f"ratio_vs_reference_trainer: {beluga.rate / ref.rate:.2f}")
    print(f"compared_tuned_trainer: {best_b.name}")
    print(f"ratio_vs_tuned_trainer: {beluga.rate / best_b.rate:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
