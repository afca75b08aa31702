"""Hyper-parameter search (METHOD.md §5): grid points, validation scores, selection criteria."""
