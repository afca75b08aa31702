"""The reports a store renders: the result site's size and page-load time in a real browser, the HTML report's
screenshot (results in benchmarks/report/RESULTS.md)."""
