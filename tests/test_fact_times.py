"""Two times on every fact: when it was said (facts.as_of) and the time it is about (about_start, about_end),
from the writer through the store's upgrade, observation lines and recall's time filters (docs/stores.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from nexus_memory.core import db
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import Event, RawRecord, ingest
from nexus_memory.facts.insert import insert_fact
from nexus_memory.observations import store as observations
from nexus_memory.observations.render import MemberFact, fact_line
from nexus_memory.observations.view import Loader
from nexus_memory.recall import recall
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition
from tests.fake_openai import FakeOpenAI, document
from tests.test_facts_worth_keeping import MARCH_3
from tests.test_facts_worth_keeping import email as email_to_me
from tests.test_llm_structured import doc, write_direct
from tests.test_llm_structured import fact as doc_fact
from tests.test_llm_writer import ALICE, add_events, make_writer, record

DAY_MS = 86_400_000


def at(year: int, month: int, day: int, hour: int = 0) -> int:
    return int(datetime(year, month, day, hour, tzinfo=UTC).timestamp() * 1000)


MONDAY_3_MARCH = MARCH_3  # a Monday, 16:00 UTC
KESTREL = "Kestrel told us on Friday that their SDK won't be ready until March 14."


def test_a_fact_is_said_when_its_message_was_and_is_about_the_days_its_text_names() -> None:
    email = email_to_me(KESTREL)
    (fact,) = extract([email]).facts
    # Past tense points back: the Friday before Monday 3 March is 28 February, not 7 March.
    assert "on Friday (on 28 February 2025)" in fact.text
    assert fact.as_of == MONDAY_3_MARCH
    assert fact.about == (at(2025, 2, 28), at(2025, 3, 14) + DAY_MS - 1)


def test_a_fact_naming_no_time_has_no_about_time() -> None:
    chat = Event(
        id="c1", platform="imessage", sender_id="sam", sender_name="Sam", content="I love hiking.", as_of=MONDAY_3_MARCH
    )
    (fact,) = extract([chat]).facts
    assert (fact.as_of, fact.about) == (MONDAY_3_MARCH, None)


def test_the_offline_writer_stores_both_times(stores: Stores) -> None:
    record = {
        "id": "m1",
        "platform": "gmail",
        "sender_id": "dana@atlas.example",
        "sender_name": "Dana Whitfield",
        "thread_id": "t1",
        "content": KESTREL,
        "as_of": "2025-03-03T16:00:00Z",
    }
    ingest(stores, [RawRecord("test", 1, record, json.dumps(record))])
    build_episodes(stores, "2025-03-03", "gmail")
    process_partition(stores, "2025-03-03", "gmail", OfflineWriter())
    (row,) = stores.conn.execute("SELECT id, as_of, about_start, about_end FROM facts").fetchall()
    assert (row["as_of"], row["about_start"], row["about_end"]) == (
        MONDAY_3_MARCH,
        at(2025, 2, 28),
        at(2025, 3, 14) + DAY_MS - 1,
    )
    linked = {r[0] for r in stores.conn.execute("SELECT as_of FROM fact_entities WHERE fact_id = ?", (row["id"],))}
    assert linked == {MONDAY_3_MARCH}  # the entity index orders by when it was said too


def test_insert_fact_refuses_an_about_time_that_ends_before_it_starts(stores: Stores) -> None:
    with pytest.raises(Exception, match="about"):
        insert_fact(stores.conn, "The launch moved.", MONDAY_3_MARCH, about=(at(2025, 3, 25), at(2025, 3, 18)))


def test_an_observation_line_is_dated_when_said_and_names_the_time_it_is_about(stores: Stores) -> None:
    # The text names no date (an LLM writer's wording): the line adds the span after it.
    moved = insert_fact(
        stores.conn,
        "Dana Whitfield said the Atlas launch moves because the vendor slipped.",
        MONDAY_3_MARCH,
        about=(at(2025, 3, 18), at(2025, 3, 25) + DAY_MS - 1),
    )
    # The text names its date itself: the line does not say it twice.
    dated = insert_fact(
        stores.conn,
        "Dana Whitfield said the review is on 14 March 2025.",
        MONDAY_3_MARCH,
        about=(at(2025, 3, 14), at(2025, 3, 14) + DAY_MS - 1),
    )
    rows = observations.fact_rows(stores.conn, [moved["fact_id"], dated["fact_id"]])
    inputs = Loader(stores.conn, None, set()).facts([rows[moved["fact_id"]], rows[dated["fact_id"]]])
    lines = [fact_line(f.member()) for f in inputs]
    assert lines == [
        "- 3 March 2025: Dana Whitfield said the Atlas launch moves because the vendor slipped. "
        "(about 18 – 25 March 2025)",
        "- 3 March 2025: Dana Whitfield said the review is on 14 March 2025.",
    ]
    # Before: the line was dated by the day the fact mentions.
    assert fact_line(MemberFact("f", "Sam moved to Lisbon.", MONDAY_3_MARCH)) == "- 3 March 2025: Sam moved to Lisbon."


def test_a_store_made_before_the_two_times_upgrades_in_place(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrations = db.MIGRATIONS["memory"]
    before = migrations[: migrations.index("memory_fact_times.sql")]
    said, named = MONDAY_3_MARCH, at(2025, 3, 14)
    with monkeypatch.context() as patched:
        patched.setitem(db.MIGRATIONS, "memory", before)
        with Stores(settings) as old:
            rows = [
                # The old offline writer dated a fact by the first date it named (00:00 UTC of that day).
                ("f1", "Kestrel's SDK won't be ready until March 14.", named, said, "ev1"),
                ("f2", "Sam loves hiking.", said, said, "ev2"),
                # An agent's remember_fact has no source event: its time is as given.
                ("f3", "Sam's passport expires in June.", at(2025, 6, 1), said, None),
            ]
            for fact_id, text, as_of, ingested_at, source in rows:
                old.conn.execute(
                    """INSERT INTO facts (id, text, as_of, ingested_at, source_event_id, created_at)
                       VALUES (?, ?, ?, ?, ?, ?)""",
                    (fact_id, text, as_of, ingested_at, source, said),
                )
                old.conn.execute("INSERT INTO fact_entities VALUES (?, 'ent1', ?)", (fact_id, as_of))
            assert "about_start" not in {r[1] for r in old.conn.execute("PRAGMA table_info(facts)")}
    with Stores(settings) as upgraded:
        got = {
            r["id"]: (r["as_of"], r["about_start"], r["about_end"], r["linked"])
            for r in upgraded.conn.execute(
                """SELECT f.id, f.as_of, f.about_start, f.about_end, fe.as_of AS linked FROM facts f
                   JOIN fact_entities fe ON fe.fact_id = f.id"""
            )
        }
        assert got == {
            "f1": (said, named, named + DAY_MS - 1, said),
            "f2": (said, None, None, said),
            "f3": (at(2025, 6, 1), None, None, at(2025, 6, 1)),
        }


def test_a_question_about_a_time_matches_facts_by_the_time_they_are_about(stores: Stores) -> None:
    def add(text: str, said: int, about: tuple[int, int] | None) -> str:
        return str(insert_fact(stores.conn, text, said, about=about, platform="imessage")["fact_id"])

    june_about_may = add(
        "Caroline ran the charity race on 10 May.", at(2023, 6, 2), (at(2023, 5, 10), at(2023, 5, 11) - 1)
    )
    said_in_may = add("Caroline painted a sunset over the lake.", at(2023, 5, 20), None)
    may_about_september = add(
        "Caroline's trip to Sweden is in September 2023.", at(2023, 5, 15), (at(2023, 9, 1), at(2023, 10, 1) - 1)
    )

    def found(query: str, **filters: int) -> list[str]:
        response = recall(stores, query, reference_time=at(2023, 7, 1), scope=["facts"], touch=False, **filters)
        return [r.id for r in response.results]

    # A date alone is the window: the time asked about. A fact about May said in June is in it; one said in
    # May about September is not; one that names no time is in it by when it was said.
    assert set(found("May 2023")) == {june_about_may, said_in_may}
    assert found("September 2023") == [may_about_september]
    # With words beside it, the window boosts: what it holds comes first (docs/recall.md, Dates in the query).
    assert set(found("what did Caroline do in May 2023")[:2]) == {june_about_may, said_in_may}
    assert found("what is Caroline doing in September 2023")[0] == may_about_september
    # time_after / time_before (search --after / --before): when it was said.
    assert set(found("Caroline", time_after=at(2023, 6, 1))) == {june_about_may}
    assert set(found("Caroline", time_before=at(2023, 5, 31))) == {said_in_may, may_about_september}


def test_the_llm_writer_validates_both_times_as_the_offline_writer_reads_them(stores: Stores) -> None:
    events = add_events(stores, [record(ALICE, "m1", "t1", "2025-03-03T16:00:00Z", f"FYI: {KESTREL}")])
    with FakeOpenAI() as fake:
        fake.add(document(doc(doc_fact(KESTREL, "e1", ("Kestrel", "organization")))))
        write_direct(stores, make_writer(fake, mode="structured"), events)
    (row,) = stores.conn.execute("SELECT text, as_of, about_start, about_end FROM facts").fetchall()
    assert "on Friday (on 28 February 2025)" in row["text"]
    assert (row["as_of"], row["about_start"], row["about_end"]) == (
        MONDAY_3_MARCH,
        at(2025, 2, 28),
        at(2025, 3, 14) + DAY_MS - 1,
    )
