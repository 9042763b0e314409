"""The analytics sections on a small fixed store (tests/analytics_store.py), against values counted by hand;
`report --json` against the asset metadata."""

from __future__ import annotations

import base64
import io
import json
import struct
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from analytics_store import INDEX_MODEL, MAR1, build_fixed_store

from nexus_memory import cli
from nexus_memory.analytics import activity
from nexus_memory.analytics.chart import markdown_image, render_png
from nexus_memory.analytics.model import Chart, Table
from nexus_memory.analytics.report import SECTIONS, build_report, compute_section, render_text
from nexus_memory.analytics.source import StoreReader, StoresMissing
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory_assets.analytics import analytics_assets
from nexus_memory_assets.definitions import defs
from resources import StoresResource


@pytest.fixture
def fixed_store(settings: Settings) -> Settings:
    return build_fixed_store(settings)


def test_ingest_activity_counts_events_backlog_and_dedup(fixed_store: Settings) -> None:
    section = compute_section("ingest_activity", fixed_store)
    assert section.numbers == {
        "events": 8,
        "platforms": 3,
        "days_with_events": 4,
        "processed_events": 4,
        "backlog_events": 4,
        "backlog_no_episode": 1,
        "backlog_episode_pending": 1,
        "backlog_episode_failed": 2,
        "backlog_before_partition_start": 1,
        "processed_share": 0.5,
        "files_ingested": 3,
        "records_read": 15,
        "records_ingested": 8,
        "duplicates_skipped": 6,
        "records_rejected": 1,
        "ingest_dedup_rate": 0.4,
        "unresolved_rejects": 1,
    }
    backlog = section.tables["backlog_by_platform"].rows
    assert backlog == [
        {"platform": "imessage", "events": 4, "processed": 2, "no_episode": 0, "episode_pending": 1,
         "episode_failed": 1, "backlog": 2, "first_day": "2025-03-01", "last_day": "2025-03-03"},
        {"platform": "gmail", "events": 3, "processed": 2, "no_episode": 0, "episode_pending": 0,
         "episode_failed": 1, "backlog": 1, "first_day": "2025-03-01", "last_day": "2025-03-03"},
        {"platform": "discord", "events": 1, "processed": 0, "no_episode": 1, "episode_pending": 0,
         "episode_failed": 0, "backlog": 1, "first_day": "2018-12-31", "last_day": "2018-12-31"},
    ]  # fmt: skip
    recent = section.tables["events_last_31_days"]
    assert list(recent.columns) == ["day", "imessage", "gmail", "total"]
    assert len(recent.rows) == 31 and recent.rows[-1]["day"] == "2025-02-01"
    assert recent.rows[:3] == [
        {"day": "2025-03-03", "imessage": 1, "gmail": 1, "total": 2},
        {"day": "2025-03-02", "imessage": 1, "gmail": 1, "total": 2},
        {"day": "2025-03-01", "imessage": 2, "gmail": 1, "total": 3},
    ]
    assert all(r["total"] == 0 for r in recent.rows[3:])
    assert section.charts["events_per_day"].table.rows == [
        {"day": "2018-12-31", "platform": "discord", "events": 1},
        {"day": "2025-03-01", "platform": "gmail", "events": 1},
        {"day": "2025-03-01", "platform": "imessage", "events": 2},
        {"day": "2025-03-02", "platform": "gmail", "events": 1},
        {"day": "2025-03-02", "platform": "imessage", "events": 1},
        {"day": "2025-03-03", "platform": "gmail", "events": 1},
        {"day": "2025-03-03", "platform": "imessage", "events": 1},
    ]
    assert [r["path"] for r in section.tables["recent_files"].rows] == ["c.jsonl", "b.jsonl", "a.jsonl"]


def test_writer_outcomes_count_episodes_facts_and_failures(fixed_store: Settings) -> None:
    section = compute_section("writer_outcomes", fixed_store)
    assert section.numbers == {
        "episodes": 7,
        "writer_episodes": 6,
        "writer_episodes_current": 5,
        "ok": 2,
        "skipped": 1,
        "failed": 2,
        "pending": 1,
        "writer_skip_rate": 0.2,
        "prompt_tokens": 150,
        "completion_tokens": 20,
        "facts": 5,
        "facts_outside_episodes": 2,
        "facts_per_episode_mean": 1.5,
        "facts_per_episode_median": 1.5,
        "facts_per_episode_p90": 3,
        "facts_per_episode_max": 3,
        "ok_episodes_without_facts": 1,
        "failure_reasons": 1,
    }
    assert section.tables["outcomes_by_platform"].rows == [
        {"platform": "gmail", "episodes": 3, "ok": 1, "skipped": 1, "failed": 1, "pending": 0, "facts": 0,
         "attempts": 3},
        {"platform": "imessage", "episodes": 3, "ok": 1, "skipped": 0, "failed": 1, "pending": 1, "facts": 3,
         "attempts": 3},
    ]  # fmt: skip
    assert section.tables["episodes_by_definition"].rows == [
        {"definition": "def_thread_gap_30m", "episodes": 6, "current_versions": 5, "avg_events": 1.33},
        {"definition": "def_backfill_6k", "episodes": 1, "current_versions": 1, "avg_events": 4.0},
    ]
    assert section.tables["facts_per_episode"].rows == [
        {"facts": "0", "episodes": 1},
        {"facts": "1", "episodes": 0},
        {"facts": "2-3", "episodes": 1},
        {"facts": "4-7", "episodes": 0},
        {"facts": "8-15", "episodes": 0},
        {"facts": "16+", "episodes": 0},
    ]
    assert section.tables["failed_by_reason"].rows == [
        {"reason": "ToolError: unknown fact_id … at step #", "episodes": 2, "platforms": 2,
         "example_episode": "ep_fail", "last_failed_utc": "2025-03-04 00:00"},
    ]  # fmt: skip


def test_entity_graph_follows_merges_for_pairs(fixed_store: Settings) -> None:
    section = compute_section("entity_graph", fixed_store)
    assert section.numbers == {
        "entities_live": 5,
        "entities_merged": 3,
        "entity_types": 4,
        "entities_delivery": 2,
        "entities_inferred": 2,
        "entities_user": 1,
        "entities_import": 0,
        "cooccurring_pairs": 3,
        "merge_candidates_pending": 2,
        "merge_candidates_auto_eligible": 1,
        "merges_accepted": 1,
        "merges_automatic": 1,
        "merges_rejected": 1,
    }
    assert section.tables["entities_by_type_source"].rows == [
        {"type": "email", "source": "delivery", "entities": 1, "mentions": 2},
        {"type": "location", "source": "inferred", "entities": 1, "mentions": 4},
        {"type": "person", "source": "inferred", "entities": 1, "mentions": 5},
        {"type": "person", "source": "user", "entities": 1, "mentions": 3},
        {"type": "phone", "source": "delivery", "entities": 1, "mentions": 6},
    ]
    # n2 -> n1 and n4 -> n5 -> n6: Priya's two pairs with Lisbon add up; Dana's pair with herself goes.
    assert section.tables["top_pairs"].rows == [
        {"entity_a": "Priya Kapoor", "type_a": "person", "entity_b": "Lisbon", "type_b": "location",
         "facts_together": 5},
        {"entity_a": "priya@example.com", "type_a": "email", "entity_b": "+15550111", "type_b": "phone",
         "facts_together": 2},
        {"entity_a": "Dana Whitfield", "type_a": "person", "entity_b": "Lisbon", "type_b": "location",
         "facts_together": 1},
    ]  # fmt: skip
    pending = section.tables["pending_merges"].rows
    assert [(r["merge"], r["into_entity"], r["confidence"], r["auto_eligible"]) for r in pending] == [
        ("+15550111", "Lisbon", 0.995, 1),
        ("priya@example.com", "Priya Kapoor", 0.8, 0),
    ]


def test_consolidation_coverage_counts_observations_per_entity(fixed_store: Settings) -> None:
    section = compute_section("consolidation_coverage", fixed_store)
    assert section.numbers == {
        "facts": 5,
        "facts_consolidated": 3,
        "facts_in_observations": 2,
        "facts_isolated": 1,
        "facts_unconsolidated": 2,
        "consolidated_share": 0.6,
        "observations": 2,
        "observation_versions": 3,
        "observations_stale": 1,
        "entities_with_facts": 4,
        "entities_with_observations": 3,
        "observations_per_entity_mean": 1.0,
        "observations_per_entity_max": 2,
    }
    assert section.tables["top_entities_by_observations"].rows == [
        {"entity": "Lisbon", "type": "location", "observations": 2, "facts": 2, "facts_consolidated": 2},
        {"entity": "Priya Kapoor", "type": "person", "observations": 1, "facts": 2, "facts_consolidated": 2},
        {"entity": "priya@example.com", "type": "email", "observations": 1, "facts": 1, "facts_consolidated": 1},
    ]
    assert section.notes == []


def test_embedding_coverage_per_model_with_orphans_and_stale(fixed_store: Settings) -> None:
    section = compute_section("embedding_coverage", fixed_store)
    assert section.numbers == {
        "vectors": 7,
        "models": 2,
        "vectors_without_text_hash": 1,
        "facts": 5,
        "facts_missing_vectors": 2,
        "fact_coverage": 0.6,
        "orphan_vectors": 2,
        "stale_checked": 4,
        "stale_vectors": 1,
        "stale_unknown": 1,
        "stale_share": 0.5,
    }
    coverage = [
        (r["model"], r["target_type"], r["in_index"], r["targets"], r["vectors"], r["missing"], r["coverage"],
         r["orphans"], r["without_text_hash"])
        for r in section.tables["coverage"].rows
    ]  # fmt: skip
    assert coverage == [
        (INDEX_MODEL, "entity", "yes", 5, 2, 4, 0.2, 1, 0),
        (INDEX_MODEL, "fact", "yes", 5, 4, 2, 0.6, 1, 1),
        (INDEX_MODEL, "observation", "yes", 2, 0, 2, 0.0, 0, 0),
        ("bge-small", "entity", "no", 5, 0, 5, 0.0, 0, 0),
        ("bge-small", "fact", "no", 5, 1, 4, 0.2, 0, 0),
        ("bge-small", "observation", "no", 2, 0, 2, 0.0, 0, 0),
    ]
    assert section.tables["index"].rows == [{"model": INDEX_MODEL, "dimension": 384, "built_utc": "2025-03-01 00:00"}]


def test_an_empty_store_reads_as_zeros(settings: Settings) -> None:
    Stores(settings).close()  # creates the four empty stores
    report = build_report(settings)
    for name, section in report["sections"].items():
        assert all(v == 0 for v in section["numbers"].values()), name
    assert report["sections"]["consolidation_coverage"]["notes"] == [
        "No observations yet: the consolidation layer has not written any."
    ]
    assert report["sections"]["ingest_activity"]["tables"]["events_last_31_days"]["rows"] == []
    assert render_png(Chart("empty", "day", "events", "platform", Table({}, [])))[:8] == b"\x89PNG\r\n\x1a\n"


def test_reader_is_read_only_and_says_what_is_missing(fixed_store: Settings, tmp_path: Path) -> None:
    with StoreReader(fixed_store.data_dir) as reader, pytest.raises(Exception, match="readonly"):
        reader.execute("INSERT INTO facts (id, text, as_of, ingested_at, created_at) VALUES ('x', 'x', 0, 0, 0)")
    with pytest.raises(StoresMissing, match="no store at"):
        StoreReader(tmp_path / "nowhere")
    with Stores(fixed_store) as stores:
        stores.conn.execute("PRAGMA embeddings.user_version = 1")
    with pytest.raises(StoresMissing, match="schema version 1"):
        StoreReader(fixed_store.data_dir)


def test_many_platforms_fold_into_other_columns(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(activity, "RECENT_PLATFORMS", 2)
    with Stores(settings) as stores, stores.transaction():
        stores.conn.executemany(
            """INSERT INTO events (id, platform, sender_id, direction, content, content_hash, as_of, ingested_at, day)
               VALUES (?, ?, 's', 'inbound', 'x', ?, ?, 0, '2025-03-01')""",
            [(f"{p}{i}", p, f"{p}{i}", MAR1) for p, n in (("a", 3), ("total", 2), ("c", 1)) for i in range(n)],
        )
    table = compute_section("ingest_activity", settings).tables["events_last_31_days"]
    assert table.rows[0] == {"day": "2025-03-01", "a": 3, "total (platform)": 2, "other": 1, "total": 6}


def _report_json(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["report", "--json"]) == 0
    return json.loads(out.getvalue())


def _png_size(markdown: str) -> tuple[int, int]:
    prefix = "data:image/png;base64,"
    assert markdown.startswith("![") and prefix in markdown and markdown.endswith(")")
    png = base64.b64decode(markdown.split(prefix, 1)[1][:-1], validate=True)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def test_report_json_matches_the_asset_metadata(fixed_store: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report_json(fixed_store, monkeypatch)
    result = dg.materialize(
        analytics_assets,
        resources={"stores": StoresResource(data_dir=str(fixed_store.data_dir))},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    materialised = {
        e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()
    }
    assert set(materialised) == set(SECTIONS) == set(report["sections"])
    for name, section in report["sections"].items():
        metadata = materialised[name]
        for key, value in section["numbers"].items():
            entry = metadata[key]
            assert isinstance(entry, dg.IntMetadataValue if isinstance(value, int) else dg.FloatMetadataValue)
            assert entry.value == value, (name, key)
        for key, table in section["tables"].items():
            entry = metadata[key]
            assert isinstance(entry, dg.TableMetadataValue)
            assert {c.name: c.type for c in entry.schema.columns} == table["columns"]
            assert [r.data for r in entry.records] == table["rows"], (name, key)
        for key in section["charts"]:
            assert _png_size(metadata[key].value) == (1000, 360)
        if section["notes"]:
            assert all(note in metadata["notes"].value for note in section["notes"])
        expected = set(section["numbers"]) | set(section["tables"]) | set(section["charts"])
        assert set(metadata) - {"notes"} == expected


def test_report_text_shows_every_section(fixed_store: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(fixed_store.data_dir))
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["report", "--section", "writer_outcomes"]) == 0
    text = out.getvalue()
    assert "== What was built and what failed (writer_outcomes) ==" in text
    assert "ToolError: unknown fact_id … at step #" in text and "ingest_activity" not in text
    assert render_text(build_report(fixed_store)).count("\n== ") == len(SECTIONS)


def test_chart_markdown_is_an_inline_png(fixed_store: Settings) -> None:
    chart = compute_section("ingest_activity", fixed_store).charts["events_per_day"]
    assert (chart.x, chart.y, chart.series) == ("day", "events", "platform")
    assert _png_size(markdown_image(render_png(chart), chart.title)) == (1000, 360)


def test_analytics_group_job_and_schedule_are_defined() -> None:
    repo = defs.get_repository_def()
    for name in SECTIONS:
        assert repo.asset_graph.get(dg.AssetKey(name)).group_name == "analytics"
    parents = repo.asset_graph.get(dg.AssetKey("ingest_activity")).parent_keys
    assert {k.to_user_string() for k in parents} == {"events", "episodes", "facts"}
    job = repo.get_job("analytics")
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == set(SECTIONS)
    assert repo.get_schedule_def("analytics_hourly").job_name == "analytics"


def test_a_section_reads_one_snapshot_while_writers_commit(fixed_store: Settings) -> None:
    with StoreReader(fixed_store.data_dir) as reader, Stores(fixed_store) as stores:
        before = reader.execute("SELECT count(*) FROM facts").fetchone()[0]
        stores.conn.execute("INSERT INTO facts (id, text, as_of, ingested_at, created_at) VALUES ('f9', 'x', 0, 0, 0)")
        assert reader.execute("SELECT count(*) FROM facts").fetchone()[0] == before == 5
    assert compute_section("consolidation_coverage", fixed_store).numbers["facts"] == 6
