"""Reading the stores for analytics: read-only ADBC connections that hand back Arrow tables.

One SQLite connection (Apache Arrow's ADBC SQLite driver) opens memory.db with `mode=ro` and attaches
events.db, identity.db and embeddings.db the same way, so nothing here can write a store. Queries are
plain projections and filters; the figures are computed over the Arrow tables by DuckDB (see frame.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import adbc_driver_sqlite.dbapi as adbc_sqlite
import pyarrow as pa

from nexus_memory.core import db

# The driver infers each column's Arrow type from the first batch of rows it reads (declared SQLite types
# are ignored), so a column that is NULL in a whole first batch and text later fails. One batch for the
# whole result lets it see every value; `arrow` then casts to the types the caller names.
_BATCH_ROWS = 1 << 30


class StoresMissing(RuntimeError):
    """A store the analytics read does not exist, or has an older schema than this code reads."""


def store_uri(path: Path) -> str:
    """A read-only SQLite URI for a file (characters such as '?' and '#' in the path percent-encoded)."""
    return f"file:{quote(str(path.resolve()))}?mode=ro"


class StoreReader:
    """Read-only access to the four stores of one data directory: Arrow tables and DB-API cursors."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        paths = {name: self.data_dir / f"{name}.db" for name in db.STORES}
        missing = [str(p) for p in paths.values() if not p.is_file()]
        if missing:
            raise StoresMissing(
                f"no store at {', '.join(missing)}: ingest something first (nexus-memory ingest FILE), "
                "or point NEXUS_DATA_DIR at an existing data directory"
            )
        # Autocommit off: every query of this reader runs in one read transaction, so a section's figures
        # come from one snapshot of the stores (WAL) even while writers commit.
        self.conn = adbc_sqlite.connect(store_uri(paths["memory"]), autocommit=False)
        try:
            for name in ("events", "identity", "embeddings"):
                self._run(f"ATTACH DATABASE '{store_uri(paths[name])}' AS {name}")
            self._check_versions()
        except BaseException:
            self.conn.close()
            raise

    def _run(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor = self.conn.cursor()
        cursor.adbc_statement.set_options(**{"adbc.sqlite.query.batch_rows": str(_BATCH_ROWS)})
        cursor.execute(sql, parameters=list(params) if params else None)
        return cursor

    def _check_versions(self) -> None:
        # Read-only, so an old store cannot be upgraded here; any writing command upgrades it.
        for name in db.STORES:
            schema = "main" if name == "memory" else name
            version = self._run(f"PRAGMA {schema}.user_version").fetchone()[0]
            expected = len(db.MIGRATIONS[name])
            if version != expected:
                raise StoresMissing(
                    f"{self.data_dir / (name + '.db')} has schema version {version}, these analytics read "
                    f"version {expected}: run `nexus-memory stats` once to upgrade it"
                )

    def arrow(self, sql: str, schema: dict[str, pa.DataType], params: Sequence[Any] = ()) -> pa.Table:
        """The result of `sql` as an Arrow table with these column types (empty results keep them too)."""
        cursor = self._run(sql, params)
        try:
            table = cursor.fetch_arrow_table()
        finally:
            cursor.close()
        if table.column_names != list(schema):
            raise ValueError(f"query returned columns {table.column_names}, expected {list(schema)}")
        return table.cast(pa.schema(list(schema.items())))

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """A DB-API cursor over `sql`, for core functions that take a connection (they only read here)."""
        return self._run(sql, params)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
