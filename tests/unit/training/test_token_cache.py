"""The on-disk token cache: same ids as tokenizing, re-used across encoders (processes), safe to merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from beluga_core.training import token_cache
from beluga_core.training.encode import Encoder
from beluga_core.training.models import load_tokenizer

TEXTS = ["a fine film", "not a good film at all", "the plot , sadly , is thin", "wow"]
PAIRS = [("how old are you?", "what is your age?"), ("is it raining?", "is it sunny?")]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("embedded:minilm")


def fresh(tokenizer, inputs) -> dict:
    enc = Encoder(tokenizer, 32)
    enc.encode_many(inputs)
    return {x: enc[x] for x in inputs}


def test_second_encoder_reads_what_the_first_wrote(tokenizer, tmp_path: Path) -> None:
    inputs = [*TEXTS, *PAIRS]
    first = Encoder(tokenizer, 32)
    assert token_cache.attach(first, tmp_path, "sentiment")
    first.encode_many(inputs)
    assert first._disk is not None and first._disk.written == len(inputs)
    second = Encoder(tokenizer, 32)
    token_cache.attach(second, tmp_path, "sentiment")
    second.encode_many(inputs)
    assert second._disk is not None and second._disk.hits == len(inputs) and second._disk.written == 0
    assert {x: second[x] for x in inputs} == fresh(tokenizer, inputs)
    # Another max_length is another key: nothing is shared.
    other = Encoder(tokenizer, 8)
    token_cache.attach(other, tmp_path, "sentiment")
    assert other._disk is not None and len(other._disk) == 0


def test_many_shards_merge_into_one_without_losing_entries(tokenizer, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_cache, "MERGE_ABOVE", 3)
    words = [f"word number {i}" for i in range(10)]
    enc = Encoder(tokenizer, 32)
    token_cache.attach(enc, tmp_path, "sentiment")
    for w in words:
        enc.encode_many([w])  # one shard each until the merge
    assert enc._disk is not None
    assert len(list(enc._disk.folder.glob("*.npz"))) <= 4
    again = Encoder(tokenizer, 32)
    token_cache.attach(again, tmp_path, "sentiment")
    again.encode_many(words)
    assert again._disk is not None and again._disk.hits == len(words)
    assert {w: again[w] for w in words} == fresh(tokenizer, words)


def test_shards_ship_to_another_root(tokenizer, tmp_path: Path) -> None:
    enc = Encoder(tokenizer, 32)
    token_cache.attach(enc, tmp_path / "a", "sentiment")
    enc.encode_many(TEXTS)
    shipped = token_cache.shard_files(tmp_path / "a")
    assert token_cache.install_shards(tmp_path / "b", shipped) == len(shipped) > 0
    other = Encoder(tokenizer, 32)
    token_cache.attach(other, tmp_path / "b", "sentiment")
    other.encode_many(TEXTS)
    assert other._disk is not None and other._disk.hits == len(TEXTS)


def test_opting_out(tokenizer, tmp_path: Path) -> None:
    class Custom(Encoder):
        disk_format = None

    assert not token_cache.attach(Custom(tokenizer, 32), tmp_path, "sentiment")
