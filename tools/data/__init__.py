"""Builders of the package data beluga ships (``beluga_core/data/builtin``): each writes its files from a named
source, deterministically, and most can ``--check`` the shipped bytes. Run as ``python -m tools.data.build_…``."""
