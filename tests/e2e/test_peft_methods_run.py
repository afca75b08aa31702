"""The parameter-efficient methods (lora, ia3 through peft; bitfit): what trains (counted by hand on MiniLM), that
the pretrained body stays frozen bit for bit while the adapters and the head move, that the merged model predicts
as the adapted one, that a checkpoint carries the adapters, and a real lora run through the worker whose kept
weights are a plain model's and export as one.

Checkpoints resumed mid-stage are tested with every other method's in tests/unit/training/test_checkpoints.py.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
from helpers import DATA, config_with, query, run_benchmark, run_cli
from rich.console import Console
from toy_model import TOY_DIR

from beluga_core.cli.plan_view import print_plan
from beluga_core.config.load import load_config
from beluga_core.orchestration.plan_summary import summarize_plan
from beluga_core.orchestration.teachers import plan_with_stores
from beluga_core.training.models import load_sequence_classifier

pytestmark = pytest.mark.usefixtures("one_thread")


RUN = """
[method.lora]
r = 4
"""


@pytest.mark.slow
def test_a_real_run_keeps_and_exports_merged_plain_weights(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A lora job through the real model, data, worker, store and CLI (ia3's merge into the same weights is
    checked on the toy above; one job here keeps the test short)."""
    config = config_with(DATA / "tiny-methods.toml", tmp_path, {
        'methods = ["vanilla", "l2", "dropout", "lp", "lp-ft", "irm", "group-dro", "fish"]':
            'methods = ["lora"]',
        'store = "tiny-methods.duckdb"\n': "",
        "[executor]\n": '[store]\npath = "peft.duckdb"\nkeep_weights = "all"\n\n[executor]\n'}, append=RUN)
    store = tmp_path / "peft.duckdb"
    plan = plan_with_stores(load_config(config).with_store_path(str(store)), config)
    dry = io.StringIO()
    print_plan(summarize_plan(plan), Console(file=dry, width=200))   # what `beluga run --dry-run` prints
    # 2 layers · 2 modules · (4·64 + 64·4) + the head's 130 = 2,178 of the toy BERT's 2,057,666 parameters.
    assert 'method lora: r = 4, alpha = 8, dropout = 0.1, target_modules = ["query", "value"], learning_rate = ' \
           f"0.0005; trains 2,178 of {TOY_DIR}'s 2.1M parameters (0.11 %)" in " ".join(dry.getvalue().split())
    run_benchmark(config, store, plan)
    rows = {m: (json.loads(h), mid) for m, h, mid in query(store, "SELECT method, hparams, model_id FROM models "
                                                                  "WHERE status = 'done'")}
    (hparams, model_id), = rows.values()
    assert set(rows) == {"lora"} and hparams["method"]["r"] == 4 and hparams["learning_rate"] == 5e-4
    pristine = load_sequence_classifier(str(TOY_DIR), 2).state_dict()
    kept = torch.load(Path(f"{store}.cache") / f"{model_id}.pt", weights_only=True)
    assert kept.keys() == pristine.keys()   # a plain model's weights, the adapters merged in
    # What changed: the head, and the query and value weights the update merged into; not their biases, not the
    # rest of the body.
    changed = {k for k in pristine if not torch.equal(kept[k], pristine[k])}
    assert changed == {k for k in pristine if k.startswith("classifier.")
                       or (k.startswith("bert.encoder.") and k.endswith(("query.weight", "value.weight")))}
    code, _, err = run_cli(capsys, "export", store, "iid-plus-t/lora", "--out", tmp_path / "lora")
    assert code == 0, err
    from transformers import AutoModelForSequenceClassification

    exported = AutoModelForSequenceClassification.from_pretrained(tmp_path / "lora").state_dict()
    assert all(torch.equal(exported[k], kept[k]) for k in kept)
