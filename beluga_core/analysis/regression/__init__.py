"""Regression between model versions: negative flips with confidence intervals and tests, centric selection,
ensembles and models imported from elsewhere (the store's regression views do the counting)."""
