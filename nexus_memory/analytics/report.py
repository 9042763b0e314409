"""The analytics sections by name, computed for a data directory, as JSON or as text for a terminal.

The Dagster `analytics` assets and `nexus-memory report` both call `compute_section`, so the figures
an operator sees in the UI and in the terminal are the same numbers from the same code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from nexus_memory.analytics.activity import ingest_activity
from nexus_memory.analytics.consolidation import consolidation_coverage
from nexus_memory.analytics.entities import entity_graph
from nexus_memory.analytics.model import Section, Table
from nexus_memory.analytics.source import StoreReader
from nexus_memory.analytics.vectors import embedding_coverage
from nexus_memory.analytics.writer import writer_outcomes
from nexus_memory.core.config import Settings

SectionFn = Callable[[StoreReader, Settings], Section]

# One entry per analytics asset, in the order a person reads them: layer by layer.
SECTIONS: dict[str, SectionFn] = {
    "ingest_activity": ingest_activity,
    "writer_outcomes": writer_outcomes,
    "entity_graph": entity_graph,
    "consolidation_coverage": consolidation_coverage,
    "embedding_coverage": embedding_coverage,
}


def compute_section(name: str, settings: Settings) -> Section:
    """One section's figures over the stores of `settings.data_dir`, read-only."""
    with StoreReader(settings.data_dir) as reader:
        return SECTIONS[name](reader, settings)


def build_report(settings: Settings, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Every section (or the named ones) as one JSON-ready dict, with the seconds each took."""
    sections: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    for name in names or SECTIONS:
        started = time.perf_counter()
        sections[name] = compute_section(name, settings).as_dict()
        seconds[name] = round(time.perf_counter() - started, 3)
    return {"data_dir": str(settings.data_dir), "sections": sections, "seconds": seconds}


def render_text(report: dict[str, Any], max_rows: int = 15) -> str:
    """The report for a terminal: per section its numbers, then each table (first `max_rows` rows)."""
    lines = [f"Nexus Memory report for {report['data_dir']}"]
    for name, section in report["sections"].items():
        lines += ["", f"== {section['title']} ({name}) =="]
        width = max((len(k) for k in section["numbers"]), default=0)
        lines += [f"  {k:<{width}}  {v}" for k, v in section["numbers"].items()]
        for table_name, table in section["tables"].items():
            lines += ["", f"  {table_name}:"]
            lines += ["    " + line for line in _text_table(Table(table["columns"], table["rows"]), max_rows)]
        for chart_name, chart in section["charts"].items():
            lines.append(f"  {chart_name}: a chart of {len(chart['rows'])} points (--json for the data)")
        lines += [f"  note: {note}" for note in section["notes"]]
    return "\n".join(lines)


def _text_table(table: Table, max_rows: int) -> list[str]:
    if not table.rows:
        return ["(none)"]
    shown = table.rows[:max_rows]
    cells = [[_cell(row.get(c)) for c in table.columns] for row in shown]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(table.columns)]
    right = [table.columns[c] in ("int", "float") for c in table.columns]

    def fmt(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True))

    out = [fmt(list(table.columns)), fmt(["-" * w for w in widths])] + [fmt(r) for r in cells]
    if len(table.rows) > max_rows:
        out.append(f"... {len(table.rows) - max_rows} more rows (--json for all)")
    return [line.rstrip() for line in out]


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
