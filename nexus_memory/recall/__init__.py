"""Recall: hybrid retrieval (semantic, keyword, entity, causal) fused by RRF and diversified by MMR."""

from __future__ import annotations

from nexus_memory.recall.engine import RecallResponse, RecallResult, recall

__all__ = ["RecallResponse", "RecallResult", "recall"]
