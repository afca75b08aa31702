"""Whether the statistics beluga reports keep their promises: replicate intervals' coverage, `beluga power`'s
recommendations, the significance tests' cost (results in benchmarks/intervals/RESULTS.md)."""
