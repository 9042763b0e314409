"""Small text helpers shared by the extractor's steps."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexus_memory.core.calendar_words import MONTHS, WEEKDAYS
from nexus_memory.writer.extractor.words import (
    ADVERBS,
    FILLER_WORDS,
    IMPERATIVE_VERBS,
    IRREGULAR_PAST,
    PLACES,
    PRESENT_VERBS,
    SINGULAR_FINITE,
    STOPWORDS,
    WORD_RE,
)

if TYPE_CHECKING:
    from nexus_memory.writer.extractor.names import NameBook


def contains_word(text: str, word: str) -> bool:
    return bool(word) and re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def capitalise(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def lower_first(text: str, names: NameBook | None = None) -> str:
    """Lower-case the first word unless it looks like a name: 'I', an acronym or a word with a capital
    inside ('DynamoDB'), a month or weekday, a known name or place, a word the batch capitalises inside a
    sentence or the same text capitalises again later; or, when the batch writes it in lower case only after an
    article ('the bill') or never, and it has no common word's form (a verb, an adverb, a gerund), the first of
    several capitalised words ('Steep Ravine') or a word right before its verb ('Priya fixed it', 'Bill paid the
    bill'). Sentence-initial capitals are otherwise only orthography ('Launch slipped' -> 'launch slipped' where
    the batch says 'we launch')."""
    words = WORD_RE.findall(text)
    if not words:
        return text
    first = words[0]
    after = [w for w in words[1:3] if w.lower() not in ADVERBS][:1]  # "Kestrel just said" -> "said"
    nxt = after[0] if after else ""
    if first == "I" or first.startswith("I'"):
        return text
    if names is not None and names.is_known(first) and finite_verb(nxt.lower()):
        return text  # a known person whose name is also a function word, before its verb ("Will is coming")
    keep = first.lower() not in STOPWORDS and (
        (len(first) > 1 and any(c.isupper() for c in first[1:]))
        or first in PLACES
        or first.lower() in MONTHS
        or first.lower() in WEEKDAYS
        or (names is not None and (names.is_known(first) or first in names.inner_capitals))
        or contains_word(text[len(first) :], first)
    )
    low = first.lower()
    if not keep and low not in STOPWORDS and not (names is not None and low in names.bare_lower_words):
        # A word the batch writes in lower case only as a noun ("the bill"), or never, right before its verb or
        # another capital, is a name ("Bill paid the bill"), unless its form says it is a common word: a verb
        # ("Count Sam in", "Love is all you need"), an adverb or filler ("Never had", "Super stoked") or a
        # gerund ("Winning was awesome").
        common = IMPERATIVE_VERBS | PRESENT_VERBS | ADVERBS | FILLER_WORDS
        gerund = low.endswith("ing") and len(low) > 5
        keep = low not in common and not gerund and (nxt[:1].isupper() or finite_verb(nxt.lower()))
    return text if keep else text[:1].lower() + text[1:]


def finite_verb(word: str) -> bool:
    """A finite verb that follows one subject: 'is', 'told', 'fixed', 'guarantees' ("Priya fixed it"), not a
    plural or base form ('are', 'have': "Pets have a way" opens with a common noun, "Book soon" with a verb)."""
    return (
        word in SINGULAR_FINITE
        or word in IRREGULAR_PAST
        or (len(word) > 4 and word.endswith("ed"))
        or (word.endswith("s") and word[:-1] in PRESENT_VERBS)
    )


def finish(text: str) -> str:
    """Trim and end with a full stop (facts read as sentences)."""
    text = text.strip().rstrip(",;:- ")
    if text and text[-1] not in ".!?\"')":
        text += "."
    return text
