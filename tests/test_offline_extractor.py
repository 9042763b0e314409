"""The offline extractor: pronouns, splitting, contacts, introductions, causal pairs, kinds, dates, entities."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexus_memory import cli
from nexus_memory.bench import extract as bench_extract
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import (
    EntityMention,
    Extraction,
    annotate_relative_dates,
    classify_kind,
    explicit_dates,
    extract,
    find_contacts,
    find_entities,
    find_introductions,
    split_compound,
    split_sentences,
)
from nexus_memory.writer.extractor.structure import read_message

# Monday 8 May 2023, 13:56 UTC
MAY_8 = int(datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp() * 1000)
LOCOMO = Path("/work/shared/data/locomo/locomo_dev.json")


def event(
    content: str,
    sender: str = "Caroline",
    *,
    peer: str | None = "Melanie",
    event_id: str = "e1",
    as_of: int = MAY_8,
    sender_name: str | None = None,
    peer_kind: str | None = "dm",
) -> Event:
    """A chat event with sensible defaults."""
    return Event(
        id=event_id,
        platform="test",
        sender_id=sender,
        content=content,
        as_of=as_of,
        sender_name=sender_name,
        peer_id=peer,
        peer_kind=peer_kind,
    )


def texts(extraction: Extraction) -> list[str]:
    return [fact.text for fact in extraction.facts]


# --- pronoun resolution -------------------------------------------------------------------------


def test_first_person_resolves_to_sender() -> None:
    result = extract([event("I went to the support group yesterday and it was so powerful.")])
    assert result.facts[0].text.startswith("Caroline went to the support group yesterday")
    assert EntityMention("Caroline", "person", "sender") in result.facts[0].entities


def test_possessives_contractions_and_agreement() -> None:
    result = extract([event("My sister lives in Boston. I'm moving there. I love painting.")])
    assert texts(result) == [
        "Caroline's sister lives in Boston.",
        "Caroline is moving there.",
        "Caroline loves painting.",
    ]


def test_second_person_resolves_to_peer_id_and_previous_speaker() -> None:
    named = extract([event("You're so brave.", peer="Melanie")])
    assert named.facts[0].text == "Melanie is so brave."
    # No peer_id: in a DM "you" is the previous other speaker from context.
    earlier = event("I started pottery classes last month.", sender="Melanie", peer=None, event_id="e0")
    reply = event("You have such a creative streak.", sender="Caroline", peer=None, event_id="e1")
    result = extract([reply], context=[earlier])
    assert texts(result) == ["Melanie has such a creative streak."]


def test_speaker_names_override_sender_id_and_generic_you_is_kept() -> None:
    result = extract(
        [event("I adopted a puppy, you know.", sender="u123", peer="u456")],
        speaker_names={"u123": "Priya", "u456": "Sam"},
    )
    assert texts(result) == ["Priya adopted a puppy, you know."]


def test_statement_without_a_person_is_attributed_to_the_sender() -> None:
    result = extract([event("The transgender stories were so inspiring!")])
    assert texts(result) == ["Caroline said the transgender stories were so inspiring."]


@pytest.mark.parametrize(
    "said",
    [
        "Do your research and find an adoption agency.",
        "Please take care of yourself.",
        "Never give up on your dreams!",
        "Don't forget your sunscreen.",
        "Just trust your gut on this one.",
        "Please, have fun with your kids.",
        "When it gets hard, believe in yourself.",
    ],
)
def test_advice_to_the_listener_keeps_your_as_said(said: str) -> None:
    """An imperative is the speaker's advice: "your" stays the listener's, never the listener's name in the
    possessive ("Do Melanie's research" reads as if Melanie's research were someone else's task)."""
    from nexus_memory.writer.extractor.pronouns import resolve_pronouns

    assert resolve_pronouns(said, "Caroline", "Melanie") == (said, False)


def test_advice_is_stored_with_its_speaker() -> None:
    said = "Do your research and find an adoption agency."
    assert texts(extract([event(said)])) == ["Caroline said do your research and find an adoption agency."]
    said = "Never give up on your dreams!"
    assert texts(extract([event(said)])) == ["Caroline said never give up on your dreams."]


@pytest.mark.parametrize(
    ("said", "fact"),
    [
        ("Your painting is lovely.", "Melanie's painting is lovely."),  # a statement, not an imperative
        ("Dance is your passion, right.", "Dance is Melanie's passion, right."),  # "dance" is the subject here
        (
            "You've come a long way - keep inspiring people with your courage.",
            "Melanie has come a long way - keep inspiring people with Melanie's courage.",
        ),  # the listener is named in the text, so "your" is too
    ],
)
def test_second_person_outside_advice_is_still_the_listener(said: str, fact: str) -> None:
    assert texts(extract([event(said)])) == [fact]


def test_a_question_or_a_dropped_i_before_you_is_not_advice() -> None:
    from nexus_memory.writer.extractor.pronouns import resolve_pronouns

    assert resolve_pronouns("Do your kids like it?", "Ann", "Bo")[0] == "Do Bo's kids like it?"
    # The auxiliary that opens the question agrees with the name ("Have you" -> "Has Bo").
    assert resolve_pronouns("Have you been to Paris", "Ann", "Bo")[0] == "Has Bo been to Paris"
    assert resolve_pronouns("Tell me about your trip.", "Ann", "Bo")[0] == "Tell Ann about Bo's trip."


def test_dropped_subject_is_put_back() -> None:
    assert texts(extract([event("Went hiking with the dog.")])) == ["Caroline went hiking with the dog."]


# --- splitting --------------------------------------------------------------------------------


def test_sentence_split_keeps_abbreviations() -> None:
    assert split_sentences("I met Dr. Smith today. It went well! Next step? Not sure") == [
        "I met Dr. Smith today.",
        "It went well!",
        "Next step?",
        "Not sure",
    ]


def test_a_message_read_again_reads_the_same_and_a_caller_cannot_change_it() -> None:
    """Sentences and message parts are remembered (each episode rereads its thread): a second reading is the
    same, and changing one reading's list does not change the next."""
    first = split_sentences("We moved the launch. Jess booked the hall.")
    first.append("Nobody said this.")
    assert split_sentences("We moved the launch. Jess booked the hall.") == [
        "We moved the launch.",
        "Jess booked the hall.",
    ]
    email = "Subject: Launch\n\nWe moved the launch to May.\n\nThanks,\nDana\nProduct lead"
    assert read_message(email) is read_message(email)  # immutable parts, read once
    assert read_message(email).signer == "Dana" and read_message(email).body == "We moved the launch to May."


def test_compound_split_only_between_clauses() -> None:
    assert split_compound("I bought a bike, and I ride it to work every day.") == [
        "I bought a bike.",
        "I ride it to work every day.",
    ]
    # Right side has no subject: stays one fact.
    assert split_compound("I bought bread, and milk from the store.") == ["I bought bread, and milk from the store."]
    assert split_compound("I wanted to go; it rained all day.") == ["I wanted to go.", "It rained all day."]


def test_questions_and_filler_sentences_are_dropped() -> None:
    result = extract([event("Wow, that's so cool! How did it go? I finished my first marathon.")])
    assert texts(result) == ["Caroline finished Caroline's first marathon."]


# --- contacts and introductions ---------------------------------------------------------------


def test_contact_statements() -> None:
    found = find_contacts(
        "My new email is priya.k@example.com, reach me at 555-123-4567. My Discord is coolgamer42. "
        "Sam's number is +1 (555) 987-6543.",
        "e9",
    )
    values = {(c.value, c.type, c.owner) for c in found}
    assert values == {
        ("priya.k@example.com", "email", "sender"),
        ("555-123-4567", "phone", "sender"),
        ("coolgamer42", "handle", "sender"),
        ("+1 (555) 987-6543", "phone", "Sam"),
    }
    assert all(c.source_event_id == "e9" for c in found)


def test_contact_values_are_entities_of_the_sender() -> None:
    result = extract([event("My email is priya.k@example.com", sender="u1", sender_name="Priya")])
    assert result.contacts[0].value == "priya.k@example.com"
    assert EntityMention("priya.k@example.com", "email", "contact_of_sender") in result.facts[0].entities
    assert result.facts[0].text == "Priya's email is priya.k@example.com."


def test_reach_me_at_home_is_not_a_contact() -> None:
    assert find_contacts("You can reach me at home after six.", "e1") == []


def test_introductions_and_their_negatives() -> None:
    assert find_introductions("Hey, I'm Marcus!") == ["Marcus"]
    assert find_introductions("My name is Priya Kumar.") == ["Priya Kumar"]
    assert find_introductions("Hi, this is Tyler.") == ["Tyler"]
    for sentence in (
        "I'm sorry to hear that.",
        "I'm going to the park.",
        "I'm Happy today.",
        "I'm Canadian.",
        "I'm so tired.",
        "I'm Sorry!",
    ):
        assert find_introductions(sentence) == [], sentence


def test_an_introduction_is_a_claim_and_never_renames_the_sender() -> None:
    result = extract([event("Hey, I'm Marcus. I work at Acme Corp.", sender="coolgamer42", peer=None)])
    assert [i.name for i in result.introductions] == ["Marcus"]
    assert texts(result) == ["coolgamer42 says they are Marcus.", "coolgamer42 works at Acme Corp."]
    assert EntityMention("Acme Corp", "organization", "mentioned") in result.facts[1].entities
    assert EntityMention("coolgamer42", "person", "sender") in result.facts[1].entities


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            "Hi, I'm Priya Kapoor, I lost my old phone.",
            ["x#1 says they are Priya Kapoor.", "x#1 lost x#1's old phone."],
        ),
        ("It's Priya, I'm moving to Berlin.", ["x#1 says they are Priya.", "x#1 is moving to Berlin."]),
        ("I'm Priya Kapoor and I love Berlin.", ["x#1 says they are Priya Kapoor.", "x#1 loves Berlin."]),
        (
            "My name is Priya. My email is priya.k@example.com",
            ["x#1 says they are Priya.", "x#1's email is priya.k@example.com."],
        ),
    ],
)
def test_the_words_after_an_introduction_stay_with_the_handle(content: str, expected: list[str]) -> None:
    result = extract([event(content, sender="x#1", peer=None)])
    assert texts(result) == expected


def test_an_introduction_in_context_does_not_rename_the_sender_of_later_events() -> None:
    earlier = event("Hi, I'm Priya Kapoor.", sender="x#1", peer=None, event_id="e0")
    result = extract([event("I'm moving to Berlin.", sender="x#1", peer=None)], context=[earlier])
    assert texts(result) == ["x#1 is moving to Berlin."]


def test_introducing_ones_own_name_adds_no_fact() -> None:
    result = extract([event("Hi, I'm Caroline, I went hiking.")])
    assert texts(result) == ["Caroline went hiking."]
    assert [i.name for i in result.introductions] == ["Caroline"]


def test_a_display_name_shaped_like_another_handle_never_names_the_sender() -> None:
    for shown in ("anna.new@northwind.example", "+1 555 0100", "@anna", "priyak#2211"):
        result = extract([event("I'm moving to Berlin.", sender="mallory@evil.example", sender_name=shown, peer=None)])
        assert texts(result) == ["mallory@evil.example is moving to Berlin."], shown
    legit = extract([event("I'm moving to Berlin.", sender="anna@x.example", sender_name="Anna New", peer=None)])
    assert texts(legit) == ["Anna New is moving to Berlin."]


def test_contact_info_about_someone_else_is_the_senders_claim() -> None:
    result = extract([event("Priya's new number is +1 555 0999", sender="+15550123", peer=None)])
    assert texts(result) == ["+15550123 said Priya's new number is +1 555 0999."]
    assert [(c.value, c.owner) for c in result.contacts] == [("+1 555 0999", "Priya")]


# --- causal pairs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "cause", "effect"),
    [
        ("I stayed home because it was raining.", "Caroline said it was raining.", "Caroline stayed home."),
        ("Because I lost my job, I moved back home.", "Caroline lost Caroline's job.", "Caroline moved back home."),
        ("I saved every month so that I could travel.", "Caroline saved every month.", "Caroline could travel."),
        (
            "The road was closed, therefore we took the train.",
            "Caroline said the road was closed.",
            "Caroline said we took the train.",
        ),
    ],
)
def test_causal_pairs(sentence: str, cause: str, effect: str) -> None:
    result = extract([event(sentence)])
    assert len(result.causal) == 1
    pair = result.causal[0]
    assert result.facts[pair.cause].text == cause
    assert result.facts[pair.effect].text == effect
    assert 0.5 <= pair.strength <= 0.9


def test_no_causal_pair_without_two_clauses() -> None:
    result = extract([event("I stayed home because of the rain.")])
    assert result.causal == []
    assert texts(result) == ["Caroline stayed home because of the rain."]


def test_sentence_initial_link_to_previous_sentence() -> None:
    result = extract([event("The venue flooded. As a result, we moved the party to Sunday.")])
    assert len(result.facts) == 2
    assert [(p.cause, p.effect) for p in result.causal] == [(0, 1)]


# --- derived kinds ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("We decided to use PostgreSQL.", "decision"),
        ("Let's go with the blue design.", "decision"),
        ("I'll send the report by Friday.", "action_item"),
        ("I need to renew my passport.", "action_item"),
        ("Let's meet at 3pm tomorrow.", "commitment"),
        ("I promise to call mom this weekend.", "commitment"),
        ("I prefer dark mode.", "preference_stated"),
        ("My favorite food is ramen.", "preference_stated"),
        ("Actually, the meeting is on Tuesday.", "correction"),
        ("It's not Sarah, it's Susan who got the job.", "correction"),
        ("I went to the beach.", "fact"),
    ],
)
def test_derived_kinds(sentence: str, kind: str) -> None:
    assert classify_kind(sentence) == kind
    assert extract([event(sentence)]).facts[0].kind == kind


# --- ephemeral chatter ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["ok", "lol", "brb", "thanks!", "Hey Mel!", "\U0001f602\U0001f602", "Haha yes!", "Good morning!", "Talk soon!"],
)
def test_ephemeral_events_are_skipped(content: str) -> None:
    result = extract([event(content)])
    assert result.facts == []
    assert result.skipped_events == ["e1"]


def test_photo_caption_becomes_a_fact() -> None:
    result = extract([event("Look at this! [shares a photo: a photo of a dog walking past a mural]")])
    assert texts(result) == ["Caroline shared a photo of a dog walking past a mural."]


# --- dates ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phrase", "label"),
    [
        ("I went yesterday", "(on 7 May 2023)"),
        ("I leave tomorrow", "(on 9 May 2023)"),
        ("I met her last Friday", "(on 5 May 2023)"),
        ("I moved last week", "(the week of 1 May 2023)"),
        ("I start next month", "(in June 2023)"),
        ("I visited two days ago", "(on 6 May 2023)"),
        ("I graduated last year", "(in 2022)"),
        ("We went camping last weekend", "(the weekend of 6 May 2023)"),
    ],
)
def test_relative_dates_are_annotated(phrase: str, label: str) -> None:
    text, mentions = annotate_relative_dates(phrase, MAY_8)
    assert text.endswith(label), text
    assert mentions


def test_explicit_date_is_what_the_fact_is_about_not_when_it_was_said() -> None:
    result = extract([event("My exam is on 12 March 2024.")])
    fact = result.facts[0]
    exam = int(datetime(2024, 3, 12, tzinfo=UTC).timestamp() * 1000)
    assert fact.as_of == MAY_8
    assert fact.about == (exam, exam + 86_400_000 - 1)
    assert EntityMention("12 March 2024", "date") in fact.entities
    _, mentions = explicit_dates("The launch is March 3rd.", MAY_8)
    assert mentions == ["3 March 2023"]
    assert explicit_dates("No date here.", MAY_8) == ([], [])


def test_relative_date_keeps_event_time_and_adds_date_entity() -> None:
    fact = extract([event("I went to the support group yesterday.")]).facts[0]
    assert fact.text == "Caroline went to the support group yesterday (on 7 May 2023)."
    assert fact.as_of == MAY_8
    assert EntityMention("7 May 2023", "date") in fact.entities


# --- entities ---------------------------------------------------------------------------------


def test_entity_regexes() -> None:
    found = find_entities(
        "Write to priya.k@example.com or call 555-123-4567, see https://example.com/a?b=1. "
        "Ping @coolgamer42 on Discord."
    )
    kinds = {(m.name, m.type) for m in found}
    assert ("priya.k@example.com", "email") in kinds
    assert ("555-123-4567", "phone") in kinds
    assert ("https://example.com/a?b=1", "url") in kinds
    assert ("@coolgamer42", "handle") in kinds
    assert not any(m.type == "phone" and m.name.startswith("2023") for m in find_entities("On 2023-05-08 we met."))


def test_name_heuristic_types() -> None:
    fact = extract([event("I met my friend Jess at Stanford University and we flew to Paris.")]).facts[0]
    types = {m.name: m.type for m in fact.entities}
    assert types["Jess"] == "person"
    assert types["Stanford University"] == "organization"
    assert types["Paris"] == "location"
    assert "I" not in types and "May" not in types


# --- determinism ------------------------------------------------------------------------------


def test_same_input_same_output() -> None:
    events = [
        event("Hey Mel! I went to a LGBTQ support group yesterday and it was so powerful.", event_id="a"),
        event(
            "Wow! I painted a lake sunrise last year because it means a lot to me.",
            sender="Melanie",
            peer="Caroline",
            event_id="b",
        ),
        event("My email is c@example.com. I'll send the photos tomorrow.", event_id="c"),
    ]
    first, second = extract(events), extract(list(events))
    assert first == second
    assert repr(first) == repr(second)


# --- bench ------------------------------------------------------------------------------------


def test_bench_dia_id_normalisation() -> None:
    assert bench_extract.normalise_dia_ids("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert bench_extract.normalise_dia_ids("D:3:5") == ["D3:5"]
    assert bench_extract.normalise_dia_ids(["D1:2", "D1:3"]) == ["D1:2", "D1:3"]


def test_bench_on_a_tiny_locomo_file(tmp_path: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "Hey Bo!"},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "I adopted a cat named Tilly last week."},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "So cute!", "blip_caption": "a photo of a cat"},
            ],
        },
        "observation": {
            "session_1_observation": {
                "Bo": [["Bo adopted a cat named Tilly.", "D1:2"]],
                "Ann": [["Ann shared a photo of a cat.", "D:1:3"]],
            }
        },
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    report = bench_extract.run(path)
    assert report["turns"] == 3
    assert report["observation_coverage"] == 1.0
    assert report["observation_overlap"] > 0.6
    assert report["skipped"] == 1


def test_bench_extract_conversations_limits_the_run_to_the_first_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def sample(sample_id: str, speaker: str, text: str) -> dict[str, object]:
        turn = {"speaker": speaker, "dia_id": "D1:1", "text": text}
        session = {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": [turn]}
        conversation = {"speaker_a": speaker, "speaker_b": "Bo", **session}
        observation = {"session_1_observation": {speaker: [[text, "D1:1"]]}}
        return {"sample_id": sample_id, "conversation": conversation, "observation": observation}

    path = tmp_path / "locomo.json"
    path.write_text(
        json.dumps([sample("a", "Ann", "I adopted a cat named Tilly."), sample("b", "Cy", "I moved to Oslo in 2020.")])
    )
    whole = bench_extract.run(path)
    assert (whole["conversations"], whole["turns"]) == (2, 2)
    assert bench_extract.run(path, conversations=1)["turns"] == 1
    # The CLI flag reaches the run (it was accepted and ignored before).
    assert cli.main(["bench", "extract", "--data", str(path), "--conversations", "1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["conversations"], printed["turns"]) == (1, 1)


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo dev data not available")
def test_bench_on_locomo_dev_reaches_coverage_target() -> None:
    report = bench_extract.run(LOCOMO)
    assert report["observation_coverage"] > 0.9
    assert report["observation_overlap"] > 0.5


def test_question_tag_keeps_the_statement_and_nickname_vocative_is_dropped() -> None:
    result = extract([event("Wow, Mel! Hard work pays off, right? What have you been up to?", sender="Caroline")])
    assert texts(result) == ["Caroline said hard work pays off."]


def test_the_speakers_excitement_is_kept_and_excitement_for_the_other_is_not() -> None:
    assert texts(extract([event("Thanks, Melanie! I'm excited! It's been a wild ride.")])) == [
        "Caroline is excited.",
        "Caroline said it's been a wild ride.",
    ]
    assert texts(extract([event("I was really excited.")])) == ["Caroline was really excited."]
    assert texts(extract([event("I'm so excited for you!")])) == []


def test_a_possessive_after_a_formulaic_word_is_the_listeners() -> None:
    # "love you" is formulaic; "love your painting" is about Melanie's painting.
    assert texts(extract([event("Love your painting! Love you!")])) == ["Caroline loves Melanie's painting."]


def test_advice_to_make_sure_is_kept_and_a_request_is_not() -> None:
    advice = "No, not really. Just keep their area clean, feed them properly, and make sure they get enough light."
    assert texts(extract([event(advice)])) == [
        "Caroline said just keep their area clean, feed them properly, and make sure they get enough light."
    ]
    assert texts(extract([event("Also be sure to build relationships with your customers.")])) == [
        "Caroline said be sure to build relationships with your customers."
    ]
    # Something asked for the speaker is a request of the moment, advice or not.
    assert texts(extract([event("Make sure you send me the file. Please make sure to book it.")])) == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # A plain present verb after a noun subject, and an opener before the statement.
        ("Sunflowers mean warmth and happiness, right?", ["Caroline said sunflowers mean warmth and happiness."]),
        (
            "Oh, and BTW, I started my own online clothing store not so long ago - pretty cool, huh?",
            ["Caroline started Caroline's own online clothing store not so long ago - pretty cool."],
        ),
        ("Wow, traveling is amazing, isn't it?", ["Caroline said traveling is amazing."]),
        # A contracted "is" after its subject.
        # (A judgement framed around everyone, "It's awesome how our passions connect us", is no fact: remarks.)
        ("It's the oldest bookstore in town, yeah?", ["Caroline said it's the oldest bookstore in town."]),
        # A tag without a comma: the statement stays ("My new job is at a bakery right?").
        ("My sister moved to Boston right?", ["Caroline's sister moved to Boston."]),
        # A statement, a dash, then the question.
        (
            "You mentioned exploring endorsements - have you made any progress?",
            ["Melanie mentioned exploring endorsements."],
        ),
        # Tags on what states nothing, and real questions, keep nothing.
        ("Cute, right? Do you like it? What made you paint that?", []),
    ],
)
def test_a_statement_before_a_question_tag_is_kept(content: str, expected: list[str]) -> None:
    assert texts(extract([event(content)])) == expected


# --- words that carry an answer -------------------------------------------------------------------


def _reply(question: str, answer: str, *, peer_kind: str | None = "dm") -> list[str]:
    """The facts of `answer`, Melanie's reply to Caroline's `question` (given as context)."""
    asked = event(question, "Caroline", peer="Melanie", event_id="q", as_of=MAY_8 - 60_000, peer_kind=peer_kind)
    return texts(extract([event(answer, "Melanie", peer="Caroline", peer_kind=peer_kind)], context=[asked]))


def test_a_verbless_reply_to_a_question_is_kept_with_the_question() -> None:
    facts = _reply("Aww, so cute! What are your pets' names?", "Luna and Oliver! They liven up the house!")
    assert facts[0] == "Asked \"What are Melanie's pets' names?\", Melanie answered: Luna and Oliver."
    assert _reply("How long have you been married?", "5 years already!") == [
        'Asked "How long has Melanie been married?", Melanie answered: 5 years already (since 2018).'
    ]
    # The inverted question keeps its bare verb: "did you think" -> "did Melanie think".
    assert _reply("What did you think of it?", "Super good!")[0].startswith('Asked "What did Melanie think of it?"')
    # Thanks first, then the answer.
    assert _reply("How was the trip?", "Thanks! It was amazing.") == [
        'Asked "How was the trip?", Melanie answered: It was amazing.'
    ]


def test_a_verbless_reply_to_a_question_for_any_thing_is_kept_with_the_question() -> None:
    # The inverted auxiliary agrees with the name it now stands before ("Do you" -> "Does Melanie").
    assert _reply("Do you have any favorite fantasy movies as well? These are mine.", "Definitely Star Wars!") == [
        'Asked "Does Melanie have any favorite fantasy movies as well?", Melanie answered: Definitely Star Wars.'
    ]
    assert _reply("Have you been to any of the real Potter places?", "Not yet, sadly.") == [
        'Asked "Has Melanie been to any of the real Potter places?", Melanie answered: Not yet, sadly.'
    ]
    # A reply that names nothing answers no question for a thing.
    assert _reply("Did you dress up as any character?", "It was awesome!") == []
    assert _reply("Do you have any goals you want to try?", "Nice one, Caroline!") == []


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Did you like it?", "Super good!"),  # a yes/no question: the fragment says too little
        ("Can you send me the link?", "Sure thing!"),  # a request
        ("What are your pets' names?", "Thanks, talk soon!"),  # courtesy answers nothing
        ("How was the trip?", "Thanks so much!"),  # nor does what is left of it once its thanks are cleaned off
        ("What are your pets' names?", "I went hiking today. Luna and Oliver!"),  # not the reply's first word
        ("Nice weather. I'm off.", "Luna and Oliver!"),  # no question at all
    ],
)
def test_a_fragment_without_a_question_it_answers_is_dropped(question: str, answer: str) -> None:
    assert not any(f.startswith("Asked") for f in _reply(question, answer))


def test_a_question_put_to_someone_else_is_not_answered() -> None:
    asked = event("What are your pets' names?", "Caroline", peer="Jon", event_id="q", as_of=MAY_8 - 60_000)
    facts = texts(extract([event("Luna and Oliver!", "Melanie", peer="Caroline")], context=[asked]))
    assert facts == []


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # A place that sets the scene of a clause is no "where I am now".
        (
            "Yeah, at the event, I had a conversation with someone named David.",
            "At the event, Caroline had a conversation with someone named David.",
        ),
        # Initials stay with the surname.
        ("J.K. Rowling is such an inspiring writer.", "Caroline said J.K. Rowling is such an inspiring writer."),
        # Thanks in front of a clause: the clause stays.
        (
            "And thanks for asking, we got another cat named Bailey too.",
            "We got another cat named Bailey too.",
        ),
        ("Way to go, hard work's paying off!", "Caroline said hard work's paying off."),
        # What the speaker shows is said.
        ("Look at this homemade coconut ice cream!", "Caroline showed this homemade coconut ice cream."),
        ("Check my ideal dance studio by the water.", "Caroline showed Caroline's ideal dance studio by the water."),
        # A dropped subject before "been" and "just got".
        (
            "Been reading that book and painting to keep busy.",
            "Caroline has been reading that book and painting to keep busy.",
        ),
        ("Just got some new shoes, too!", "Caroline just got some new shoes, too."),
    ],
)
def test_sentences_that_carry_an_answer_are_kept(content: str, expected: str) -> None:
    assert expected in texts(extract([event(content)]))


@pytest.mark.parametrize(
    "content",
    [
        "omw, 10 min",
        "I'm at Pantoll, it's freezing lol",
        "Thanks for the help!",
        "Check out this pic!",
        "Look at this pic of him eating parsley!",
        "Look at this!",
    ],
)
def test_errands_thanks_and_bare_show_requests_stay_dropped(content: str) -> None:
    assert texts(extract([event(content)])) == []


def test_a_day_named_short_keeps_its_weekday() -> None:
    saturday = int(datetime(2023, 7, 15, 13, tzinfo=UTC).timestamp() * 1000)
    facts = texts(extract([event("Last Fri I finally took my kids to a pottery workshop.", as_of=saturday)]))
    assert facts == ["Last Fri (on Friday, 14 July 2023) Caroline finally took Caroline's kids to a pottery workshop."]


def test_a_questions_inverted_auxiliary_agrees_with_the_name_and_its_verb_stays_bare() -> None:
    from nexus_memory.writer.extractor.pronouns import resolve_pronouns

    assert resolve_pronouns("How long have you been married?", "Ann", "Bo")[0] == "How long has Bo been married?"
    assert resolve_pronouns("What did you think of it?", "Ann", "Bo")[0] == "What did Bo think of it?"
    assert resolve_pronouns("I am lucky to have you.", "Ann", "Bo")[0] == "Ann is lucky to have Bo."
    assert resolve_pronouns("What are your plans?", "Ann", "Bo")[0] == "What are Bo's plans?"
    # A name that ends in a period (an initial) agrees too: "Are you free" -> "Is Ben S. free", not "Are Ben S.".
    assert resolve_pronouns("Are you free for lunch?", "Ann", "Ben S.")[0] == "Is Ben S. free for lunch?"


# --- questions without their question mark ---------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "So has Nate been up to anything recently.",  # a lead, then auxiliary + subject inversion
        "What book is John currently reading.",  # wh-word, its noun, then the inversion
        "How many kids does Jess have.",
        "What kind of music do you like.",
        "And are they coming to the party tomorrow.",
        "Ok do you want to go hiking on Sunday.",
        "How long have you lived in Lisbon.",
        "What time is the concert.",
    ],
)
def test_a_question_without_its_question_mark_is_no_fact(question: str) -> None:
    assert texts(extract([event(f"I adopted a puppy last year. {question}")])) == [
        "Caroline adopted a puppy last year (in 2022)."
    ]


@pytest.mark.parametrize(
    ("statement", "kept"),
    [
        ("What I liked most was the view.", "liked most was the view"),  # a wh-word opening a clause with its subject
        ("How I got here is a long story.", "got here is a long story"),
        ("When Maria was younger, she lived in Oregon.", "lived in Oregon"),
        ("What happened at the lake was scary.", "happened at the lake was scary"),  # no subject after "was"
        ("And what I want is a quiet weekend in Porto.", "a quiet weekend in Porto"),  # a lead, then a statement
    ],
)
def test_a_statement_opening_with_a_wh_word_or_lead_is_kept(statement: str, kept: str) -> None:
    assert any(kept in fact for fact in texts(extract([event(statement)])))
