"""A pack's time and its members' shares (``training.pack_clock.PackClock``): known answers on a fake clock."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from beluga_core.training import pack_clock, packed_training


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeTime, pack_clock.PackClock, list[Any]]:
    fake = FakeTime()
    monkeypatch.setattr(pack_clock, "time", fake)
    members = [SimpleNamespace(seconds=0.0) for _ in range(3)]
    return fake, pack_clock.PackClock(3), members


def test_the_set_up_is_shared_equally_and_a_step_by_tokens(
        clock: tuple[FakeTime, pack_clock.PackClock, list[Any]]) -> None:
    fake, c, members = clock
    fake.now += 6.0                                    # set-up: 6 s, 2 s each
    c.share(members, {}, c.take())
    fake.now += 10.0                                   # a step: member 0 put 300 tokens through, 1 200, 2 none
    c.share(members, {0: 300, 1: 200}, c.take())
    assert [m.seconds for m in members] == pytest.approx([2 + 6, 2 + 4, 2])
    assert c.seconds == pytest.approx(16.0) == pytest.approx(sum(m.seconds for m in members))


def test_time_while_the_caller_holds_a_finished_member_is_not_the_packs(
        clock: tuple[FakeTime, pack_clock.PackClock, list[Any]]) -> None:
    fake, c, members = clock
    fake.now += 4.0
    members[2].seconds += c.take()                     # its merge: its own
    c.pause()
    fake.now += 50.0                                   # the caller evaluates and commits it
    c.resume()
    fake.now += 3.0
    c.share(members, {0: 1, 1: 2}, c.take())
    assert [m.seconds for m in members] == pytest.approx([1.0, 2.0, 4.0])
    assert c.seconds == pytest.approx(7.0)


def test_a_member_of_the_finished_pack_is_given_its_stats_share(clock: tuple[FakeTime, pack_clock.PackClock, list[Any]]
                                                                ) -> None:
    import torch

    _, _, _ = clock
    member = SimpleNamespace(steps=4, examples=32, total=torch.tensor(2.0), seconds=1.25)
    stats = packed_training._stats(member)   # type: ignore[arg-type]
    assert (stats.steps, stats.examples, stats.mean_loss, stats.seconds) == (4, 32, 0.5, 1.25)
