"""Misreadings of the offline extractor, each as a class with the real facts that look like it (issue 22): a
name that is also a common word, a generic "you", the grammar after "X said", a reaction beside news."""

from __future__ import annotations

import pytest

from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.extractor.names import NameBook

MAY_8 = 1683554160000  # 2023-05-08 13:56 UTC


def facts_of(content: str) -> list[str]:
    """The facts of John's message to Maria."""
    event = Event(
        id="e1", platform="test", sender_id="John", content=content, as_of=MAY_8, peer_id="Maria", peer_kind="dm"
    )
    return [f.text for f in extract([event]).facts]


# --- a sentence's first word: a name or a common word, read from the batch -----------------------------------


@pytest.mark.parametrize(
    ("content", "first"),
    [
        # the batch writes the word in lower case only as a noun ("the bill"): the capital before a verb is a name
        ("Bill paid the bill.", "John said Bill paid the bill."),
        ("Rose loves the garden. I bought a rose.", "John said Rose loves the garden."),
        ("Mark said he would come. I made a mark on it.", "John said Mark said he would come."),
        # the batch uses the word bare, or its form is a common word's: the capital is only orthography
        ("Launch slipped a week. We launch in May.", "John said launch slipped a week."),
        ("Fingers crossed a producer falls in love with it. I crossed my fingers.", "John said fingers crossed"),
        ("Winning was such a thrill.", "John said winning was such a thrill."),
        ("Love is what keeps us going.", "John said love is what keeps us going."),
    ],
)
def test_a_capital_opening_a_reported_sentence_is_kept_only_for_a_name(content: str, first: str) -> None:
    assert facts_of(content)[0].startswith(first)


def test_the_name_book_tells_a_bare_lower_case_word_from_a_noun_after_an_article() -> None:
    book = NameBook({})
    book.learn_event(Event(id="e", platform="t", sender_id="a", content="I paid the bill. We launch today.", as_of=0))
    assert "launch" in book.bare_lower_words
    assert "bill" not in book.bare_lower_words
    assert "bill" in book.lower_words


# --- a generic "you" stays as said, with its speaker; the listener's "you" is resolved ------------------------


@pytest.mark.parametrize(
    ("content", "fact"),
    [
        (
            "You never know the difference a kind word makes.",
            "John said you never know the difference a kind word makes.",
        ),
        ("You have to keep pushing for your goals.", "John said you have to keep pushing for your goals."),
        ("When you work hard, you get results.", "John said when you work hard, you get results."),
        (
            "It's hard to run a business when you don't have faith in yourself.",
            "John said it's hard to run a business when you don't have faith in yourself.",
        ),
        # the statement speaks to the listener outside the condition: its "you" is the listener's too
        ("I can share the recipe with you if you'd like!", "John can share the recipe with Maria if Maria would like."),
        ("Wow, you look so happy when you dance!", "Maria looks so happy when Maria dances."),
        (
            "That way your videos don't flop when you post them.",
            "That way Maria's videos don't flop when Maria posts them.",
        ),
        # an obligation of the listener's own, or what they did, is theirs
        ("You have to come to my party on Friday.", "Maria has to come to John's party on Friday (on 12 May 2023)."),
        ("You had to wait for hours.", "Maria had to wait for hours."),
    ],
)
def test_a_generic_you_is_kept_as_said_and_the_listeners_you_is_named(content: str, fact: str) -> None:
    assert facts_of(content) == [fact]


# --- a dropped subject put back before "X said" can read it wrong ---------------------------------------------


@pytest.mark.parametrize(
    ("content", "fact"),
    [
        ("Never been on a sports team.", "John has never been on a sports team."),
        ("Never had a chance to visit it.", "John never had a chance to visit it."),
        ("Been a busy week since we talked.", "John said it's been a busy week since we talked."),
        ("Been busy volunteering at the shelter.", "John has been busy volunteering at the shelter."),
        ("Been hectic for me lately.", "It's been hectic for John lately."),
        ("Super stoked.", "John is super stoked."),
        ("Really appreciate the support.", "John really appreciates the support."),
        # an imperative, a noun subject or the speaker as object keeps no "I"
        ("Never give up.", "John said never give up."),
        ("Really made me proud.", "Really made John proud."),
        (
            "Really having a creative space is so important.",
            "John said really having a creative space is so important.",
        ),
    ],
)
def test_a_dropped_subject_is_put_back_as_it_was_meant(content: str, fact: str) -> None:
    assert facts_of(content) == [fact]


# --- a reaction to the other's news is no fact; news beside it, a view, or a reminder's content is ------------


@pytest.mark.parametrize(
    ("content", "facts"),
    [
        ("Thanks, Maria. It was tough, but I'm doing ok.", ["John is doing ok."]),
        ("That sounds like the perfect job for you!", []),
        ("Sounds like a blast from the past!", []),
        ("Winning must have been so thrilling!", []),
        ("It looks like something from a storybook.", []),
        # a name, the speaker's own news, a number or a view: kept
        ("Sounds like you and Max had a great time!", ["Sounds like Maria and Max had a great time."]),
        ("It looks like I'll be moving soon.", ["It looks like John will be moving soon."]),
        ("My grandmother must have been 90 then.", ["John's grandmother must have been 90 then."]),
        (
            "It seems like nature has a way of calming us down.",
            ["John said it seems like nature has a way of calming us down."],
        ),
        ("The trip was great, we saw whales.", ["John said the trip was great, we saw whales."]),
    ],
)
def test_a_reaction_is_dropped_and_news_beside_it_kept(content: str, facts: list[str]) -> None:
    assert facts_of(content) == facts


@pytest.mark.parametrize(
    ("content", "facts"),
    [
        (
            "Just remember that sometimes stumbling blocks can be opened doors. Keep going!",
            ["John said sometimes stumbling blocks can be opened doors."],
        ),
        (
            "Take comfort in knowing you've got a solid community cheering you on, me included.",
            ["Maria has got a solid community cheering Maria on, John included."],
        ),
        ("Don't forget that the meeting moved to Friday.", ["John said the meeting moved to Friday (on 12 May 2023)."]),
        # advice, or a thing remembered, is no clause to keep
        ("Don't forget to take breaks.", ["John said don't forget to take breaks."]),
        ("Remember that epic block in Game 7 of the '16 Finals?", []),
    ],
)
def test_a_reminder_keeps_the_clause_it_frames(content: str, facts: list[str]) -> None:
    assert facts_of(content) == facts
