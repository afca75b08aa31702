"""Plain fine-tuning: the base method, and the IID baseline's."""

from __future__ import annotations

from beluga_core.contracts.methods import Method


class Vanilla(Method):
    """Plain fine-tuning with AdamW."""

