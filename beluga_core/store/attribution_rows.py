"""Attribution rows (docs/reference/store.md, "Attributions"): tokenizations once per (tokenizer, input), scores per
model, input and estimator."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa

from beluga_core.attributions.compute import AttributedInput
from beluga_core.store.rows import canonical_json


def write_attributions(con: duckdb.DuckDBPyConnection, model_id: str, rows: Sequence[AttributedInput]) -> None:
    """A model's attribution rows, and the tokenizations the store does not hold yet."""
    seen: dict[tuple[str, str], AttributedInput] = {}
    for r in rows:
        seen.setdefault((r.tokenizer, r.input_digest), r)
    inputs = pa.table({
        "tokenizer": [k[0] for k in seen], "input_digest": [k[1] for k in seen],
        "input": [canonical_json(r.item.text if isinstance(r.item.text, str) else list(r.item.text))
                  for r in seen.values()],
        "tokens": [canonical_json(list(r.x.tokens)) for r in seen.values()],
        "offsets": [canonical_json([list(o) for o in r.x.offsets]) for r in seen.values()],
        "segment_ids": [list(r.x.segment_ids) for r in seen.values()],
        "word_ids": [list(r.x.word_ids) for r in seen.values()]})
    con.register("_beluga_attr_inputs", inputs)
    try:
        con.execute("""INSERT INTO attribution_inputs
                       SELECT tokenizer, input_digest, input::JSON, tokens::JSON, offsets::JSON, segment_ids, word_ids
                       FROM _beluga_attr_inputs n
                       WHERE NOT EXISTS (SELECT 1 FROM attribution_inputs i WHERE i.tokenizer = n.tokenizer
                                         AND i.input_digest = n.input_digest)""")
    finally:
        con.unregister("_beluga_attr_inputs")
    table = pa.table({
        "suite": [r.item.suite for r in rows], "case_id": [r.item.case_id for r in rows],
        "input_idx": pa.array([r.item.input_idx for r in rows], pa.int32()), "method": [r.method for r in rows],
        "options": [canonical_json(r.options) for r in rows], "target": [r.target for r in rows],
        "predicted": [r.predicted for r in rows], "tokenizer": [r.tokenizer for r in rows],
        "input_digest": [r.input_digest for r in rows],
        "scores": pa.array([np.asarray(r.scores, dtype=np.float32) for r in rows], pa.list_(pa.float32()))})
    con.register("_beluga_attrs", table)
    try:
        con.execute("""INSERT INTO attributions SELECT ?, suite, case_id, input_idx, method, options::JSON, target,
                       predicted, tokenizer, input_digest, scores FROM _beluga_attrs""", [model_id])
    finally:
        con.unregister("_beluga_attrs")
