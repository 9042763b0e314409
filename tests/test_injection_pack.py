"""The context block's facts: one recall per block, day headings instead of a date per line, the time a
fact is about deciding whether it is about the time the prompt asks about, and short source messages
shown whole in place of their facts."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.events.ledger import Event, RawRecord, ingest, parse_event
from nexus_memory.facts import state as fact_state
from nexus_memory.injection import pack as pack_module
from nexus_memory.injection.context import get_context
from nexus_memory.injection.pack import Recalled, heading_tokens, pack
from nexus_memory.injection.relevance import PromptReading, is_evidence
from nexus_memory.recall.results import RecallResult
from nexus_memory.writer.extractor import extract
from tests.test_recall import DAY, JUNE_2023, MAY_2023, FakeEmbedder, add_fact, add_mental_model, embed_all


def _result(fact_id: str, text: str, as_of: int | None = None, similarity: float = 0.6) -> RecallResult:
    return RecallResult(
        fact_id, "fact", text, 0.0, as_of, [f"ev-{fact_id}"], [], {"semantic": 1}, None, None, None,
        metadata={"scores": {"semantic": similarity}},
    )  # fmt: skip


def test_facts_are_shown_under_the_day_they_were_said(stores: Stores) -> None:
    add_fact(stores, "Sarah bought pottery clay in Lisbon", as_of=JUNE_2023, session_id="old")
    add_fact(stores, "Sarah took a pottery class in Porto", as_of=MAY_2023, session_id="old")
    add_fact(stores, "Sarah glazed the pottery bowl in Porto", as_of=MAY_2023 + 60_000, session_id="old")
    embed_all(stores, FakeEmbedder())
    block = get_context(stores, "Sarah pottery Porto Lisbon", session_id="now", embedder=FakeEmbedder(), strict=True)
    lines = block.splitlines()
    assert lines[0] == "## Relevant memory"
    # Each day once, as a heading, in the order said; the lines under it carry no date of their own.
    assert [line for line in lines if line.startswith("### ")] == ["### 10 May 2023", "### 20 June 2023"]
    may, june = lines.index("### 10 May 2023"), lines.index("### 20 June 2023")
    assert set(lines[may + 1 : june]) == {
        "- Sarah took a pottery class in Porto",
        "- Sarah glazed the pottery bowl in Porto",
    }
    assert lines[june + 1] == "- Sarah bought pottery clay in Lisbon"


def test_the_budget_pays_for_a_day_heading_once(stores: Stores) -> None:
    same_day = [_result(f"f{i}", f"Alice Chen ran {i + 10} km at dawn", MAY_2023 + i) for i in range(4)]
    items = pack(stores, "How far does Alice run?", Recalled([], same_day), max_tokens=800)
    assert [item.title for item in items] == ["10 May 2023", "", "", ""]
    spent = heading_tokens("fact") + sum(item.tokens for item in items)  # item.tokens counts its day heading
    assert spent <= 800
    # A budget that holds the section heading, the day heading and one line holds no second line.
    tight_budget = heading_tokens("fact") + items[0].tokens
    tight = pack(stores, "How far does Alice run?", Recalled([], same_day), max_tokens=tight_budget)
    assert [item.id for item in tight] == ["f0"]
    assert not pack(stores, "How far does Alice run?", Recalled([], same_day), max_tokens=tight_budget - 1)


def test_a_fact_that_repeats_the_block_waits_for_the_end(stores: Stores) -> None:
    """A rewording of a line already shown is placed only after the facts that add something, while budget is left."""
    facts = [
        _result("f1", "Alice Chen ran ten kilometres along the river at dawn", MAY_2023),
        _result("f2", "Alice Chen ran along the river at dawn", MAY_2023 + 1),
        _result("f3", "Alice Chen bought trail shoes in Denver", MAY_2023 + 2),
    ]
    roomy = pack(stores, "Where does Alice run?", Recalled([], facts), max_tokens=800)
    assert [item.id for item in roomy] == ["f1", "f2", "f3"]  # budget left: the rewording is shown too
    # f1 with its day heading, then f3; the rewording (shorter than f3) would fit instead
    room = heading_tokens("fact") + roomy[0].tokens + roomy[2].tokens
    tight = pack(stores, "Where does Alice run?", Recalled([], facts), max_tokens=room)
    assert [item.id for item in tight] == ["f1", "f3"]


NOTHING = PromptReading(named=frozenset(), strangers=(), rare_terms=())
JUNE = (JUNE_2023 - 5 * DAY, JUNE_2023 + 5 * DAY)


@pytest.mark.parametrize(
    ("said", "about", "expected"),
    [
        (MAY_2023, (JUNE_2023, JUNE_2023 + DAY), True),  # said in May about a day in June: about June
        (JUNE_2023, (MAY_2023, MAY_2023 + DAY), False),  # said in June about May: not about June
        (JUNE_2023, None, True),  # names no time: the day it was said stands in
        (MAY_2023, (MAY_2023, JUNE_2023), True),  # a span reaching into June
    ],
)
def test_the_time_a_fact_is_about_decides_the_window(said: int, about: tuple[int, int] | None, expected: bool) -> None:
    weak = RecallResult(
        "f1", "fact", "text", 0.0, said, [], [], {"semantic": 1}, None, None, None,
        metadata={"scores": {"semantic": 0.33}},
    )  # fmt: skip
    assert is_evidence(weak, NOTHING, False, window=JUNE, about_time=about) is expected


def test_one_recall_per_block(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    """Models, observations and facts come from one recall (one embedding, one search, one fusion)."""
    add_mental_model(stores, "Sarah", "Sarah plans a pottery party every year")
    add_fact(stores, "Sarah took a pottery class in Porto", session_id="old")
    embed_all(stores, FakeEmbedder())
    calls: list[Any] = []
    real = pack_module.recall

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("scope"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pack_module, "recall", counted)
    block = get_context(stores, "Sarah pottery party", embedder=FakeEmbedder(), strict=True)
    assert calls == [["mental_models", "observations", "facts"]]
    assert "pottery class in Porto" in block


def _message(stores: Stores, source_id: str, sender: str, text: str, as_of: int = MAY_2023) -> str:
    """One chat message in the ledger; its event id."""
    record = {"id": source_id, "platform": "discord", "sender_id": sender.lower(), "sender_name": sender}
    record |= {"thread_id": "t-old", "content": text, "as_of": as_of}
    ingest(stores, [RawRecord("t", 0, record, json.dumps(record))])
    return parse_event(record).id


def _fact_of(fact_id: str, text: str, event_id: str, as_of: int = MAY_2023) -> RecallResult:
    result = _result(fact_id, text, as_of)
    result.source_event_ids = [event_id]
    return result


PETS = "Luna and Oliver! They are so sweet and playful. We got another cat named Bailey too."


def test_a_short_message_is_shown_whole_once_for_its_facts(stores: Stores) -> None:
    """The answer sits in the sentence beside the recalled one: the message shows it, once, with its speaker."""
    event = _message(stores, "m1", "Melanie", PETS)
    facts = [
        _fact_of("f1", "Melanie said they are so sweet and playful.", event),
        _fact_of("f2", "Melanie got another cat named Bailey.", event),
    ]
    items = pack(stores, "What are Melanie's pets' names?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [[f"- Melanie: {PETS}"]]
    assert items[0].shown_fact_ids == ["f1", "f2"]  # provenance: the facts it stands for
    assert items[0].source_event_ids == [event]


def test_a_long_message_is_shown_as_its_facts(stores: Stores) -> None:
    email = " ".join(["The vendor slipped, so the launch moves to 25 March."] * 40)  # over MESSAGE_TOKENS
    assert pack_module.estimate_tokens(email) > pack_module.MESSAGE_TOKENS
    event = _message(stores, "m2", "Dana", email)
    facts = [_fact_of("f1", "The launch moves to 25 March because the vendor slipped.", event)]
    items = pack(stores, "Why did the launch move?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [["- The launch moves to 25 March because the vendor slipped."]]


@pytest.mark.parametrize(
    "email",
    [
        "Subject: Launch moving\nThe vendor slipped, so the launch moves to 25 March.",
        "The vendor slipped, so the launch moves to 25 March.\n\nThanks,\nDana",
        "The launch moves to 25 March.\n\nOn Mon, 3 Mar 2025, Sam wrote:\n> Any news on the launch?",
    ],
)
def test_a_short_email_is_shown_as_its_facts(stores: Stores, email: str) -> None:
    """A subject line, a sign-off or a quoted reply is not what the sender said: the facts stand for it."""
    event = _message(stores, "m4", "Dana", email)
    facts = [_fact_of("f1", "The launch moves to 25 March because the vendor slipped.", event)]
    items = pack(stores, "Why did the launch move?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [["- The launch moves to 25 March because the vendor slipped."]]


def test_a_message_with_a_hidden_fact_is_not_shown(stores: Stores) -> None:
    """A corrected fact must not come back through the message it was read from."""
    event = _message(stores, "m3", "Sam", "I live in Boston. I work at Acme.")
    wrong = add_fact(stores, "Sam lives in Boston.", source_event_id=event)
    fact_state.hide(stores.conn, [wrong], "corrected", MAY_2023)
    facts = [_fact_of("f1", "Sam works at Acme.", event)]
    items = pack(stores, "Where does Sam work?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [["- Sam works at Acme."]]


def test_messages_fill_only_their_share_of_the_budget(stores: Stores) -> None:
    """Past MESSAGE_SHARE of the budget the facts follow as themselves, so the ranking keeps its depth."""
    facts, lines = [], []
    for i in range(12):
        text = f"I ran {i + 10} km at dawn today. It was cold but the view was great."
        event = _message(stores, f"n{i}", "Alice", text)
        facts.append(_fact_of(f"f{i}", f"Alice ran {i + 10} km at dawn", event, MAY_2023 + i))
        lines.append(f"- Alice: {text}")
    # A budget that would hold every message whole.
    budget = (
        sum(pack_module.estimate_tokens(line) for line in lines) + pack_module.estimate_tokens("### 10 May 2023") + 1
    )
    items = pack(stores, "How far does Alice run?", Recalled([], facts), max_tokens=budget)
    whole = [item for item in items if item.lines[0].startswith("- Alice: ")]
    assert 0 < len(whole) < len(items)  # some messages, then facts
    assert sum(item.tokens for item in whole) <= budget * pack_module.MESSAGE_SHARE
    # The messages are the best-ranked facts' turns; the rest are shown as facts, every turn once.
    assert {item.id for item in whole} == {f"f{i}" for i in range(len(whole))}
    assert len(items) == 12


def test_a_message_carries_the_dates_its_facts_resolved(stores: Stores) -> None:
    """ "Yesterday" in the message is a day only its fact names: the block keeps the day."""
    event = _message(stores, "m4", "Jon", "I lost my job yesterday. Time to start the dance studio!", MAY_2023)
    facts = [_fact_of("f1", "Jon lost Jon's job yesterday (on 9 May 2023).", event)]
    items = pack(stores, "When did Jon lose his job?", Recalled([], facts), max_tokens=800)
    assert items[0].lines == ["- Jon: I lost my job yesterday. Time to start the dance studio! (on 9 May 2023)"]


def test_a_message_that_answers_a_question_carries_the_question(stores: Stores) -> None:
    """ "5 years already!" alone says nothing: the writer kept it with the question put to it, and so does the
    block."""
    asked = Event("q", "test", "Caroline", "How long have you been married?", MAY_2023 - 60_000, peer_id="Melanie")
    answer = Event("a", "test", "Melanie", "5 years already! Time flies.", MAY_2023, peer_id="Caroline")
    facts = extract([replace(answer, peer_kind="dm")], context=[replace(asked, peer_kind="dm")]).facts
    assert facts[0].text.startswith('Asked "How long has Melanie been married?", Melanie answered: 5 years')
    event = _message(stores, "m5", "Melanie", answer.content)
    recalled = Recalled([], [_fact_of("f1", facts[0].text, event)])
    items = pack(stores, "How long is Mel married?", recalled, max_tokens=800)
    assert items[0].lines[0].startswith('- Melanie (asked "How long has Melanie been married?"): 5 years already!')


def _from_handle(stores: Stores, source_id: str, handle: str, name: str | None, text: str) -> str:
    """One SMS from a phone number or address, with or without the name the platform showed; its event id."""
    record = {"id": source_id, "platform": "sms", "sender_id": handle, "sender_name": name}
    record |= {"thread_id": "t-sms", "content": text, "as_of": MAY_2023}
    ingest(stores, [RawRecord("t", 0, record, json.dumps(record))])
    return parse_event(record).id


def test_a_message_without_a_sender_name_shows_the_name_memory_has_for_its_handle(stores: Stores) -> None:
    """The phone number once delivered under "Dana Whitfield": the block names Dana, not the number."""
    _from_handle(stores, "s1", "+15551234567", "Dana Whitfield", "Hi, it's Dana.")
    event = _from_handle(stores, "s2", "+15551234567", None, "The launch moves to 25 March.")
    facts = [_fact_of("f1", "The launch moves to 25 March.", event)]
    items = pack(stores, "When is the launch?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [["- Dana Whitfield: The launch moves to 25 March."]]


def test_a_message_from_a_handle_memory_has_no_name_for_shows_the_handle(stores: Stores) -> None:
    event = _from_handle(stores, "s3", "ravi@kestrel.example", None, "The SDK ships on 14 March.")
    facts = [_fact_of("f1", "The SDK ships on 14 March.", event)]
    items = pack(stores, "When does the SDK ship?", Recalled([], facts), max_tokens=800)
    assert [item.lines for item in items] == [["- ravi@kestrel.example: The SDK ships on 14 March."]]
