"""A pack's wall time, and each member's share of it (``training.packed_training`` keeps the clock while it trains a
pack; a member's share is what its ``train_seconds`` records)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol


class Timed(Protocol):
    """A pack's member as the clock sees it: the seconds given to it so far."""

    seconds: float


class PackClock:
    """The pack's wall time, and each member's share of it (what the member's ``train_seconds`` records).

    The pack's time is the time ``train_pack`` runs: its set-up, its steps and merging its members, never the time
    its caller spends between two members (evaluating and committing the one that finished). A step's time goes
    to the members in it in proportion to the tokens each put through the base's forward passes (rows × padded
    width): a member of many long rows costs the pass more. The set-up is shared equally (each member's adapters,
    head and optimizer are built alike), and a member's merge is its own. The shares sum to the pack's time.
    """

    def __init__(self, n_members: int) -> None:
        self.seconds = 0.0      # the pack's time so far
        self._pending = 0.0     # run since the last ``take``
        self._mark: float | None = time.perf_counter()
        self.n_members = n_members

    def pause(self) -> None:
        """The caller has the member that finished: time stops counting for the pack."""
        if self._mark is not None:
            self._pending += time.perf_counter() - self._mark
            self._mark = None

    def resume(self) -> None:
        self._mark = time.perf_counter()

    def take(self) -> float:
        """The pack's seconds since the last ``take`` (added to the pack's time)."""
        self.pause()
        self.resume()
        taken, self._pending = self._pending, 0.0
        self.seconds += taken
        return taken

    def share(self, members: Sequence[Timed], tokens: dict[int, int], seconds: float) -> None:
        """Give ``seconds`` to the members whose tokens ``tokens`` counts, in proportion; equally where none."""
        total = sum(tokens.values())
        for m, member in enumerate(members):
            if tokens:
                member.seconds += seconds * tokens.get(m, 0) / total if total else seconds / len(tokens)
            else:
                member.seconds += seconds / len(members)
