"""The i.i.d. data layer: the shipped SST-2 copy, local directories, Hugging Face names and user errors."""

from __future__ import annotations

import os
import subprocess
import sys

from beluga_core.data.iid.classification_data import load_classification_iid
from beluga_core.data.iid.examples import IIDData


def sst2(seed: int = 42) -> IIDData:
    return load_classification_iid("builtin:sst2", text_fields=("sentence",), eval_seed=seed)


# --- builtin:sst2 -----------------------------------------------------------------------------------


# --- local directories ------------------------------------------------------------------------------


# --- user errors ------------------------------------------------------------------------------------


# --- Hugging Face -----------------------------------------------------------------------------------


def test_hf_name_offline_fails_fast_and_clearly() -> None:
    # A fresh process, because huggingface_hub reads HF_HUB_OFFLINE once, when it is imported.
    code = ("from beluga_core.core.errors import BelugaError\n"
            "from beluga_core.data.iid.classification_data import load_classification_iid\n"
            "try:\n"
            "    load_classification_iid('glue/sst2', text_fields=('sentence',))\n"
            "except BelugaError as e:\n"
            "    print('BelugaError:', e)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    # The timeout is the check that it fails fast: datasets' own retries would take ~25 s per attempt.
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=20,
                         check=False)
    assert out.stdout.startswith("BelugaError:"), out.stdout + out.stderr
    assert "unreachable" in out.stdout and "builtin:sst2" in out.stdout and "local directory" in out.stdout
