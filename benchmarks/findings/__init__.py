"""What beluga's runs find, held against the papers they follow: the benchmark configs' figures (results in
benchmarks/findings/RESULTS.md)."""
