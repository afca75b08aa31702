"""Files beluga writes: the mode a plain write would give them, and sizes printed in the units they are counted in."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from beluga_core.core.io import atomic_save, atomic_write, human_size


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_written_files_get_the_mode_of_a_plain_write(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        plain = tmp_path / "plain.txt"
        plain.write_bytes(b"x")
        a = atomic_write(tmp_path / "a.jsonl", b"x")
        b = atomic_save(tmp_path / "b.bin", lambda p: p.write_bytes(b"x"))
    finally:
        os.umask(old)
    want = 0o666 & ~umask
    assert stat.S_IMODE(plain.stat().st_mode) == want
    assert stat.S_IMODE(a.stat().st_mode) == want and stat.S_IMODE(b.stat().st_mode) == want


@pytest.mark.parametrize(("n", "text"), [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
                                         (272_000_000, "259.4 MiB"), (3 * 2**30, "3.0 GiB"), (5 * 2**40, "5120.0 GiB")])
def test_sizes_are_printed_in_binary_units_named_as_such(n: int, text: str) -> None:
    assert human_size(n) == text
