"""Fault drills: beluga's coordinator, workers and folds killed at random moments, its store held open; the run must
finish with the store it would have had (results in benchmarks/drills/RESULTS.md). The drills' configs sit here too
(``drill.toml``, ``fold.toml``); ``hooks/`` is put on a drilled process's PYTHONPATH, not imported."""
