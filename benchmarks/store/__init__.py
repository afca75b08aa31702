"""The result store's determinism and identities: views that read the same bits, the replicate key's cost, job ids
that follow training (results in benchmarks/store/RESULTS.md)."""
