"""Speed: training and evaluation throughput, packs, tokenization, loading a suite (results in
benchmarks/perf/RESULTS.md)."""
