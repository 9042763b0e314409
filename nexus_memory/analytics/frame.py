"""DuckDB over the Arrow tables a section reads (its READS, by name), asked questions in plain SQL.

DuckDB queries registered Arrow tables in place (no copy, no SQLite extension needed). Times stay
epoch milliseconds (BIGINT) throughout: DuckDB's timezone-aware types would need pytz, and the
stores keep milliseconds anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa

from nexus_memory.analytics.model import Table
from nexus_memory.analytics.source import StoreReader

_INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT")


def _column_type(duck_type: Any) -> str:
    name = str(duck_type)
    if name in _INT_TYPES:
        return "int"
    if name in ("DOUBLE", "FLOAT") or name.startswith("DECIMAL"):
        return "float"
    return "string"


def _plain(value: Any) -> Any:
    """A JSON- and Dagster-friendly cell: floats rounded to 4 places, decimals as floats."""
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return round(value, 4)
    return value


@dataclass(frozen=True)
class Read:
    """One table a section reads from the stores: plain SQL, the Arrow type of each column, parameters."""

    sql: str
    schema: dict[str, pa.DataType]
    params: tuple[Any, ...] = ()


class Frame:
    """One DuckDB connection over the Arrow tables a section reads through a StoreReader."""

    def __init__(self, reader: StoreReader, reads: dict[str, Read]) -> None:
        self.con = duckdb.connect()
        for name, read in reads.items():
            self.con.register(name, reader.arrow(read.sql, read.schema, read.params))

    def table(self, sql: str, params: list[Any] | None = None) -> Table:
        cursor = self.con.execute(sql, params or [])
        columns = {d[0]: _column_type(d[1]) for d in cursor.description}
        rows = [dict(zip(columns, map(_plain, r), strict=True)) for r in cursor.fetchall()]
        return Table(columns, rows)

    def row(self, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
        """The one row of an aggregate query; NULL (a sum or average over nothing) as 0 or 0.0 by type.

        Numbers keep one type from run to run, so Dagster plots each as one series.
        """
        cursor = self.con.execute(sql, params or [])
        types = {d[0]: _column_type(d[1]) for d in cursor.description}
        values = cursor.fetchone() or (None,) * len(types)
        empty = {"int": 0, "float": 0.0, "string": None}
        return {n: _plain(v) if v is not None else empty[types[n]] for n, v in zip(types, values, strict=True)}

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Frame:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
