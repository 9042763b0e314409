"""Quote mode (`NEXUS_LLM_MODE=quote`): a model too small to write a fact only picks sentences of the new events,
which the grammar makes it copy exactly; each is written in the third person and judged by the same validation,
so what is kept is said by construction (docs/writer.md, "Quote mode")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.bench.extract import conversation_sessions
from nexus_memory.core.stores import Stores
from nexus_memory.events import ledger
from nexus_memory.facts.grounding import example_text
from nexus_memory.pipeline.layers import run_layer
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.llm.episode import load_prompt
from nexus_memory.writer.llm.model_tools import FactDropped, ModelTools
from nexus_memory.writer.llm.structured import quote_candidates
from nexus_memory.writer.llm.validation import EpisodeView, stored_grounding
from nexus_memory.writer.run import write_events
from nexus_memory.writer.tools import WriterTools
from tests.fake_openai import FakeOpenAI, Reply, document, tool_calls
from tests.test_llm_grounding import add_runner_episodes
from tests.test_llm_structured import doc, fact_texts, write_direct
from tests.test_llm_structured import fact as doc_fact
from tests.test_llm_writer import ALICE, DAY, RECORDS, add_events, count, make_writer, processing, record

LOCOMO = "/work/shared/data/locomo/locomo_dev.json"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def picks(*sentences: str) -> dict[str, Any]:
    return {"facts": [{"sentence": s} for s in sentences]}


def offered(request: dict[str, Any]) -> list[str]:
    """The sentences the request's schema lets the model pick."""
    schema = request["response_format"]["json_schema"]["schema"]
    return list(schema["properties"]["facts"]["items"]["properties"]["sentence"]["enum"])


def offered_for(stores: Stores, fake: FakeOpenAI, who: dict[str, Any], text: str) -> list[str]:
    """The sentences quote mode offers for one message of `who`."""
    events = add_events(stores, [record(who, "q1", "t9", f"{DAY}T10:00:00Z", text)])
    fake.add(document(picks()))
    write_direct(stores, make_writer(fake, mode="quote"), events)
    return offered(fake.requests[0])


def test_the_model_picks_sentences_and_they_are_written_in_the_third_person(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document(picks("Big news: I started at Acme this week.", "Miso the cat too.")))
    result = write_direct(stores, make_writer(fake, mode="quote"), events)

    # Greetings of under three words and questions are no candidates; each sentence is offered once.
    assert offered(fake.requests[0]) == [
        "Big news: I started at Acme this week.",
        "We moved to Berlin because Acme opened an office there.",
        "Miso the cat too.",
    ]
    assert "Sentences you may pick:\n- Big news" in fake.requests[0]["messages"][1]["content"]
    assert result.mode == "quote" and result.dropped == {}
    assert fact_texts(stores) == [
        "Big news: Alice started at Acme this week (the week of 29 April 2024).",  # "I" is the sender
        "Miso the cat too.",
    ]
    sources = {r[0]: r[1] for r in stores.conn.execute("SELECT text, source_event_id FROM facts")}
    assert sorted(set(sources.values())) == ["imessage:m1", "imessage:m2"]
    assert all(json.loads(r[0])["mode"] == "quote" for r in stores.conn.execute("SELECT metadata FROM facts"))


def test_a_sentence_not_offered_or_picked_twice_is_dropped(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    # A server that does not enforce the enum lets a model write its own sentence: it is not kept.
    answer = picks(
        "Alice moved to Porto.", "Big news: I started at Acme this week.", "Big news: I started at Acme this week."
    )
    fake.add(document(answer))
    result = write_direct(stores, make_writer(fake, mode="quote"), events)
    assert result.dropped == {"fact:not_a_sentence": 1, "fact:picked_twice": 1}
    assert count(stores, "facts") == 1 and "Porto" not in " ".join(fact_texts(stores))


def test_an_episode_with_nothing_to_pick_is_ok(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[2:])  # "lol ok see you"
    fake.add(document(picks()))
    outcome = write_events(stores, events, make_writer(fake, mode="quote"))
    assert (outcome.status, outcome.mode, outcome.facts) == ("ok", "quote", 0)


def test_what_the_offline_writer_would_not_keep_is_not_offered(stores: Stores, fake: FakeOpenAI) -> None:
    text = (
        "Hey Mel! Good to see you! That's really cool. Thanks so much, Mel. Send me the details. "
        "I signed up for a pottery class on Tuesdays."
    )
    assert offered_for(stores, fake, ALICE, text) == ["I signed up for a pottery class on Tuesdays."]


@pytest.mark.skipif(not Path(LOCOMO).is_file(), reason="LoCoMo dev data is not here")
def test_every_sentence_a_model_can_pick_is_grounded(stores: Stores) -> None:
    """By construction: on the first sessions of LoCoMo dev, each candidate, picked, is kept or dropped only as
    a question or as saying nothing, and what is kept passes the grounding rule computed from the stored text."""
    data = json.loads(Path(LOCOMO).read_text(encoding="utf-8"))
    episodes = [session for sample in data for session in conversation_sessions(sample)[:2]]
    with stores.transaction():
        for session in episodes:
            for event in session:
                ledger.append_event(stores, event)
    kept = reasons = answers = 0
    for session in episodes:
        episode = EpisodeInput(None, session)
        tools = WriterTools(stores, "run-q", None, writer="llm:test")
        view = EpisodeView(ModelTools(tools, episode), episode)
        for ref, sentence in quote_candidates(episode, view.asked, view.speakers):
            event = session[int(ref[1:]) - 1]
            try:
                checked = view.check(sentence, event)
            except FactDropped as exc:
                assert exc.reason in ("empty", "question", "repetitive"), (sentence, exc.reason, exc.detail)
                reasons += 1
                continue
            kept += 1
            if sentence.startswith('Asked "'):
                # A short answer is grounded on the reply and the question put to it (`EpisodeView.answered`).
                assert checked.event.id == event.id and view.answered(checked.text, event) is not None, checked.text
                answers += 1
                continue
            speaker, peer = view.speaker(checked.event), view.peer(checked.event)
            assert stored_grounding(checked.text, checked.event, speaker, peer).grounded, checked.text
    assert kept > 100 and reasons < kept / 10 and answers > 0


# -- auto: a model too small to write facts ---------------------------------------------------------
def is_quote(request: dict[str, Any]) -> bool:
    return "sentence" in json.dumps(request.get("response_format", {}))


def tiny_model(request: dict[str, Any]) -> Reply:
    """A model whose tool loop never finishes and whose structured facts are the prompt's example moved onto
    the speaker (what SmolLM2-135M does); asked to pick sentences, it picks the first one offered."""
    if "tools" in request:
        return tool_calls(("recall", {"query": "running"}))
    if is_quote(request):
        return document(picks(*offered(request)[:1]))
    speaker = re.search(r"speaker=(\S+)", request["messages"][1]["content"])
    assert speaker is not None
    example = doc_fact(f"{speaker.group(1)} moved to Porto.", "e1", (speaker.group(1), "person"))
    return document(doc(example))


def test_auto_quotes_when_structured_mode_writes_only_what_was_not_said(stores: Stores, fake: FakeOpenAI) -> None:
    add_runner_episodes(stores, " with my sister")
    fake.add(*[tiny_model] * 80)
    writer = make_writer(fake, mode="auto", max_steps=4)
    report = run_layer(stores, "facts", "imessage", [DAY], writer=writer)

    rows = processing(stores)
    assert sum(1 for r in rows if r["status"] == "ok" and r["facts_written"] > 0) >= 9  # >= 90%: here every one
    assert {r["mode"] for r in rows} == {"quote"} and report.details["ok"] == 10
    assert not any("Porto" in text for text in fact_texts(stores))  # the example never lands, undone or dropped
    assert fact_texts(stores)[0] == "Runner0 ran 3 km on Sunday (on 28 April 2024) with Runner0's sister."
    # Two episodes tried the tool loop (4 steps each) and structured mode, then quoted; both were then off.
    assert writer.tools_off and writer.structured_off
    kinds = ["tools" if "tools" in r else "quote" if is_quote(r) else "structured" for r in fake.requests]
    assert kinds == 2 * (["tools"] * 4 + ["structured", "quote"]) + ["quote"] * 8


def test_structured_mode_alone_does_not_quote(stores: Stores, fake: FakeOpenAI) -> None:
    """Only auto changes mode: NEXUS_LLM_MODE=structured keeps what it asked for, and keeps the example out."""
    events = add_events(stores, RECORDS[:1])
    fake.add(document(doc(doc_fact("Alice moved to Porto.", "e1", ("Alice", "person")))))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)
    assert result.mode == "structured" and count(stores, "facts") == 0 and len(fake.requests) == 1


def test_auto_quotes_when_structured_mode_gives_no_valid_document(stores: Stores, fake: FakeOpenAI) -> None:
    """A model that loops until the length limit (timestamps, "I'm a person, ...") gives no valid document."""
    events = add_events(stores, RECORDS[:1])
    writer = make_writer(fake, mode="auto", max_retries=1, tool_episode_s=0)
    writer.tools_off = "a test: the tool loop is off"
    fake.add(document('{"facts": [{"text": "2023-05-08T13:56:02Z:2023-05-08'), document("{not json"))
    fake.add(document(picks("Big news: I started at Acme this week.")))
    result = write_direct(stores, writer, events)
    assert result.mode == "quote" and "structured mode failed" in result.fallback and writer.unsaid == 1
    assert [is_quote(r) for r in fake.requests] == [False, False, True] and count(stores, "facts") == 1


def test_an_emails_headers_quoted_reply_and_signature_are_not_offered(stores: Stores, fake: FakeOpenAI) -> None:
    email = {"platform": "gmail", "sender_id": "dana@northwind.example", "sender_name": "Dana", "peer_kind": "dm"}
    body = (
        "Subject: Atlas launch moving to March 25\n\nHi all,\n\nWe moved the Atlas launch to March 25 because the "
        "vendor slipped.\n\nThanks,\nDana\nHead of Product, Northwind\n\nOn Mon, Mar 3, 2025 Sam wrote:\n"
        "> Any news on the launch date for us?\n> I heard it might move again soon."
    )
    assert offered_for(stores, fake, email, body) == [
        "We moved the Atlas launch to March 25 because the vendor slipped."
    ]


# -- a short reply to a question put to its sender: offered with the question, as the offline writer keeps it --
CAROLINE = {"platform": "imessage", "sender_id": "+15550111", "sender_name": "Caroline", "peer_kind": "dm"}
MELANIE = {"platform": "imessage", "sender_id": "+15550122", "sender_name": "Melanie", "peer_kind": "dm"}
ASKED = "Asked \"What are Melanie's pets' names?\", I answered: "


def offered_replies(
    stores: Stores, fake: FakeOpenAI, asking: str, reply: str, asker: dict[str, Any] = CAROLINE
) -> list[str]:
    """The sentences quote mode offers for a message of `asker` and Melanie's reply to it."""
    events = add_events(
        stores,
        [
            record(asker, "q1", "t1", f"{DAY}T09:00:00Z", asking),
            record(MELANIE, "a1", "t1", f"{DAY}T09:01:00Z", reply),
        ],
    )
    fake.add(document(picks()))
    write_direct(stores, make_writer(fake, mode="quote"), events)
    return [s for s in offered(fake.requests[0]) if s]  # [""]: nothing to pick


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Luna and Oliver!", [ASKED + "Luna and Oliver."]),  # says nothing alone: offered with the question
        ("Thanks! Luna and Oliver.", [ASKED + "Luna and Oliver."]),  # courtesy first, then the answer
        ("Nice!", []),  # says nothing at all
        ("Thanks so much!", []),  # courtesy
        ("Caroline!", []),  # a name alone
        ("Caroline! Luna and Oliver.", [ASKED + "Luna and Oliver."]),  # a name alone first, then the answer
        ("We adopted them last year. Luna and Oliver.", ["We adopted them last year."]),  # the first word answers
        ("My two cats are called Luna and Oliver.", ["My two cats are called Luna and Oliver."]),  # reads alone
    ],
)
def test_a_short_answer_is_offered_with_its_question_by_class(
    stores: Stores, fake: FakeOpenAI, reply: str, expected: list[str]
) -> None:
    assert offered_replies(stores, fake, "Lovely to see you! What are your pets' names?", reply) == expected


@pytest.mark.parametrize(
    "asking",
    [
        "Lovely to see you! My pets' names are Bo and Rex.",  # no question
        "How are you doing?",  # small talk
    ],
)
def test_a_short_reply_to_no_question_is_not_offered(stores: Stores, fake: FakeOpenAI, asking: str) -> None:
    assert not any("Luna" in s for s in offered_replies(stores, fake, asking, "Luna and Oliver!"))


def test_a_reply_to_a_question_put_to_someone_else_is_not_offered(stores: Stores, fake: FakeOpenAI) -> None:
    to_bob = CAROLINE | {"peer_kind": "group", "peer_id": "+15550133"}
    group = MELANIE | {"peer_kind": "group", "peer_id": "+15550111"}
    events = add_events(
        stores,
        [
            record(to_bob, "q1", "t1", f"{DAY}T09:00:00Z", "What are your pets' names?"),
            record(group, "a1", "t1", f"{DAY}T09:01:00Z", "Luna and Oliver!"),
        ],
    )
    fake.add(document(picks()))
    write_direct(stores, make_writer(fake, mode="quote"), events)
    assert offered(fake.requests[0]) == [""]  # nothing to pick


def test_a_picked_answer_is_written_with_its_question_and_attributed_to_the_sender(
    stores: Stores, fake: FakeOpenAI
) -> None:
    events = add_events(
        stores,
        [
            record(CAROLINE, "q1", "t1", f"{DAY}T09:00:00Z", "Lovely to see you! What are your pets' names?"),
            record(MELANIE, "a1", "t1", f"{DAY}T09:01:00Z", "Luna and Oliver!"),
        ],
    )
    fake.add(document(picks(ASKED + "Luna and Oliver.")))
    result = write_direct(stores, make_writer(fake, mode="quote"), events)
    assert result.dropped == {}
    rows = stores.conn.execute("SELECT text, source_event_id, metadata FROM facts").fetchall()
    assert [(r[0], r[1], json.loads(r[2])["mode"]) for r in rows] == [
        ("Asked \"What are Melanie's pets' names?\", Melanie answered: Luna and Oliver.", "imessage:a1", "quote")
    ]
    # The same sentence as a question of its own (not put to Melanie) has nothing to ground it: dropped.
    fake.add(document(picks(ASKED + "Rex and Bo.")))
    assert write_direct(stores, make_writer(fake, mode="quote"), events).dropped == {"fact:not_a_sentence": 1}


def test_the_quote_prompt_shows_nothing_a_model_could_copy_as_a_fact() -> None:
    """No sentence to pick (the grammar only lets a model copy the episode's) and no example fact: what the
    prompt shows is placeholders and the forms of an about-time, which validation does not take as a fact's."""
    prompt = load_prompt("writer_quote")
    assert example_text(prompt).split("\n") == ["<a listed sentence>", "<its time, or empty>"]
    assert "Example" not in prompt


@pytest.mark.parametrize(
    ("about", "kept"), [("2024-06", None), ("2024", None), ("2023-11", (1698796800000, 1701388799999))]
)
def test_an_about_time_copied_from_the_prompt_is_not_kept_for_a_text_naming_no_time(
    stores: Stores, fake: FakeOpenAI, about: str, kept: tuple[int, int] | None
) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(document({"facts": [{"sentence": "Miso the cat too.", "about": about}]}))
    result = write_direct(stores, make_writer(fake, mode="quote"), events)
    row = stores.conn.execute("SELECT text, about_start, about_end FROM facts").fetchone()
    assert (row[0], (row[1], row[2]) if row[1] is not None else None) == ("Miso the cat too.", kept)
    assert result.fixed == ({"fact:about_from_text": 1} if kept is None else {})
