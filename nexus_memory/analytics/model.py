"""What an analytics figure is: numbers, typed tables and chart data, grouped in one section per asset."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Column types, named as Dagster's TableSchema names them: 'string', 'int', 'float'.
Columns = dict[str, str]


@dataclass
class Table:
    """Rows of one figure with typed columns (how Dagster's TableSchema and the terminal show them)."""

    columns: Columns
    rows: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.rows}


@dataclass
class Chart:
    """A line chart's data: one line per `series` value, `y` against `x` (a 'YYYY-MM-DD' day)."""

    title: str
    x: str
    y: str
    series: str
    table: Table

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "x": self.x, "y": self.y, "series": self.series, **self.table.as_dict()}


@dataclass
class Section:
    """One analytics asset's figures.

    `numbers` are the figures Dagster plots across materialisations; `tables` are bounded (top N,
    last N days) so they read in the UI; `charts` hold the full data behind each chart (chart.py
    draws them as images); `notes` say what a figure cannot show.
    """

    name: str
    title: str
    numbers: dict[str, int | float] = field(default_factory=dict)
    tables: dict[str, Table] = field(default_factory=dict)
    charts: dict[str, Chart] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "numbers": self.numbers,
            "tables": {name: t.as_dict() for name, t in self.tables.items()},
            "charts": {name: c.as_dict() for name, c in self.charts.items()},
            "notes": self.notes,
        }


def ratio(part: float, whole: float) -> float:
    """part / whole rounded to 4 places, 0.0 when there is no whole (an empty store)."""
    return round(part / whole, 4) if whole else 0.0
