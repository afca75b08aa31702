"""Hyper-parameter search (docs/method.md, "Hyper-parameter selection"): choosing among the stored grid points
by a criterion."""
