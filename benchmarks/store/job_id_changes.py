"""Which job ids the IID model's identity of issue 54 changed, and why: every shipped and tiny config planned with
this beluga against the ids recorded before it (tests/data/golden/job_ids.scheme1.json.gz).

    python -m benchmarks.store.job_id_changes

Per config: the jobs planned, those whose id is new, and the reason of each new id: "IID model" (its identity now
hashes what its training reads: planning/jobs.py iid_identity) or "starts from the IID model" (a fold or grid point
whose parent is an IID model whose id changed: its identity hashes the parent's id). Any other change is printed as
UNEXPLAINED and the script exits 1. It also plans every config for a store that holds the recorded ids, as an
earlier version's store does, and checks that the plan then has exactly the recorded ids (exit 1 otherwise).
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter

from benchmarks.harness import REPO, header, script_parser
from tools.fixtures import build_golden

OLD = REPO / "tests" / "data" / "golden" / "job_ids.scheme1.json.gz"


def main() -> int:
    script_parser(__doc__).parse_args()   # no flags: --help, and no run on a stray argument
    print(header(None))
    old: dict[str, dict[str, object]] = json.loads(gzip.decompress(OLD.read_bytes()))
    bad = 0
    totals: Counter[str] = Counter()
    print(f"{'config':<48} {'jobs':>6} {'same':>6} {'IID model':>9} {'from IID':>8} {'other':>5}  old ids kept")
    for config in sorted(old):
        recorded = old[config]
        if "error" in recorded:
            print(f"{config:<48} {'(not plannable here: its data is made by a run)':>40}")
            continue
        recorded_jobs = recorded["jobs"]
        assert isinstance(recorded_jobs, list)   # a plannable config's entry: {"jobs": [ids], "pending": n}
        before: set[str] = set(recorded_jobs)
        plan = build_golden.planned(REPO / config)
        jobs = [*plan.jobs, *plan.grid_jobs]
        changed_iid = {j.id for j in jobs if j.is_iid_model and j.id not in before}
        reasons: Counter[str] = Counter()
        for j in jobs:
            if j.id in before:
                reasons["same"] += 1
            elif j.is_iid_model:
                reasons["IID model"] += 1
            elif j.parent_id in changed_iid:
                reasons["from IID"] += 1
            else:
                reasons["other"] += 1
                print(f"  UNEXPLAINED: {config}: {j.config}/{j.method} {j.fold.scenario} seed {j.seed} ({j.id[:12]})")
        kept = build_golden.job_ids(REPO / config, store_ids=before)
        same = kept == recorded
        bad += reasons["other"] + (not same)
        totals.update(reasons)
        totals["jobs"] += len(jobs)
        print(f"{config:<48} {len(jobs):>6} {reasons['same']:>6} {reasons['IID model']:>9} {reasons['from IID']:>8} "
              f"{reasons['other']:>5}  {'yes' if same else 'NO'}")
    print(f"{'all':<48} {totals['jobs']:>6} {totals['same']:>6} {totals['IID model']:>9} {totals['from IID']:>8} "
          f"{totals['other']:>5}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
