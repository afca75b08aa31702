"""One label ≥ 90 % of the i.i.d. data while G's i.i.d. score is accuracy: `beluga suite info --config` and
`beluga run` (its plan, so the dry run too) warn, naming the label, its share and iid_metric = "macro_f1"
(issue 55). A user's own i.i.d. table (a folder of train / dev CSVs) against a suite made by `suite from-table`."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from beluga_core.cli.app import main
from beluga_core.config.load import load_config
from beluga_core.data.iid.classification_data import load_classification_iid
from beluga_core.data.iid.label_share import MAJORITY_SHARE, label_counts, majority_label_warning
from beluga_core.orchestration.coordinator import note_task_mismatch
from beluga_core.orchestration.teachers import plan_with_stores

LABELS = ("negative", "neutral", "positive")


def _iid_table(folder: Path, negative: int, neutral: int, positive: int) -> Path:
    """train.csv and dev.csv with these counts of each label (the same in both)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train", "dev"):
        with open(folder / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["sentence", "label"])
            for label, n in zip(LABELS, (negative, neutral, positive), strict=True):
                w.writerows([f"{name} {label} sentence {i}", label] for i in range(n))
    return folder


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("suite") / "my-suite.jsonl.gz"
    main(["suite", "from-table", "builtin:sst-phenomena.csv", "--text", "sentence", "--label", "label", "--groups",
          "length,phenomenon", "--id", "id", "--out", str(out)])
    return out


def _config(tmp_path: Path, suite: Path, iid: Path, metric: str | None = None) -> Path:
    path = tmp_path / "my-run.toml"
    path.write_text(f'''name = "my-run"
store = "my-run.duckdb"
configurations = ["iid", "iid-then-t"]
scenarios = ["standard", "seen", "phenomenon"]
[[tasks]]
name = "classification"
suite = "{suite}"
iid = "{iid}"
{f'iid_metric = "{metric}"' if metric else ""}
''', encoding="utf-8")
    return path


def _text(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


WARNING = re.compile(r"warning: label 'negative' is 94\.0% of the i\.i\.d\. data of task 'classification' .*"
                     r"G's i\.i\.d\. score is accuracy.*"
                     r"Set iid_metric = \"macro_f1\" in the task's \[\[tasks\]\] entry")


@pytest.mark.parametrize(("counts", "metric", "warned"), [
    ((94, 3, 3), None, True),             # 94 % one label, accuracy (the default): warned
    ((94, 3, 3), "accuracy", True),
    ((60, 20, 20), None, False),          # 60 %: not
    ((94, 3, 3), "macro_f1", False),      # the fix silences it
], ids=["94%", "94%-accuracy", "60%", "94%-macro_f1"])
def test_suite_info_and_the_run_warn(suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     counts: tuple[int, int, int], metric: str | None, warned: bool) -> None:
    iid = _iid_table(tmp_path / "iid", *counts)
    config = _config(tmp_path, suite, iid, metric)

    main(["suite", "info", str(suite), "--config", str(config)])
    info = _text(capsys)
    assert "i.i.d. data of task 'classification'" in info and f"D_val + D_test: negative {counts[0]} (" in info
    assert bool(WARNING.search(info)) is warned, info

    main(["run", str(config), "--dry-run"])
    assert bool(WARNING.search(_text(capsys))) is warned

    # The run itself: the plan `beluga run` builds (no dry run) carries it, and run_plan says it before training
    # (note_task_mismatch, before the run is recorded).
    plan = plan_with_stores(load_config(config), config.resolve())
    assert (plan.tasks[0].iid_note is not None) is warned
    out = io.StringIO()
    note_task_mismatch(plan, Console(file=out, width=400))
    assert bool(WARNING.search(" ".join(out.getvalue().split()))) is warned


def test_the_check_names_share_and_fix(tmp_path: Path) -> None:
    data = load_classification_iid(str(_iid_table(tmp_path / "iid", 94, 3, 3)), text_fields=("sentence",))
    labels = label_counts(data)
    assert labels is not None and labels.counts == [("negative", 94), ("neutral", 3), ("positive", 3)]
    warning = majority_label_warning(data, task="classification", metric="accuracy", metrics=("accuracy", "macro_f1"))
    assert warning is not None and "94.0%" in warning and "scores 32.3%" in warning   # (2·.94/1.94)/3
    assert majority_label_warning(data, task="x", metric="macro_f1", metrics=("accuracy", "macro_f1")) is None
    # A task without macro_f1 names the metric it has, or says it has none.
    assert 'iid_metric = "f1"' in (majority_label_warning(data, task="paraphrase", metric="accuracy",
                                                          metrics=("accuracy", "f1")) or "")
    assert "computes accuracy only" in (majority_label_warning(data, task="sentiment", metric="accuracy",
                                                               metrics=("accuracy",)) or "")
    # The threshold: 90 % on the nose warns, just under does not.
    at = load_classification_iid(str(_iid_table(tmp_path / "at", 90, 5, 5)), text_fields=("sentence",))
    under = load_classification_iid(str(_iid_table(tmp_path / "under", 89, 6, 5)), text_fields=("sentence",))
    assert MAJORITY_SHARE == 0.90
    assert majority_label_warning(at, task="t", metric="accuracy", metrics=("accuracy", "macro_f1"))
    assert not majority_label_warning(under, task="t", metric="accuracy", metrics=("accuracy", "macro_f1"))
