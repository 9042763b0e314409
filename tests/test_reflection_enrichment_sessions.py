"""Weekly reflection (once per 6 days, 3 facts in 7 days, Weekly insight in get_context), entity enrichment
(once per fact) and the session trigger."""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI, content, http_error
from lifecycle_world import build, message

from nexus_memory.core.config import load_settings
from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.injection.context import get_context
from nexus_memory.lifecycle import enrichment, reflection, sessions

DAY = reflection.DAY_MS


def the_messages(start: int = 1) -> list:
    return [
        message(start, "ben@example.com", "I moved to Lisbon last month.", sender_name="Ben"),
        message(start + 1, "ben@example.com", "I will send the report to Ana by Friday.", sender_name="Ben"),
        message(start + 2, "dana@example.com", "Ben plays the cello on Sundays.", sender_name="Dana"),
    ]


def test_reflection_needs_three_new_facts_and_six_days(stores: Stores) -> None:
    build(stores, the_messages()[:2])
    first = reflection.reflect(stores, now=now_ms(), use_llm=False)
    assert first.status == "skipped" and "2 facts arrived" in first.reason
    embedder = build(stores, the_messages()[2:])
    now = now_ms()
    written = reflection.reflect(stores, now=now, use_llm=False)
    assert written.status == "written" and written.facts_in_week == 3
    text = stores.conn.execute("SELECT description FROM mental_models WHERE id = ?", (written.mental_model_id,))
    digest = text.fetchone()[0]
    assert "3 new facts" in digest and "Most active: Ben (3 facts)" in digest
    # the writer dates "by Friday" from the message day (Wednesday 1 May 2024)
    assert "- Ben will send the report to Ana by Friday (on 3 May 2024). (action item" in digest
    block = get_context(stores, "what does Ben play on Sundays?", embedder=embedder)
    assert "## Weekly insight\n" + digest.split("\n")[0] in block

    assert "days old" in reflection.reflect(stores, now=now + 5 * DAY, use_llm=False).reason
    again = reflection.reflect(stores, now=now + 6 * DAY + 60_000, use_llm=False)
    assert again.status == "written"  # the facts are still within 7 days
    assert reflection.latest(stores.conn)[0] == again.mental_model_id  # type: ignore[index]
    parent = stores.conn.execute("SELECT parent_id FROM mental_models WHERE id = ?", (again.mental_model_id,))
    assert parent.fetchone()[0] == written.mental_model_id
    late = reflection.reflect(stores, now=now + 20 * DAY, use_llm=False)
    assert late.status == "skipped" and "0 facts arrived" in late.reason


def test_reflection_with_an_llm_is_prose_and_falls_back_on_a_bad_answer(stores: Stores) -> None:
    build(stores, the_messages())
    with FakeOpenAI([content(json.dumps({"insight": "Ben settled into Lisbon and owes Ana a report."}))]) as server:
        object.__setattr__(
            stores, "settings", load_settings(data_dir=stores.data_dir, llm_base_url=server.base_url, llm_model="m")
        )
        report = reflection.reflect(stores)
    assert report.writer == "llm:m" and report.status == "written"
    assert reflection.latest(stores.conn) is not None
    text = stores.conn.execute("SELECT description FROM mental_models WHERE id = ?", (report.mental_model_id,))
    assert text.fetchone()[0] == "Ben settled into Lisbon and owes Ana a report."
    with FakeOpenAI([content("{}")]) as server:
        object.__setattr__(
            stores, "settings", load_settings(data_dir=stores.data_dir, llm_base_url=server.base_url, llm_model="m")
        )
        fallback = reflection.reflect(stores, now=now_ms() + 7 * DAY - 60_000)
    assert fallback.status == "written" and fallback.writer == "offline" and "insight" in fallback.failures[0]


def test_reflection_waits_out_a_busy_server_and_falls_back_to_json_object(stores: Stores) -> None:
    """The reflection goes through the one LLM client: a 429 is waited out (not a failed answer), and a
    server without json_schema is asked again in JSON mode, within its single attempt."""
    build(stores, the_messages())
    insight = {"insight": "Ben settled into Lisbon and owes Ana a report."}
    busy = http_error(429, "slow down", {"Retry-After": "0"})
    no_schema = http_error(400, "response_format type 'json_schema' is not supported")
    with FakeOpenAI([busy, no_schema, content(json.dumps(insight))]) as server:
        object.__setattr__(
            stores, "settings", load_settings(data_dir=stores.data_dir, llm_base_url=server.base_url, llm_model="m")
        )
        report = reflection.reflect(stores)
    assert (report.status, report.writer, report.failures) == ("written", "llm:m", [])
    formats = [request["response_format"]["type"] for request in server.requests]
    assert formats == ["json_schema", "json_schema", "json_object"]
    text = stores.conn.execute("SELECT description FROM mental_models WHERE id = ?", (report.mental_model_id,))
    assert text.fetchone()[0] == insight["insight"]


def bare_fact(stores: Stores, text: str) -> str:
    fact_id, now = ulid(), now_ms()
    with stores.transaction():
        stores.conn.execute(
            "INSERT INTO facts (id, text, as_of, ingested_at, created_at) VALUES (?, ?, ?, ?, ?)",
            (fact_id, text, now, now, now),
        )
    return fact_id


def links(stores: Stores, fact_id: str) -> list[str]:
    rows = stores.conn.execute(
        "SELECT e.name FROM fact_entities fe JOIN entities e ON e.id = fe.entity_id WHERE fe.fact_id = ? ORDER BY 1",
        (fact_id,),
    )
    return [r[0] for r in rows]


def test_enrichment_links_known_names_once_per_fact(stores: Stores) -> None:
    identity.create_entity(stores.conn, "Marta", "person")
    fact_id = bare_fact(stores, "Marta plays the cello in Porto.")
    rich = bare_fact(stores, "Nothing to see here.")
    report = enrichment.enrich(stores)
    assert (report.facts_read, report.facts_enriched) == (2, 1)
    assert "Marta" in links(stores, fact_id) and links(stores, rich) == []
    assert enrichment.enrich(stores).facts_read == 0  # stamped: never read twice
    assert stores.conn.execute("SELECT count(*) FROM fact_state WHERE enriched_at IS NOT NULL").fetchone()[0] == 2


def test_a_session_is_consolidated_when_a_new_one_starts_or_at_night(stores: Stores) -> None:
    calls: list[int] = []

    def consolidate(s: Stores) -> dict:
        calls.append(1)
        with s.transaction():
            s.conn.execute("UPDATE facts SET is_consolidated = 1")
        return {"consolidated": True}

    build(stores, [message(1, "ben@example.com", "I moved to Lisbon.", session="s1", sender_name="Ben")])
    first = sessions.consolidate_ended(stores, consolidate=consolidate)
    assert (first.registered, first.ended, first.consolidated, calls) == (1, 0, 0, [])
    build(stores, [message(50, "ben@example.com", "I adopted a cat.", session="s2", sender_name="Ben")])
    second = sessions.consolidate_ended(stores, consolidate=consolidate)
    assert (second.registered, second.ended, second.consolidated, len(calls)) == (1, 1, 1, 1)
    rows = stores.conn.execute("SELECT session_id, ended_by, consolidated_at IS NOT NULL FROM sessions_consolidations")
    assert sorted(tuple(r) for r in rows) == [("s1", "new_session", 1), ("s2", None, 0)]
    build(stores, [message(60, "ben@example.com", "I named the cat Miso.", session="s2", sender_name="Ben")])
    night = sessions.consolidate_ended(stores, nightly=True, consolidate=lambda s: None)
    assert (night.ended, night.waiting) == (1, 1)  # s2 ended; its fact is not consolidated by the no-op
    assert sessions.ended_waiting(stores.conn) == ["s2"]


@pytest.mark.parametrize("kind", ["decay", "conflicts", "enrichment", "reflection", "sessions"])
def test_every_run_is_recorded_with_counts_only(stores: Stores, kind: str) -> None:
    from nexus_memory.lifecycle import conflicts, decay

    build(stores, the_messages())
    run = {
        "decay": lambda: decay.run_decay(stores),
        "conflicts": lambda: conflicts.detect_conflicts(stores, use_llm=False),
        "enrichment": lambda: enrichment.enrich(stores),
        "reflection": lambda: reflection.reflect(stores, use_llm=False),
        "sessions": lambda: sessions.consolidate_ended(stores, consolidate=lambda s: None),
    }[kind]
    run()
    (stats,) = stores.conn.execute("SELECT stats FROM lifecycle_runs WHERE job = ?", (kind,)).fetchone()
    assert "Lisbon" not in stats and isinstance(json.loads(stats), dict)
