"""HotFlip's two linearisations against the FewRel-16 IID model M0 (benchmarks/relation-iid.toml), fp32 forced:
how well each first-order estimate ranks the real loss change, and what each buys an attack.

    python -m benchmarks.findings.bench_hotflip            # trains M0 (about a minute), then both measurements

1. Fidelity: for a seeded sample of FewRel-16 validation sentences, every swappable word × 60 seeded vocabulary
   candidates; per sentence, the Spearman correlation between the estimate and the real loss change (one forward
   pass per candidate); mean over sentences with a 95 % bootstrap interval, and the paired difference.
   ``gradient = "local"`` is the paper's HotFlip, (e_v − e_x)ᵀ∇L at the current word; ``"expected"`` linearises
   around 16 sampled words (their mean loss and mean gradient; ``samples`` in the options).
2. The attack with each, on the same seeded sample of pool sentences (those M0 classifies correctly are
   attacked): success rate with the paired difference, queries per success, wall time.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.stats import spearmanr

from beluga_core.contracts.generators import Source
from beluga_core.generators.attacks.adversarial import HotFlip
from beluga_core.generators.generation_sources import read_source
from beluga_core.generators.suite_build import SPLIT_KEY, generate
from beluga_core.stored_models.target import load_target
from benchmarks.findings.bench_adversarial import config_with, paired
from benchmarks.findings.bench_relation import SEED, verdict
from benchmarks.findings.bench_relation import boot_mean as boot
from benchmarks.findings.bench_relation import ci as interval
from benchmarks.harness import REPO, header, machine, run_once, script_parser

RUNS = REPO / "runs" / "bench-hotflip"
SENTENCES = 12      # validation sentences whose every candidate swap is evaluated
CANDIDATES = 60     # seeded vocabulary candidates per swappable word
ATTACKED = 100      # pool sentences attacked with each linearisation
MODES = ("local", "expected")


def rho_ci(x: np.ndarray) -> str:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return f"[{lo:.2f}, {hi:.2f}]"


def main() -> None:
    script_parser(__doc__).parse_args()   # no flags: --help, and no run on a stray argument
    rng = np.random.default_rng(SEED)
    RUNS.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    print(header("fp32"))
    store = RUNS / "relation-iid.duckdb"
    if store.exists():
        store.unlink()
    run_once(config_with(REPO / "benchmarks" / "relation-iid.toml"), store)
    print(f"   (M0 trained: {time.perf_counter() - t0:.0f} s)")

    val = read_source("builtin:fewrel16#val")
    model, record = load_target(f"store:{store}#iid/vanilla", label_space=val.label_space, input_kind="relation",
                                task_name="relation", max_length=96)
    picked_sentences = np.random.default_rng(SEED).choice(len(val.instances), size=SENTENCES, replace=False)
    sentences = [val.instances[int(i)] for i in sorted(picked_sentences)]
    attacks = {}
    for mode in MODES:
        attack = HotFlip({"same_pos": False, "gradient": mode})
        attack.model = model
        attack.prepare(Source("fidelity", "relation", tuple(sentences), val.label_space), SEED)
        attacks[mode] = attack
    hot = attacks["local"]
    picked = np.random.default_rng(SEED).choice(len(hot.candidate_ids), size=CANDIDATES, replace=False)
    cand = hot.candidate_ids[picked]
    rhos: dict[str, list[float]] = {m: [] for m in MODES}
    t = time.perf_counter()
    n_pairs = 0
    for x in sentences:
        assert isinstance(x.input, str)
        (wg,) = model.word_gradients([x.input], x.label)
        positions = [i for i, (w, ids) in enumerate(zip(wg.words, wg.ids, strict=True)) if hot.swappable(w, ids)]
        if len(positions) < 2:
            continue
        texts = [" ".join([*wg.words[:i], hot.vocab[v], *wg.words[i + 1:]]) for i in positions for v in cand]
        n_pairs += len(texts)
        real = -np.log(model.probabilities(texts)[:, model.labels.index(x.label)]) - wg.loss
        for mode in MODES:
            est = attacks[mode].scores(wg, positions, x.label)[:, picked].ravel()
            rhos[mode].append(float(spearmanr(est, real).statistic))
    local, expected = np.array(rhos["local"]), np.array(rhos["expected"])
    print(f"\n1. Fidelity on M0: {len(local)} validation sentences, {n_pairs} (word, candidate) swaps evaluated; "
          f"Spearman of the estimate with the real loss change, per sentence:")
    for mode, v in (("local", local), ("expected", expected)):
        print(f"   {mode:<9} mean {v.mean():.2f} {rho_ci(boot(v, rng))} (min {v.min():.2f}, "
              f"max {v.max():.2f})")
    d = paired(local, expected, rng)
    print(f"   expected − local: {(expected - local).mean():+.2f} {rho_ci(d)} {verdict(d)}")
    print(f"   ({time.perf_counter() - t:.0f} s)")

    pool = read_source("builtin:fewrel16#pool")
    print(f"\n2. The attack against M0 on {ATTACKED} pool sentences (WordNet part-of-speech constraint where "
          f"installed):")
    won: dict[str, set[str]] = {}
    attacked: set[str] = set()
    for mode in MODES:
        t = time.perf_counter()
        attack = HotFlip({"gradient": mode})
        made = generate(pool, [("hotflip", attack)], seed=SEED, name="bench-hotflip", sample=ATTACKED, model=model,
                        model_record=record)
        report = {what: v for _, what, _, v in made.reports}
        won[mode] = {str(c.meta[SPLIT_KEY]) for c in made.cases}
        # The sentences M0 classifies correctly: the attacked ones, the same for both linearisations.
        gold = {x.id: model.labels.index(x.label) for x in pool.instances}
        attacked = {i for i, p in attack.predicted.items() if p == gold[i]}
        print(f"   {mode:<9} success {100 * len(won[mode]) / len(attacked):.1f} % of {len(attacked)} attacked, "
              f"{report.get('queries per success', float('nan')):.0f} queries per success, "
              f"{time.perf_counter() - t:.0f} s")
    ids = sorted(attacked)
    a = np.array([float(i in won["local"]) for i in ids])
    b = np.array([float(i in won["expected"]) for i in ids])
    d = paired(a, b, rng)
    print(f"   success, expected − local: {100 * (b.mean() - a.mean()):+.1f} {interval(d)} {verdict(d)} "
          f"(paired over the same {len(ids)} sentences)")
    print(f"\nwall time {time.perf_counter() - t0:.0f} s at fp32 ({machine('fp32')})")


if __name__ == "__main__":
    main()
