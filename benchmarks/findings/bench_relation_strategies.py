"""DiagnoseRE's strategies side by side on FewRel-16, over seeds: IID, DA (continued and retrained), CDA,
adversarial training against the very model attacked (adaptive), and Adv+CDA; each scored on the original test
set, every entity-swap family (each semantics), the context family, the contrast set and the adversarial set.

Long: one pipeline whose parts only this bench uses (the generated suites it pins, the config it writes, its own
scoring and report); split, each piece would hold half of one run's state.

    python -m benchmarks.findings.bench_relation_strategies            # fp32 forced, seeds 42 and 43
    python -m benchmarks.findings.bench_relation_strategies --tiny     # the same pipeline at smoke-test sizes

Per seed s (everything seeded; one store per step under --out):

1. **M0_s**, the IID model (`iid`, FewRel-16 D_train sample, 1 epoch), both seeds in one run (m0.duckdb).
2. **Cases.** Model-independent, once: entity swaps under the four semantics (slot, same-type-other-relation,
   random-same-type, unseen) and CheckList's context functions, on a seeded sample of the pool (split by the
   suite's ratios). Against M0_s (adaptive): HotFlip's successful attacks on a pool sample, half pinned to T_train
   and half to T_test (the adversarial set); IG counterfactual masking of pool sentences, pinned to T_test (the
   contrast set, labelled no_relation); the CDA twins of a seeded share of D_train (masked by a 2-point IG,
   labelled no_relation), pinned to T_train.
3. **One run per seed** on the combined suite, scenarios `standard`, `only:arm` and `only:plus`: `arm` is a
   crossing level (da: the entity and context cases; adv: the adversarial T_train half; cda: the twins) and
   `plus` another (advcda: the adversarial half and the twins), so each only: model trains on one arm's T_train
   plus as many D_train sentences as M0 saw. Configuration `iid-plus-t` retrains from the pretrained model;
   `iid-then-iid-plus-t` starts from M0_s itself (`start = "store:m0.duckdb#iid/vanilla#s"`):
   - IID: the run's `iid` model (M0's recipe, another draw: on the adversarial set, transfer; M0 itself fails
     every adversarial case by construction, 0 %);
   - DA (retrained) = iid-plus-t@only:arm=da; DA (continued) = iid-then-iid-plus-t@only:arm=da;
   - CDA = iid-plus-t@only:arm=cda (retrained on D_train plus the twins, as DiagnoseRE does);
   - Adv (adaptive) = iid-then-iid-plus-t@only:arm=adv: M0_s trained further on D_train plus its own attacks;
   - Adv+CDA (adaptive) = iid-then-iid-plus-t@only:plus=advcda.
   The run also trains the other three combinations (Adv and Adv+CDA retrained from the pretrained model, CDA
   continued from M0) and `seen` (every arm's T_train at once, which held-out scenarios require); they are printed
   below the six.

Figures: accuracy (%) on the MFT cases of each test set (micro-F1 without no_relation on D_test), the mean over
seeds with the 95 % interval beluga reports at that many seeds (`intervals.default_kind`: the seed-level t below
HIERARCHICAL_MIN_SEEDS seeds, where the hierarchical one, seeds then cases within them, covers below 93.5 %;
docs/method.md, "Replicates"), and each strategy's difference from IID paired by seed and case. A claim "holds"
only where the difference's interval excludes 0.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from beluga_core.analysis.replicates.intervals import (
    SEED_T_WHY,
    Interval,
    default_kind,
    t_interval,
    two_stage_interval,
)
from beluga_core.contracts.registries import GENERATORS
from beluga_core.data.suite.suite_files import write_suite
from beluga_core.data.suite.suite_schema import Case
from beluga_core.evaluation.metric_forms import MICRO_F1, MetricForm, class_parts
from beluga_core.evaluation.metrics import micro_f1_excluding
from beluga_core.generators.generation_sources import read_source
from beluga_core.generators.suite_build import Generated, generate
from beluga_core.stored_models.target import load_target
from benchmarks.harness import REPO, header, machine, script_parser

ROUNDS = 2000
SEMANTICS = ["slot", "same-type-other-relation", "random-same-type", "unseen"]
# (label, configuration, scenario) of each strategy in a seed's run.
ARMS = {
    "IID": ("iid", "standard"),
    "DA (continued)": ("iid-then-iid-plus-t", "only:arm=da"),
    "DA (retrained)": ("iid-plus-t", "only:arm=da"),
    "CDA": ("iid-plus-t", "only:arm=cda"),
    "Adv (adaptive)": ("iid-then-iid-plus-t", "only:arm=adv"),
    "Adv+CDA (adaptive)": ("iid-then-iid-plus-t", "only:plus=advcda"),
}
EXTRA_ARMS = {
    "All (retrained)": ("iid-plus-t", "seen"),
    "All (continued)": ("iid-then-iid-plus-t", "seen"),
    "Adv (retrained, transfer)": ("iid-plus-t", "only:arm=adv"),
    "Adv+CDA (retrained, transfer)": ("iid-plus-t", "only:plus=advcda"),
    "CDA (continued)": ("iid-then-iid-plus-t", "only:arm=cda"),
}


@dataclass(frozen=True)
class Sizes:
    iid_train: int
    diag_sentences: int      # pool sentences the entity and context families perturb
    attacked: int            # pool sentences HotFlip attacks
    masked: int              # pool sentences IG masking turns into contrast cases
    cda_share: float         # share of the D_train sample whose twins CDA trains on
    per_group_train: int
    per_group_test: int
    layers: int | None = None   # MiniLM's first N layers (the smoke run)


FULL = Sizes(iid_train=2000, diag_sentences=300, attacked=120, masked=100, cda_share=0.2, per_group_train=40,
             per_group_test=60)
# The same pipeline in a minute or two: every step, none of the sizes (`beluga run --tiny` is not used: a tiny run's
# store records the config file, not the one-layer model it trained, so its models cannot be started from).
TINY = Sizes(iid_train=96, diag_sentences=30, attacked=12, masked=10, cda_share=0.25, per_group_train=4,
             per_group_test=6, layers=1)


def config_text(name: str, *, seeds: Sequence[int], suite: str, sizes: Sizes, configurations: Sequence[str],
                scenarios: Sequence[str], start: str | None = None) -> str:
    text = f'''name = "{name}"
seeds = {json.dumps(list(seeds))}
configurations = {json.dumps(list(configurations))}
methods = ["vanilla"]
scenarios = {json.dumps(list(scenarios))}

[model]
name = "embedded:minilm"
max_length = 96
{f"config_overrides = {{ num_hidden_layers = {sizes.layers} }}" if sizes.layers else ""}

[[tasks]]
name = "relation"
suite = "{suite}"
iid = "builtin:fewrel16"

[split]
ratios = [0.5, 0.25, 0.25]
seed = 123
iid_eval_seed = 42

[sizes]
iid_train = {sizes.iid_train}
iid_mix = {sizes.iid_train}
iid_test = 0
suite_train_per_group = {sizes.per_group_train}
suite_val_per_group = 1
suite_test_per_group = {sizes.per_group_test}

[training]
learning_rate = 1e-4
batch_size = 32
epochs = 1

[executor]
device = "auto"
precision = "fp32"
'''
    if start is not None:
        text += f'\n[training.configurations.iid-then-iid-plus-t]\nstart = "{start}"\n'
    return text


def run(config: Path, store: Path) -> float:
    import subprocess

    started = time.perf_counter()
    beluga = Path(sys.executable).with_name("beluga")
    done = subprocess.run([str(beluga), "run", str(config), "--store", str(store)], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        sys.exit(f"beluga run {config.name} failed (exit {done.returncode}):\n{done.stdout[-4000:]}\n"
                 f"{done.stderr[-4000:]}")
    for line in done.stdout.splitlines():
        if "adaptive" in line or "transfer" in line:
            print(f"   | {line.strip()}")
    return time.perf_counter() - started


def pinned(cases: Sequence[Case], part: str | None = None, arm: str | None = None, plus: str | None = None,
           halves: bool = False, seed: int = 0) -> list[Case]:
    """``cases`` with their split part pinned (``halves``: a seeded half to train, the rest to test) and their
    groups of the crossing levels ``arm`` and ``plus`` set."""
    rng = np.random.default_rng(seed)
    out = []
    order = rng.permutation(len(cases))
    train = set(order[: len(cases) // 2].tolist()) if halves else set()
    for i, c in enumerate(cases):
        p = ("train" if i in train else "test") if halves else part
        groups = dict(c.groups)
        if arm is not None and (p != "test" or not halves):
            groups["arm"] = arm
        if plus is not None and (p != "test" or not halves):
            groups["plus"] = plus
        meta = {**c.meta, **({"split_part": p} if p else {})}
        out.append(c.model_copy(update={"groups": groups, "meta": meta}))
    return out


def combined_suite(path: Path, name: str, parts: list[tuple[Generated, list[Case]]]) -> None:
    first = parts[0][0].header
    cases = [c for _, cs in parts for c in cs]
    header = first.model_copy(update={
        "name": name, "levels": [*first.levels, "arm", "plus"], "crossing_levels": ["arm", "plus"],
        "test_types": sorted({c.test_type for c in cases}), "losses": sorted({c.loss for c in cases}),
        "source": {"parts": [g.header.source for g, _ in parts]}})
    write_suite(path, header, cases)


# -- scoring -------------------------------------------------------------------------------------------------
@dataclass
class Scored:
    """One seed's run: per (config, scenario) model, case id → pass (1/0) on the MFT cases of each test set, and
    the D_test predictions."""

    sets: dict[tuple[str, str], dict[str, dict[str, float]]]
    iid: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]]


def test_set_of(family: str) -> str | None:
    """The test set a family's T_test cases form (None: a family nothing is scored on, the CDA twins)."""
    if family == "adversarial":
        return "adversarial set"
    if family == "counterfactual":
        return "contrast set"
    if family == "context" or family.startswith("entity"):
        return {"entity": "entity: slot"}.get(family, family.replace("entity-", "entity: "))
    return None


def score(store: Path) -> Scored:
    with duckdb.connect(str(store), read_only=True) as con:
        rows = con.execute("""
            SELECT m.config, m.scenario, c.groups->>'family', o.case_id, (o.outcome = 'pass')::INT
            FROM outcomes o JOIN models m USING (model_id)
            JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE m.status = 'done' AND o.outcome <> 'skip' AND c.test_type = 'MFT'""").fetchall()
        sets: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        for cfg, sc, fam, case, ok in rows:
            name = test_set_of(str(fam))
            if name is not None:
                sets.setdefault((cfg, sc), {}).setdefault(name, {})[case] = float(ok)
        labels = json.loads(con.execute("SELECT labels::VARCHAR FROM task_heads").fetchall()[0][0])
        iid: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, int]] = {}
        for mid, cfg, sc in con.execute("SELECT model_id, config, scenario FROM models WHERE status = 'done'"
                                        ).fetchall():
            p = con.execute("SELECT gold, pred FROM iid_predictions WHERE model_id = ? AND split = 'test' "
                            "ORDER BY example_idx", [mid]).fetchall()
            if p:
                iid[(cfg, sc)] = (np.array([int(g) for g, _ in p]), np.array([int(x) for _, x in p]), len(labels) - 1)
    return Scored(sets, iid)


def _draws(per_seed: list[tuple[np.ndarray, np.ndarray]], shared: bool,
           rng: np.random.Generator) -> tuple[list[float], np.ndarray]:
    """Per-seed figure (a − b: b zeros for a level) and ROUNDS draws of the mean over seeds, cases resampled
    within each seed (the same draw for every seed when they share their cases)."""
    values = []
    draws = np.zeros(ROUNDS)
    idx_shared = None
    for a, b in per_seed:
        values.append(float(a.mean() - b.mean()))
        n = len(a)
        idx = idx_shared if (shared and idx_shared is not None) else rng.integers(0, n, size=(ROUNDS, n))
        idx_shared = idx if shared else None
        draws += a[idx].mean(axis=1) - b[idx].mean(axis=1)
    return values, draws / len(per_seed)


def _f1_draws(per_seed: list[tuple[np.ndarray, np.ndarray | None, np.ndarray, int]],
              rng: np.random.Generator) -> tuple[list[float], np.ndarray]:
    """As `_draws`, for micro-F1 on D_test (pred_a, pred_b or None, gold, NA); D_test is the same every seed. A
    round's micro-F1 is beluga's own vectorised form (`metric_forms`): the round's example counts times each
    example's one-hot TP / FP / FN parts, for all rounds in one product."""
    values = []
    n = len(per_seed[0][2])
    idx = rng.integers(0, n, size=(ROUNDS, n))
    counts = np.zeros((ROUNDS, n))
    np.add.at(counts, (np.arange(ROUNDS)[:, None], idx), 1.0)
    draws = np.zeros(ROUNDS)
    for pa, pb, gold, na in per_seed:
        form = MetricForm(MICRO_F1, na + 1, na=na)
        fa = micro_f1_excluding(pa, gold, na)
        fb = micro_f1_excluding(pb, gold, na) if pb is not None else 0.0
        values.append(fa - fb)
        draws += form.value(counts @ class_parts(gold, pa, na + 1), float(n))
        if pb is not None:
            draws -= form.value(counts @ class_parts(gold, pb, na + 1), float(n))
    return values, draws / len(per_seed)


def fmt(iv: Interval, signed: bool = False) -> str:
    if iv.mean is None:
        return "—"
    mean = f"{100 * iv.mean:+.1f}" if signed else f"{100 * iv.mean:.1f}"
    if iv.lo is None or iv.hi is None:
        return f"{mean} [no interval]"
    return f"{mean} [{100 * iv.lo:.1f}, {100 * iv.hi:.1f}]"


def verdict(iv: Interval) -> str:
    if iv.lo is None or iv.hi is None:
        return "not resolved (no interval)"
    return "holds" if iv.lo > 0 else ("reversed" if iv.hi < 0 else "not resolved")


def figure(scored: dict[int, Scored], arm: tuple[str, str], base: tuple[str, str] | None, test_set: str,
           rng: np.random.Generator) -> Interval | None:
    """Mean over seeds (or difference from ``base``, paired) of ``arm``'s accuracy on ``test_set``."""
    if test_set == "D_test micro-F1":
        rows = []
        for s in scored.values():
            if arm not in s.iid or (base is not None and base not in s.iid):
                return None
            gold, pa, na = s.iid[arm]
            pb = s.iid[base][1] if base is not None else None
            rows.append((pa, pb, gold, na))
        values, draws = _f1_draws(rows, rng)
        return _interval(values, draws)
    per_seed, cases = [], []
    for s in scored.values():
        a = s.sets.get(arm, {}).get(test_set)
        if not a:
            return None
        ids = sorted(a)
        b = s.sets.get(base, {}).get(test_set, {}) if base is not None else None
        if b is not None:
            ids = [i for i in ids if i in b]
        per_seed.append((np.array([a[i] for i in ids]),
                         np.array([b[i] for i in ids]) if b is not None else np.zeros(len(ids))))
        cases.append(ids)
    shared = all(c == cases[0] for c in cases)
    values, draws = _draws(per_seed, shared, rng)
    return _interval(values, draws)


def _interval(values: list[float], draws: np.ndarray) -> Interval:
    """The interval beluga reports at this many seeds: the seed-level t below HIERARCHICAL_MIN_SEEDS, else the
    hierarchical one (the draws are drawn either way, so the generator's stream, and every later figure, is the
    same whichever is shown)."""
    return t_interval(values) if default_kind(len(values)) == "seed" else two_stage_interval(values, draws)


def main() -> None:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 43])
    parser.add_argument("--tiny", action="store_true", help=(
        "a smoke run of the whole pipeline: a one-layer MiniLM, 96 D_train sentences, a few cases (numbers "
        "meaningless)"))
    parser.add_argument("--out", type=Path, default=REPO / "runs" / "bench-relation-strategies")
    parser.add_argument("--score-only", action="store_true", help=(
        "score the strategy stores an earlier run left in --out again (the figures and verdicts of this code), "
        "training nothing"))
    args = parser.parse_args()
    sizes = TINY if args.tiny else FULL
    out: Path = args.out
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    print(header("fp32"))
    if args.score_only:
        stores = {seed: out / f"strategies-{seed}.duckdb" for seed in args.seeds}
        missing = [str(p) for p in stores.values() if not p.exists()]
        if missing:
            raise SystemExit(f"--score-only: no strategy store {', '.join(missing)} (run without it first)")
        print(f"seeds {args.seeds}: scoring the stores of an earlier run in {out}")
        report({seed: score(store) for seed, store in stores.items()}, args.seeds, rng)
        print(f"\nwall time {time.perf_counter() - t0:.0f} s at fp32 ({machine('fp32')})")
        return
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    smoke = " (smoke run: numbers meaningless)" if args.tiny else ""
    print(f"seeds {args.seeds}; D_train sample {sizes.iid_train}{smoke}")

    # 1. M0 for every seed
    m0 = out / "m0.duckdb"
    cfg = out / "m0.toml"
    cfg.write_text(config_text("relation-strategies-m0", seeds=args.seeds, suite="builtin:fewrel16-diagnose",
                               sizes=Sizes(**{**sizes.__dict__, "per_group_test": 1}), configurations=["iid"],
                               scenarios=["standard"]), encoding="utf-8")
    took = run(cfg, m0)
    print(f"\n1. M0 for seeds {args.seeds}: {took:.0f} s")

    # 2. the cases
    t = time.perf_counter()
    pool = read_source("builtin:fewrel16#pool")
    train = read_source("builtin:fewrel16#train")
    diag = generate(pool, [("entity-swap", GENERATORS.get("entity-swap")({"semantics": SEMANTICS})),
                           ("context", GENERATORS.get("context")({}))],
                    seed=0, name="diag", sample=sizes.diag_sentences)
    diag_cases = pinned(diag.cases, arm="da")
    print(f"\n2. Cases: entity and context families from {sizes.diag_sentences} pool sentences: {len(diag.cases)} "
          f"cases ({time.perf_counter() - t:.0f} s)")
    with duckdb.connect(str(m0), read_only=True) as con:
        trained_ids = {s: mid for s, mid in con.execute(
            "SELECT seed, model_id FROM models WHERE config = 'iid' AND status = 'done'").fetchall()}
    scored: dict[int, Scored] = {}
    for seed in args.seeds:
        t = time.perf_counter()
        selector = f"store:{m0}#iid/vanilla#{seed}"
        model, record = load_target(selector, label_space=pool.label_space, input_kind="relation",
                                    task_name="relation", max_length=96)
        adv = generate(pool, [("hotflip", GENERATORS.get("hotflip")({"gradient": "local"}))], seed=seed,
                       name="adv", sample=sizes.attacked, model=model, model_record=record)
        contrast = generate(pool, [("ig-contrast", GENERATORS.get("ig-contrast")({"k": [1]}))], seed=seed,
                            name="contrast", sample=sizes.masked, model=model, model_record=record)
        n_twins = max(2, round(sizes.cda_share * sizes.iid_train))
        cda = generate(train, [("cda", GENERATORS.get("cda")({"attribution_options": {"steps": 2,
                                                                                        "rule": "riemann_right"}}))],
                       seed=seed, name="cda", sample=n_twins, model=model, model_record=record)
        adv_mft = [c for c in adv.cases if c.test_type == "MFT"]
        suite = out / f"suite-{seed}.jsonl"
        combined_suite(suite, f"relation-strategies-{seed}", [
            (diag, diag_cases),
            (adv, pinned(adv_mft, arm="adv", plus="advcda", halves=True, seed=seed)),
            (contrast, pinned([c for c in contrast.cases if c.test_type == "MFT"], part="test")),
            (cda, pinned(cda.cases, part="train", arm="cda", plus="advcda"))])
        print(f"   seed {seed}: against M0 ({trained_ids.get(seed, '?')[:12]}): {len(adv_mft)} successful HotFlip "
              f"attacks of {sizes.attacked} sentences (half to train, half the adversarial set), "
              f"{sum(c.test_type == 'MFT' for c in contrast.cases)} contrast cases, {len(cda.cases)} CDA twins of "
              f"{n_twins} D_train sentences ({time.perf_counter() - t:.0f} s)")

        # 3. the strategies
        cfg = out / f"strategies-{seed}.toml"
        cfg.write_text(config_text(f"relation-strategies-{seed}", seeds=[seed], suite=str(suite), sizes=sizes,
                                   configurations=["iid", "iid-plus-t", "iid-then-iid-plus-t"],
                                   scenarios=["standard", "seen", "only:arm", "only:plus"], start=selector),
                       encoding="utf-8")
        store = out / f"strategies-{seed}.duckdb"
        took = run(cfg, store)
        print(f"   seed {seed}: strategies trained and scored in {took:.0f} s")
        scored[seed] = score(store)
    report(scored, args.seeds, rng)
    print(f"\nwall time {time.perf_counter() - t0:.0f} s at fp32 ({machine('fp32')})")


def report(scored: dict[int, Scored], seeds: Sequence[int], rng: np.random.Generator) -> None:
    """Sections 3 and 4: every test set's figures and the paper's claims."""
    sets = ["D_test micro-F1", "entity: slot", "entity: same-type-other-relation", "entity: random-same-type",
            "entity: unseen", "context", "contrast set", "adversarial set"]
    kind = default_kind(len(seeds))
    label = ("seed-level t 95 % interval over the seeds: " + SEED_T_WHY if kind == "seed" else
             "hierarchical 95 % interval: seeds, then cases within them")
    print(f"\n3. Accuracy (%) on each test set's MFT cases (D_test: micro-F1 without no_relation), mean over "
          f"{len(seeds)} seeds [{label}]")
    width = max(len(a) for a in [*ARMS, *EXTRA_ARMS]) + 2
    for test_set in sets:
        print(f"\n   {test_set}")
        for label, arm in {**ARMS, **EXTRA_ARMS}.items():
            level = figure(scored, arm, None, test_set, rng)
            if level is None:
                continue
            line = f"     {label:<{width}}{fmt(level):>22}"
            if label != "IID":
                diff = figure(scored, arm, ARMS["IID"], test_set, rng)
                if diff is not None:
                    line += f"   vs IID {fmt(diff, signed=True):>22}  {verdict(diff)}"
            print(line)
        n = [len(s.sets.get(ARMS["IID"], {}).get(test_set, {})) for s in scored.values()] \
            if test_set != "D_test micro-F1" else [len(s.iid[ARMS["IID"]][0]) for s in scored.values()]
        print(f"     (cases per seed: {', '.join(map(str, n))})")

    print(f"\n4. The paper's claims (difference from IID, {'seed-level t' if kind == 'seed' else 'hierarchical'} 95 % "
          "interval):")
    claims = [("CDA lifts contrast accuracy", "CDA", "contrast set"),
              ("Adv (adaptive) recovers adversarial accuracy", "Adv (adaptive)", "adversarial set"),
              ("Adv+CDA (adaptive) recovers adversarial accuracy", "Adv+CDA (adaptive)", "adversarial set"),
              ("Adv+CDA (adaptive) lifts contrast accuracy", "Adv+CDA (adaptive)", "contrast set")]
    claims += [(f"augmentation (DA {how}) recovers {fam}", f"DA ({how})", fam)
               for how in ("retrained", "continued") for fam in sets[1:6]]
    for text, label, test_set in claims:
        diff = figure(scored, ARMS[label], ARMS["IID"], test_set, rng)
        if diff is None:
            print(f"   {text}: not measured (a seed has no {label} model or no {test_set} cases)")
        else:
            print(f"   {text}: {fmt(diff, signed=True)} {verdict(diff)}")


if __name__ == "__main__":
    main()
