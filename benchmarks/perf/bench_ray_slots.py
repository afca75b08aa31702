"""Ray slots on one machine against the multi executor: the same config run with the multi executor at
``workers = "auto"`` and with Ray at 1, 2, 4 and 8 slots per GPU (``options.folds_per_gpu``; on a CPU, ``workers``
per node), each from an empty store, in rounds: every round runs each setting once, in an order rotated per round,
so that a drift of the machine's speed falls on every setting alike. Prints each run's wall time (the whole
``beluga run``: Ray's start-up included, as a user waits for it) and, per Ray setting, the multi executor's speed
against it paired by round, with its 95 % interval (``harness.speed_verdict``, from 3 rounds on).

    python -m benchmarks.perf.bench_ray_slots --device cuda --tiny               # the GPU profile "ray"
    python -m benchmarks.perf.bench_ray_slots --device cpu --config tests/data/ray-slots.toml --slots 1 2 \\
        --rounds 1                                                               # a CPU smoke run

The goal (issue 60): Ray within 10 % of the multi executor on one GPU, i.e. the best slot count's paired interval
of time(Ray) / time(multi) inside [0.9, 1.1] or below it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO / "benchmarks" / "quick.toml"


def setting_config(base: Path, setting: str, device: str, out: Path) -> Path:
    """``base`` with its [executor] table replaced: "multi" (workers = "auto") or "ray-N" (N slots per GPU, or N
    workers on a CPU), on ``device``, with the base's precision kept."""
    text = base.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n[executor]\n")
    precision = re.search(r'^precision = "(\w+)"', rest, re.M) if sep else None
    lines = ["[executor]", f'device = "{device}"']
    if precision:
        lines.append(f'precision = "{precision.group(1)}"')
    if setting == "multi":
        lines += ['name = "multi"', 'workers = "auto"']
    else:
        n = int(setting.removeprefix("ray-"))
        lines += ['name = "ray"'] + ([f"workers = {n}", "threads = 1"] if device == "cpu" else [])
        lines += ["[executor.options]"] + ([f"num_cpus = {n}"] if device == "cpu" else
                                           [f"folds_per_gpu = {n}", "num_gpus = 1"])
    # Relative paths in the config (a suite, a model folder) stay relative to the base's folder.
    path = base.parent / f".bench-ray-{setting}-{base.name}"
    path.write_text(head.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_once(config: Path, store: Path, tiny: bool) -> tuple[float, float | None, int, str]:
    """(the whole command's wall seconds, the run's own "wall time" line, exit status, the output's tail)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "beluga_core", "run", str(config), "--store", str(store),
                           *(["--tiny"] if tiny else [])],
                          capture_output=True, text=True, check=False, cwd=config.parent)
    wall = time.perf_counter() - started
    match = re.search(r"wall time: ([\d.]+) s", proc.stdout)
    return wall, float(match.group(1)) if match else None, proc.returncode, (proc.stdout + proc.stderr)[-1500:]


def main() -> None:
    from benchmarks.harness import header, script_parser, speed_verdict

    parser = script_parser(__doc__, full=True)
    parser.add_argument("--config", type=Path, default=DEFAULT)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="beluga run --tiny: the config at its smallest sizes")
    parser.add_argument("--dry", action="store_true", help="write and print the configs; run nothing")
    args = parser.parse_args()
    settings = ["multi", *(f"ray-{n}" for n in args.slots)]
    print(header(None, "cpu" if args.dry else args.device), flush=True)
    configs = {s: setting_config(args.config.resolve(), s, args.device, Path()) for s in settings}
    try:
        if args.dry:
            for s, path in configs.items():
                print(f"--- {s}: {path}\n{path.read_text(encoding='utf-8')}")
            return
        walls: dict[str, list[float]] = {s: [] for s in settings}
        with tempfile.TemporaryDirectory(prefix="bench-ray-") as tmp:
            for r in range(args.rounds):
                order = settings[r % len(settings):] + settings[:r % len(settings)]
                for s in order:
                    store = Path(tmp) / f"{s}-{r}.duckdb"
                    wall, own, code, tail = run_once(configs[s], store, args.tiny)
                    print(f"round {r + 1} {s:>7}: {wall:7.1f} s (the run's own wall time {own} s), exit {code}",
                          flush=True)
                    if code != 0:
                        print(tail)
                        raise SystemExit(f"{s} failed")
                    walls[s].append(wall)
        for s in settings[1:]:
            # Speed = 1 / wall: the multi executor's speed against Ray's (> 1: multi faster).
            print(speed_verdict([1 / w for w in walls["multi"]], [1 / w for w in walls[s]],
                                f"multi (workers = \"auto\") against Ray {s.removeprefix('ray-')} slot(s)"))
    finally:
        for path in configs.values():
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
