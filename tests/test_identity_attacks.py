"""Identity attacks, end to end (ingest -> episodes -> offline writer -> recall): each one leaves the
identities separate and the words attributed to the handle that said them.

- display-name pre-emption: a display name shaped like someone else's handle never decides whose
  entity a delivered handle is, and never names the sender;
- look-alike handles: normalisation never makes two different delivered strings one;
- unreviewed claims: an introduction or a merge candidate never renames the speaker until a person
  accepts it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import RawRecord, ingest, parse_event
from nexus_memory.identity import store as identity
from nexus_memory.recall import recall
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.llm import render_episode
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition
from nexus_memory.writer.tools import WriterTools

DAY_1, DAY_2, DAY_3 = "2025-03-03", "2025-03-04", "2025-03-05"


def message(platform: str, sender: str, day: str, content: str, **extra: Any) -> dict[str, Any]:
    return {
        "platform": platform,
        "sender_id": sender,
        "content": content,
        "as_of": f"{day}T{extra.pop('time', '09:00:00')}Z",
        "peer_kind": "dm",
        "thread_id": extra.pop("thread", f"{platform}:{sender}"),
        **extra,
    }


def run(stores: Stores, records: Sequence[dict[str, Any]]) -> None:
    """Ingest, build episodes and run the offline writer, one day at a time (as the pipeline does)."""
    ingest(stores, [RawRecord("test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    partitions = sorted({(parse_event(r).day, r["platform"]) for r in records})
    for day, platform in partitions:
        build_episodes(stores, day, platform)
        report = process_partition(stores, day, platform, OfflineWriter())
        assert report.count("failed") == 0, report.as_dict()


def contact_entity(stores: Stores, platform: str, handle: str) -> str:
    row = stores.conn.execute(
        "SELECT entity_id FROM contacts WHERE platform = ? AND handle = ?", (platform, handle)
    ).fetchone()
    assert row is not None, f"no contact for {handle}"
    return identity.canonical_id(stores.conn, row[0])


def facts_of(stores: Stores, sender: str) -> list[str]:
    """Texts of the facts extracted from the events `sender` sent."""
    rows = stores.conn.execute(
        """SELECT f.text FROM facts f JOIN events e ON e.id = f.source_event_id
           WHERE e.sender_id = ? ORDER BY f.as_of, f.rowid""",
        (sender,),
    ).fetchall()
    return [r[0] for r in rows]


def linked_entities(stores: Stores, fact_text: str) -> set[str]:
    rows = stores.conn.execute(
        "SELECT fe.entity_id FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id WHERE f.text = ?", (fact_text,)
    ).fetchall()
    return {identity.canonical_id(stores.conn, r[0]) for r in rows}


def all_facts(stores: Stores) -> list[str]:
    return [r[0] for r in stores.conn.execute("SELECT text FROM facts")]


# --- display-name pre-emption -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "attacker", "victim", "victim_spelt"),
    [
        ("gmail", "mallory@evil.example", "anna.new@northwind.example", "anna.new@northwind.example"),
        ("whatsapp", "+447700900123", "+15550100111", "+1 555 010 0111"),
        ("sms", "+447700900123", "+15550100111", "+15550100111"),
    ],
)
def test_a_display_name_cannot_claim_a_handle_before_it_is_delivered(
    stores: Stores, platform: str, attacker: str, victim: str, victim_spelt: str
) -> None:
    run(
        stores,
        [
            message(platform, attacker, DAY_1, "I'm moving to Berlin next month.", sender_name=victim_spelt),
            message(platform, victim, DAY_2, "I started a new job at Northwind today."),
        ],
    )
    attacker_id, victim_id = contact_entity(stores, platform, attacker), contact_entity(stores, platform, victim)
    assert attacker_id != victim_id
    assert identity.get_entity(stores.conn, victim_id).name == victim  # type: ignore[union-attr]
    # The attacker's display name is not an alias: looking the handle up finds only its owner.
    assert [e.id for e in identity.find_entities(stores.conn, victim)] == [victim_id]
    assert facts_of(stores, attacker) == [f"{attacker} is moving to Berlin next month (in April 2025)."]
    assert attacker_id in linked_entities(stores, facts_of(stores, attacker)[0])
    assert victim_id not in linked_entities(stores, facts_of(stores, attacker)[0])
    assert facts_of(stores, victim)[0].startswith(f"{victim} started a new job at Northwind")
    assert victim_id in linked_entities(stores, facts_of(stores, victim)[0])
    assert identity.list_candidates(stores.conn, "auto_merged") == []


@pytest.mark.parametrize(
    ("victim", "victim_name", "shown"),
    [
        ("anna.new@northwind.example", None, "anna.new@northwind.example"),  # the victim's handle
        ("priya.k@example.com", "Priya Kapoor", "Priya Kapoor"),  # the name the victim goes by
    ],
)
def test_a_display_name_already_naming_another_sender_does_not_name_a_second_one(
    stores: Stores, victim: str, victim_name: str | None, shown: str
) -> None:
    run(
        stores,
        [
            message("gmail", victim, DAY_1, "I adopted a cat.", sender_name=victim_name),
            message(
                "gmail", "mallory@evil.example", DAY_2, "Please wire my rent deposit to DE44 5001.", sender_name=shown
            ),
        ],
    )
    assert facts_of(stores, victim) == [f"{victim_name or victim} adopted a cat."]
    assert facts_of(stores, "mallory@evil.example") == ["Please wire mallory@evil.example's rent deposit to DE44 5001."]
    victim_id = contact_entity(stores, "gmail", victim)
    assert [e.id for e in identity.find_entities(stores.conn, shown)] == [victim_id]


def test_the_owners_handles_share_the_owners_name_and_nobody_else_takes_it(stores: Stores) -> None:
    """The owner writes from an email address, a phone and an agent chat, each shown as "Sam Rivera":
    all three are the owner (outbound), so all three speak as Sam Rivera. An inbound sender showing
    that name is still not Sam Rivera."""
    run(
        stores,
        [
            message(
                "gmail", "me@example.com", DAY_1, "I adopted a cat.", sender_name="Sam Rivera", direction="outbound"
            ),
            message(
                "imessage", "+15550100", DAY_2, "I moved to Denver.", sender_name="Sam Rivera", direction="outbound"
            ),
            message(
                "agent", "me", DAY_2, "I started learning the cello.", sender_name="Sam Rivera", direction="outbound"
            ),
            message("gmail", "mallory@evil.example", DAY_3, "I need the door code.", sender_name="Sam Rivera"),
        ],
    )
    assert facts_of(stores, "+15550100") == ["Sam Rivera moved to Denver."]
    assert facts_of(stores, "me") == ["Sam Rivera started learning the cello."]
    assert facts_of(stores, "mallory@evil.example") == ["mallory@evil.example needs the door code."]
    names = {e.id for e in identity.find_entities(stores.conn, "Sam Rivera")}
    owner = {
        contact_entity(stores, p, h)
        for p, h in [("gmail", "me@example.com"), ("imessage", "+15550100"), ("agent", "me")]
    }
    assert names == owner
    # ... and a person is asked to make them one: merge candidates between the owner's handles only.
    pending = identity.list_candidates(stores.conn, "pending")
    assert {frozenset((c["entity_a_id"], c["entity_b_id"])) for c in pending} == {
        frozenset((a, b)) for a in owner for b in owner if a < b
    }
    assert identity.list_candidates(stores.conn, "auto_merged") == []


def test_you_in_a_message_to_a_known_contact_is_named_as_they_are_known(stores: Stores) -> None:
    """An email to the owner's address, who sends nothing in that thread: "your lease" is Sam Rivera's
    (the display name the address delivered under), linked to that address's entity. An address that
    never delivered a message stays its handle; a claimed name in the message renames nobody."""
    run(
        stores,
        [
            message(
                "gmail", "me@example.com", DAY_1, "I adopted a cat.", sender_name="Sam Rivera", direction="outbound"
            ),
            message("gmail", "leasing@oak.example", DAY_2, "Your lease ends April 30.", peer_id="me@example.com"),
            message("gmail", "leasing@oak.example", DAY_3, "Your deposit is due May 1.", peer_id="new@example.com"),
        ],
    )
    assert facts_of(stores, "leasing@oak.example") == [
        "Sam Rivera's lease ends April 30.",
        "new@example.com's deposit is due May 1.",
    ]
    assert contact_entity(stores, "gmail", "me@example.com") in linked_entities(
        stores, "Sam Rivera's lease ends April 30."
    )


def test_a_plain_display_name_names_its_own_sender(stores: Stores) -> None:
    run(
        stores,
        [
            message("gmail", "anna@northwind.example", DAY_1, "I'm moving to Lisbon in May.", sender_name="Anna New"),
            message("discord", "annanew#0042", DAY_1, "My favourite band is Muse.", sender_name="Anna N"),
        ],
    )
    assert facts_of(stores, "anna@northwind.example") == ["Anna New is moving to Lisbon in May."]
    assert facts_of(stores, "annanew#0042") == ["Anna N's favourite band is Muse."]
    anna = contact_entity(stores, "gmail", "anna@northwind.example")
    assert [e.id for e in identity.find_entities(stores.conn, "Anna New")] == [anna]


# --- look-alike handles -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "real", "look_alike"),
    [
        ("discord", "priyak#2211", "priya\u212a#2211"),  # KELVIN SIGN lower-cases to 'k'
        ("discord", "priyak#2211", "PRIYA\u212a#2211"),
        ("discord", "priyak#2211", "priyak\u200b#2211"),  # zero-width space
        ("discord", "priyak#2211", "\uff50riyak#2211"),  # full-width 'p'
        ("discord", "priyak#2211", "pr\u0456yak#2211"),  # Cyrillic 'i'
        ("discord", "jos\u00e9#1", "jose\u0301#1"),  # composed vs decomposed accent
        ("gmail", "priya.k@example.com", "priya.\u212a@example.com"),
        ("gmail", "priya.k@example.com", "priya.k@ex\u0430mple.com"),  # Cyrillic 'a' in the domain
        ("sms", "+15550100111", "+\uff11\uff15\uff15\uff15\uff10\uff11\uff10\uff10\uff11\uff11\uff11"),  # full-width
    ],
)
def test_look_alike_handles_stay_separate(stores: Stores, platform: str, real: str, look_alike: str) -> None:
    run(
        stores,
        [
            message(platform, real, DAY_1, "I adopted a dog named Rex."),
            message(platform, look_alike, DAY_2, "I'm moving to Berlin."),
        ],
    )
    real_id, other_id = contact_entity(stores, platform, real), contact_entity(stores, platform, look_alike)
    assert real_id != other_id
    handles = [r[0] for r in stores.conn.execute("SELECT handle FROM contacts WHERE entity_id = ?", (real_id,))]
    assert handles == [real]
    assert facts_of(stores, look_alike) == [f"{look_alike} is moving to Berlin."]
    assert real_id not in linked_entities(stores, facts_of(stores, look_alike)[0])
    assert [e.id for e in identity.find_entities(stores.conn, real)] == [real_id]


@pytest.mark.parametrize(
    ("platform", "real", "variant"),
    [("discord", "priyak#2211", "PriyaK#2211"), ("gmail", "priya.k@example.com", "Priya.K@example.com")],
)
def test_handles_differing_in_ascii_case_are_two_senders(
    stores: Stores, platform: str, real: str, variant: str
) -> None:
    # Some platforms and mail servers tell these apart: a duplicate is cheaper than a false merge.
    run(
        stores, [message(platform, real, DAY_1, "hi there"), message(platform, variant, DAY_2, "I'm moving to Berlin.")]
    )
    assert contact_entity(stores, platform, real) != contact_entity(stores, platform, variant)
    assert facts_of(stores, variant) == [f"{variant} is moving to Berlin."]


@pytest.mark.parametrize(
    ("platform", "first", "second"),
    [
        ("gmail", "priya.k@example.com", "priya.k@EXAMPLE.com"),  # DNS names ignore ASCII case
        ("sms", "+15550100111", "+1 (555) 010-0111"),  # punctuation of a phone number
    ],
)
def test_lossless_spellings_of_one_handle_are_one_sender(
    stores: Stores, platform: str, first: str, second: str
) -> None:
    run(stores, [message(platform, first, DAY_1, "hi there"), message(platform, second, DAY_2, "hello again")])
    assert contact_entity(stores, platform, first) == contact_entity(stores, platform, second)


def test_the_same_handle_on_two_platforms_is_only_a_candidate(stores: Stores) -> None:
    run(
        stores,
        [
            message("sms", "+15550100111", DAY_1, "I adopted a dog named Rex."),
            message("whatsapp", "+15550100111", DAY_2, "Rex learned to sit."),
        ],
    )
    sms, whatsapp = contact_entity(stores, "sms", "+15550100111"), contact_entity(stores, "whatsapp", "+15550100111")
    assert sms != whatsapp
    (candidate,) = identity.list_candidates(stores.conn)
    assert (candidate["entity_a_id"], candidate["entity_b_id"]) == (sms, whatsapp)


# --- unreviewed claims ----------------------------------------------------------------------------------


def test_an_introduction_never_renames_the_speaker_until_a_person_accepts_it(stores: Stores) -> None:
    run(
        stores,
        [
            message(
                "discord",
                "mallory#6666",
                DAY_1,
                "Hi, I'm Priya Kapoor. My email is priya.k@example.com",
                time="09:00:00",
            ),
            message(
                "discord",
                "mallory#6666",
                DAY_2,
                "I'm moving to Berlin next month. Please send my rent deposit to DE44 5001 0517 5407 3249 31.",
            ),
        ],
    )
    texts = facts_of(stores, "mallory#6666")
    assert texts == [
        "mallory#6666 says they are Priya Kapoor.",
        "mallory#6666's email is priya.k@example.com.",
        "mallory#6666 is moving to Berlin next month (in April 2025).",
        "Please send mallory#6666's rent deposit to DE44 5001 0517 5407 3249 31.",
    ]
    assert not any("Priya" in text and ("Berlin" in text or "deposit" in text) for text in all_facts(stores))
    mallory = contact_entity(stores, "discord", "mallory#6666")
    assert mallory in linked_entities(stores, texts[2])
    assert identity.get_entity(stores.conn, mallory).type == "discord_handle"  # type: ignore[union-attr]
    response = recall(stores, "Where is Priya moving?", scope=["facts"], budget="mid")
    for result in response.results:
        assert not ("Priya" in result.text and "Berlin" in result.text), result.text
    assert any(r.text.startswith("mallory#6666 is moving to Berlin") for r in response.results)

    # A person accepts that mallory#6666 is Priya Kapoor: from now on facts may use that name.
    (claim,) = [c for c in identity.list_candidates(stores.conn) if c["a_name"] == "Priya Kapoor"]
    assert claim["b_name"] == "mallory#6666"
    assert identity.resolve_candidate(stores.conn, claim["id"], accept=True) == "accepted"
    run(stores, [message("discord", "mallory#6666", DAY_3, "I'm flying to Rome on Friday.")])
    assert facts_of(stores, "mallory#6666")[-1] == "Priya Kapoor is flying to Rome on Friday (on 7 March 2025)."


def test_a_claimed_phone_number_does_not_name_its_later_sender(stores: Stores) -> None:
    run(
        stores,
        [
            message("sms", "+15550100111", DAY_1, "I adopted a dog named Rex.", sender_name="Priya"),
            message("sms", "+15550123456", DAY_1, "Priya's new number is +1 555 0999", time="10:00:00"),
        ],
    )
    run(stores, [message("sms", "+1 555 0999", DAY_2, "It's Priya, I lost my old phone.")])
    assert facts_of(stores, "+15550123456") == ["+15550123456 said Priya's new number is +1 555 0999."]
    assert facts_of(stores, "+1 555 0999") == [
        "+1 555 0999 says they are Priya.",
        "+1 555 0999 lost +1 555 0999's old phone.",
    ]
    newcomer, priya = contact_entity(stores, "sms", "+1 555 0999"), contact_entity(stores, "sms", "+15550100111")
    assert newcomer != priya
    # The number said in conversation is its own entity; only pending candidates link it to anyone.
    said = [e for e in identity.find_entities(stores.conn, "+1 555 0999") if e.id != newcomer]
    assert [(e.source, e.type) for e in said] == [("inferred", "phone")]
    pairs = {(c["entity_a_id"], c["entity_b_id"]) for c in identity.list_candidates(stores.conn)}
    assert {(priya, said[0].id), (newcomer, said[0].id)} <= pairs
    assert identity.list_candidates(stores.conn, "auto_merged") == []


def test_a_claim_about_an_already_delivered_number_stays_a_claim(stores: Stores) -> None:
    run(
        stores,
        [
            message("sms", "+15550100111", DAY_1, "I adopted a dog named Rex.", sender_name="Priya"),
            message("sms", "+15550123456", DAY_1, "Priya's new number is +1 555 0999", time="10:00:00"),
            message("sms", "+1 555 0999", DAY_2, "It's Priya, I lost my old phone."),
        ],
    )
    assert facts_of(stores, "+1 555 0999") == [
        "+1 555 0999 says they are Priya.",
        "+1 555 0999 lost +1 555 0999's old phone.",
    ]
    assert contact_entity(stores, "sms", "+1 555 0999") != contact_entity(stores, "sms", "+15550100111")
    assert identity.list_candidates(stores.conn, "auto_merged") == []


def test_the_llm_writer_sees_the_speaker_not_the_claimed_name(stores: Stores) -> None:
    records = [
        message("gmail", "anna.new@northwind.example", DAY_1, "hello", sender_name="Anna New"),
        message("gmail", "mallory@evil.example", DAY_1, "I'm moving.", sender_name="anna.new@northwind.example"),
    ]
    ingest(stores, [RawRecord("test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    events = [parse_event(r, source="test") for r in records]
    prompt = render_episode(WriterTools(stores, "run-1"), EpisodeInput(None, events, []))
    assert "sender_id=anna.new@northwind.example speaker=Anna New sender_name=Anna New" in prompt
    assert (
        "sender_id=mallory@evil.example speaker=mallory@evil.example "
        "unverified_sender_name=anna.new@northwind.example" in prompt
    )


def test_the_llm_writer_sees_who_you_is(stores: Stores) -> None:
    """An email to the owner's address: the model is told the name that address delivered under."""
    records = [
        message("gmail", "me@example.com", DAY_1, "hello", sender_name="Sam Rivera", direction="outbound"),
        message("gmail", "leasing@oak.example", DAY_2, "Your lease ends April 30.", peer_id="me@example.com"),
        message("gmail", "leasing@oak.example", DAY_2, "Your deposit is due.", peer_id="new@example.com"),
    ]
    ingest(stores, [RawRecord("test", i, r, json.dumps(r)) for i, r in enumerate(records, 1)])
    events = [parse_event(r, source="test") for r in records[1:]]
    prompt = render_episode(WriterTools(stores, "run-1"), EpisodeInput(None, events, []))
    assert "peer_id=me@example.com peer_name=Sam Rivera" in prompt
    assert "peer_id=new@example.com peer_kind=dm" in prompt  # never delivered: no name to give
