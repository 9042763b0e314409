"""Facts worth keeping: the structure of real messages, facts that stand alone, and `bench facts`."""

from __future__ import annotations

from pathlib import Path

import pytest

from nexus_memory.bench import facts as bench_facts
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import Extraction, extract
from nexus_memory.writer.extractor.structure import read_message

LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")
MARCH_3 = 1741017600000  # 2025-03-03 16:00 UTC


def email(content: str, *, sender: str = "ravi@kestrel.example", name: str = "Ravi Menon") -> Event:
    """An email to the owner's address, whose owner is Sam Rivera."""
    return Event(
        id="m1",
        platform="gmail",
        sender_id=sender,
        sender_name=name,
        content=content,
        as_of=MARCH_3,
        peer_id="me@example.com",
        peer_kind="dm",
    )


def chat(content: str, sender: str = "Sam", *, peer: str | None = "Mom", event_id: str = "c2") -> Event:
    return Event(
        id=event_id,
        platform="imessage",
        sender_id=sender,
        sender_name=sender,
        content=content,
        as_of=MARCH_3,
        peer_id=peer,
        peer_kind="dm" if peer else "group",
    )


def texts(extraction: Extraction) -> list[str]:
    return [fact.text for fact in extraction.facts]


def read_email(content: str, **kwargs: str) -> list[str]:
    return texts(extract([email(content, **kwargs)], addressee_names={"me@example.com": "Sam Rivera"}))


# --- the structure of real messages -------------------------------------------------------------------


def test_headers_are_read_as_headers_and_the_subject_is_kept_apart() -> None:
    content = (
        "Subject: Atlas launch moving to March 25\nFrom: Dana Whitfield <dana@northwind.example>\n"
        "To: me@example.com\nCc: raj@northwind.example\nDate: Mon, 3 Mar 2025 07:52 -0800\n\n"
        "We moved the Atlas launch to March 25."
    )
    assert read_message(content).subject == "Atlas launch moving to March 25"
    assert read_email(content, sender="dana@northwind.example", name="Dana Whitfield") == [
        "Dana Whitfield said we moved the Atlas launch to March 25."
    ]


def test_a_quoted_reply_is_not_the_senders_words() -> None:
    content = (
        "Thanks Dana, I'll update the test plan today.\n\n"
        "On Mon, Mar 3, 2025 at 7:52 AM Dana Whitfield <dana@northwind.example>\nwrote:\n"
        "> We moved the Atlas launch to March 25.\n> Dana"
    )
    facts = read_email(content, sender="me@example.com", name="Sam Rivera")
    assert facts == ["Sam Rivera will update the test plan today (on 3 March 2025)."]


def test_quote_lines_alone_are_dropped() -> None:
    facts = read_email("> I'm moving to Berlin.\nSounds good, the RC ships on March 14.")
    assert facts == ["Ravi Menon said the RC ships on March 14."]


def test_a_signature_names_a_role_and_organisation_and_the_senders_contacts() -> None:
    content = (
        "Hi Sam,\n\nThe 3.2 release candidate will be available on March 14.\n\nBest regards,\nRavi Menon\n"
        "Partner Engineering, Kestrel Systems\n+1 555 010 2000 | ravi.menon@kestrel.example"
    )
    result = extract([email(content)], addressee_names={"me@example.com": "Sam Rivera"})
    assert texts(result) == [
        "Ravi Menon said the 3.2 release candidate will be available on March 14.",
        "Ravi Menon's signature: Partner Engineering, Kestrel Systems.",
    ]
    assert {(c.value, c.type, c.owner) for c in result.contacts} == {
        ("+1 555 010 2000", "phone", "sender"),
        ("ravi.menon@kestrel.example", "email", "sender"),
    }
    assert ("Kestrel Systems", "organization") in {(m.name, m.type) for m in result.facts[1].entities}


def test_a_name_and_title_paragraph_without_sign_off_is_a_signature() -> None:
    content = "Hi both,\n\nThe RC is published.\n\nRavi Menon\nPartner Engineering, Kestrel Systems"
    assert read_message(content).signer == "Ravi Menon"
    assert read_email(content) == [
        "Ravi Menon said the RC is published.",
        "Ravi Menon's signature: Partner Engineering, Kestrel Systems.",
    ]


@pytest.mark.parametrize("ending", ["\n\nThanks,\nDana", "\n\nDana", "\n\nP", "\n-- \nDana\nSent from my iPhone"])
def test_a_sign_off_and_name_are_not_facts(ending: str) -> None:
    facts = read_email("Go/no-go is Friday March 21 at 10am." + ending, sender="d@x.example", name="Dana")
    assert facts == ["Dana said go/no-go is Friday March 21 at 10am."]


def test_a_confidentiality_notice_is_not_a_fact() -> None:
    content = (
        "The RC ships on March 14.\n\nCONFIDENTIALITY NOTICE: This e-mail and any attachments are confidential "
        "and intended solely for the addressee. If you have received this message in error, delete it."
    )
    assert read_email(content) == ["Ravi Menon said the RC ships on March 14."]


def test_a_forwarded_message_is_its_authors_words_and_its_headers_are_not_facts() -> None:
    content = (
        "FYI, see below.\n\n---------- Forwarded message ---------\n"
        "From: Ravi Menon <ravi.menon@kestrel.example>\nDate: Mon, Mar 10, 2025\nSubject: RC date\n"
        "To: Dana Whitfield <dana@northwind.example>\n\nThe RC ships on March 14. I'll send the notes on Friday.\n\n"
        "Ravi"
    )
    forwarded = read_message(content).forwarded
    assert [(f.author, f.parts.subject) for f in forwarded] == [("Ravi Menon", None)]
    facts = read_email(content, sender="dana@northwind.example", name="Dana Whitfield")
    assert facts[0] == "Ravi Menon said the RC ships on March 14."
    assert facts[1].startswith("Ravi Menon will send the notes on Friday")
    assert not any("Subject" in f or "From" in f or "FYI" in f for f in facts)


def test_hard_wrapped_lines_are_joined_back_into_their_sentence() -> None:
    content = (
        "Kestrel told us on Friday that their SDK won't be ready. We moved the\n"
        "Atlas launch from March 18 to March 25.\n\n1. Freeze March 19."
    )
    facts = read_email(content, sender="dana@northwind.example", name="Dana Whitfield")
    assert "Dana Whitfield said we moved the Atlas launch from March 18 to March 25." in facts


def test_a_letter_drafted_for_the_one_it_is_written_to_is_not_the_drafters() -> None:
    def turn(content: str, sender: str, name: str, peer: str, event_id: str) -> Event:
        return Event(event_id, "agent", sender, content, MARCH_3, sender_name=name, peer_id=peer, peer_kind="dm")

    request = turn("I'll counter at $2,925, can you draft it?", "me", "Sam Rivera", "assistant", "a1")
    draft = turn(
        "Hi Gloria, thanks for the renewal offer. I'd like to stay another year. Best, Sam",
        "assistant",
        "Assistant",
        "me",
        "a2",
    )
    assert read_message(draft.content).signer == "Sam"
    assert texts(extract([draft], context=[request])) == []


@pytest.mark.parametrize(
    "content",
    [
        "ok",
        "thanks!",
        "lol",
        "\U0001f44d",
        "sounds good",
        "got it",
        "planter it is",
        "will do",
        "the more the merrier",
        "that'd be great, thanks Ana",
        "You're the best!",
        "thanks for switching days",
        "Rob says hi \U0001f44b",
    ],
)
def test_acknowledgements_and_reactions_are_not_facts(content: str) -> None:
    result = extract([chat(content)])
    assert result.facts == []
    assert result.skipped_events == ["c2"]


# --- facts that stand alone -----------------------------------------------------------------------------


def test_she_is_the_one_person_the_conversation_just_named() -> None:
    asked = chat("Sam, did Jess book Lucia's yet?", "Mom", peer="Sam", event_id="c1")
    assert texts(extract([chat("I think she's calling tomorrow")], context=[asked])) == [
        "Sam thinks Jess is calling tomorrow (on 4 March 2025)."
    ]


def test_kin_is_an_antecedent_and_the_pronoun_keeps_pointing_at_it() -> None:
    facts = texts(extract([chat("My sister moved to Alameda. She loves it there. Her cat doesn't.")]))
    assert facts == ["Sam's sister moved to Alameda.", "Sam's sister loves it there.", "Sam's sister's cat doesn't."]


@pytest.mark.parametrize(
    ("earlier", "said"),
    [
        ("Jess and Rob were at Lucia's.", "two people: either may be meant"),
        ("The play was lovely.", "nobody named"),
        ("Mel, I told Melanie's friend.", "only the speaker and the one spoken to"),
    ],
)
def test_without_exactly_one_antecedent_the_sentence_is_kept_as_said(earlier: str, said: str) -> None:
    context = [chat(earlier, "Mom", peer="Sam", event_id="c1")]
    facts = texts(extract([chat("She's calling tomorrow.", "Melanie", peer="Mom")], context=context))
    assert facts == ["Melanie said she's calling tomorrow (on 4 March 2025)."], said


def test_a_name_before_the_pronoun_leaves_the_sentence_alone() -> None:
    facts = texts(extract([chat("Jess got a new number, she switched carriers.")]))
    assert facts == ["Sam said Jess got a new number, she switched carriers."]


def test_no_said_where_the_speaker_is_the_subject_and_names_keep_their_capitals() -> None:
    assert texts(extract([chat("booked Thursday 6pm, table for 5, Rob's coming too", "Jess")])) == [
        "Jess booked Thursday (on 27 February 2025) 6pm, table for 5, Rob's coming too."
    ]
    assert texts(extract([chat("not moving. ok, decided: renew for 12 months at $2,950")])) == [
        "Sam decided: renew for 12 months at $2,950."
    ]
    qa = "One bug found: refunds had the wrong sign; Priya fixed it on Wednesday."
    assert texts(extract([chat(qa)]))[1].startswith("Sam said Priya fixed it on Wednesday")


@pytest.mark.parametrize(
    ("content", "facts"),
    [
        ("For Lisbon, can you find me a hotel in Alfama or Chiado, April 11 to 17?", []),
        ("What would you partition on?", []),
        ("how was climbing Sam", []),
        ("did you see Dana's email?? launch slipped a week", ["Sam said launch slipped a week."]),
        ("I'm vegetarian, anything good nearby?", ["Sam is vegetarian."]),
        ("I have a family dinner Thursday, could we do Wednesday instead?", ["Sam has a family dinner Thursday"]),
    ],
)
def test_questions_are_requests_unless_they_state_something(content: str, facts: list[str]) -> None:
    got = texts(extract([chat(content)]))
    assert len(got) == len(facts)
    assert all(g.startswith(f) for g, f in zip(got, facts, strict=True))


@pytest.mark.parametrize(
    ("content", "kept"),
    [
        ("sure, send me details", None),
        ("book it, window seats please", None),
        ("make the risk line shorter", None),
        ("Please let me know by March 21.", "Please let Sam know by March 21."),
        ("remind me to order a second planter for mom", "Remind Sam to order a second planter for mom."),
        ("Count me in for the schema.", "Count Sam in for the schema."),
    ],
)
def test_requests_of_the_moment_are_not_facts_but_plans_are(content: str, kept: str | None) -> None:
    assert texts(extract([chat(content)])) == ([kept] if kept else [])


@pytest.mark.parametrize(
    "content", ["omw, 10 min", "running 10 late, bridge traffic", "here, grabbed the table", "brb dinner"]
)
def test_errands_of_the_moment_are_not_facts(content: str) -> None:
    assert extract([chat(content)]).facts == []


# --- bench facts ---------------------------------------------------------------------------------------


def test_label_matching_is_by_content_words_not_inside_longer_words() -> None:
    assert bench_facts.label_matches(["Jess", "calling"], "Sam Rivera thinks Jess is calling tomorrow.")
    assert not bench_facts.label_matches(["Jess", "calling"], "Sam Rivera thinks she's calling tomorrow.")
    assert bench_facts.label_matches(["priya"], "priya.k@example.com blocked Wednesday.")
    assert not bench_facts.label_matches(["RC"], "The source is published.")
    assert bench_facts.label_matches(["Jess|+15550177", "ham"], "+15550177 is doing the ham.")


@pytest.mark.parametrize(
    ("fact", "kind"),
    [
        ("Dana Whitfield said subject: Atlas launch moving to March 25.", "header"),
        ("Ravi Menon said partner Engineering, Kestrel Systems.", "signature"),
        ("Gloria Chen.", "signature"),
        ("That'd be great, thanks Ana.", "pleasantry"),
        ("Sam Rivera said planter it is.", "pleasantry"),
        ("Sam Rivera thinks she's calling tomorrow.", "pronoun"),
        ("Sam Rivera thinks Jess is calling tomorrow.", None),
        ("Jess got a new number, she switched carriers.", None),
        ("Ana said at Skyline Gate.", None),
        ("Tim said good luck with the game.", "wish"),
        ("Wishing Melanie many happy years together.", "wish"),
        ("Caroline hopes Melanie has a great time.", "wish"),
        ("Caroline hopes to visit Japan.", None),
        ("Caroline said feel free to reach out any time.", "offer"),
        ("Caroline said let Melanie know what Melanie thinks.", "offer"),
        ("Caroline is always here for Melanie whenever Melanie needs to talk.", "offer"),
        ("Caroline said let's keep supporting each other.", "exhortation"),
        ("Caroline said let's meet on Friday at 3pm.", None),
        ("Caroline said it must have been amazing.", "reaction"),
        ("Caroline said it sounds like Melanie is doing great work.", "reaction"),
        ("Caroline said it was so close.", "reaction"),
        ("Caroline said it was a close game against the Hawks.", None),
    ],
)
def test_the_junk_checker(fact: str, kind: str | None) -> None:
    speaker = fact.split(" said ")[0] if " said " in fact else "Sam Rivera"
    assert bench_facts.junk_kind(fact, speaker) == kind


def test_every_sample_message_is_labelled() -> None:
    labels = bench_facts.load_labels()
    sample = [r for r in labels if r["source"] == "sample"]
    events = bench_facts.SAMPLE_EVENTS.read_text(encoding="utf-8").splitlines()
    assert len(sample) == len(events)
    assert len(labels) >= 120
    assert all(r["sender"] and r["time"] and r["platform"] for r in labels)


def test_bench_facts_on_the_sample_stream_meets_its_targets() -> None:
    report = bench_facts.run()
    sample = report["labelled"]["by_source"]["sample"]
    assert sample["precision"] >= 0.85
    assert sample["recall"] >= 0.90
    assert report["junk"]["sample"]["junk_share"] <= 0.05


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev data not available")
def test_bench_facts_with_locomo_meets_its_targets() -> None:
    report = bench_facts.run(LOCOMO)
    assert report["labelled"]["precision"] >= 0.85
    assert report["labelled"]["recall"] >= 0.90
    # 70 drawn at random, 16 by remark cue (seed 13), 16 by generic-you, guess or dropped-subject cue (seed 14),
    # 16 by third-person pronoun (seed 15)
    assert report["labelled"]["by_source"]["locomo"]["messages"] == 118
