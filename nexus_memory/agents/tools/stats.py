"""The agent tool that says how much is remembered: memory_stats."""

from __future__ import annotations

from typing import Any

from nexus_memory.agents.tools.common import CallContext
from nexus_memory.core.ids import day_or_none
from nexus_memory.core.tooling import Tool, object_schema


def _memory_stats(call: CallContext) -> dict[str, Any]:
    latest, ingested = call.conn.execute("SELECT max(as_of), max(ingested_at) FROM facts").fetchone()
    return {
        "counts": call.stores.counts(),
        "latest_fact_as_of": latest,
        "latest_fact_date": day_or_none(latest),
        "latest_fact_ingested_at": ingested,
    }


MEMORY_STATS = Tool(
    "memory_stats",
    "How much is remembered: counts per layer and the latest fact's time.",
    object_schema({}),
    _memory_stats,
)

TOOLS = (MEMORY_STATS,)
REFUSALS: tuple[type[Exception], ...] = ()
