"""``beluga plugins show NAME`` prints a plugin's typed options (issue 58); tests/e2e/test_plugins_list.py shows a
broken plugin in ``beluga plugins list``."""

from __future__ import annotations

import pytest
from helpers import run_cli


def _cells(text: str) -> list[str]:
    """The words of a table's text, without its column rules."""
    return text.replace("│", " ").replace("┃", " ").split()


def test_plugins_show_lora_prints_each_option_with_type_default_bounds_and_help(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run_cli(capsys, "plugins", "show", "lora")
    assert code == 0, err
    rows = {words[0]: " ".join(words) for line in out.splitlines() if (words := _cells(line))}
    assert out.startswith("lora (method plugin, beluga_core.training.methods.lora:LoRA, from beluga")
    assert rows["r"].startswith("r integer 8 ≥ 1 The rank of the update B A")
    assert rows["dropout"].startswith("dropout number 0.1 ≥ 0, < 1 Dropout on the adapters' input")
    assert rows["target_modules"].startswith('target_modules list of string | string ["query", "value"]')
    assert rows["learning_rate"].startswith("learning_rate number 0.0005 > 0")
    assert "also takes the training keys" in out
    code, out, _ = run_cli(capsys, "plugins", "show", "lp-ft")
    assert code == 0 and "lp_epochs" in out and "training keys" not in out   # its stages take lp's and vanilla's


def test_plugins_show_an_unknown_name_exits_2_naming_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plugins", "show", "lorra")
    assert code == 2 and "no plugin named 'lorra' is installed" in err and "method" in err
