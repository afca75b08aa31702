"""Run benchmarks/quick-relation.toml at a forced precision and print DiagnoseRE's orderings at MiniLM scale, each
with a 95 % bootstrap interval (2,000 seeded rounds) and "holds" only where the interval of the difference
excludes 0.

    python -m benchmarks.findings.bench_relation                      # fp32 forced, one run, then the figures
    python -m benchmarks.findings.bench_relation --analyze STORE      # the figures of an existing store, no run
    python -m benchmarks.findings.bench_relation --me                 # benchmarks/relation-me.toml instead: ME(K%)

Figures (MFT cases: the gold relation on the perturbed sentence, DiagnoseRE's metric; T_test only):
1. The IID model: micro-F1 on D_test; per family, accuracy on the originals of its T_test cases (predicted now
   from the kept IID weights, in fp32: compare with a run in fp32, whose outcomes are fp32 predictions too)
   against the pass rate on their perturbed versions — perturbed < original?
2. The drop (original − perturbed) of the entity family against the context family — entity swaps hurt more?
3. Per family F, the pass rate of the model trained on F alone (only:family=F, DA(F)), of the seen model (DA(all))
   and of the model that held F out (trained on the other families) against the IID model, on F's cases —
   augmenting with a family recovers it? does augmenting with the others transfer?
4. G per held-out family: the harmonic mean of the fold's s_T on its family and its micro-F1 on D_test.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import duckdb
import numpy as np
import torch

from beluga_core.store.reader import open_store
from beluga_core.store.selectors import select_one
from beluga_core.stored_models.export import stored_model
from beluga_core.training.models import load_tokenizer
from beluga_core.training.predict import predict_probs
from benchmarks.harness import REPO, Benchmark

CONFIG = REPO / "benchmarks" / "quick-relation.toml"
ROUNDS = 2000
SEED = 0
FAMILIES = ("entity", "context", "semantic-bias", "selection-bias")


def ci(x: np.ndarray, scale: float = 100.0) -> str:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return f"[{scale * lo:.1f}, {scale * hi:.1f}]"


def verdict(x: np.ndarray) -> str:
    lo, hi = np.percentile(x, [2.5, 97.5])
    return "holds" if lo > 0 else ("reversed" if hi < 0 else "not resolved at this size")


def boot_mean(v: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return v[rng.integers(0, len(v), size=(ROUNDS, len(v)))].mean(axis=1)


def mft_outcomes(con: duckdb.DuckDBPyConnection, where: str) -> dict[str, dict[str, float]]:
    """family → case id → 1 pass / 0 fail, over the evaluated MFT cases of the models ``where`` selects."""
    rows = con.execute(f"""
        SELECT c.groups->>'family', o.case_id, (o.outcome = 'pass')::INT
        FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
        WHERE m.status = 'done' AND o.outcome <> 'skip' AND c.test_type = 'MFT' AND {where}""").fetchall()
    out: dict[str, dict[str, float]] = {}
    for family, case_id, passed in rows:
        out.setdefault(family, {})[case_id] = float(passed)
    return out


def originals_correct(store: Path, con: duckdb.DuckDBPyConnection, case_ids: list[str]) -> dict[str, float]:
    """Per MFT case, whether the IID model (its kept weights) predicts the gold relation on the unperturbed
    source sentence."""
    from beluga_core.data.suite.suite_schema import Case

    specs = dict(con.execute("SELECT case_id, spec::VARCHAR FROM case_specs WHERE case_id IN (SELECT unnest(?))",
                             [case_ids]).fetchall())
    cases = [Case.model_validate_json(specs[c]) for c in case_ids]
    with open_store(store) as rcon:
        sm = stored_model(rcon, store, select_one(rcon, "iid/vanilla", where=str(store)))
    model = sm.build()
    encoder = sm.task.make_encoder(load_tokenizer(sm.row["model_name"]), sm.max_length)
    labels = json.loads(con.execute("SELECT labels::VARCHAR FROM task_heads").fetchall()[0][0])
    probs = predict_probs(model, encoder, [c.meta["original"] for c in cases], torch.device("cpu"))
    gold = np.array([labels.index(str(c.label)) for c in cases])
    return dict(zip(case_ids, (probs.argmax(axis=1) == gold).astype(float), strict=True))


def report(store: Path) -> None:
    rng = np.random.default_rng(SEED)
    con = duckdb.connect(str(store), read_only=True)
    try:
        iid = con.execute("""SELECT list(p.correct ORDER BY p.example_idx), count(*) FILTER (WHERE p.pred = (
                                 SELECT (json_array_length(labels) - 1)::VARCHAR FROM task_heads))
                             FROM iid_predictions p JOIN models m USING (model_id)
                             WHERE m.config = 'iid' AND p.split = 'test'""").fetchall()[0]
        correct = np.asarray(iid[0], dtype=float)
        f1 = con.execute("""SELECT value FROM iid_metrics JOIN models USING (model_id)
                            WHERE config = 'iid' AND split = 'test' AND metric = 'micro_f1'""").fetchall()[0][0]
        print(f"\n1. IID model: micro-F1 on D_test {100 * f1:.1f} {ci(boot_mean(correct, rng))} (n = {len(correct)}; "
              f"it predicts no_relation {iid[1]} times, so micro-F1 = accuracy)")
        base = mft_outcomes(con, "m.config = 'iid'")
        all_ids = sorted({c for fam in base.values() for c in fam})
        orig = originals_correct(store, con, all_ids)
        drops: dict[str, np.ndarray] = {}
        print("   family: accuracy on the originals → pass rate on the perturbed (MFT, T_test), difference")
        for family in FAMILIES:
            ids = sorted(base.get(family, {}))
            if not ids:
                continue
            o = np.array([orig[i] for i in ids])
            p = np.array([base[family][i] for i in ids])
            idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
            d = (o[idx] - p[idx]).mean(axis=1)
            drops[family] = d
            print(f"   {family:<15} {100 * o.mean():5.1f} → {100 * p.mean():5.1f}  drop {100 * (o - p).mean():+5.1f} "
                  f"{ci(d)} (n = {len(ids)}): perturbed < original {verdict(d)}")
        if "entity" in drops and "context" in drops:
            diff = drops["entity"] - drops["context"]
            point = np.mean(drops["entity"]) - np.mean(drops["context"])
            print(f"\n2. entity drop − context drop: {100 * point:+.1f} {ci(diff)}: entity swaps hurt more than "
                  f"context changes {verdict(diff)}")
        print("\n3. per family F, pass rate on F's MFT cases (T_test), against the IID model (paired)")
        for family in FAMILIES:
            b = base.get(family, {})
            for label, where in ((f"trained on {family} alone (DA)", f"m.scenario = 'only:family={family}'"),
                                 ("trained on every family (DA all, seen)", "m.scenario = 'seen'"),
                                 (f"{family} held out (the others)", f"m.scenario = 'family' AND "
                                                                     f"m.heldout_group = '{family}'")):
                other = mft_outcomes(con, f"m.config <> 'iid' AND {where}").get(family, {})
                ids = sorted(b.keys() & other.keys())
                if not ids:
                    continue
                a, z = np.array([other[i] for i in ids]), np.array([b[i] for i in ids])
                idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
                d = (a[idx] - z[idx]).mean(axis=1)
                print(f"   {family:<15} {label:<40} {100 * a.mean():5.1f} vs IID {100 * z.mean():5.1f}: "
                      f"{100 * (a - z).mean():+5.1f} {ci(d)} {verdict(d)}")
            # The same recipe with and without F: what training on F itself adds.
            alone = mft_outcomes(con, f"m.config <> 'iid' AND m.scenario = 'only:family={family}'").get(family, {})
            held = mft_outcomes(con, f"m.config <> 'iid' AND m.scenario = 'family' AND "
                                     f"m.heldout_group = '{family}'").get(family, {})
            ids = sorted(alone.keys() & held.keys())
            if ids:
                a, z = np.array([alone[i] for i in ids]), np.array([held[i] for i in ids])
                idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
                d = (a[idx] - z[idx]).mean(axis=1)
                print(f"   {family:<15} {'alone − held out (same recipe, with vs without F)':<40} "
                      f"{100 * (a - z).mean():+5.1f} {ci(d)} {verdict(d)}")
        print("\n4. G per held-out family: the fold's s_T on its family's T_test cases (mean of its perturbations' "
              "pass rates, MFT and INV) and s_iid, the micro-F1 of the configuration's seen model, as BeLUGA's G")
        s_iid, seen_correct = con.execute("""
            SELECT i.s_iid, list(p.correct ORDER BY p.example_idx) FROM iid_scores i
            JOIN iid_predictions p ON p.model_id = i.model_id AND p.split = 'test'
            WHERE i.config <> 'iid' GROUP BY ALL""").fetchall()[0]
        boot_iid = boot_mean(np.asarray(seen_correct, dtype=float), rng)
        rows = con.execute("""
            SELECT m.heldout_group, c.scoring_group, list((o.outcome = 'pass')::INT)
            FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE m.scenario = 'family' AND m.config <> 'iid' AND o.outcome <> 'skip'
            GROUP BY ALL ORDER BY ALL""").fetchall()
        folds: dict[str, list[np.ndarray]] = {}
        for family, _, passed in rows:
            folds.setdefault(family, []).append(np.asarray(passed, dtype=float))
        for family, groups in sorted(folds.items()):
            s_t = float(np.mean([g.mean() for g in groups]))
            boot_t = np.mean([boot_mean(g, rng) for g in groups], axis=0)
            g = 2 * s_t * s_iid / (s_t + s_iid)
            boot_g = 2 * boot_t * boot_iid / (boot_t + boot_iid)
            print(f"   {family:<15} s_T {100 * s_t:5.1f} {ci(boot_t)}, s_iid {100 * s_iid:5.1f}, G {100 * g:5.1f} "
                  f"{ci(boot_g)}")
    finally:
        con.close()


def report_me(store: Path) -> None:
    """benchmarks/relation-me.toml: each model trained on one perturbation (IID→T: 100 % of its stage's instances
    perturbed; IID→(IID+T): half) on the semantic-bias perturbations and the cue-removal set, against the IID
    model (paired over the same T_test MFT cases), beside its micro-F1."""
    rng = np.random.default_rng(SEED)
    con = duckdb.connect(str(store), read_only=True)
    try:
        rows = con.execute("""
            SELECT m.config, m.scenario, c.groups->>'perturbation', o.case_id, (o.outcome = 'pass')::INT
            FROM outcomes o JOIN models m USING (model_id) JOIN cases c ON c.suite = o.suite AND c.case_id = o.case_id
            WHERE m.status = 'done' AND o.outcome <> 'skip' AND c.test_type = 'MFT'
              AND c.groups->>'perturbation' IN ('masked entity', 'only entity', 'cue removal')""").fetchall()
        by: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
        for config, scenario, pert, case_id, passed in rows:
            by.setdefault((config, scenario), {}).setdefault(pert, {})[case_id] = float(passed)
        f1 = dict(((c, s), v) for c, s, v in con.execute("""
            SELECT m.config, m.scenario, i.value FROM iid_metrics i JOIN models m USING (model_id)
            WHERE i.split = 'test' AND i.metric = 'micro_f1'""").fetchall())
        base = by[("iid", "standard")]
        perts = ("masked entity", "only entity", "cue removal")
        print(f"\n   IID model: micro-F1 {100 * f1[('iid', 'standard')]:.1f}; MFT pass rates "
              + ", ".join(f"{p} {100 * np.mean(list(base[p].values())):.1f}" for p in perts))
        for key in sorted(k for k in by if k[0] != "iid"):
            if key[1] not in ("seen", "only:perturbation=masked entity", "only:perturbation=only entity",
                              "only:perturbation=cue removal"):
                continue
            parts = []
            for p in perts:
                ids = sorted(base[p].keys() & by[key].get(p, {}).keys())
                a = np.array([by[key][p][i] for i in ids])
                z = np.array([base[p][i] for i in ids])
                idx = rng.integers(0, len(ids), size=(ROUNDS, len(ids)))
                d = (a[idx] - z[idx]).mean(axis=1)
                parts.append(f"{p} {100 * a.mean():.1f} ({100 * (a - z).mean():+.1f} {ci(d)})")
            score = f1.get(key)
            print(f"   {key[0]} {key[1]}: " + "; ".join(parts)
                  + (f"; micro-F1 {100 * score:.1f}" if score is not None else ""))
    finally:
        con.close()


class Relation(Benchmark):
    out = REPO / "runs" / "bench-relation"
    analyze_many = False
    run_line = "run: {wall:.1f} s from outside; {own}"

    def arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--me", action="store_true",
                            help="run (or, with --analyze, read) benchmarks/relation-me.toml")

    def chosen(self, args: argparse.Namespace) -> Path:
        return CONFIG.with_name("relation-me.toml") if args.me else CONFIG

    def figures(self, args: argparse.Namespace, store: Path) -> None:
        (report_me if args.me else report)(store)


if __name__ == "__main__":
    Relation(__doc__ or "").main()
