"""``beluga run benchmarks/full.toml --dry-run --calibrate`` on two commits, side by side, each in a fresh clone and a
new user cache every run: does the dry run, calibration included, stay within issue 57's 60 s, and is it faster?

    python -m benchmarks.perf.dry_run_side_by_side BASE_COMMIT [--head COMMIT] [--pairs 3] [--out DIR]

Each side is a fresh clone of its commit, run with that clone first on ``PYTHONPATH`` (the installed environment is
shared, only the code differs), from the clone's folder, as a user who just cloned runs it: no ``HF_HUB_OFFLINE``,
a new ``XDG_CACHE_HOME`` for every run (so the calibration measures every shape, and no checked suite or token count
is reused). Runs go in A B B A order, so that the machine's drift falls on both sides alike; each is timed from
outside. Prints each wall time, each side's worst, whether every run is within the bar, and the paired verdict (the
speed of head against base: geometric mean and 95 % t interval over pairs). The two sides' plans must agree: the
line that counts the trainings is compared.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import MIN_PAIRED, clone_at, header, script_parser, short_commit, speed_verdict

BAR_S = 60.0


def timed_dry_run(clone: Path, config: str, cache: Path) -> tuple[float, str]:
    """Wall seconds of one dry run in ``clone`` with the user cache ``cache``, and its output."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "BELUGA_CALIBRATION")}
    env |= {"PYTHONPATH": str(clone), "XDG_CACHE_HOME": str(cache), "COLUMNS": "200"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "beluga_core", "run", config, "--dry-run", "--calibrate"],
                          cwd=clone, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"the dry run failed in {clone}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return wall, proc.stdout


def trainings_line(output: str) -> str:
    """The dry run's count of trainings (the plan both sides must agree on)."""
    found = re.search(r"^[\d,]+ trainings in all:.*$", output, flags=re.M)
    return " ".join(found.group(0).split()) if found else "(no count of trainings printed)"


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("base", help="the earlier commit")
    parser.add_argument("--head", default="HEAD", help="the later commit (default: HEAD)")
    parser.add_argument("--pairs", type=int, default=MIN_PAIRED)
    parser.add_argument("--config", default="benchmarks/full.toml", help="relative to the repository")
    parser.add_argument("--out", type=Path, default=None, help="where the clones and caches go")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="dry-side-by-side-"))
    sides = {"base": short_commit(args.base), "head": short_commit(args.head)}
    clones = {side: clone_at(commit, out / f"{side}-{commit}") for side, commit in sides.items()}
    print(header(None))
    print(f"base {sides['base']}, head {sides['head']}; {args.pairs} pair(s) of `beluga run {args.config} --dry-run "
          "--calibrate`, A B B A, each in a fresh clone with a new XDG_CACHE_HOME, no HF_HUB_OFFLINE")
    walls: dict[str, list[float]] = {"base": [], "head": []}
    counts: dict[str, set[str]] = {"base": set(), "head": set()}
    for pair in range(args.pairs):
        order = ("base", "head") if pair % 2 == 0 else ("head", "base")
        for side in order:
            wall, output = timed_dry_run(clones[side], args.config, out / f"cache-{side}-{pair}")
            walls[side].append(wall)
            counts[side].add(trainings_line(output))
            print(f"pair {pair + 1}: {side} {sides[side]} {wall:.1f} s", flush=True)
    for side in ("base", "head"):
        worst = max(walls[side])
        within = "within" if worst <= BAR_S else "over"
        print(f"{side} {sides[side]}: {', '.join(f'{w:.1f}' for w in walls[side])} s; worst {worst:.1f} s: {within} "
              f"the {BAR_S:.0f}-s bar in {'every run' if worst <= BAR_S else 'at least one run'}")
    print(f"plans: base {sorted(counts['base'])}, head {sorted(counts['head'])}: "
          f"{'the same' if counts['base'] == counts['head'] else 'DIFFERENT'}")
    print(speed_verdict([1 / w for w in walls["head"]], [1 / w for w in walls["base"]],
                        f"dry run, head {sides['head']} against base {sides['base']}"))


if __name__ == "__main__":
    main()
