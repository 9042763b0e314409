"""`bench backfill` end to end on a small history: the figures it prints are there and add up."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from nexus_memory.bench.backfill import run
from nexus_memory.bench.history import PLATFORMS, HistoryGenerator
from nexus_memory.cli import main
from nexus_memory.embeddings.model import DEFAULT_MODEL, vector_identity
from nexus_memory_assets.bench import timed_pipeline


def test_history_is_deterministic_varied_and_exactly_n_events() -> None:
    first = list(HistoryGenerator(3_000, seed=3).events())
    assert first == list(HistoryGenerator(3_000, seed=3).events())
    assert first != list(HistoryGenerator(3_000, seed=4).events())
    assert len(first) == 3_000
    assert set(Counter(e["platform"] for e in first)) == set(PLATFORMS)
    times = [e["as_of"] for e in first if e["platform"] == "imessage"]
    assert times == sorted(times)  # a platform's events come in time order
    # People under several handles: the same display name from more than one sender id.
    handles_by_name: dict[str, set[str]] = {}
    for event in first:
        handles_by_name.setdefault(event["sender_name"], set()).add(f"{event['platform']}:{event['sender_id']}")
    assert any(len(handles) > 1 for handles in handles_by_name.values())
    assert len({e["content"] for e in first}) > 1_000  # texts are assembled, not copied
    assert len({e["thread_id"] for e in first}) > 100


def test_history_has_bursts_and_quiet_weeks() -> None:
    quotas = HistoryGenerator(100_000, seed=7).quotas()
    per_day = [sum(day.values()) for day in quotas]
    assert sum(per_day) == 100_000 and len(per_day) == 730
    weekly = [sum(per_day[i : i + 7]) for i in range(0, 728, 7)]
    median = sorted(weekly)[len(weekly) // 2]
    assert min(weekly) < 0.5 * median  # a week away
    assert max(per_day) > 3 * (sum(per_day) / len(per_day))  # a burst


@pytest.mark.slow
def test_bench_backfill_small_history(tmp_path: Path) -> None:
    result = run(300, timed_pipeline, days=14, directory=tmp_path)
    for key in ("events", "seconds", "events_per_s", "per_layer", "embedding_limit_s", "ratio_to_embedding_limit"):
        assert key in result
    assert result["events"] == 300 and result["ok"], result
    assert result["peak_rss_mb"] > 100
    layers = result["per_layer"]
    assert {"ingest", "events", "episodes", "facts", "embeddings"} <= set(layers)
    assert layers["ingest"]["rows"] == layers["events"]["rows"] == 300
    # Facts can share a text (the same fact from the same message); the limits embed each text once.
    assert layers["facts"]["rows"] == layers["embeddings"]["rows"] >= result["embedder"]["texts"] > 0
    assert result["two_process_limit_s"] > 0 and result["consolidation_s"] >= 0
    assert result["ratio_to_two_process_limit"] == pytest.approx(
        result["pipeline_s"] / result["two_process_limit_s"], 0.05
    )
    assert all(entry["seconds"] >= 0 and "share" in entry for entry in layers.values())
    assert sum(entry["seconds"] for entry in layers.values()) == pytest.approx(result["seconds"], abs=0.1)
    assert result["ratio_to_embedding_limit"] == pytest.approx(result["pipeline_s"] / result["embedding_limit_s"], 0.05)
    # The limit keeps the float32 recipe; the pipeline embeds in its own, stored under that recipe's identity.
    assert result["embedding_limit_recipe"] == "fp32"
    assert result["embedder"]["model"] == vector_identity(DEFAULT_MODEL, result["embedder"]["precision"])
    consolidation = result["consolidation_s"] / result["pipeline_s"]
    assert result["consolidation_to_pipeline"] == pytest.approx(consolidation, abs=0.02)
    assert list(tmp_path.iterdir()) == []  # the temporary stores are gone


@pytest.mark.slow
def test_bench_backfill_command_prints_json_and_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_PROGRESS_EVERY_S", "0")  # a progress line per report (off a terminal: one a minute)
    args = ["bench", "backfill", "--events", "120", "--days", "7", "--data-dir", str(tmp_path), "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["events"] == 120 and result["per_layer"]["embeddings"]["rows"] > 0
    # Between "running the pipeline" and the JSON, each layer of each run says how far it is.
    lines = captured.err.splitlines()
    done = [line for line in lines if re.fullmatch(r"  (episodes|facts|embeddings) \S+: [\d,]+ \w+ in \d+ s.*", line)]
    assert {line.split()[0] for line in done} == {"episodes", "facts", "embeddings"}, lines
    assert any(re.fullmatch(r"  observations: [\d,]+ facts in .*", line) for line in lines), lines
