"""Why the relation strategies' IID model moved between two runs that differed only in their suite, and that it no
longer does (issue 54). Plans only: nothing trains.

    python -m benchmarks.store.iid_identity_drift

`bench_relation_strategies.py` trains M0 (configuration `iid`, suite builtin:fewrel16-diagnose) and then, per seed,
a run on a suite it generates (attacks against M0, contrast cases, CDA twins), whose `iid` model is M0's recipe. A
worker seeds a job's training from a key (`execution/worker.py` `_seed_of`): the job's id before, and for the IID
model now the identity of its training alone (`Job.training_key`). This script plans the bench's configs (its own
`config_text`, full sizes, seeds 42 and 43) on three suites: builtin:fewrel16-diagnose as M0 has it, and two suites
that differ as two generated suites of one bench seed do (one header and name, other cases: here every case but one
in ten, and every case but another one in ten). For each it prints the IID model's id and training seed under the
earlier identity (`legacy_iid_identity`: the suite's name and size, `[sizes]`, the T_test ids) and under this
beluga's (`iid_identity`), and exits 1 unless the earlier seeds differ between the two suite runs, this beluga's id
is one between them, and its training seed one in all three runs (M0's id differs: it is scored on another suite).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from beluga_core.config.load import load_config
from beluga_core.core.hashing import digest
from beluga_core.data.suite.suite_files import load_suite, write_suite
from beluga_core.execution.worker import _seed_of
from beluga_core.planning.jobs import legacy_iid_identity
from beluga_core.planning.plan import build_plan
from benchmarks.findings import bench_relation_strategies as bench
from benchmarks.harness import header, script_parser

SEEDS = [42, 43]


def iid_ids(tmp: Path, name: str, suite: str, sizes: bench.Sizes) -> dict[int, tuple[str, str, str]]:
    """Per seed, (the earlier id, this beluga's id, its training key) of the bench config's IID model on ``suite``."""
    cfg_path = tmp / f"{name}.toml"
    cfg_path.write_text(bench.config_text(name, seeds=SEEDS, suite=suite, sizes=sizes, configurations=["iid"],
                                          scenarios=["standard"]), encoding="utf-8")
    plan = build_plan(load_config(cfg_path), cfg_path.resolve())
    (tp,) = plan.tasks
    return {j.seed: (digest(legacy_iid_identity(tp.common, j, j.hparams)), j.id, j.training_key) for j in plan.jobs
            if j.is_iid_model}


def main() -> int:
    script_parser(__doc__).parse_args()   # no flags: --help, and no run on a stray argument
    print(header(None))
    sizes = bench.FULL
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        base = load_suite("builtin:fewrel16-diagnose")
        for i in (0, 5):
            write_suite(tmp / f"generated-{i}.jsonl", base.header.model_copy(update={"name": "relation-strategies"}),
                        [c for k, c in enumerate(base.cases) if k % 10 != i])
        # M0 is planned with per_group_test 1, as the bench plans it (its suite cases are not what it is for).
        runs = {"M0 (builtin:fewrel16-diagnose)": iid_ids(tmp, "m0", "builtin:fewrel16-diagnose",
                                                          bench.Sizes(**{**sizes.__dict__, "per_group_test": 1})),
                "suite run A": iid_ids(tmp, "a", str(tmp / "generated-0.jsonl"), sizes),
                "suite run B": iid_ids(tmp, "b", str(tmp / "generated-5.jsonl"), sizes)}
    print(f"{'run':<32} {'seed':>4}  {'earlier id':<14} {'its seed':>10}  {'this id':<14} {'training seed':>13}")
    for run, ids in runs.items():
        for seed, (old, new, key) in sorted(ids.items()):
            print(f"{run:<32} {seed:>4}  {old[:12]:<14} {_seed_of(old, seed):>10}  {new[:12]:<14} "
                  f"{_seed_of(key, seed):>13}")
    a, b, m0 = runs["suite run A"], runs["suite run B"], runs["M0 (builtin:fewrel16-diagnose)"]
    earlier_moved = all(_seed_of(a[s][0], s) != _seed_of(b[s][0], s) for s in SEEDS)
    same_id = all(a[s][1] == b[s][1] for s in SEEDS)
    same_seed = all(_seed_of(a[s][2], s) == _seed_of(b[s][2], s) == _seed_of(m0[s][2], s) for s in SEEDS)
    print(f"\nearlier identity: the IID model's training seed differs between the two suite runs: {earlier_moved}"
          f"\nthis identity: one id in the two suite runs: {same_id}; one training seed per seed in all three runs "
          f"(M0's included): {same_seed}")
    return 0 if earlier_moved and same_id and same_seed else 1


if __name__ == "__main__":
    sys.exit(main())
