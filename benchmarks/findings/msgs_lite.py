"""MSGS-lite: the few-shot ranking paper's synthetic proof of concept (its Section 5, after MSGS), rebuilt offline
from SST-2 phrases and ranked with `beluga rank --zoo`.

The task is synthetic: label 1 when a sentence has the linguistic feature L (it contains an irregular past-tense
verb from a closed list: drew, ran, went, saw, took, made, …), 0 otherwise. The training set is ambiguous — L
always comes with the surface feature S (the word "the"): L ∧ S → 1, ¬L ∧ ¬S → 0 — so a model may learn either.
Six MiniLM models see it with different inoculations (extra examples where L and S disagree, labelled by L or by
S), as in the paper's Table 5: none, 2 % L, 2 % S, 2 % L + 1 % S, 1 % L + 2 % S, 2 % L + 2 % S. The OOD domain is
where they disagree (L ∧ ¬S → 1, ¬L ∧ S → 0): a model that learned L is right there, one that learned S wrong.

The truth is each model's accuracy on a truth set of OOD sentences; the probe pool a disjoint set of OOD sentences.
`beluga rank --zoo` ranks the six with ACC, CONF, CONF-GT and the window factor (−Σ attribution over the five
words around the L word) under one attribution method, with B = 500 probes of n = 10.

    python -m benchmarks.findings.msgs_lite                   # build, train 6 models, rank (≤ 10 min, fp32)
    python -m benchmarks.findings.msgs_lite --rank-only       # rank the models of an earlier run again

Everything lands in runs/msgs-lite/ (sentences, suites, checkpoints, zoo.toml, zoo.duckdb).
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.harness import REPO, header, script_parser

OUT = REPO / "runs" / "msgs-lite"
SST2 = REPO / "beluga_core" / "data" / "builtin" / "sst2" / "train.tsv.xz"
# Irregular past-tense forms (not also the base form or a common participle-only form).
IRREGULAR = sorted([
    "drew", "ran", "went", "saw", "took", "made", "gave", "knew", "came", "found", "thought", "told", "became", "began",
    "felt", "left", "kept", "brought", "bought", "caught", "taught", "fought", "held", "stood", "understood", "wrote",
    "spoke", "broke", "chose", "rose", "fell", "grew", "threw", "flew", "drove", "rode", "sang", "swam", "won", "lost",
    "sent", "spent", "built", "meant", "met", "paid", "said", "sold", "sat", "slept", "hid", "got", "forgot"])
SURFACE = "the"
N_TRAIN = 1000               # ambiguous training sentences (half L ∧ S, half ¬L ∧ ¬S)
N_POOL, N_TRUTH = 150, 400   # OOD probe pool and truth set (half L ∧ ¬S, half ¬L ∧ S each)
MIXES = {"none": (0, 0), "2L": (2, 0), "2S": (0, 2), "2L1S": (2, 1), "1L2S": (1, 2), "2L2S": (2, 2)}
TRAINING = {"learning_rate": 5e-5, "batch_size": 16, "epochs": 2, "weight_decay": 0.0, "warmup_ratio": 0.1,
            "max_grad_norm": 1.0}
ATTRIBUTION = "tokig"
STEPS = 32                   # TokIG budget for the window factor (the paper's group: 300)


def features(sentence: str) -> tuple[bool, bool]:
    words = sentence.lower().split()
    return any(w in IRREGULAR for w in words), SURFACE in words


def cells(min_words: int = 6) -> dict[tuple[bool, bool], list[str]]:
    """SST-2 training phrases by (L, S), at least ``min_words`` words, duplicates dropped."""
    out: dict[tuple[bool, bool], list[str]] = {(a, b): [] for a in (True, False) for b in (True, False)}
    seen: set[str] = set()
    with lzma.open(SST2, "rt", encoding="utf-8") as f:
        next(f)
        for line in f:
            sentence = line.rsplit("\t", 1)[0].strip()
            if len(sentence.split()) < min_words or sentence in seen:
                continue
            seen.add(sentence)
            out[features(sentence)].append(sentence)
    return out


def build(rng: random.Random) -> tuple[list[tuple[str, int]], dict[str, list[tuple[str, int]]], list[str], list[str]]:
    """The ambiguous training set, the inoculation sets per mix, the OOD pool and truth sentences."""
    by = cells()
    for key in by:
        rng.shuffle(by[key])
    ls, nn, l_only, s_only = by[(True, True)], by[(False, False)], by[(True, False)], by[(False, True)]
    train = [(s, 1) for s in ls[:N_TRAIN // 2]] + [(s, 0) for s in nn[:N_TRAIN // 2]]
    half = (N_POOL + N_TRUTH) // 2
    pool = l_only[:N_POOL // 2] + s_only[:N_POOL // 2]
    truth = l_only[N_POOL // 2:half] + s_only[N_POOL // 2:half]
    spare_l, spare_s = l_only[half:], s_only[half:]     # inoculation comes from sentences no OOD set holds
    mixes: dict[str, list[tuple[str, int]]] = {}
    for name, (pct_l, pct_s) in MIXES.items():
        k_l, k_s = N_TRAIN * pct_l // 100, N_TRAIN * pct_s // 100
        # Labelled by L: L ∧ ¬S → 1, ¬L ∧ S → 0; by S: the opposite. Half of each from either cell.
        extra = [(s, 1) for s in spare_l[:k_l // 2]] + [(s, 0) for s in spare_s[:k_l - k_l // 2]]
        extra += [(s, 0) for s in spare_l[k_l // 2:k_l // 2 + k_s // 2]]
        extra += [(s, 1) for s in spare_s[k_l - k_l // 2:k_l - k_l // 2 + k_s - k_s // 2]]
        mixes[name] = extra
    return train, mixes, pool, truth


def write_suite(path: Path, name: str, sentences: list[str]) -> None:
    header = {"kind": "suite", "format_version": 1, "name": name, "task": "classification", "input_kind": "text",
              "label_space": ["no-L", "L"], "levels": ["cell"], "scoring_level": "cell", "losses": ["mft"],
              "test_types": ["MFT"], "description": "MSGS-lite OOD sentences: L and S disagree; label = L.",
              "source": {"built_by": "benchmarks/findings/msgs_lite.py", "from": "builtin:sst2 (train split)"}}
    cases = []
    for i, s in enumerate(sentences):
        has_l, has_s = features(s)
        cases.append({"id": f"{name}/{i}", "groups": {"cell": f"{'L' if has_l else 'noL'}-{'S' if has_s else 'noS'}"},
                      "test_type": "MFT", "loss": "mft", "inputs": [s], "label": int(has_l),
                      "expectation": {"kind": "eq", "level": "single", "target": "label"}})
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for row in [header, *cases]:
            f.write(json.dumps(row) + "\n")


def train_models(train: list[tuple[str, int]], mixes: dict[str, list[tuple[str, int]]], suite: Path) -> None:
    import torch
    from transformers import PreTrainedModel

    from beluga_core.config.schema import TaskSpec
    from beluga_core.contracts.registries import METHODS
    from beluga_core.data.iid.examples import IIDExample
    from beluga_core.evaluation.suites import load_checked_suite
    from beluga_core.planning.plan import make_task
    from beluga_core.training import precision
    from beluga_core.training.loop import seed_everything, train_stage
    from beluga_core.training.models import load_tokenizer

    device = torch.device("cpu")
    precision.configure("fp32", device)
    probe = load_checked_suite(str(suite))
    for i, (name, extra) in enumerate(mixes.items()):
        folder = OUT / "models" / name
        if (folder / "config.json").exists():
            continue
        started = time.perf_counter()
        task = make_task(TaskSpec(name="classification", suite=str(suite), iid="none"), probe)
        seed_everything(i)
        model = task.build_model("embedded:minilm", seed=i).to(device)
        assert isinstance(model, PreTrainedModel)   # saved below as a checkpoint folder
        tokenizer = load_tokenizer("embedded:minilm")
        encoder = task.make_encoder(tokenizer, 64)
        examples = [IIDExample(s, y) for s, y in train + extra]
        trainset = task.build_trainset([], examples, None)
        stats = train_stage(task, model, encoder, device, trainset, dict(TRAINING), METHODS.get("vanilla")({}),
                            seed=i)
        model.save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
        print(f"  trained {name}: {len(examples)} sentences ({len(extra)} inoculation), {stats.steps} steps, "
              f"{time.perf_counter() - started:.1f} s", flush=True)


def write_zoo(path: Path) -> None:
    models = "\n".join(f'[[models]]\nname = "{name}"\npath = "models/{name}"\n' for name in MIXES)
    path.write_text(f"""# MSGS-lite (benchmarks/findings/msgs_lite.py): six inoculated MiniLM models, ranked on OOD.
task = "classification"
probe = "probe.jsonl.gz"
truth = "truth.jsonl.gz"
pool_cap = 0
attributions = ["{ATTRIBUTION}"]
store = "zoo.duckdb"

[attribution_options.{ATTRIBUTION}]
steps = {STEPS}

[signal_options.window]
words = {json.dumps(IRREGULAR)}

{models}""", encoding="utf-8")


def main() -> None:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("--rank-only", action="store_true", help="Rank the models of an earlier run again.")
    args = parser.parse_args()


    print(header("fp32"))
    started = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    if not args.rank_only:
        train, mixes, pool, truth = build(random.Random("msgs-lite"))
        print(f"ambiguous training set {len(train)} sentences; OOD probe pool {len(pool)}, truth set {len(truth)}; "
              f"inoculation: " + ", ".join(f"{k} {len(v)}" for k, v in mixes.items()), flush=True)
        write_suite(OUT / "probe.jsonl.gz", "msgs-lite-probe", pool)
        write_suite(OUT / "truth.jsonl.gz", "msgs-lite-truth", truth)
        train_models(train, mixes, OUT / "probe.jsonl.gz")
        print(f"built and trained in {time.perf_counter() - started:.1f} s", flush=True)
    write_zoo(OUT / "zoo.toml")
    (OUT / "zoo.duckdb").unlink(missing_ok=True)
    ranked = time.perf_counter()
    beluga = Path(sys.executable).with_name("beluga")
    done = subprocess.run([str(beluga), "rank", "--zoo", str(OUT / "zoo.toml"), "--n", "10", "--bootstrap", "500",
                           "--signals", f"acc,conf,conf-gt,random,{ATTRIBUTION}:window,acc+{ATTRIBUTION}:window"],
                          text=True, check=False, env={**os.environ, "COLUMNS": "190"})
    if done.returncode != 0:
        sys.exit(done.returncode)
    print(f"ranking (predictions, {ATTRIBUTION} at {STEPS} steps on {N_POOL} probe sentences × 6 models): "
          f"{time.perf_counter() - ranked:.1f} s; whole benchmark {time.perf_counter() - started:.1f} s "
          "(bar: 10 min = 600 s)")


if __name__ == "__main__":
    main()
