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


def test_an_answer_that_a_pronoun_of_the_reply_refers_back_to_is_the_replys_own(
    stores: Stores, fake: FakeOpenAI
) -> None:
    # "them" puts the episode's names in the reply's context; the reply still says "Minnesota Wolves" itself.
    asking = record(CAROLINE, "q1", "t1", f"{DAY}T09:00:00Z", "Congrats on the new team! Which team did you sign with?")
    reply = record(MELANIE, "a1", "t1", f"{DAY}T09:01:00Z", "The Minnesota Wolves! I can't wait to play with them!")
    text = 'Asked "Which team did Melanie sign with?", Melanie answered: The Minnesota Wolves.'
    result = write(stores, fake, [asking, reply], fact(text, "e2"))
    assert result.dropped == {}
    assert stored(stores) == {text: ("imessage:a1", None, None)}


DANA = {"platform": "gmail", "sender_id": "dana@northwind.example", "sender_name": "Dana", "peer_kind": "dm"}
EMAIL = (
    "Subject: Quarterly offsite logistics\n\nHi all,\n\nWe moved the Atlas launch to March 25 because the vendor "
    "slipped.\n\nThanks,\nDana\nHead of Product, Northwind\n\nOn Mon, Mar 3, 2025 Sam wrote:\n"
    "> Any news on the launch date for us?\n> I heard the caterer might cancel again soon."
)


@pytest.mark.parametrize(
    ("said", "text", "kept"),
    [
        (EMAIL, "Dana moved the Atlas launch to March 25 because the vendor slipped.", True),
        (EMAIL, "Dana wrote about the quarterly offsite logistics.", False),  # the subject header
        (EMAIL, "Dana is Head of Product at Northwind.", False),  # the signature
        (EMAIL, "Dana heard the caterer might cancel again soon.", False),  # Sam's words, quoted
        ("That'd be great, thanks Ana! Send me the details.", "Melanie thanked Ana, that'd be great.", False),
        ("That'd be great, thanks Ana! Send me the details.", "Ana should send Melanie the details.", False),
        ("Jess said you're looking for a belay partner?", "Jess said someone is looking for a belay partner.", True),
    ],
)
def test_a_fact_comes_from_what_its_message_states_as_the_offline_writer_reads_it(
    stores: Stores, fake: FakeOpenAI, said: str, text: str, kept: bool
) -> None:
    """Not an email's headers, signature or quoted reply, not thanks, pleasantries or an errand of the moment; a
    statement put as a question is one."""
    sender = DANA if said == EMAIL else MELANIE
    result = write(stores, fake, [record(sender, "m1", "t1", f"{DAY}T09:00:00Z", said)], fact(text, "e1"))
    assert (list(stored(stores)) == [text], result.dropped) == (
        (True, {}) if kept else (False, {"fact:not_in_source": 1})
    )
