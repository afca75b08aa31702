"""The whole test suite on two commits, in paired runs side by side: is the newer one slower?

    python -m benchmarks.testing.suite_side_by_side BASE_COMMIT [--head COMMIT] [--pairs 3] [--out DIR] [--keep-going]

Each side is a fresh clone of its commit (``../shared`` linked beside it when this checkout has one, so both see the
same data), run with the README's pytest command (``python -m pytest -q``, the project's xdist settings) and that
clone first on ``PYTHONPATH``, so the installed environment is shared and only the code differs. Runs alternate A B
B A … so that the machine's drift (benchmarks/findings/RESULTS.md: ~20 % within an hour on this VM) falls on both
sides alike. The script prints each run's wall time from outside, the per-pair ratio head / base, and the verdict
from the harness's paired interval (the speed of head against base: its geometric mean and 95 % t interval over
pairs; "not resolved" while the interval holds 1; none below the harness's MIN_PAIRED pairs). A run that fails stops
the script, unless ``--keep-going`` (for a base with a known intermittent failure: the run's time still counts, and
its failing tests are printed beside it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import MIN_PAIRED, REPO, clone_at, header, script_parser, short_commit, speed_verdict


def _suite(clone: Path, report: Path, keep_going: bool) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(clone)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"],
                          cwd=clone, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    if done.returncode != 0 and not keep_going:
        sys.exit(f"the suite failed in {clone} (exit {done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-2000:]}")
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
    return wall, re.sub(r"=+", "", tail).strip() + "".join(f"; {line}" for line in failed)


def main() -> None:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("base", help="the earlier commit")
    parser.add_argument("--head", default="HEAD", help="the later commit (default: HEAD)")
    parser.add_argument("--pairs", type=int, default=MIN_PAIRED)
    parser.add_argument("--out", type=Path, default=None, help="where the clones and JUnit reports go")
    parser.add_argument("--keep-going", action="store_true",
                        help="a run with failing tests still counts (its failures are printed beside its time)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="suite-side-by-side-"))
    out.mkdir(parents=True, exist_ok=True)
    commits = {side: short_commit(ref) for side, ref in (("base", args.base), ("head", args.head))}
    if (REPO.parent / "shared").exists() and not (out / "shared").exists():
        (out / "shared").symlink_to(REPO.parent / "shared")
    clones = {side: clone_at(commit, out / side) for side, commit in commits.items()}
    print(header(None))
    print(f"base {commits['base']}, head {commits['head']}; {args.pairs} pairs, A B B A order; clones in {out}")
    walls: dict[str, list[float]] = {"base": [], "head": []}
    for pair in range(args.pairs):
        order = ("base", "head") if pair % 2 == 0 else ("head", "base")
        for side in order:
            wall, tail = _suite(clones[side], out / f"{side}-{pair + 1}.xml", args.keep_going)
            walls[side].append(wall)
            print(f"pair {pair + 1} {side} ({commits[side]}): {wall:.1f} s  [{tail}]", flush=True)
    for pair, (b, h) in enumerate(zip(walls["base"], walls["head"], strict=True), start=1):
        print(f"pair {pair}: head / base = {h / b:.3f}")
    # As speeds (suites per second), so that "faster" / "slower" read as they do for the other benchmarks.
    print(speed_verdict([1 / w for w in walls["head"]], [1 / w for w in walls["base"]],
                        f"the suite at {commits['head']} against {commits['base']} (speed)"))


if __name__ == "__main__":
    main()
