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
    assert "[method.lora] also takes the training keys" in " ".join(out.split())
    code, out, _ = run_cli(capsys, "plugins", "show", "lp-ft")
    assert code == 0 and "lp_epochs" in out and "training keys" not in out   # its stages take lp's and vanilla's


def test_plugins_show_an_unknown_name_exits_2_naming_the_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plugins", "show", "lorra")
    assert code == 2 and "no plugin named 'lorra' is installed" in err and "method" in err


@pytest.mark.parametrize(("name", "row", "where"), [
    ("ray", "gpus_per_fold number | null not set ≥ 0", "set them in [executor.options] (checked when beluga run"),
    ("local", "max_retries integer 2 ≥ 0", "set them in [executor.options]"),
    ("window", "half_width integer 2 ≥ 0", "set them in a zoo file's [signal_options.window], or with beluga rank "
                                          "--option window.KEY=VALUE"),
    ("hotflip", "beam integer 10 ≥ 1, ≤ 100", "set them with beluga suite generate hotflip --option hotflip.KEY"),
])
def test_plugins_show_prints_the_options_of_every_kind_and_where_they_are_set(
        name: str, row: str, where: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run_cli(capsys, "plugins", "show", name)
    assert code == 0, err
    rows = {words[0]: " ".join(words) for line in out.splitlines() if (words := _cells(line))}
    assert rows[row.split()[0]].startswith(row), rows
    assert where in " ".join(out.split())


def test_plugins_show_takes_a_module_class_reference_as_a_config_may_name_one(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run_cli(capsys, "plugins", "show", "beluga_core.generators.attacks.adversarial:HotFlip")
    assert code == 0, err
    assert "(generator plugin, a module:Class reference, not installed): ok" in out and "samples" in out
    code, _, err = run_cli(capsys, "plugins", "show", "no_such_module:Thing")
    assert code == 2 and "no plugin named 'no_such_module:Thing' is installed" in err
