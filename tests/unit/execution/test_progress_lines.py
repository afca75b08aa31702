"""`beluga run` without a terminal (a CI log, nohup, `| tee`): plain progress lines at an interval, not only the bar
rich draws once at the end; on a terminal, the live bar alone (issue 55)."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any, cast

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from beluga_core.orchestration.progress import PROGRESS_LINE_EVERY_S, RichProgress, duration
from beluga_core.planning.jobs import Job

LINE = re.compile(r"^\d\d:\d\d:\d\d progress: (\d+)/(\d+) trainings, elapsed (\S+), ETA (.*)$")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _job(group: str) -> Job:
    fold = SimpleNamespace(heldout_group=group)
    return cast(Job, SimpleNamespace(id=group, config="iid-then-t", method="vanilla", scenario="functionality",
                                     fold=fold, is_iid_model=False, is_grid_point=False, point=None))


def _drive(console: Console, clock: Clock, costs: dict[str, float] | None = None) -> list[tuple[float, str]]:
    """Three trainings of 10 steps, a step every 2 s (one training: 20 s), on a phase's progress bar; returns
    (clock, new output) after every event."""
    seen: list[tuple[float, str]] = []
    out = cast(Any, console.file)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console) as bar:
        progress = RichProgress(bar, 3, clock=clock, costs=costs)
        for group in ("negation", "vocabulary", "taxonomy"):
            job = _job(group)
            progress.job_started(job)
            for step in range(1, 11):
                clock.now += 2.0
                progress.job_step(job, "train", step, 10)
                seen.append((clock.now, out.getvalue()))
            progress.job_step(job, "eval", 0, 1)
            progress.job_finished(job)
            seen.append((clock.now, out.getvalue()))
    return seen


def _lines(text: str) -> list[re.Match[str]]:
    return [m for m in map(LINE.match, text.splitlines()) if m]


def test_without_a_terminal_a_line_comes_every_interval_and_at_the_end() -> None:
    clock, file = Clock(), io.StringIO()
    console = Console(file=file, width=200)
    assert not console.is_terminal
    seen = _drive(console, clock)
    lines = _lines(file.getvalue())
    # 60 s of training (20 s a training): a line at 30 s and at 60 s, then the phase's last line.
    assert [(m[1], m[2], m[3]) for m in lines] == [("1", "3", "30s"), ("2", "3", "1m00s"), ("3", "3", "1m00s")]
    assert lines[0][4] == "1m00s; now: iid-then-t/vanilla/functionality: vocabulary [step 5/10]"
    assert lines[1][4] == "30s; now: iid-then-t/vanilla/functionality: taxonomy [step 10/10]"
    assert lines[2][4] == "done"
    # The first line comes when the interval has passed, long before the phase ends (and rich's bar with it).
    assert next(t for t, text in seen if _lines(text)) - 1000.0 == PROGRESS_LINE_EVERY_S


def test_the_eta_weighs_the_trainings_left_by_their_estimated_seconds() -> None:
    # Three trainings of 20 s each, estimated at 10, 20 and 30 s; a line at 30 s and 60 s. At 30 s one is done (an
    # estimated 10 s): the 50 estimated seconds left take 30/10 × 50 = 150 s at that pace; at 60 s two are (30):
    # 60/30 × 30 = 60 s. By count the lines would read 60 s and 30 s.
    clock, file = Clock(), io.StringIO()
    console = Console(file=file, width=200)
    _drive(console, clock, {"negation": 10.0, "vocabulary": 20.0, "taxonomy": 30.0})
    lines = _lines(file.getvalue())
    assert [(m[1], m[4].split(";")[0]) for m in lines] == [("1", "2m30s"), ("2", "1m00s"), ("3", "done")]


def test_a_terminal_keeps_the_live_bar_alone() -> None:
    clock, file = Clock(), io.StringIO()
    console = Console(file=file, width=200, force_terminal=True)
    _drive(console, clock)
    assert not _lines(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", file.getvalue()))


def test_durations() -> None:
    assert [duration(s) for s in (0, 42.4, 185, 7620)] == ["0s", "42s", "3m05s", "2h07m"]
