"""The offline writer's capitalised names: what is a name, a title or a place, and what is a word capitalised
only by its place in the sentence or glued to a speaker's name by the writer's rewrite of "I"."""

from __future__ import annotations

import pytest

from nexus_memory.writer.extractor.entities import find_entities
from nexus_memory.writer.extractor.names import NameBook


def book(lower: str = "", inner: str = "") -> NameBook:
    """Speakers Caroline, Melanie, John and Tim; the batch's words in lower case and its inner capitals."""
    names = NameBook({"c": "Caroline", "m": "Melanie", "j": "John", "t": "Tim"})
    names.lower_words |= set(lower.split())
    names.inner_capitals |= set(inner.split())
    return names


def found(text: str, names: NameBook | None = None) -> dict[str, str]:
    """name -> type of the capitalised names (not the literals) found in `text`."""
    return {m.name: m.type for m in find_entities(text, names if names is not None else book())}


@pytest.mark.parametrize(
    "text",
    [
        "Wishing Melanie many happy years together.",
        "Now Caroline's relationships feel more genuine.",
        "Makes Melanie feel like maybe Melanie should do it too.",
        "Seeing Caroline's mentee's face light up was the best.",
        "Whenever Caroline hears this jam, Caroline thinks about the paths Caroline has taken.",
        "Expression of Melanie and a way to relax.",
        "Last August John told Tim about a charity event.",
    ],
)
def test_a_word_glued_to_a_speakers_name_is_not_part_of_it(text: str) -> None:
    names = found(text)
    assert set(names) <= {"Caroline", "Melanie", "John", "Tim"}, names
    assert all(kind == "person" for kind in names.values())


def test_names_side_by_side_are_two_people_and_a_name_of_itself_is_one() -> None:
    assert found("It reminded Caroline of Caroline's own struggles.") == {"Caroline": "person"}
    assert found("No doubt, John John has got this.") == {"John": "person"}
    assert found("Caroline is so excited to tell Melanie John started yoga.") == {
        "Caroline": "person",
        "Melanie": "person",
        "John": "person",
    }
    # A known full name is one name, even when its first word is a known first name.
    full = NameBook({"s": "Sam Rivera", "p": "Sam"})
    assert found("Sam Rivera booked the hotel.", full) == {"Sam Rivera": "person"}


def test_a_plain_word_at_a_clause_start_is_dropped_before_a_name_or_place() -> None:
    names = book(lower="trust adding definitely", inner="Star Wars")
    assert found("Trust John, NYC is amazing.", names) == {"John": "person", "NYC": "location"}
    assert found("Adding NYC to Tim's travel list.", names) == {"NYC": "location", "Tim": "person"}
    assert found("Tim answered: Definitely Star Wars.", names) == {"Tim": "person", "Star Wars": "concept"}
    # Without the batch's word lists nothing says "Trust" is a plain word: kept as before.
    assert "Trust John" in {m.name for m in find_entities("Trust John, NYC is amazing.")}


def test_one_word_at_the_start_of_a_clause_needs_a_reason_to_be_a_name() -> None:
    names = book(lower="last winning even success max", inner="Max Even")
    assert found("Last Friday (on 14 July 2023) Caroline went to a council meeting.", names) == {"Caroline": "person"}
    # Reported speech keeps the capital of the sentence it reports.
    assert found("John said Winning was awesome.", names) == {"John": "person"}
    assert found("Tim said Success is almost here.", names) == {"Tim": "person"}
    # A dash opens a clause; "Even" is written in lower case elsewhere.
    assert found("Family is important - Even though it is small.", names) == {}
    # A word the batch capitalises inside sentences and never writes in lower case is a name anywhere.
    assert found("Melanie said Oliver is hilarious.", book(inner="Oliver")) == {
        "Melanie": "person",
        "Oliver": "concept",
    }
    assert "Oliver" not in found("Melanie said Oliver is hilarious.", book())
    # ... and a place is a place at the start.
    assert found("Paris was lovely.", names) == {"Paris": "location"}


def test_an_ordinary_word_in_capitals_is_not_an_acronym() -> None:
    assert found("Tim is in a tournament and it's INTENSE.", book(lower="intense")) == {"Tim": "person"}
    assert found("Tim is watching the NBA finals.", book(lower="finals")) == {"Tim": "person", "NBA": "concept"}


@pytest.mark.parametrize(
    ("text", "name", "kind"),
    [
        ('Melanie loved reading "Charlotte\'s Web" as a kid.', "Charlotte's Web", "concept"),
        ('Caroline loved "Becoming Nicole" by Amy Ellis Nutt.', "Becoming Nicole", "concept"),
        ('Melanie said "Summer Sounds"- The playing an awesome pop song.', "Summer Sounds", "concept"),
        ('Tim just finished "A Dance with Dragons" and it is good.', "Dance with Dragons", "concept"),
        ("Caroline said our group, 'Connected LGBTQ Activists', is great.", "Connected LGBTQ Activists", "concept"),
        ("Caroline read \u201cLord of the Rings\u201d again.", "Lord of the Rings", "concept"),
        ('Melanie did a piece called "Finding Freedom.', "Finding Freedom", "concept"),
    ],
)
def test_a_quoted_title_is_one_entity(text: str, name: str, kind: str) -> None:
    names = found(text, book(lower="summer becoming finding", inner=""))
    assert names.get(name) == kind, names
    # No word of the title is an entity of its own.
    assert not any(other != name and other in name for other in names if other not in ("Caroline", "Melanie")), names


def test_a_quoted_sentence_is_not_a_title() -> None:
    names = found('Asked "What is the funniest thing Oliver has done?", Melanie answered: he is hilarious.')
    assert "What is the funniest thing Oliver has done" not in names
    assert "'cause" not in str(found("Caroline chose them 'cause they help LGBTQ+ folks with adoption."))


@pytest.mark.parametrize(
    ("text", "name", "kind"),
    [
        ("We moved to New York last year.", "New York", "location"),
        ("New York was fun.", "New York", "location"),
        ("Summer Sounds played all night.", "Summer Sounds", "concept"),
        ("We went to the Pride parade.", "Pride", "concept"),
        ("I met my friend Jess at Stanford University.", "Jess", "person"),
        ("Caroline went to Stanford University.", "Stanford University", "organization"),
        ("Tim is watching Game of Thrones.", "Game of Thrones", "concept"),
    ],
)
def test_real_names_stay(text: str, name: str, kind: str) -> None:
    assert found(text, book(lower="summer new pride", inner="Pride")).get(name) == kind


def test_a_title_is_named_without_its_article_and_may_hold_a_number() -> None:
    assert "Lord of the Rings" in found('Tim is reading "The Lord of the Rings" again.')
    assert "Cyberpunk 2077" in found('Tim has been playing a game called "Cyberpunk 2077".')


def test_a_function_word_inside_a_sentence_may_open_a_name() -> None:
    assert "Under Armour" in found("John has always liked Under Armour, they are cool.")
    assert "Under Armour" not in found("Under Armour is what John likes.")
    assert found("If Caroline goes, John goes too.") == {"Caroline": "person", "John": "person"}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Tim loves reading J.K. Rowling's books.", "J.K. Rowling"),
        ("Tim said George R. R. Martin writes slowly.", "George R. R. Martin"),
        ("John F. Kennedy gave a speech there.", "John F. Kennedy"),
        ("Caroline moved to the U.S. last year.", "U.S."),
        ("Caroline moved to the U.S. Then Caroline started school.", "U.S."),
        ("The game was called Counter-Strike: Global Offensive.", "Counter-Strike: Global Offensive"),
        ("Tim watched Star Wars: The Last Jedi twice.", "Star Wars: The Last Jedi"),
    ],
)
def test_a_name_goes_on_past_its_initials_and_a_subtitle(text: str, name: str) -> None:
    assert name in found(text)
    assert ":" not in name or found(text)[name] == "concept"  # "called" names no person here


@pytest.mark.parametrize(
    ("text", "absent"),
    [
        ("Caroline moved to the U.S. Then Caroline started school.", "U.S. Then"),
        ("It was Plan B. Then Caroline left.", "Plan B. Then"),
        ("Asked what it is, Melanie answered: Luna is a cat.", "Melanie answered: Luna"),
        ("Subject: Atlas launch moving.", "Subject: Atlas"),
        ("Caroline wrote to Melanie: The show is on.", "Melanie: The"),
    ],
)
def test_no_name_runs_into_the_next_sentence_or_past_a_speakers_colon(text: str, absent: str) -> None:
    assert not any(absent in name for name in found(text))


@pytest.mark.parametrize(
    "text",
    [
        "John had to say goodbye to Max.",
        "John talked to Max about it.",
        "John gave the ball to Max.",
        "John went to Max's house.",
    ],
)
def test_the_to_of_a_person_names_no_place(text: str) -> None:
    assert found(text).get("Max") != "location"


@pytest.mark.parametrize("text", ["John moved to Lisbon.", "John flew to Reykjavik last spring."])
def test_the_to_of_going_names_a_place(text: str) -> None:
    assert found(text, book(inner="Lisbon Reykjavik"))[text.split()[3].rstrip(".")] == "location"
