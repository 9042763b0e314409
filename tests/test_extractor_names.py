"""The extractor's name book: which capitalised words a batch writes inside a sentence (`NameBook.learn_event`)."""

from __future__ import annotations

import re

import pytest

from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor.names import NameBook

T0 = 1_714_557_600_000


def _event(content: str) -> Event:
    return Event(
        id="chat:1", platform="chat", sender_id="ann", sender_name="Ann", content=content, as_of=T0, thread_id="t"
    )


def _inner_capitals_by_whole_prefix(content: str) -> set[str]:
    """The rule spelled out: a capitalised word not at a sentence start, judged on all the text before it."""
    found = set()
    for match in re.finditer(r"[A-Za-z][A-Za-z'\u2019-]*", content):
        before = content[: match.start()]
        starts = re.search(r"(?:^|[.!?:\n]\W*)\s*$", before)
        if match.group(0)[:1].isupper() and not starts:
            found.add(match.group(0))
    return found


@pytest.mark.parametrize(
    "content",
    [
        "We met Kestrel. Then Paris",
        "  Hello there Bob",
        '"Quoted start" and Rome',
        "rock-. Next one: Lisbon\nNew line Start",
        "Ann's plan -- Berlin! Wow? (Oslo) 3 Oslo_x Zed",
        "\u00e9t\u00e9 Nice: caf\u00e9 Lyon",
        "",
    ],
)
def test_inner_capitals_are_the_words_capitalised_inside_a_sentence(content: str) -> None:
    book = NameBook({})
    book.learn_event(_event(content))
    assert book.inner_capitals == _inner_capitals_by_whole_prefix(content)


@pytest.mark.parametrize(
    "word, known",
    [
        ("Melanie", True),  # a known first name
        ("Mel", True),  # what starts one: a nickname
        ("Melan", True),
        ("Me", False),  # too short to be a nickname
        ("mel", False),  # not capitalised
        ("Melanies", False),  # longer than the name
        ("Caro", True),  # starts "Caroline" (the first word of "Caroline Ruiz")
        ("Ruiz", False),  # a last name alone is no first name
        ("Caroline Ruiz", True),
        ("Sam", True),
        ("Sa", False),
    ],
)
def test_a_known_name_its_first_word_or_what_starts_that_word(word: str, known: bool) -> None:
    book = NameBook({"u1": "Melanie", "u2": "Caroline Ruiz", "u3": "Sam"})
    assert book.is_known(word) is known
