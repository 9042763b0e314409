"""Recall: hybrid retrieval (semantic, keyword, entity, causal) fused by RRF and diversified by MMR."""

from __future__ import annotations

from nexus_memory.recall.arguments import RecallArgumentError
from nexus_memory.recall.engine import RecallResponse, recall
from nexus_memory.recall.results import RecallResult

__all__ = ["RecallArgumentError", "RecallResponse", "RecallResult", "recall"]
