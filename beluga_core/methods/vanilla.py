"""Plain fine-tuning: the base method, and the IID baseline's."""

from __future__ import annotations

from beluga_core.methods.base import Method


class Vanilla(Method):
    """Plain fine-tuning with AdamW."""

    name = "vanilla"
