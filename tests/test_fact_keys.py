"""Keyword search over each fact's retrieval key: the fact with its source message."""

from __future__ import annotations

from memory_builders import say
from test_recall import FakeEmbedder, add_fact

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.step import embed_pending
from nexus_memory.recall import recall

QUESTION = "What pets does Nate have?"
FAKE = FakeEmbedder()


def _two_sessions(stores: Stores) -> dict[str, str]:
    """Nate's pets, told in two sessions in messages that name them; neither fact says "pets". Around
    them, facts of the same sessions about other things."""
    day = 86_400_000
    said = [
        ("q1", "Joanna", "What keeps you busy at home?", "s1", None),
        ("a1", "Nate", "My pets! A dog called Max, he is a sweetheart.", "s1", "Nate has a dog called Max."),
        ("o1", "Nate", "I won my second gaming tournament last week.", "s1", "Nate won a gaming tournament."),
        ("q2", "Joanna", "How is everyone at your place?", "s2", None),
        ("a2", "Nate", "The pets are great, the three turtles love their tank.", "s2", "Nate has three turtles."),
        ("o2", "Joanna", "I finished the script for my movie.", "s2", "Joanna finished a movie script."),
    ]
    others = ["ate coconut ice cream", "watched a fantasy film", "bought a new controller", "went to a convention"]
    said += [
        (f"n{i}", "Nate", f"Yesterday I {what}.", f"s{i % 2 + 1}", f"Nate {what}.") for i, what in enumerate(others)
    ]
    facts: dict[str, str] = {}
    for position, (name, sender, content, session, fact) in enumerate(said):
        as_of = (1 if session == "s1" else 30) * day + position * 1_000
        event_id = say(stores, name, sender, content, as_of, session)
        if fact is not None:
            facts[name] = add_fact(stores, fact, as_of=as_of, session_id=session, source_event_id=event_id)
    return facts


def _keyed(stores: Stores, word: str) -> set[str]:
    """Facts whose retrieval key holds `word`."""
    rows = stores.conn.execute(
        """SELECT f.id FROM fact_keys_fts JOIN facts f ON f.rowid = fact_keys_fts.rowid
           WHERE fact_keys_fts MATCH ?""",
        (word,),
    )
    return {r[0] for r in rows}


def test_keyword_search_finds_a_fact_by_its_message_once_embedded(stores: Stores) -> None:
    facts = _two_sessions(stores)
    # Before its vector (and key) is written a fact's key is its text alone: none says "pets".
    assert _keyed(stores, "pets") == set()
    embed_pending(stores, FAKE)
    assert _keyed(stores, "pets") == {facts["a1"], facts["a2"]}
    # The question a message answers is another message, forgettable on its own: the key leaves it out.
    assert _keyed(stores, "busy") == set()
    response = recall(stores, QUESTION, budget="mid", touch=False, scope=("facts",), embedder=FAKE)
    by_keyword = sorted((r.ranks["keyword"], r.id) for r in response.results if "keyword" in r.ranks)
    assert {fact_id for _, fact_id in by_keyword[:2]} == {facts["a1"], facts["a2"]}


def test_a_question_over_two_sessions_finds_both_answers_first(stores: Stores) -> None:
    """The multi-hop case: each session holds half of the answer; both facts lead the results."""
    facts = _two_sessions(stores)
    embed_pending(stores, FAKE)
    top = [
        r.id for r in recall(stores, QUESTION, budget="mid", touch=False, scope=("facts",), embedder=FAKE).results[:2]
    ]
    assert set(top) == {facts["a1"], facts["a2"]}


def test_a_forgotten_fact_leaves_the_key_index(stores: Stores) -> None:
    facts = _two_sessions(stores)
    embed_pending(stores, FAKE)
    with db.transaction(stores.conn):
        stores.conn.execute("DELETE FROM facts WHERE id = ?", (facts["a1"],))
    assert _keyed(stores, "Max") == set()
    found = recall(stores, "dog called Max", budget="mid", touch=False, scope=("facts",), embedder=FAKE).results
    assert facts["a1"] not in {r.id for r in found}
