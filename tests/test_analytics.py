"""The analytics sections on a small fixed store, against values counted by hand; report vs asset metadata.

The store below is written row by row so every figure is known in advance:

events (8): imessage e1 e2 (2025-03-01), e3 (03-02), e4 (03-03); gmail g1 (03-01), g3 (03-02), g2 (03-03);
            discord d1 (2018-12-31, before the partition start)
writer episodes: ep_ok [e1 e2] ok, 3 facts | ep_ok2 [g1] ok, 0 facts | ep_fail [e3] failed (2 attempts)
                 ep_fail_b [g3] failed, same reason | ep_skip [g2] skipped (g2 logged by the turn path)
                 ep_pend [e3 e4] pending, a new version of ep_fail; plus one backfill_6k episode [e1..e4]
processed log: e1 e2 g1 g2
"""

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

from nexus_memory import cli
from nexus_memory.analytics import activity
from nexus_memory.analytics.chart import markdown_image, render_png
from nexus_memory.analytics.model import Chart, Table
from nexus_memory.analytics.report import SECTIONS, build_report, compute_section, render_text
from nexus_memory.analytics.source import StoreReader, StoresMissing
from nexus_memory.config import Settings
from nexus_memory.embeddings import text_hash
from nexus_memory.episodes import ensure_definitions
from nexus_memory.stores import Stores
from nexus_memory_assets.analytics import analytics_assets
from nexus_memory_assets.definitions import defs
from resources import StoresResource

DAY_MS = 86_400_000
MAR1 = 1_740_787_200_000  # 2025-03-01T00:00:00Z
INDEX_MODEL = "all-MiniLM-L6-v2"
F1_TEXT = "Priya moved to Lisbon"


def _events(stores: Stores) -> None:
    rows = [
        ("e1", "imessage", MAR1 + 3_600_000),
        ("e2", "imessage", MAR1 + 3_700_000),
        ("e3", "imessage", MAR1 + DAY_MS),
        ("e4", "imessage", MAR1 + 2 * DAY_MS),
        ("g1", "gmail", MAR1 + 5_000_000),
        ("g3", "gmail", MAR1 + DAY_MS + 10),
        ("g2", "gmail", MAR1 + 2 * DAY_MS + 10),
        ("d1", "discord", 1_546_214_400_000),  # 2018-12-31
    ]
    stores.conn.executemany(
        """INSERT INTO events (id, platform, sender_id, direction, content, content_hash, as_of, ingested_at, day)
           VALUES (?, ?, 'someone', 'inbound', 'hello', ?, ?, ?, strftime('%Y-%m-%d', ? / 1000, 'unixepoch'))""",
        [(i, p, i, t, t, t) for i, p, t in rows],
    )
    stores.conn.executemany(
        "INSERT INTO ingested_files (sha256, path, format, summary, ingested_at) VALUES (?, ?, 'jsonl', ?, ?)",
        [
            ("a", "a.jsonl", json.dumps({"read": 10, "ingested": 7, "duplicates": 2, "rejected": 1}), MAR1),
            ("b", "b.jsonl", json.dumps({"read": 5, "ingested": 1, "duplicates": 4, "rejected": 0}), MAR1 + 60_000),
            ("c", "c.jsonl", "not json", MAR1 + 120_000),
        ],
    )
    stores.conn.executemany(
        """INSERT INTO event_rejects (source, line, reason, raw, rejected_at, resolved_at)
           VALUES (?, 1, 'bad', '', 1, ?)""",
        [("a.jsonl", None), ("a.jsonl", 5)],
    )


def _episodes(stores: Stores) -> None:
    ensure_definitions(stores)
    episodes = [  # id, definition, platform, events, parent
        ("ep_ok", "def_thread_gap_30m", "imessage", ["e1", "e2"], None),
        ("ep_ok2", "def_thread_gap_30m", "gmail", ["g1"], None),
        ("ep_fail", "def_thread_gap_30m", "imessage", ["e3"], None),
        ("ep_fail_b", "def_thread_gap_30m", "gmail", ["g3"], None),
        ("ep_skip", "def_thread_gap_30m", "gmail", ["g2"], None),
        ("ep_pend", "def_thread_gap_30m", "imessage", ["e3", "e4"], "ep_fail"),
        ("ep_bf", "def_backfill_6k", "imessage", ["e1", "e2", "e3", "e4"], None),
    ]
    for episode_id, definition, platform, members, parent in episodes:
        stores.conn.execute(
            """INSERT INTO episodes (id, definition_id, platform, start_time, end_time, event_count, parent_id,
                   created_at, partition_key) VALUES (?, ?, ?, 0, 0, ?, ?, 0, 'x')""",
            (episode_id, definition, platform, len(members), parent),
        )
        stores.conn.executemany(
            "INSERT INTO episode_events (episode_id, event_id, position) VALUES (?, ?, ?)",
            [(episode_id, e, i) for i, e in enumerate(members)],
        )
    outcomes = [  # episode, status, attempts, prompt tokens, completion tokens, error
        ("ep_ok", "ok", 1, 100, 20, None),
        ("ep_ok2", "ok", 1, 0, 0, None),
        ("ep_fail", "failed", 2, 50, 0, "ToolError: unknown fact_id '01ABC' at step 3"),
        ("ep_fail_b", "failed", 1, 0, 0, 'ToolError: unknown fact_id "ZZZ" at step 12\nTraceback ...'),
        ("ep_skip", "skipped", 1, 0, 0, None),
    ]
    stores.conn.executemany(
        """INSERT INTO episode_processing (episode_id, status, writer, attempts, prompt_tokens, completion_tokens,
               error, updated_at) VALUES (?, ?, 'offline', ?, ?, ?, ?, ?)""",
        [(*o, MAR1 + 3 * DAY_MS) for o in outcomes],
    )
    stores.conn.executemany(
        "INSERT INTO memory_processing_log (event_id, processed_at, created_at) VALUES (?, 0, 0)",
        [("e1",), ("e2",), ("g1",), ("g2",)],
    )


def _entities(stores: Stores) -> None:
    entities = [  # id, name, type, source, merged into, mentions
        ("n1", "Priya Kapoor", "person", "inferred", None, 5),
        ("n2", "Priya K", "person", "inferred", "n1", 1),
        ("n3", "priya@example.com", "email", "delivery", None, 2),
        ("n6", "Dana Whitfield", "person", "user", None, 3),  # before the entities merged into it
        ("n5", "Dana Whitfield", "person", "inferred", "n6", 1),
        ("n4", "Dana W", "person", "inferred", "n5", 1),
        ("n7", "Lisbon", "location", "inferred", None, 4),
        ("n8", "+15550111", "phone", "delivery", None, 6),
    ]
    stores.conn.executemany(
        """INSERT INTO entities (id, name, normalized, type, source, merged_into, mention_count, created_at, updated_at)
           VALUES (?, ?, lower(?), ?, ?, ?, ?, 0, 0)""",
        [(i, n, n, t, s, m, c) for i, n, t, s, m, c in entities],
    )
    stores.conn.executemany(
        "INSERT INTO entity_cooccurrences (entity_a, entity_b, count, last_seen) VALUES (?, ?, ?, 0)",
        [("n1", "n7", 2), ("n2", "n7", 3), ("n4", "n7", 1), ("n5", "n6", 4), ("n3", "n8", 2), ("n1", "n2", 7)],
    )
    stores.conn.executemany(
        """INSERT INTO merge_candidates (id, entity_a_id, entity_b_id, confidence, reason, auto_eligible, status,
               created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            ("mc1", "n1", "n3", 0.8, "same person", 0, "pending", MAR1),
            ("mc2", "n7", "n8", 0.995, "exact phone", 1, "pending", MAR1 + 1),
            ("mc3", "n1", "n2", 0.9, "nickname", 0, "accepted", 0),
            ("mc4", "n6", "n7", 0.3, "unrelated", 0, "rejected", 0),
            ("mc5", "n5", "n4", 1.0, "exact email", 1, "auto_merged", 0),
        ],
    )


def _facts(stores: Stores) -> None:
    facts = [  # id, text, consolidated, metadata
        ("f1", F1_TEXT, 1, json.dumps({"episode_id": "ep_ok"})),
        ("f2", "Priya likes tea", 1, json.dumps({"episode_id": "ep_ok"})),
        ("f3", "Lisbon is sunny", 0, json.dumps({"episode_id": "ep_ok"})),
        ("f4", "The phone rang", 0, "{}"),
        ("f5", "Broken metadata", 0, "oops"),
    ]
    stores.conn.executemany(
        """INSERT INTO facts (id, text, as_of, ingested_at, is_consolidated, metadata, created_at)
           VALUES (?, ?, 0, 0, ?, ?, 0)""",
        facts,
    )
    stores.conn.executemany(
        "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, 0)",
        [("f1", "n1"), ("f1", "n7"), ("f2", "n1"), ("f3", "n7"), ("f3", "n3"), ("f4", "n8")],
    )
    stores.conn.executemany(
        "INSERT INTO analysis_types (id, name, version, output_type, created_at) VALUES (?, ?, '1', 'text', 0)",
        [("observation_v1", "observation"), ("summary_v1", "summary")],
    )
    runs = [  # id, type, episode, parent, stale, text
        ("o1", "observation_v1", "ep_ok", None, 0, "Priya lives in Lisbon"),
        ("o2", "observation_v1", "ep_ok2", None, 1, "Lisbon weather"),
        ("o3", "observation_v1", "ep_skip", "o1", 0, ""),
        ("r9", "summary_v1", "ep_pend", None, 0, "a summary"),
    ]
    stores.conn.executemany(
        """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, parent_id, status, is_stale, output_text,
               created_at) VALUES (?, ?, ?, ?, 'completed', ?, ?, 0)""",
        runs,
    )
    stores.conn.executemany(
        "INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES (?, ?)",
        [("o1", "f1"), ("o2", "f3"), ("o3", "f1"), ("r9", "f4")],
    )


def _vectors(stores: Stores) -> None:
    vectors = [  # target type, target id, model, text hash (f1 current, f2 stale, f3 unknown)
        ("fact", "f1", INDEX_MODEL, text_hash(F1_TEXT)),
        ("fact", "f2", INDEX_MODEL, "0000000000000000"),
        ("fact", "f3", INDEX_MODEL, None),
        ("fact", "f_gone", INDEX_MODEL, "h"),
        ("entity", "n1", INDEX_MODEL, "h"),
        ("entity", "n2", INDEX_MODEL, "h"),
        ("fact", "f1", "bge-small", "h"),
    ]
    stores.conn.executemany(
        """INSERT INTO embeddings (id, target_type, target_id, model, embedding, dimension, created_at, text_hash)
           VALUES (?, ?, ?, ?, x'00000000', 1, 0, ?)""",
        [(f"v{i}", *v) for i, v in enumerate(vectors)],
    )
    stores.conn.execute(
        "INSERT INTO vector_index_state (id, model, dimension, built_at) VALUES (1, ?, 384, ?)", (INDEX_MODEL, MAR1)
    )


@pytest.fixture
def fixed_store(settings: Settings) -> Settings:
    with Stores(settings) as stores, stores.transaction():
        _events(stores)
        _episodes(stores)
        _entities(stores)
        _facts(stores)
        _vectors(stores)
    return settings


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
