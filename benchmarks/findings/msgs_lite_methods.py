"""MSGS-lite's window factor under the three attribution methods at the budgets of the paper's group
(InterpCalib): LIME with 5,000 samples, Kernel SHAP with min(2d + 2,048, 2^d − 2) coalitions, TokIG with 300
steps — the estimators' full defaults. It ranks the six models msgs_lite.py trained (run that first) and prints
how long it took: at these budgets a 2-core CPU attributes about 0.14 (LIME), 0.4 (SHAP) and 1.1 (TokIG) SST-2
sentences per second, so the whole pool of 150 × 6 models takes hours; --pool samples fewer probe sentences.

    python -m benchmarks.findings.msgs_lite_methods --pool 24
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.findings.msgs_lite import IRREGULAR, MIXES, OUT
from benchmarks.harness import header, script_parser

METHODS = ("lime", "shap", "tokig")


def main() -> None:
    parser = script_parser(__doc__, full=True)
    parser.add_argument("--pool", type=int, default=150, help="Probe sentences (a seeded sample of the 150).")
    args = parser.parse_args()


    if not all((OUT / "models" / m / "config.json").exists() for m in MIXES):
        sys.exit("train the models first: python -m benchmarks.findings.msgs_lite")
    print(header("fp32"))
    zoo = OUT / "zoo-three.toml"
    models = "\n".join(f'[[models]]\nname = "{name}"\npath = "models/{name}"\n' for name in MIXES)
    zoo.write_text(f"""task = "classification"
probe = "probe.jsonl.gz"
truth = "truth.jsonl.gz"
pool_cap = {args.pool}
attributions = {list(METHODS)!r}
store = "zoo-three.duckdb"

[signal_options.window]
words = {IRREGULAR!r}

{models}""".replace("'", '"'), encoding="utf-8")
    (OUT / "zoo-three.duckdb").unlink(missing_ok=True)
    started = time.perf_counter()
    signals = ",".join(["acc", "conf", "conf-gt", *(f"{m}:window" for m in METHODS)])
    done = subprocess.run([str(Path(sys.executable).with_name("beluga")), "rank", "--zoo", str(zoo), "--n", "10",
                           "--bootstrap", "500", "--signals", signals], check=False,
                          env={**os.environ, "COLUMNS": "190"})
    print(f"three methods at full budgets on {args.pool} probe sentences × {len(MIXES)} models: "
          f"{time.perf_counter() - started:.1f} s")
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
