"""The operator's view: figures over the stores, read-only through Arrow and computed with DuckDB."""
