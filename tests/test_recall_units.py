"""The speaker list (recall/units.py): which candidates it keeps, in which order, and that recall fuses it."""

from __future__ import annotations

from memory_builders import embed, ms, say

from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity
from nexus_memory.recall import recall
from nexus_memory.recall.units import speaker_list


def _message(stores: Stores, event_id: str, sender: str, content: str, day: str, session: str) -> tuple[str, str]:
    """A message (its sender's entity and contact registered as the ledger does); returns (event id, the
    sender's entity id)."""
    event = say(stores, event_id, sender, content, ms(day), session)
    contact = "SELECT entity_id FROM contacts WHERE platform = 'imessage' AND handle = ?"
    return event, stores.conn.execute(contact, (sender.lower(),)).fetchone()[0]


def _fact(stores: Stores, fact_id: str, text: str, event_id: str | None, day: str, session: str | None) -> None:
    with stores.transaction():
        stores.conn.execute(
            """INSERT INTO facts (id, text, as_of, ingested_at, source_event_id, created_at, platform, session_id)
               VALUES (?, ?, ?, ?, ?, ?, 'imessage', ?)""",
            (fact_id, text, ms(day), ms(day), event_id, ms(day), session),
        )


def test_speaker_list_keeps_the_facts_the_named_person_said_in_the_semantic_order(stores: Stores) -> None:
    mel_event, melanie = _message(stores, "e1", "Melanie", "We went camping with the kids", "2023-05-01", "s1")
    car_event, caroline = _message(stores, "e2", "Caroline", "Melanie loves camping", "2023-05-01", "s1")
    later_event, _ = _message(stores, "e3", "Melanie", "I painted a sunset", "2023-05-02", "s2")
    _fact(stores, "f_mel", "Melanie went camping with the kids.", mel_event, "2023-05-01", "s1")
    _fact(stores, "f_car", "Caroline said Melanie loves camping.", car_event, "2023-05-01", "s1")
    _fact(stores, "f_paint", "Melanie painted a sunset.", later_event, "2023-05-02", "s2")
    semantic = [("fact:f_car", 0.9), ("fact:f_paint", 0.8), ("observation:o1", 0.7), ("fact:f_mel", 0.6)]

    assert speaker_list(stores.conn, semantic, [melanie]) == [("fact:f_paint", 0.8), ("fact:f_mel", 0.6)]
    assert speaker_list(stores.conn, semantic, [caroline]) == [("fact:f_car", 0.9)]
    assert speaker_list(stores.conn, semantic, []) == []

    # Merged away, the delivered entity still speaks for the entity it was merged into.
    with stores.transaction():
        winner = identity.create_entity(stores.conn, "Melanie Smith", "person")
        identity.merge_entities(stores.conn, winner, melanie)
    assert speaker_list(stores.conn, semantic, [winner]) == [("fact:f_paint", 0.8), ("fact:f_mel", 0.6)]


def test_recall_fuses_the_speaker_list_at_mid_budget(stores: Stores) -> None:
    said = [
        ("m1", "Melanie", "I took the kids to the museum yesterday", "s1"),
        ("c1", "Caroline", "Melanie took her kids to the museum, she said", "s1"),
        ("m2", "Melanie", "We roasted marshmallows around the campfire", "s2"),
        ("c2", "Caroline", "I went to a pride parade last week", "s2"),
    ]
    people: dict[str, str] = {}
    fact_ids: list[str] = []
    for event_id, sender, content, session in said:
        event, people[sender] = _message(stores, event_id, sender, content, "2023-05-01", session)
        _fact(stores, f"f_{event_id}", f"{sender} said: {content}.", event, "2023-05-01", session)
        fact_ids.append(f"f_{event_id}")
    for n in range(60):  # enough facts for a name linked to all of them to count as busy
        _fact(
            stores, f"f_chat{n}", f"Caroline mentioned topic number {n} of the chat.", "imessage:c2", "2023-05-01", "s2"
        )
        fact_ids.append(f"f_chat{n}")
    with stores.transaction():  # both are linked to every fact, as a conversation's two people are: busy
        stores.conn.executemany(
            "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)",
            [(f, e, ms("2023-05-01")) for f in fact_ids for e in people.values()],
        )
        for sender, entity_id in people.items():
            identity.add_alias(stores.conn, entity_id, sender, "display_name")
    embed(stores)

    mid = recall(stores, "What did Melanie do with her kids?", scope=("facts",), budget="mid", touch=False)
    ranks = {r.id: r.ranks for r in mid.results}

    assert "entity" not in ranks["f_m1"]  # Melanie is busy: no entity list, but her own messages get a vote
    assert "speaker" in ranks["f_m1"] and "speaker" not in ranks["f_c1"]
    low = recall(stores, "What did Melanie do with her kids?", scope=("facts",), budget="low", touch=False)
    assert not any("speaker" in r.ranks for r in low.results)
    # A question that names nobody busy gets no speaker list.
    plain = recall(stores, "Who went to the museum?", scope=("facts",), budget="mid", touch=False)
    assert not any("speaker" in r.ranks for r in plain.results)
