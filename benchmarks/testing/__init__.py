"""The project's own test suite: where its time goes, whether it catches the defects fixed before, the margins its
tests rest on (results in benchmarks/testing/RESULTS.md)."""
