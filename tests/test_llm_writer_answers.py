"""The LLM writer binds the offline writer's rules: a short answer is kept with the question it answers, a
duration is about the span since it began, and a question without its question mark is no fact. Against the
scripted server, through the real client."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.writer.base import EpisodeInput, WriteResult
from nexus_memory.writer.llm import LLMWriter
from nexus_memory.writer.tools import WriterTools
from tests.fake_openai import FakeOpenAI, document
from tests.test_llm_writer import DAY, add_events, make_writer, record

CAROLINE = {"platform": "imessage", "sender_id": "+15550111", "sender_name": "Caroline", "peer_kind": "dm"}
MELANIE = {"platform": "imessage", "sender_id": "+15550122", "sender_name": "Melanie", "peer_kind": "dm"}
ASK = record(CAROLINE, "q1", "t1", f"{DAY}T09:00:00Z", "Lovely to see you! What are your pets' names?")
ANSWER = record(MELANIE, "a1", "t1", f"{DAY}T09:01:00Z", "Luna and Oliver!")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def fact(text: str, ref: str, about: str = "") -> dict[str, Any]:
    return {"text": text, "source_ref": ref, "entities": [], "about": about}


def write(
    stores: Stores, fake: FakeOpenAI, records: list[dict[str, Any]], *facts: dict[str, Any], context: int = 0
) -> WriteResult:
    """One structured episode of `records` (the first `context` of them its context) whose model answers `facts`."""
    events = add_events(stores, records)
    fake.add(document({"facts": list(facts), "causal_links": [], "identity_claims": []}))
    writer: LLMWriter = make_writer(fake, mode="structured")
    episode = EpisodeInput(None, events[context:], events[:context])
    with stores.transaction():
        return writer.write(WriterTools(stores, "run1", writer=writer.name), episode)


def stored(stores: Stores) -> dict[str, tuple[str, int | None, int | None]]:
    rows = stores.conn.execute("SELECT text, source_event_id, about_start, about_end FROM facts")
    return {r["text"]: (r["source_event_id"], r["about_start"], r["about_end"]) for r in rows}


def ms(year: int, month: int = 1, day: int = 1) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(("ref", "context"), [("e2", 0), ("e1", 0), ("e1", 1)])
def test_a_short_answer_is_kept_with_the_question_it_answers(
    stores: Stores, fake: FakeOpenAI, ref: str, context: int
) -> None:
    # Cited as the answer, as the question (given the answer), or with the question in the thread's context.
    result = write(stores, fake, [ASK, ANSWER], fact("Melanie's pets are named Luna and Oliver.", ref), context=context)
    assert result.dropped == {}
    assert stored(stores) == {"Melanie's pets are named Luna and Oliver.": ("imessage:a1", None, None)}


def test_the_question_alone_grounds_no_fact_of_the_answer(stores: Stores, fake: FakeOpenAI) -> None:
    # Every word from the question, none from the reply: the question states nothing.
    result = write(stores, fake, [ASK, ANSWER], fact("Melanie has pets with names.", "e1"), context=1)
    assert result.dropped == {"fact:not_in_source": 1}
    assert stored(stores) == {}


@pytest.mark.parametrize(
    "asking",
    [
        "Lovely to see you! My pets' names are Bo and Rex.",  # no question
        "Did you name your pets?",  # a yes/no question: "Luna and Oliver" is not what it asks for
        "How are you doing?",  # small talk
    ],
)
def test_words_of_a_message_that_asked_nothing_are_not_the_answers(
    stores: Stores, fake: FakeOpenAI, asking: str
) -> None:
    before = record(CAROLINE, "q1", "t1", f"{DAY}T09:00:00Z", asking)
    result = write(stores, fake, [before, ANSWER], fact("Melanie's pets are named Luna and Oliver.", "e1"), context=1)
    assert result.dropped == {"fact:not_in_source": 1}


def test_a_question_asked_by_the_same_sender_is_no_question_put_to_them(stores: Stores, fake: FakeOpenAI) -> None:
    own = record(MELANIE, "q1", "t1", f"{DAY}T09:00:00Z", "What are my pets' names, you ask?")
    result = write(stores, fake, [own, ANSWER], fact("Melanie's pets are named Luna and Oliver.", "e1"), context=1)
    assert result.dropped == {"fact:not_in_source": 1}


def test_a_question_without_its_question_mark_is_dropped(stores: Stores, fake: FakeOpenAI) -> None:
    said = record(
        CAROLINE, "m1", "t1", f"{DAY}T09:00:00Z", "So has Melanie been up to anything. What book is Melanie reading."
    )
    result = write(
        stores,
        fake,
        [said],
        fact("So has Melanie been up to anything.", "e1"),
        fact("What book is Melanie reading.", "e1"),
    )
    assert result.dropped == {"fact:question": 2}


def test_a_duration_until_the_message_is_about_the_span_since_it_began(stores: Stores, fake: FakeOpenAI) -> None:
    said = record(
        CAROLINE,
        "m1",
        "t1",
        f"{DAY}T09:00:00Z",
        "I've been vegan for seven years now. I have lived in Leeds for four months.",
    )
    result = write(
        stores,
        fake,
        [said],
        fact("Caroline has been vegan for seven years now.", "e1", "2017/2024-05-01"),  # the model's since-span
        fact("Caroline has lived in Leeds for four months.", "e1"),  # none given: the text's reading
    )
    assert result.dropped == {}
    about = {text.split(" for ")[0]: (start, end) for text, (_src, start, end) in stored(stores).items()}
    day_end = ms(2024, 5, 2) - 1
    assert about == {
        "Caroline has been vegan": (ms(2017), day_end),
        "Caroline has lived in Leeds": (ms(2024, 1), day_end),
    }


def test_the_offline_writers_form_of_an_answer_is_kept(stores: Stores, fake: FakeOpenAI) -> None:
    text = "Asked \"What are Melanie's pets' names?\", Melanie answered: Luna and Oliver."
    result = write(stores, fake, [ASK, ANSWER], fact(text, "e2"))
    assert result.dropped == {}
    assert list(stored(stores)) == [text]
