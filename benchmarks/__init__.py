"""Measurements of this repository, not of the installed package, and the configs they (and users) run.

``benchmarks/*.toml`` are the shipped benchmark configs (``beluga run benchmarks/quick.toml``). The scripts sit in
folders by what they measure (benchmarks/README.md lists them) and share ``benchmarks.harness``; run them as
modules from the repository root (``python -m benchmarks.findings.bench_quick``). No runtime module of
``beluga_core`` imports them.
"""
