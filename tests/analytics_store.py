"""A small fixed store for the analytics tests, written row by row so every figure is known in advance.

events (8): imessage e1 e2 (2025-03-01), e3 (03-02), e4 (03-03); gmail g1 (03-01), g3 (03-02), g2 (03-03);
            discord d1 (2018-12-31, before the partition start)
writer episodes: ep_ok [e1 e2] ok, 3 facts | ep_ok2 [g1] ok, 0 facts | ep_fail [e3] failed (2 attempts)
                 ep_fail_b [g3] failed, same reason | ep_skip [g2] skipped (g2 logged by the turn path)
                 ep_pend [e3 e4] pending, a new version of ep_fail; plus one backfill_6k episode [e1..e4]
processed log: e1 e2 g1 g2
"""

from __future__ import annotations

import json

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.model import text_hash
from nexus_memory.episodes.grouping import ensure_definitions

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


def build_fixed_store(settings: Settings) -> Settings:
    with Stores(settings) as stores, stores.transaction():
        _events(stores)
        _episodes(stores)
        _entities(stores)
        _facts(stores)
        _vectors(stores)
    return settings
