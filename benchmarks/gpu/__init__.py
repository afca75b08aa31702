"""The GPU check kit: what turns a lent GPU machine into a full beluga check (benchmarks/gpu/README.md; results in
benchmarks/gpu/RESULTS.md)."""
