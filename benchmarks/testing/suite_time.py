"""Where the test suite's time goes: per module and per test, from a pytest JUnit XML report
(``pytest --junitxml=FILE``). pytest charges a fixture's set-up to the first test that uses it, so a module's
total includes the stores it trains (pytest's ``--durations=0`` splits set-up from call, beside the report).

Usage: python -m benchmarks.testing.suite_time REPORT.xml[.gz] [--top 30] [--sum PREFIX ...]

The committed reports are gzipped: the GPU kit carries the working tree in every call (64 MiB in all).
"""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from benchmarks.harness import header, script_parser


def main() -> None:
    parser = script_parser(__doc__)
    parser.add_argument("report", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sum", action="append", default=[], metavar="PREFIX",
                        help="also print the total of the tests whose id (tests/…py::name) starts with PREFIX "
                             "(repeatable; e.g. the tests that keep MiniLM, docs/project/development.md)")
    args = parser.parse_args()
    with (gzip.open if args.report.suffix == ".gz" else open)(args.report, "rb") as f:
        root = ET.parse(f).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    modules: dict[str, float] = defaultdict(float)
    tiers: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    tests: list[tuple[float, str]] = []
    summed: dict[str, float] = {}
    wall = sum(float(s.get("time", 0)) for s in suites)
    for case in root.iter("testcase"):
        seconds = float(case.get("time", 0))
        parts = case.get("classname", "").split(".")
        # tests[.TIER[.LAYER]].test_module[.TestClass]: the module ends at its test_ part.
        end = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
        module = ".".join(parts[:end + 1])
        modules[module] += seconds
        tier = parts[1] if end >= 2 else "(one folder)"
        tiers[tier] += seconds
        counts[tier] += 1
        status = "skipped" if case.find("skipped") is not None else (
            "failed" if case.find("failure") is not None or case.find("error") is not None else "passed")
        tests.append((seconds, f"{case.get('classname')}::{case.get('name')} [{status}]"))
        node = "/".join(parts[:end + 1]) + ".py::" + "::".join([*parts[end + 1:], case.get("name", "")])
        for prefix in args.sum:
            if node.startswith(prefix):
                summed[prefix] = summed.get(prefix, 0.0) + seconds
    print(header(None))
    print(f"report: {args.report}; {len(tests)} tests; sum of test times {sum(t for t, _ in tests):.0f} s; "
          f"suite wall time (pytest's own) {wall:.0f} s")
    print("\nby tier:")
    for tier, seconds in sorted(tiers.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:8.1f} s  {counts[tier]:5d} tests  {tier}")
    print("\nby module (set-up of module and session fixtures included where first used):")
    for module, seconds in sorted(modules.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:8.1f} s  {module}")
    if args.sum:
        print("\nsums (set-up charged to the first test of a fixture, as above):")
        for prefix in args.sum:
            print(f"  {summed.get(prefix, 0.0):8.1f} s  {prefix}")
        print(f"  {sum(summed.values()):8.1f} s  in all")
    print(f"\nslowest {args.top} tests:")
    for seconds, name in sorted(tests, reverse=True)[:args.top]:
        print(f"  {seconds:8.1f} s  {name}")


if __name__ == "__main__":
    main()
