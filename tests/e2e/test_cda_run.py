"""DiagnoseRE's counterfactual data augmentation over D_train (``cda``), per-case provenance of generated cases
(``generated_against``) and ``beluga run``'s adaptive-or-transfer line, the T_train pin of training data, and
``beluga explain`` on a relation model reading whole entity markers."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_cli

# ------------------------------------------------------------------------------------------- a real model

def test_explain_on_a_relation_model_shows_whole_markers(relation_store: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import query

    from beluga_core.stored_models.explain import explain_store

    case_id, text = query(relation_store, """SELECT c.case_id, s.spec->'inputs'->>0 FROM outcomes c
                                              JOIN case_specs s USING (suite, case_id)
                                              JOIN models m USING (model_id)
                                              WHERE m.config = 'iid' ORDER BY c.case_id LIMIT 1""")[0]
    assert "[E1]" in text and "[/E2]" in text
    (explained,) = explain_store(relation_store, ["iid/vanilla"], case_ids=[case_id], group=None,
                                 methods=["occlusion"], options={}, max_inputs=1)
    (x,) = explained.inputs
    specials = [w for w, _, special in x.words if special]
    # The four markers, whole and special (never attributed as text), between [CLS] and [SEP].
    assert specials == ["[CLS]", *[w for w in text.split() if w in ("[E1]", "[/E1]", "[E2]", "[/E2]")], "[SEP]"]
    assert sorted(specials[1:-1]) == sorted(["[E1]", "[/E1]", "[E2]", "[/E2]"])
    shown = [w for w, _, special in x.words if not special]
    # The other words are the input's own text, in order (the tokenizer splits "'s" and punctuation off; a long
    # input is truncated), sliced from the input, not the encoder's rewriting of it.
    words = "".join(w for w in text.split() if w not in ("[E1]", "[/E1]", "[E2]", "[/E2]"))
    assert len(shown) >= 3 and words.startswith("".join(shown))
    assert not any(w in ("e", "##1", "/", "[", "]") for w in shown)
    code, out, err = run_cli(capsys, "explain", relation_store, "--case", case_id, "--method", "occlusion")
    assert code == 0, out + err
    assert "[E1]" in out and "[/E2]" in out and "unused" not in out
