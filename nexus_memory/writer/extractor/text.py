"""Small text helpers shared by the extractor's steps."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nexus_memory.writer.extractor.words import PLACES, WORD_RE

if TYPE_CHECKING:
    from nexus_memory.writer.extractor.names import NameBook


def contains_word(text: str, word: str) -> bool:
    return bool(word) and re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", text) is not None


def capitalise(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def lower_first(text: str, names: NameBook | None = None) -> str:
    """Lower-case the first word unless it looks like a name: 'I', an acronym, a known name or place,
    or a word the same text capitalises again later (sentence-initial capitals are only orthography)."""
    words = WORD_RE.findall(text)
    if not words:
        return text
    first = words[0]
    keep = (
        first == "I"
        or first.startswith("I'")
        or (first.isupper() and len(first) > 1)
        or first in PLACES
        or (names is not None and names.is_known(first))
        or contains_word(text[len(first) :], first)
    )
    return text if keep else text[:1].lower() + text[1:]


def finish(text: str) -> str:
    """Trim and end with a full stop (facts read as sentences)."""
    text = text.strip().rstrip(",;:- ")
    if text and text[-1] not in ".!?\"')":
        text += "."
    return text
