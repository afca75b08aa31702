"""The DuckDB result store: raw facts in tables, every aggregate in a view (docs/reference/store.md)."""
