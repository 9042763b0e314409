"""Participants: a name in a prompt means the person in the conversation who goes by it."""

from __future__ import annotations

import pytest

from nexus_memory.agents.tools import call_tool
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings import model
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.events.partitions import ledger_days
from nexus_memory.identity import store as identity
from nexus_memory.identity.participant import Participant, parse_participant
from nexus_memory.injection.context import get_context
from nexus_memory.injection.relevance import is_evidence
from nexus_memory.pipeline.layers import run_layers
from nexus_memory.recall.prompt import read_prompt
from nexus_memory.writer.offline_writer import OfflineWriter
from tests.test_recall import add_entity, add_fact
from tests.test_relevance import _result, reading_of

T0 = 1_700_000_000
JOHN_SAYS = [
    "I love hiking in the mountains every weekend, it clears my head.",
    "I just got back from a kayaking trip on the lake with my brother.",
    "My favourite outdoor activity is rock climbing at the old quarry.",
]


def _deliver(stores: Stores, handle: str, name: str, lines: list[str], platform: str = "chat") -> None:
    ingest(
        stores,
        [
            RawRecord(
                "t",
                i,
                {
                    "id": f"{handle}-{i}",
                    "platform": platform,
                    "sender_id": handle,
                    "sender_name": name,
                    "content": line,
                    "as_of": T0 + i * 60,
                    "thread_id": f"thread-{handle}",
                },
                "",
            )
            for i, line in enumerate(lines)
        ],
    )


def _john_entity(stores: Stores, handle: str = "john-a") -> str:
    return stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = ?", (handle,)).fetchone()[0]


def test_parse_participant() -> None:
    assert parse_participant("imessage:+15550111") == Participant("imessage", "+15550111")
    assert parse_participant("slack:U123=John Smith") == Participant("slack", "U123", "John Smith")
    assert parse_participant("locomo:conv-41/John=John") == Participant("locomo", "conv-41/John", "John")
    for bad in ["", "imessage", ":x", "imessage:", "imessage: =John"]:
        with pytest.raises(ValueError, match="PLATFORM:HANDLE"):
            parse_participant(bad)


def test_a_participant_never_met_is_a_stranger_and_the_known_namesake_someone_else(stores: Stores) -> None:
    _deliver(stores, "john-a", "John", JOHN_SAYS[:1])
    john = _john_entity(stores)
    newcomer = Participant("chat", "john-b", "John")

    names = read_prompt(stores.conn, "What does John enjoy doing outdoors?", participants=[newcomer]).names
    assert names.meant == {"john": frozenset()} and names.others == {john}
    reading = reading_of(stores.conn, "What does John enjoy doing outdoors?", [newcomer])
    assert reading.strangers == ("john",) and john not in reading.named and reading.about_strangers
    # The other John's fact, however close its words, is no evidence about this John.
    assert not is_evidence(_result(0.8, entities=(john,)), reading, True)

    # Said first in the prompt, the name is still theirs (a participant's name is a name anywhere).
    assert reading_of(stores.conn, "John's favourite hobby?", [newcomer]).strangers == ("john",)
    # Without participants the name means the John this memory knows, as before.
    plain = reading_of(stores.conn, "What does John enjoy doing outdoors?")
    assert john in plain.named and plain.others == frozenset() and not plain.about_strangers


def test_a_known_participant_means_their_entity_and_an_inferred_namesake_may_be_them(stores: Stores) -> None:
    _deliver(stores, "john-a", "John", JOHN_SAYS[:1])
    _deliver(stores, "john-c", "Johnny", ["hello from the other John"], platform="mail")
    john, other_john = _john_entity(stores), _john_entity(stores, "john-c")
    identity.add_alias(stores.conn, other_john, "John", "nickname")
    said = add_entity(stores, "John")  # named in conversation only: may be the participant (a duplicate)
    reading = reading_of(stores.conn, "Where did John go kayaking?", [Participant("chat", "john-a")])
    assert john in reading.named and said in reading.named
    assert reading.others == {other_john}  # a delivered contact of his own: someone else
    assert is_evidence(_result(0.5, entities=(john,)), reading, False)
    assert not is_evidence(_result(0.9, entities=(other_john,)), reading, False)
    # The name the participant's handle shows ("John", a display name) is enough; no name needs passing.
    assert read_prompt(stores.conn, "John?", participants=[Participant("chat", "john-a")]).names.meant == {
        "john": frozenset({john})
    }


def test_a_full_name_and_its_first_word_both_mean_the_participant(stores: Stores) -> None:
    newcomer = Participant("chat", "u1", "Sarah Connor")
    add_entity(stores, "Sarah Connor")
    for prompt in ("Where does Sarah Connor live?", "Where does Sarah live?"):
        reading = reading_of(stores.conn, prompt, [newcomer])
        assert reading.named == frozenset() and reading.about_strangers, prompt
    # A name no participant goes by keeps its usual meaning.
    assert reading_of(stores.conn, "Where does Sarah live?", [Participant("chat", "u2", "Tom")]).named


def test_get_context_tells_two_johns_apart(stores: Stores) -> None:
    _deliver(stores, "john-a", "John", JOHN_SAYS)
    embedder = model.get_embedder()
    run_layers(stores, "chat", ledger_days(stores, "chat"), writer=OfflineWriter(), embedder=embedder)
    prompt = "What outdoor activities does John enjoy?"

    assert "hiking" in get_context(stores, prompt, strict=True)  # by name only: the John it knows
    known = get_context(stores, prompt, strict=True, participants=[Participant("chat", "john-a")])
    assert "hiking" in known
    # A John who never wrote to this memory: what it knows of the other John is not about him.
    assert get_context(stores, prompt, strict=True, participants=[Participant("chat", "john-b", "John")]) == ""
    # The same through the agent tool (what the MCP server serves).
    tool = call_tool(
        stores,
        "get_context",
        {"message": prompt, "participants": [{"platform": "chat", "handle": "john-b", "name": "John"}]},
    )
    assert tool == {"context": ""}
    assert "hiking" in call_tool(stores, "get_context", {"message": prompt})["context"]
    # Participants who are not named in the prompt change nothing.
    assert "hiking" in get_context(stores, prompt, strict=True, participants=[Participant("chat", "maria", "Maria")])


def test_a_short_form_of_a_display_name_is_a_known_name(stores: Stores) -> None:
    """A delivered entity is named by its handle; "Mel" for the display name "Melanie" is no stranger."""
    _deliver(stores, "u-483", "Melanie", ["I painted a sunset with my kids today."])
    reading = reading_of(stores.conn, "What did Mel paint with her kids?")
    assert reading.strangers == () and reading.knows_a_name
    assert reading_of(stores.conn, "What did Priya paint?").strangers == ("priya",)


def test_a_longer_name_is_someone_else(stores: Stores) -> None:
    """ "John Greene" the author is not the participant John; "Did John" is."""
    john = Participant("chat", "john-b", "John")
    assert (
        read_prompt(
            stores.conn, "Would Tim enjoy books by C. S. Lewis or John Greene?", participants=[john]
        ).names.meant
        == {}
    )
    assert read_prompt(stores.conn, "Did John call? When John's back, ask.", participants=[john]).names.meant == {
        "john": frozenset()
    }


def test_a_newcomer_is_asked_about_not_the_people_this_memory_knows(stores: Stores) -> None:
    """ "Which movie does Tim like at Thanksgiving?" from a Tim never heard from: a fact about Nate's
    movies is about someone else (the who rule), and "tim" stays a word no fact holds."""
    _deliver(stores, "nate-1", "Nate", ["I watched Little Women at Thanksgiving."])
    nate = _john_entity(stores, "nate-1")
    add_fact(stores, "Thanksgiving dinner is at grandma's house")  # a name the store knows: no prompt about strangers
    tim = Participant("chat", "tim-9", "Tim")
    reading = reading_of(stores.conn, "Which movie does Tim like at Thanksgiving?", [tim])
    assert reading.newcomers == ("tim",) and "tim" in reading.words and not reading.about_strangers
    assert not is_evidence(_result(0.45, entities=(nate,)), reading, False)
    assert is_evidence(_result(0.55, entities=(nate,)), reading, False)  # a strong match all the same
    plain = reading_of(stores.conn, "Which movie does Tim like at Thanksgiving?")
    assert plain.newcomers == () and is_evidence(_result(0.45, entities=(nate,)), plain, False)


def test_a_first_name_finds_the_delivered_entity_by_its_display_name(stores: Stores) -> None:
    """Recall's entity match: "Sarah" is the handle +15550111 shown as "Sarah Connor"."""
    from nexus_memory.recall.query_entities import match_query_entities

    _deliver(stores, "+15550111", "Sarah Connor", ["See you at the pottery class."], platform="imessage")
    sarah = _john_entity(stores, "+15550111")
    assert match_query_entities(stores.conn, "What did Sarah say about pottery?") == [sarah]
    assert match_query_entities(stores.conn, "What did Connor say?") == []  # a last name alone is no first name


def test_a_known_handle_cannot_take_over_another_contacts_name(stores: Stores) -> None:
    """An attacker who once wrote from 'mallory' claims to be "Sarah": questions about Sarah keep
    meaning the Sarah who delivered under that name, and Mallory's words are not injected as hers."""
    _deliver(stores, "+15550111", "Sarah", ["See you at the pottery class."], platform="imessage")
    _deliver(stores, "mallory", "Mallory", ["I love pottery too."])
    sarah, mallory = _john_entity(stores, "+15550111"), _john_entity(stores, "mallory")
    claim = Participant("chat", "mallory", "Sarah")
    assert read_prompt(stores.conn, "What does Sarah like?", participants=[claim]).names.meant == {}
    reading = reading_of(stores.conn, "What does Sarah like?", [claim])
    assert sarah in reading.named and mallory not in reading.named
    # The real Sarah's handle, given with her name, means her.
    real = Participant("imessage", "+15550111", "Sarah")
    assert read_prompt(stores.conn, "What does Sarah like?", participants=[real]).names.meant == {
        "sarah": frozenset({sarah})
    }
