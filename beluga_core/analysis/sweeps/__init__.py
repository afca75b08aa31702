"""Sweeps over a size-like setting: the curves of s_T, s_iid and G against it, with verdicts per point."""
