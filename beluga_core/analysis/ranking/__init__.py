"""Ranking models on an unseen group from a few labelled probe cases (``beluga rank``) and its built-in signals."""
