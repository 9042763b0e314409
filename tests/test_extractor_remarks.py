"""Remarks that read like statements but are no facts (wishes, offers, exhortations, reactions), and a yes or a
no to a yes/no question kept with what it answers."""

from __future__ import annotations

import pytest

from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.extractor.remarks import remark_class
from nexus_memory.writer.extractor.sentences import polar_answer, polar_question

MAY_8 = 1683554160000  # 2023-05-08 13:56 UTC


def chat(content: str, sender: str, peer: str, event_id: str, as_of: int = MAY_8) -> Event:
    return Event(
        id=event_id, platform="test", sender_id=sender, content=content, as_of=as_of, peer_id=peer, peer_kind="dm"
    )


def facts_of(content: str) -> list[str]:
    return [f.text for f in extract([chat(content, "John", "Tim", "e1")]).facts]


def reply(question: str, answer: str) -> list[str]:
    """The facts of Tim's `answer` to John's `question`."""
    asked = chat(question, "John", "Tim", "q", MAY_8 - 60_000)
    return [f.text for f in extract([chat(answer, "Tim", "John", "a")], context=[asked]).facts]


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Good luck with the game.", "wish"),
        ("Best of luck in the tournament.", "wish"),
        ("All the best for your charity work.", "wish"),
        ("Wishing you many happy years together.", "wish"),
        ("Hope you have a great time.", "wish"),
        ("I'll reach out if I need anything.", "offer"),
        ("Let me know what you think.", "offer"),
        ("Feel free to reach out any time.", "offer"),
        ("I'm here if you need to talk.", "offer"),
        ("Let's keep supporting each other.", "exhortation"),
        ("It was really close.", "reaction"),
        ("Those places must've been amazing.", "reaction"),
        ("It's great that you're helping out.", "reaction"),
        ("It sounds like you're doing some impressive work.", "reaction"),
        ("I know you must have been buzzing.", "reaction"),
        ("It really inspired me.", "reaction"),
        ("They keep me motivated.", "reaction"),
        ("Missed you!", "offer"),
    ],
)
def test_a_remark_is_read_as_its_kind(sentence: str, kind: str) -> None:
    assert remark_class(sentence) == kind


@pytest.mark.parametrize(
    "sentence",
    [
        "I wish I had a bigger apartment.",  # a wish for the speaker's own sake says what they want
        "John wished for a bigger apartment.",
        "I hope to visit Japan next year.",
        "Good luck with the Redwood Health audit this week.",  # names what is coming, and when
        "Please let me know by March 21.",  # a deadline
        "It's great that I finally got the job.",  # the speaker's own news
        "It was my first marathon.",
        "That was a tough game against the Hawks.",
        "They are vegan.",
        "Let's meet at 3pm tomorrow.",  # a plan
        "Let's go with the blue design.",  # a decision
        "We could plan something special for this summer.",
        "It's the oldest bookstore in town.",
        "It inspired me to make some art.",  # what it made the speaker do
        "We can all make a difference.",  # what the speaker believes
        "It's amazing how basketball brings people together.",  # a view, not a reaction to the other's news
        "Taking care of ourselves is vital.",
        "I'll definitely keep you updated.",  # a promise, not an offer conditional on a need
        "They keep me busy with soccer practice.",
        "It's great 'cause it's grippy but still lets you move, plus it's tough and easy to keep clean.",
    ],
)
def test_a_fact_that_looks_like_a_remark_is_none(sentence: str) -> None:
    assert remark_class(sentence) is None


def test_remarks_are_not_stored_but_the_facts_beside_them_are() -> None:
    assert facts_of("Good luck with the game! I'll reach out if I need anything.") == []
    assert facts_of("Wow, it was really close! We won by two points in overtime.") == [
        "John said we won by two points in overtime."
    ]
    assert facts_of("I wish I had a bigger apartment.") == ["John wishes John had a bigger apartment."]


def test_a_yes_or_no_to_a_yes_no_question_says_what_it_answers() -> None:
    assert reply("Nice! Is that your third one?", "Yes! I can't believe it.")[0] == (
        'Asked "Is that Tim\'s third one?", Tim answered: Yes.'
    )
    assert reply("Have you been camping before?", "Yeah, plenty of times.") == [
        'Asked "Has Tim been camping before?", Tim answered: Yes, plenty of times.'
    ]
    # The statement after the yes is its own fact.
    assert reply("Is this your own painting?", "Nope, my sister painted it.") == [
        'Asked "Is this Tim\'s own painting?", Tim answered: No.',
        "Tim's sister painted it.",
    ]
    # A bare "Yes!" is no chatter when it answers a question.
    assert reply("Are you coming to the reunion?", "Yes!") == [
        'Asked "Is Tim coming to the reunion?", Tim answered: Yes.'
    ]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Can I get the recipe for it?", "Sure thing!"),  # a request for the asker
        ("Are you doing ok?", "Yes!"),  # small talk
        ("Is it a yoga studio or a gym?", "Yes, a bit of both."),  # asks which: a yes names nothing
        ("Have you been up to anything fun?", "Yeah, I went hiking."),  # the reply names what
        ("Did you make that?", "Yes!"),  # "that" was shown before: the question alone points at nothing
        ("Nice weather today.", "Yes!"),  # no question
        ("Is that your third one?", "It's a great feeling."),  # no yes or no
    ],
)
def test_a_reply_to_an_open_or_pointing_question_is_not_kept_as_its_answer(question: str, answer: str) -> None:
    assert not any(f.startswith("Asked") for f in reply(question, answer))


def test_polar_readers() -> None:
    assert polar_question("Cool! Did you join in?") == "Did you join in?"
    assert polar_question("Did you join in? What did you eat?") == ""  # the last question is the one answered
    assert polar_answer("Yup, we raised a ton!") == "Yes"
    assert polar_answer("Not really.") == "No"
    assert polar_answer("Yesterday I went.") == ""


@pytest.mark.parametrize(
    ("content", "fact"),
    [
        (
            "Love and acceptance should be everyone's right.",
            "John said love and acceptance should be everyone's right.",
        ),
        (
            "Love and acceptance really can be found everywhere.",
            "John said love and acceptance really can be found everywhere.",
        ),
        ("Wish and hope are different things.", "John said wish and hope are different things."),
        ("Love is what keeps us going.", "John said love is what keeps us going."),
        # a dropped "I" is still put back where a verb follows "and", or nothing is joined
        ("Went and bought a new bike.", "John went and bought a new bike."),
        ("Love painting with my kids.", "John loves painting with John's kids."),
        ("Need a break from work.", "John needs a break from work."),
    ],
)
def test_a_noun_subject_is_no_dropped_i(content: str, fact: str) -> None:
    assert facts_of(content) == [fact]


@pytest.mark.parametrize(
    "content",
    [
        "Got any cool art projects coming up",
        "You got any tips for a beginner",
        "Any plans for the weekend",
        "Anything new with you",
        "Any luck with the job hunt",
        "Ever been to Paris",
        "You ever tried surfing",
        "Wanna hang out later",
    ],
)
def test_a_question_without_its_mark_is_no_fact(content: str) -> None:
    assert facts_of(content) == []


@pytest.mark.parametrize(
    ("content", "fact"),
    [
        ("Any time is fine for me.", "Any time is fine for John."),
        ("Anything is possible with hard work.", "John said anything is possible with hard work."),
        ("Ever since I moved here I've been happier.", "Ever since John moved here John has been happier."),
        ("You got a new job last week.", "Tim got a new job last week (the week of 1 May 2023)."),
    ],
)
def test_a_statement_that_opens_like_a_bare_question_stays(content: str, fact: str) -> None:
    assert facts_of(content) == [fact]
