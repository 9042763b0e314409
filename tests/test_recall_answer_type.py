"""The answer-type list (recall/answer_type.py): what a question asks for, which candidates carry it, and
that recall fuses it."""

from __future__ import annotations

from memory_builders import embed, fact, ms, person

from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.recall import recall
from nexus_memory.recall.answer_type import answer_type_list, asks_for


def test_asks_for_reads_when_questions_and_questions_after_several_things() -> None:
    assert asks_for("When did Gina launch an ad campaign?") == "date"
    assert asks_for("In what year did Nate adopt a dog?") == "date"
    assert asks_for("What video games does Nate play?") == "things"
    assert asks_for("Which cities has John been to?") == "things"
    assert asks_for("What do Jon and Gina both like?") == "things"
    assert asks_for("How many times has Melanie gone to the beach?") == "things"
    # One thing, an auxiliary after the wh-word, or no list at all: nothing asked for by type.
    assert asks_for("What is Caroline's identity?") is None
    assert asks_for("What does Melanie do to destress?") is None
    assert asks_for("Would Caroline pursue writing as a career?") is None
    assert asks_for("Where did Maria go?") is None


def test_answer_type_list_keeps_the_candidates_that_carry_a_date_or_name_a_thing(stores: Stores) -> None:
    nate = person(stores, "Nate")
    with stores.transaction():
        game = identity.create_entity(stores.conn, "Cyberpunk 2077", "concept")
        day = identity.create_entity(stores.conn, "3 May 2023", "date")
        handle = identity.create_entity(stores.conn, "nate_handle", "imessage_handle")
    named = fact(stores, "Nate plays Cyberpunk 2077.", "2023-05-03", nate, game)
    vague = fact(stores, "Playing games is Nate's escape.", "2023-05-03", nate, handle)
    dated = fact(stores, "Nate adopted a dog on 3 May 2023.", "2023-05-04", nate, day)
    with stores.transaction():
        stores.conn.execute("UPDATE facts SET about_start = ? WHERE id = ?", (ms("2023-05-03"), dated))
    candidates = [(f"fact:{vague}", 0.3), (f"fact:{dated}", 0.2), (f"fact:{named}", 0.1)]

    assert answer_type_list(stores.conn, candidates, "date", [nate]) == [(f"fact:{dated}", 0.2)]
    # The person asked about, a date and a handle name no thing; the game does, in the candidates' order.
    assert answer_type_list(stores.conn, candidates, "things", [nate]) == [(f"fact:{named}", 0.1)]
    # A question naming nobody: Nate is a thing too then, and every candidate names him.
    assert answer_type_list(stores.conn, candidates, "things", []) == candidates
    # The game named in the question is not an answer to it.
    assert answer_type_list(stores.conn, candidates, "things", [nate, game]) == []


def test_recall_fuses_the_answer_type_list_for_a_question_that_asks_for_things(stores: Stores) -> None:
    nate = person(stores, "Nate")
    with stores.transaction():
        game = identity.create_entity(stores.conn, "Cyberpunk 2077", "concept")
    named = fact(stores, "Nate has been playing Cyberpunk 2077 nonstop.", "2023-05-03", nate, game)
    fact(stores, "Playing video games is Nate's escape.", "2023-05-03", nate)
    embed(stores)

    asked = recall(stores, "What video games does Nate play?", scope=("facts",), budget="mid", touch=False)
    ranks = {r.id: r.ranks for r in asked.results}
    assert set(ranks) >= {named} and "answer_type" in ranks[named]
    assert [r.id for r in asked.results if "answer_type" in r.ranks] == [named]
    # A question not asking for a type of answer, or the low budget, gets no such list.
    plain = recall(stores, "What does Nate do to relax?", scope=("facts",), budget="mid", touch=False)
    low = recall(stores, "What video games does Nate play?", scope=("facts",), budget="low", touch=False)
    assert not any("answer_type" in r.ranks for r in [*plain.results, *low.results])
