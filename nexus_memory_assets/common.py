"""What the glue of every domain shares: the memory group, the SQLite write pool, markdown-table metadata."""

from __future__ import annotations

import dagster as dg

# Steps that write the SQLite stores share a pool (limit in dagster.yaml) so they queue, not lock.
SQLITE_POOL = "nexus_sqlite"
# The six layers' assets share one group, so the lineage shows them in one graph.
MEMORY_GROUP = "memory"


def md_table(header: list[str], rows: list[list[object]]) -> dg.MetadataValue:
    """A markdown table for materialisation or check metadata; a '|' in a cell is escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return dg.MetadataValue.md("\n".join(lines))
