"""Do the tests catch the defects this project fixed before? Each defect is put back, one at a time, in the working
tree (its fixed text in today's code replaced by the defective one), the tests that should catch it run, and the
file is restored whatever happens (an exception, Ctrl-C, SIGTERM). A defect no test fails on is NOT CAUGHT.

Usage: python -m benchmarks.testing.reintroduce [--only NAME ...] [--out FILE] [--baseline] [--dry-run]

- ``--only NAME`` (repeatable): these defects alone (default: all; ``--dry-run`` lists the names);
- ``--out FILE``: the Markdown table written to FILE as well as printed;
- ``--baseline``: first run each defect's tests on the unchanged code (they must pass there, or the table proves
  nothing);
- ``--dry-run``: check that every fixed text is in place, exactly once, and print the plan; nothing runs.

Each run is ``python -m pytest -q -p no:cacheprovider -n 0 -x --timeout 600 -rfE NODE_IDS`` from the repository root
(without writing bytecode, so no compiled copy of a defective module outlives its run); the failing tests are read
off the FAILED and ERROR lines of pytest's short summary. Each result prints as it comes, then a Markdown table
(defect | fixing commit | test(s) that fail | seconds), which goes into benchmarks/testing/RESULTS.md, "## Test suite".

The script refuses to start while a tracked file under beluga_core/ has changes (a restore must never lose work),
and fails loudly, naming the defect, when a fixed text is not found exactly once (the code moved: update the
record below). Exit status 1 when a defect is not caught (or, with ``--baseline``, when its tests fail on the
unchanged code), 2 on a refusal, 130 when interrupted.
"""

from __future__ import annotations

import datetime
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from benchmarks.harness import REPO, header, script_parser

PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-x", "--timeout", "600", "-rfE"]
# A short-summary line: "FAILED tests/x.py::test_y[p] - AssertionError: …" (or "ERROR …"; a collection error has
# no "::"). pytest's own usage errors read "ERROR: …" and do not match.
SUMMARY_LINE = re.compile(r"^(FAILED|ERROR) (\S.*?)(?: - .*)?$")
# pytest's last line: "1 failed, 2 passed in 3.45s", "no tests ran in 0.01s".
FINAL_LINE = re.compile(r"^=*\s*(.*\b(?:passed|failed|error|errors|skipped|deselected|no tests ran)\b.*?)\s*=*$")


@dataclass(frozen=True)
class Defect:
    """One defect as it would read in today's code: ``fixed`` (in ``path`` exactly once) becomes ``defective``."""

    name: str
    commit: str    # the commit that fixed it (short sha)
    what: str      # the defect, in one line
    path: str      # relative to the repository root
    fixed: str
    defective: str
    tests: tuple[str, ...]   # pytest node ids that should fail with the defect back


DEFECTS: tuple[Defect, ...] = (
    Defect(
        name="span-answers-truth-value",
        commit="bedcd56",
        what="the writer asks a span model's object array of answers for its truth value (quick-read crashed)",
        path="beluga_core/store/writer.py",
        fixed="        answers = flat.answers if flat.answers is not None else ()\n",
        defective="        answers = flat.answers or []\n",
        tests=("tests/e2e/test_pipeline_tasks.py::test_reading_end_to_end",),
    ),
    Defect(
        name="lime-mask-on-model-device",
        commit="ec9ccb2",
        what="LIME hands captum the ids and feature mask on the model's device (crashed on CUDA)",
        path="beluga_core/attributions/estimators.py",
        fixed="        attr = lime.attribute(_cpu_ids(x), baselines=ctx.mask_id, feature_mask=mask,\n",
        defective="        ids = ctx.ids(x)\n"
                  "        attr = lime.attribute(ids, baselines=ctx.mask_id, feature_mask=mask.to(ids.device),\n",
        tests=("tests/unit/attributions/test_attributions.py::"
               "test_perturbation_samples_are_built_on_the_cpu_whatever_the_models_device[lime]",),
    ),
    Defect(
        name="changed-settings-mixed-in-store",
        commit="75f87a4",
        what="a run whose settings differ from the store's earlier run is not refused: two settings in one view",
        path="beluga_core/orchestration/settings_guard.py",
        fixed="    if cells:\n"
              "        raise BelugaError(_message(plan, store, cells, by_task))\n",
        defective="",
        tests=("tests/e2e/test_store_variants.py::"
               "test_a_changed_hyper_parameter_is_refused_naming_it_or_becomes_a_variant",),
    ),
    Defect(
        name="finished-pack-member-stays",
        commit="02a781e",
        what="a finished pack member is not taken out of the pack: it is merged and handed back again every step",
        path="beluga_core/training/packed_training.py",
        fixed="            if batches is None:\n"
              "                active.remove(m)\n"
              "                merged = pack.merged_state(m)\n",
        defective="            if batches is None:\n"
                  "                merged = pack.merged_state(m)\n",
        tests=("tests/e2e/test_packs.py::test_a_finished_member_is_frozen_bit_for_bit_while_the_others_train",),
    ),
    Defect(
        name="model-build-reseeds-cuda",
        commit="0dbf356",
        what="building a model calls torch.manual_seed, which re-seeds every CUDA generator too",
        path="beluga_core/training/models.py",
        fixed="            torch.default_generator.manual_seed(seed)\n",
        defective="            torch.manual_seed(seed)\n",
        tests=("tests/unit/training/test_model_config.py::test_building_a_model_leaves_every_generator_as_it_was",),
    ),
    Defect(
        name="resume-without-data-order",
        commit="50b5c19",
        what="a stage resumed from a checkpoint does not replay its data order: it trains on the first batches again",
        path="beluga_core/training/checkpoints.py",
        fixed="        for i in range(self.resume.step):   # the data order: the stage's seeded generator, replayed\n"
              "            if next(updates, None) is None:\n"
              "                raise CheckpointRejected(f\"its step {self.resume.step} is past the stage's data "
              "({i} updates)\")\n",
        defective="",
        tests=("tests/unit/training/test_checkpoints.py::"
               "test_a_resumed_stage_ends_bit_for_bit_where_an_uninterrupted_one_does[vanilla]",),
    ),
    Defect(
        name="suite-header-unknown-task",
        commit="75f87a4",
        what="a suite header naming a task no plugin provides is accepted",
        path="beluga_core/evaluation/suites.py",
        fixed="    task = suite.header.task\n"
              "    if task is not None and task not in TASKS:\n"
              "        raise BelugaError(unknown_name_message(\"task\", task, TASKS.names()) + \" (the header's task "
              "names the task \"\n"
              "                          \"plugin whose models the suite tests)\", source=suite.path, line=1, "
              "field=\"task\")\n",
        defective="",
        tests=("tests/e2e/test_store_variants.py::test_a_suite_header_naming_an_uninstalled_task_is_refused",),
    ),
    Defect(
        name="crossing-empty-rows-dropped",
        commit="2d2e2bd",
        what="from-table --crossing drops the rows with no value at a crossing column, as at a nested one",
        path="beluga_core/data/from_table.py",
        fixed="        if any(g not in group_map for g in nested):\n",
        defective="        if any(g not in group_map for g in groups):\n",
        tests=("tests/e2e/test_classification_run.py::"
               "test_from_table_keeps_the_cases_without_a_value_at_a_crossing_level",),
    ),
    Defect(
        name="views-mean-in-thread-order",
        commit="772837a",
        what="the views' mean adds in the order DuckDB's threads finish: a store's G scores differ from read to read",
        path="beluga_core/store/sql/migrations/0017_deterministic_aggregates.sql",
        fixed="CREATE OR REPLACE MACRO mean_of(x) AS list_aggregate(list_sort(list(x)), 'avg');\n",
        defective="CREATE OR REPLACE MACRO mean_of(x) AS avg(x);\n",
        tests=("tests/e2e/test_deterministic_views.py::test_every_view_reads_the_same_bits_every_time",),
    ),
)


class Refused(Exception):
    """The script will not go on: a dirty tree, or a defect whose fixed text moved."""


@dataclass
class PytestRun:
    failing: list[str]
    returncode: int
    summary: str      # pytest's last line ("1 failed in 12.3s")
    tail: str         # the end of its output, to show when nothing failed
    seconds: float


@dataclass
class Result:
    defect: Defect
    run: PytestRun
    baseline: PytestRun | None = None

    @property
    def caught(self) -> bool:
        return bool(self.run.failing)

    @property
    def baseline_fails(self) -> bool:
        return self.baseline is not None and (bool(self.baseline.failing) or self.baseline.returncode != 0)

    @property
    def ok(self) -> bool:
        return self.caught and not self.baseline_fails


def dirty_core() -> list[str]:
    """Tracked files under beluga_core/ with changes (staged or not), as ``git status --porcelain`` lines."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "beluga_core/"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def check_fixed(defect: Defect) -> bytes:
    """The file's bytes, once its fixed text is found there exactly once; else ``Refused``, naming the defect."""
    path = REPO / defect.path
    if not path.is_file():
        raise Refused(f"defect {defect.name} ({defect.commit}): {defect.path} does not exist: the code moved; "
                      "update its record in benchmarks/testing/reintroduce.py")
    original = path.read_bytes()
    count = original.decode("utf-8").count(defect.fixed)
    if count != 1:
        raise Refused(f"defect {defect.name} ({defect.commit}): its fixed text is in {defect.path} {count} times, "
                      f"not once: the code moved; update its record in benchmarks/testing/reintroduce.py. Fixed text:\n"
                      f"{defect.fixed}")
    return original


@contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while a file is being restored (they are delivered right after)."""
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def restore(path: Path, original: bytes) -> None:
    with signals_held():
        path.write_bytes(original)
        if path.read_bytes() != original:
            raise RuntimeError(f"{path} could not be restored: check it with `git diff -- {path}`")


def run_pytest(tests: Sequence[str]) -> PytestRun:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *PYTEST, *tests], cwd=REPO, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace", check=False)
    seconds = time.perf_counter() - start
    lines = proc.stdout.splitlines()
    failing: list[str] = []
    for line in lines:
        match = SUMMARY_LINE.match(line)
        if match and match.group(2) not in failing:
            failing.append(match.group(2))
    final = next((m.group(1) for line in reversed(lines) if (m := FINAL_LINE.match(line.strip()))), "")
    return PytestRun(failing, proc.returncode, final or f"pytest exit status {proc.returncode}",
                     "\n".join(lines[-30:]), seconds)


def reintroduce(defect: Defect) -> PytestRun:
    """Put ``defect`` back, run its tests, restore the file (always)."""
    path = REPO / defect.path
    original = check_fixed(defect)
    broken = original.decode("utf-8").replace(defect.fixed, defect.defective, 1).encode("utf-8")
    try:
        path.write_bytes(broken)
        return run_pytest(defect.tests)
    finally:
        restore(path, original)


def report_line(result: Result) -> str:
    run = result.run
    if result.caught:
        said = "caught: " + ", ".join(run.failing)
    else:
        said = "NOT CAUGHT"
        if run.returncode not in (0, 1):
            said += f" (pytest exit status {run.returncode}: no test failed; node ids moved?)"
    line = f"{result.defect.name} ({result.defect.commit}): {run.seconds:.1f} s — {said} [{run.summary}]"
    if result.baseline_fails:
        assert result.baseline is not None
        failing = ", ".join(result.baseline.failing) or "(no test)"
        line += f"\n  BASELINE FAILS on the unchanged code: {failing} [{result.baseline.summary}]"
    return line


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(results: Sequence[Result]) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"
    caught = sum(r.caught for r in results)
    lines = [f"Defects re-introduced on {head} ({datetime.date.today().isoformat()}, "
             f"`python -m benchmarks.testing.reintroduce`): {caught} of {len(results)} caught.", "",
             "| defect | fixing commit | test(s) that fail | seconds |", "|---|---|---|---:|"]
    for r in results:
        tests = "<br>".join(f"`{_cell(t)}`" for t in r.run.failing) if r.caught else "**NOT CAUGHT**"
        if r.baseline_fails:
            tests += " (fail on the unchanged code too)"
        lines.append(f"| {_cell(r.defect.name)}: {_cell(r.defect.what)} | {r.defect.commit} | {tests} | "
                     f"{r.run.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)   # unwinds through the finally that restores the file


def main(argv: Sequence[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--only", action="append", metavar="NAME", default=[],
                        help="re-introduce this defect only (repeatable)")
    parser.add_argument("--out", type=Path, help="write the Markdown table to this file too")
    parser.add_argument("--baseline", action="store_true",
                        help="first run each defect's tests on the unchanged code (they must pass)")
    parser.add_argument("--dry-run", action="store_true", help="check the fixed texts and print the plan only")
    args = parser.parse_args(argv)
    print(header(None))

    names = [d.name for d in DEFECTS]
    unknown = [n for n in args.only if n not in names]
    if unknown:
        parser.error(f"unknown defect(s) {unknown}; the defects: {', '.join(names)}")
    chosen = [d for d in DEFECTS if not args.only or d.name in args.only]

    try:
        for defect in chosen:   # every fixed text in place before anything runs
            check_fixed(defect)
        dirty = dirty_core()
        if dirty and not args.dry_run:
            raise Refused("tracked files under beluga_core/ have changes; commit or stash them first (the script "
                          "rewrites and restores files there):\n  " + "\n  ".join(dirty))
    except Refused as exc:
        print(f"reintroduce: {exc}", file=sys.stderr)
        return 2

    if args.dry_run:
        for d in chosen:
            print(f"{d.name} ({d.commit}): {d.what}\n  {d.path}: {len(d.fixed.splitlines())} line(s) → "
                  f"{len(d.defective.splitlines())}\n  tests: {' '.join(d.tests)}")
        print(f"{len(chosen)} defect(s); every fixed text found once"
              + (" (beluga_core/ has changes: a real run would refuse)" if dirty else ""))
        return 0

    signal.signal(signal.SIGTERM, _terminate)
    results: list[Result] = []
    try:
        for defect in chosen:
            print(f"→ {defect.name} ({defect.commit}): {defect.path}; {len(defect.tests)} test(s)", flush=True)
            baseline = run_pytest(defect.tests) if args.baseline else None
            result = Result(defect, reintroduce(defect), baseline)
            results.append(result)
            print("  " + report_line(result), flush=True)
            if not result.caught:
                print("  " + result.run.tail.replace("\n", "\n  "), flush=True)
    except Refused as exc:
        print(f"reintroduce: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nreintroduce: interrupted; the file in work was restored", file=sys.stderr)
        return 130

    table = markdown(results)
    print("\n" + table, end="")
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
        print(f"(table written to {args.out})")
    missed = [r.defect.name for r in results if not r.ok]
    if missed:
        print(f"not caught, or failing on the unchanged code: {', '.join(missed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
