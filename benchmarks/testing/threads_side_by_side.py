"""Two runs side by side on one machine, each on N torch threads: the oversubscription that made test workers slow.

    python -m benchmarks.testing.threads_side_by_side tests/data/tiny-fewshot.toml --threads 2
    python -m benchmarks.testing.threads_side_by_side tests/data/tiny-fewshot.toml --threads 1

Each side is ``beluga run CONFIG`` in a process of its own (through ``tests/helpers.run_benchmark``), with the
run's automatic threads replaced by ``--threads``; both start together and the script prints each side's wall time
with the machine line. On 2 cores, two sides on 2 threads each oversubscribe the cores.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import REPO, header, script_parser

SIDE = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
import torch
from beluga_core.training import models
models.configure_threads = lambda threads, workers=1: torch.set_num_threads({threads})
from helpers import run_benchmark
started = time.perf_counter()
run_benchmark(Path({config!r}), Path({store!r}))
print(f"{{time.perf_counter() - started:.1f}}")
"""


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("config", type=Path)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = [subprocess.Popen([sys.executable, "-c", SIDE.format(tests=str(REPO / "tests"), threads=args.threads,
                                                                     config=str(args.config.resolve()),
                                                                     store=str(Path(tmp) / f"side{i}.duckdb"))],
                                  stdout=subprocess.PIPE, text=True) for i in range(2)]
        started = time.perf_counter()
        walls = [float(p.communicate()[0].strip().splitlines()[-1]) for p in sides]
    print(f"{header('auto')}; precision: the config's")
    print(f"two runs of {args.config.name} side by side, {args.threads} torch thread(s) each: "
          f"{walls[0]:.1f} s and {walls[1]:.1f} s (both done after {time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
