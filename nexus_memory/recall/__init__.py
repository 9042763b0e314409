"""Recall: hybrid retrieval (semantic, keyword, entity, causal) fused by RRF and diversified by MMR."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nexus_memory.core.lazy import lazy_attributes

if TYPE_CHECKING:
    from nexus_memory.recall.arguments import RecallArgumentError
    from nexus_memory.recall.engine import RecallResponse, recall
    from nexus_memory.recall.results import RecallResult

__all__ = ["RecallArgumentError", "RecallResponse", "RecallResult", "recall"]

# Loaded on first use: the CLI reads recall's parameter table (recall.arguments) to build its parser,
# and that should not load the engine and its numpy/sqlite-vec imports for every command.
_HOMES = {
    "RecallArgumentError": "nexus_memory.recall.arguments",
    "RecallResponse": "nexus_memory.recall.engine",
    "recall": "nexus_memory.recall.engine",
    "RecallResult": "nexus_memory.recall.results",
}

__getattr__ = lazy_attributes(__name__, _HOMES)
