"""Two times on every fact: when it was said (facts.as_of) and the time it is about (about_start, about_end),
from the writer through the store's upgrade, observation lines and recall's time filters (docs/stores.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from nexus_memory.agents.tools import call_tool, tool_schemas
from nexus_memory.core import db
from nexus_memory.core.config import Settings
from nexus_memory.core.ids import now_ms
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
from tests.fake_openai import FakeOpenAI, document, tool_calls
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


# -- the time a model says a fact is about --------------------------------------------------------
def written_about(stores: Stores, mode: str, answer: dict[str, object], content: str) -> tuple[object, ...]:
    """Write one message said on Monday 3 March 2025 with the model's `answer`: (about_start, about_end, fixed)."""
    events = add_events(stores, [record(ALICE, "m1", "t1", "2025-03-03T16:00:00Z", content)])
    with FakeOpenAI() as fake:
        fake.add(document(answer))
        result = write_direct(stores, make_writer(fake, mode=mode), events)
    (row,) = stores.conn.execute("SELECT as_of, about_start, about_end FROM facts").fetchall()
    assert row["as_of"] == MONDAY_3_MARCH  # when it was said is always the message's time
    return row["about_start"], row["about_end"], dict(result.fixed)


LAUNCH = "The Atlas launch moves because the vendor slipped."


def about(text: str, value: str) -> dict[str, object]:
    return doc({**doc_fact(text, "e1"), "about": value})


def test_a_model_names_the_time_a_fact_is_about_when_the_text_does_not(stores: Stores) -> None:
    got = written_about(stores, "structured", about(LAUNCH, "2025-03-18/2025-03-25"), LAUNCH)
    assert got == (at(2025, 3, 18), at(2025, 3, 25) + DAY_MS - 1, {})


def test_a_model_month_or_year_is_the_whole_of_it(stores: Stores) -> None:
    got = written_about(stores, "structured", about(LAUNCH, "2025-04"), LAUNCH)
    assert got == (at(2025, 4, 1), at(2025, 5, 1) - 1, {})


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("next spring", "not an ISO date"),
        ("2025-02-30", "no such day"),
        ("2025-03-25/2025-03-18", "ends before it starts"),
        ("1890", "over a hundred years before the message"),
        ("2099-01-01", "decades after the message"),
        ("2025-03-03", "the day it was said, for a text that names no time"),
    ],
)
def test_an_about_time_validation_cannot_accept_falls_back_to_the_text(stores: Stores, value: str, why: str) -> None:
    got = written_about(stores, "structured", about(LAUNCH, value), LAUNCH)
    assert got == (None, None, {"fact:about_from_text": 1}), why


def test_the_model_cannot_contradict_the_date_the_text_names(stores: Stores) -> None:
    # Said on Monday 3 March: "told us on Friday" is 28 February; the model's 7 March is the wrong Friday.
    told = "Kestrel told us on Friday that the SDK slipped."
    got = written_about(stores, "structured", about(told, "2025-03-07"), told)
    assert got == (at(2025, 2, 28), at(2025, 2, 28) + DAY_MS - 1, {"fact:about_from_text": 1})
    # A reading that agrees with the text (it overlaps the text's own dates) is the model's.
    stores.conn.execute("DELETE FROM facts")
    got = written_about(stores, "structured", about(told, "2025-02-24/2025-02-28"), told)
    assert got == (at(2025, 2, 24), at(2025, 2, 28) + DAY_MS - 1, {})


def test_quote_mode_takes_the_picked_sentence_about_time(stores: Stores) -> None:
    answer = {"facts": [{"sentence": LAUNCH, "about": "2025-03-25"}]}
    assert written_about(stores, "quote", answer, LAUNCH) == (at(2025, 3, 25), at(2025, 3, 26) - 1, {})


def test_a_document_without_about_reads_the_text_as_before(stores: Stores) -> None:
    told = "Kestrel told us on Friday that the SDK slipped."
    got = written_about(stores, "structured", doc(doc_fact(told, "e1")), told)
    assert got == (at(2025, 2, 28), at(2025, 3, 1) - 1, {})


def test_the_schema_sent_asks_for_the_about_time(stores: Stores) -> None:
    events = add_events(stores, [record(ALICE, "m1", "t1", "2025-03-03T16:00:00Z", LAUNCH)])
    with FakeOpenAI() as fake:
        fake.add(document(doc()), document({"facts": []}))
        write_direct(stores, make_writer(fake, mode="structured"), events)
        write_direct(stores, make_writer(fake, mode="quote"), events)
    for request in fake.requests:
        item = request["response_format"]["json_schema"]["schema"]["properties"]["facts"]["items"]
        assert item["properties"]["about"] == {"type": "string", "maxLength": 21} and "about" in item["required"]


def test_the_tool_loop_about_time_is_judged_by_the_same_rules(stores: Stores) -> None:
    told = "Kestrel told us on Friday that the SDK slipped."
    content = f"{LAUNCH} {told} The retro follows the launch."
    events = add_events(stores, [record(ALICE, "m1", "t1", "2025-03-03T16:00:00Z", content)])
    launch = {"text": LAUNCH, "source_event_id": "e1", "about_start": "2025-03-18", "about_end": "2025-03-25"}
    wrong_friday = {"text": told, "source_event_id": "e1", "about_start": "2025-03-07"}
    retro = {"text": "The retro follows the launch.", "source_event_id": "e1", "about_start": "2025-04"}
    with FakeOpenAI() as fake:
        calls = [("insert_fact", launch), ("insert_fact", wrong_friday), ("insert_fact", retro)]
        fake.add(tool_calls(*calls), tool_calls(("finish", {})))
        result = write_direct(stores, make_writer(fake, mode="tools"), events)
    got = {r["text"]: (r["about_start"], r["about_end"]) for r in stores.conn.execute("SELECT * FROM facts")}
    assert got == {
        LAUNCH: (at(2025, 3, 18), at(2025, 3, 25) + DAY_MS - 1),  # an ISO day as about_end is the whole day
        "The retro follows the launch.": (at(2025, 4, 1), at(2025, 5, 1) - 1),  # a month alone is all of it
        "Kestrel told us on Friday (on 28 February 2025) that the SDK slipped.": (
            at(2025, 2, 28),
            at(2025, 2, 28) + DAY_MS - 1,
        ),
    }
    assert result.fixed == {"fact:about_from_text": 1}


# -- an agent's remember_fact / correct_fact ---------------------------------------------------------
def stored_times(stores: Stores, fact_id: str) -> tuple[int, int | None, int | None]:
    row = stores.conn.execute("SELECT as_of, about_start, about_end FROM facts WHERE id = ?", (fact_id,)).fetchone()
    return row["as_of"], row["about_start"], row["about_end"]


def test_remember_and_correct_take_the_time_a_fact_is_about(stores: Stores) -> None:
    before = now_ms()
    remembered = call_tool(
        stores, "remember_fact", {"text": "Sam's passport expires in June.", "about_start": "2026-06"}
    )
    said, start, end = stored_times(stores, remembered["fact_id"])
    assert said >= before and (start, end) == (at(2026, 6, 1), at(2026, 7, 1) - 1)  # said now, about June
    corrected = call_tool(
        stores,
        "correct_fact",
        {
            "fact_id": remembered["fact_id"],
            "new_text": "Sam's passport expires between May and July.",
            "about_start": "2026-05",
            "about_end": "2026-07",
        },
    )
    assert stored_times(stores, corrected["fact_id"])[1:] == (at(2026, 5, 1), at(2026, 8, 1) - 1)
    span = call_tool(stores, "remember_fact", {"text": "Dana is off.", "about_start": "2026-03-18/2026-03-25"})
    assert stored_times(stores, span["fact_id"])[1:] == (at(2026, 3, 18), at(2026, 3, 26) - 1)
    plain = call_tool(stores, "remember_fact", {"text": "Sam loves hiking."})
    assert stored_times(stores, plain["fact_id"])[1:] == (None, None)


@pytest.mark.parametrize(
    ("text", "about"),
    [
        ("Dana's launch moved to 25 March 2025.", (at(2025, 3, 25), at(2025, 3, 26) - 1)),
        ("I start at Acme next Monday.", (at(2025, 3, 10), at(2025, 3, 11) - 1)),  # said Monday 3 March
        ("Kestrel told us on Friday that the SDK slipped.", (at(2025, 2, 28), at(2025, 3, 1) - 1)),  # past: back
        ("The launch moves from March 18 to March 25.", (at(2025, 3, 18), at(2025, 3, 26) - 1)),
        ("Sam loves hiking.", (None, None)),
    ],
)
def test_remember_without_an_about_time_reads_the_one_its_text_names(
    stores: Stores, monkeypatch: pytest.MonkeyPatch, text: str, about: tuple[int | None, int | None]
) -> None:
    monkeypatch.setattr("nexus_memory.agents.tools.fact_writes.now_ms", lambda: MONDAY_3_MARCH)
    remembered = call_tool(stores, "remember_fact", {"text": text})
    assert stored_times(stores, remembered["fact_id"]) == (MONDAY_3_MARCH, *about)
    assert remembered["text"] == text  # the person's words are stored as given


def test_an_explicit_about_time_wins_over_the_one_the_text_names(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("nexus_memory.agents.tools.fact_writes.now_ms", lambda: MONDAY_3_MARCH)
    given = {"text": "I start at Acme next Monday.", "about_start": "2025-03-17"}
    remembered = call_tool(stores, "remember_fact", given)
    assert stored_times(stores, remembered["fact_id"])[1:] == (at(2025, 3, 17), at(2025, 3, 18) - 1)
    corrected = call_tool(
        stores, "correct_fact", {"fact_id": remembered["fact_id"], "new_text": "I start at Acme on 24 March."}
    )
    assert stored_times(stores, corrected["fact_id"])[1:] == (at(2025, 3, 24), at(2025, 3, 25) - 1)


@pytest.mark.parametrize(
    ("about", "error"),
    [
        ({"about_start": "next June"}, "not an ISO date"),
        ({"about_start": "2026-06-30", "about_end": "2026-06-01"}, "before it starts"),
        ({"about_end": "2026-06-01"}, "about_end needs about_start"),
        ({"about_start": "1931"}, "between 1970 and 2100"),
    ],
)
def test_an_about_time_that_cannot_be_stored_is_refused_with_the_reason(
    stores: Stores, about: dict[str, str], error: str
) -> None:
    answer = call_tool(stores, "remember_fact", {"text": "Sam's passport expires.", **about})
    assert error in answer["error"]
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0


def test_the_write_tools_say_what_the_about_time_is() -> None:
    schemas = {s["function"]["name"]: s["function"]["parameters"] for s in tool_schemas()}
    for name in ("remember_fact", "correct_fact"):
        described = schemas[name]["properties"]["about_start"]["description"]
        assert "not when it was said" in described and "2025-03-14" in described
