"""The latency benchmark end to end on a small store: every figure the issue asks for is in its JSON."""

from __future__ import annotations

from pathlib import Path

from nexus_memory.bench.recall import run


def test_bench_recall_reports_every_budget_and_baseline(tmp_path: Path) -> None:
    result = run(3000, queries=5, data_dir=tmp_path / "bench", sentences=60)
    assert result["facts"] == 3000
    for budget in ("low", "mid", "high", "get_context", "mid_busy_name"):
        figures = result["recall"][budget]
        assert 0 < figures["p50_ms"] <= figures["p95_ms"], budget
    for baseline in ("exact_numpy", "exact_sqlite_vec", "query_embedding", "query_embedding_torch", "search_only"):
        assert result[baseline]["p50_ms"] > 0, baseline
    # The index is approximate: its recall against exact search is reported, and high on clustered vectors.
    assert 0.8 <= result["recall_at_20"] <= 1.0
    # The Zipf head of the synthetic links, busy, so these queries take the two-embedding path.
    assert result["recall"]["mid_busy_name"]["person"] == "Alice"
    assert result["recall"]["mid_busy_name"]["busy"] is True
    assert set(result["filtered"]) == {"platform", "time_90d", "thread"}
