"""The kind of statement a fact makes about its subject, for conflict detection without an LLM.

`read_statement("Ben moved to Lisbon last month.")` -> Statement("Ben", "residence", "", "Lisbon").
Only statements about someone's *current* state are read, and only when the sentence clearly says it:
it starts with the subject, then at most a few time adverbs ("now", "currently"), then a present-tense
verb (or one that means a new current state: "moved to", "joined"). Past ("lived in", "used to"),
negated ("no longer", "doesn't"), planned or possible ("will", "might", "wants to") and conditional
statements are not read: a statement about a past or a maybe stays true whatever comes later, and a
false conflict would hide a true fact. English only, deliberately narrow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUBJECT = r"(?P<subject>[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
_ADVERBS = r"(?:(?:now|currently|still|also|recently|finally|officially|just)\s+){0,2}"
_VALUE = r"(?P<value>(?:the\s+)?[\w&'.-]+(?:\s+[\w&'.-]+){0,3}?)"
# Where a value ends: a word that opens a clause or a time, or punctuation (a boundary, not a stopword list).
_VALUE_END = (
    r"(?=\s+(?:for|because|with|since|after|before|and|but|to|on|at|as|last|this|next|now|in|when|while|"
    r"from|until|where|who|which|again|together|yesterday|today)\b|\s*[,.;:!?()]|\s*$)"
)


@dataclass(frozen=True)
class Statement:
    """Who a fact is about, what kind of thing it states (and about what), and the value it states."""

    subject: str
    kind: str  # 'residence', 'employer', 'role', 'partner', 'favorite'
    key: str  # what a 'favorite' is of ('color', 'food'); '' for the others
    value: str

    def same_slot(self, other: Statement) -> bool:
        return (self.kind, self.key) == (other.kind, other.key)

    def differs(self, other: Statement) -> bool:
        """Different values, neither a part of the other ('Google' and 'Google Cloud' may both be true)."""
        a, b = normalize_value(self.value), normalize_value(other.value)
        return a != b and a not in b and b not in a


def _pattern(kind: str, verbs: str, value: str = _VALUE) -> tuple[str, re.Pattern[str]]:
    return kind, re.compile(rf"^\s*{_SUBJECT}\s+{_ADVERBS}(?:{verbs})\s+{value}{_VALUE_END}")


_PATTERNS = (
    _pattern(
        "residence", r"lives\s+in|is\s+living\s+in|resides\s+in|is\s+based\s+in|(?:has\s+)?(?:moved|relocated)\s+to"
    ),
    _pattern("employer", r"works\s+(?:at|for)|is\s+working\s+(?:at|for)|(?:has\s+)?joined|started\s+working\s+at"),
    _pattern("role", r"works\s+as|is\s+working\s+as", rf"(?:an?\s+){_VALUE}"),
    _pattern("partner", r"is\s+(?:married\s+to|engaged\s+to|dating|in\s+a\s+relationship\s+with)"),
)
_FAVORITE = re.compile(rf"^\s*{_SUBJECT}(?:'s|')\s+favou?rite\s+(?P<key>\w+(?:\s+\w+)?)\s+is\s+{_VALUE}{_VALUE_END}")


def read_statement(text: str) -> Statement | None:
    """The current-state statement the fact makes (module docstring), or None."""
    sentence = " ".join(text.split())
    match = _FAVORITE.match(sentence)
    if match:
        return Statement(match["subject"], "favorite", match["key"].lower(), match["value"].rstrip("."))
    for kind, pattern in _PATTERNS:
        match = pattern.match(sentence)
        if match:
            return Statement(match["subject"], kind, "", match["value"].rstrip("."))
    return None


def normalize_value(value: str) -> str:
    return re.sub(r"^(?:the|a|an)\s+", "", " ".join(value.lower().split())).strip(" .")
