"""Grouping events into episodes, and versioning when new events extend one."""

from __future__ import annotations

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes, episode_events
from nexus_memory.events.ledger import RawRecord, ingest

T0 = 1_714_557_600  # 2024-05-01 10:00 UTC, in seconds


def _event(i: int, minute: int, thread: str = "t1", session: str = "s1") -> RawRecord:
    data = {
        "platform": "chat",
        "sender_id": "ann" if i % 2 else "bob",
        "content": f"message number {i}",
        "as_of": T0 + minute * 60,
        "thread_id": thread,
        "session_id": session,
    }
    return RawRecord("test", i, data, "")


def _episodes(stores: Stores) -> list[dict]:
    return [dict(r) for r in stores.conn.execute("SELECT * FROM episodes ORDER BY start_time, created_at")]


def test_time_gap_splits_a_thread_and_rerun_changes_nothing(stores: Stores) -> None:
    ingest(stores, [_event(0, 0), _event(1, 10), _event(2, 20), _event(3, 200), _event(4, 0, thread="t2")])
    stats = build_episodes(stores, "2024-05-01", "chat")
    assert (stats.created, stats.extended) == (3, 0)
    sizes = sorted(e["event_count"] for e in _episodes(stores))
    assert sizes == [1, 1, 3]
    again = build_episodes(stores, "2024-05-01", "chat")
    assert (again.created, again.extended, again.unchanged) == (0, 0, 3)


def test_new_events_create_a_new_version_and_keep_the_old(stores: Stores) -> None:
    ingest(stores, [_event(0, 0), _event(1, 10)])
    build_episodes(stores, "2024-05-01", "chat")
    (first,) = _episodes(stores)
    ingest(stores, [_event(2, 25)])
    stats = build_episodes(stores, "2024-05-01", "chat")
    assert stats.extended == 1
    versions = _episodes(stores)
    assert len(versions) == 2
    child = next(e for e in versions if e["parent_id"])
    assert child["parent_id"] == first["id"] and child["event_count"] == 3
    assert [e.content for e in episode_events(stores, child["id"])][-1] == "message number 2"
    assert len(episode_events(stores, first["id"])) == 2


def test_token_budget_caps_episode_size(stores: Stores) -> None:
    long_text = "word " * 2000  # ~2.5K tokens each
    records = [
        RawRecord(
            "t",
            i,
            {
                "platform": "chat",
                "sender_id": "ann",
                "content": f"{i} {long_text}",
                "as_of": T0 + i * 60,
                "thread_id": "t1",
            },
            "",
        )
        for i in range(5)
    ]
    ingest(stores, records)
    build_episodes(stores, "2024-05-01", "chat")
    assert all(e["token_estimate"] <= 6000 for e in _episodes(stores))
    assert len(_episodes(stores)) == 3


def test_session_definition_groups_by_session(stores: Stores) -> None:
    ingest(stores, [_event(0, 0, session="a"), _event(1, 300, session="a"), _event(2, 5, session="b")])
    stats = build_episodes(stores, "2024-05-01", "chat", ["session"])
    assert stats.created == 2
