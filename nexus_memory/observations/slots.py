"""Attributes that change over time (where someone lives, works, what they love), and the sentence
that says how they changed, worked out from the facts' dates.

`read_slot("Alice moved to Denver for a job")` -> Slot("residence", "", "Denver"). Facts of one subject
with the same attribute (and key) but different values are a change: `change_sentence` turns them,
in time order, into "Alice used to live in Boston until May 2023; since June 2023 Alice lives in Denver."
English only and deliberately narrow: a slot is read only when a pattern clearly says it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nexus_memory.core.ids import day_month_year_of, month_year_of

# A proper name (capitalised words, with a few lower-case joiners), or failing that a short phrase.
_PROPER = r"(?:[A-Z][\w'&.-]*)(?:\s+(?:of|de|la|du|the|and|&|[A-Z][\w'&.-]*))*(?<![\s,.])"
_PHRASE = r"(?:the\s+|a\s+|an\s+)?[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,2}?"
_PLACE = rf"(?:{_PROPER}|{_PHRASE})"
_END = r"(?=\s+(?:for|because|with|since|after|before|and|but|to|in|on|at|as|last|this|next|now)\b|[,.;:!?)]|$)"


@dataclass(frozen=True)
class Slot:
    """One attribute of a subject stated by a fact: name, key (which preference), value."""

    attribute: str
    key: str
    value: str

    @property
    def ident(self) -> tuple[str, str]:
        return self.attribute, self.key


@dataclass(frozen=True)
class _Pattern:
    attribute: str
    regex: re.Pattern[str]


def _p(attribute: str, verbs: str, value: str = _PLACE) -> _Pattern:
    return _Pattern(attribute, re.compile(rf"\b(?:{verbs})\s+(?P<value>{value}){_END}"))


_PATTERNS = (
    _p("residence", r"(?:lives|lived|living|live|moved|moving|moves|relocated|relocating)\s+(?:back\s+)?(?:in|to)"),
    _p("residence", r"(?:is|was)\s+based\s+in"),
    _p("employer", r"(?:works|worked|working|work)\s+(?:at|for)"),
    _p(
        "employer", r"(?:joined|joins|started\s+(?:a\s+new\s+job\s+)?at|starts\s+at|was\s+hired\s+(?:at|by)|hired\s+by)"
    ),
    _p("role", r"(?:works|worked|working|work)\s+as", rf"(?:a|an)\s+{_PHRASE}"),
    _p("role", r"(?:became|becomes|was\s+promoted\s+to|got\s+promoted\s+to)", rf"(?:a|an)\s+{_PHRASE}"),
    _p("relationship", r"(?:is|was|got|are|were)", r"married|engaged|divorced|single|separated"),
    _p("relationship", r"(?:is\s+)?(?:dating|married\s+to|engaged\s+to|seeing)", _PROPER),
)
# Preferences are keyed by what they are about; the value is the feeling.
_LIKE = re.compile(
    r"\b(?P<verb>loves|love|loved|likes|like|liked|enjoys|enjoy|enjoyed|adores|hates|hate|hated|dislikes|"
    r"dislike|disliked|can't\s+stand|cannot\s+stand|no\s+longer\s+likes|doesn't\s+like|does\s+not\s+like)\s+"
    rf"(?P<object>{_PHRASE}){_END}"
)
_NEGATIVE = ("hat", "dislik", "can", "no longer", "doesn", "does not")
_RELATIONSHIP_WORDS = {"married", "engaged", "divorced", "single", "separated"}

# How each attribute reads in the past and now: (past template, present template) of {value}.
_TEMPLATES = {
    "residence": ("used to live in {value}", "lives in {value}"),
    "employer": ("used to work at {value}", "works at {value}"),
    "role": ("used to work as {value}", "works as {value}"),
    "relationship": ("used to be {value}", "is {value}"),
    "preference": ("used to {value} {key}", "{value}s {key}"),
}


def read_slot(text: str) -> Slot | None:
    """The first attribute `text` clearly states, or None."""
    for pattern in _PATTERNS:
        match = pattern.regex.search(text)
        if match:
            value = " ".join(match.group("value").split())
            if pattern.attribute == "relationship" and value.lower() not in _RELATIONSHIP_WORDS:
                value = f"{_relationship_verb(match.group(0))} {value}"
            return Slot(pattern.attribute, "", value)
    match = _LIKE.search(text)
    if match:
        obj = re.sub(r"^(?:the|a|an)\s+", "", " ".join(match.group("object").split()).lower())
        verb = match.group("verb").lower()
        feeling = "dislike" if verb.startswith(_NEGATIVE) else "love" if verb.startswith(("lov", "ador")) else "like"
        return Slot("preference", obj, feeling)
    return None


def _relationship_verb(matched: str) -> str:
    for verb in ("married to", "engaged to", "dating", "seeing"):
        if verb in matched:
            return verb
    return "with"


def same_value(a: str, b: str) -> bool:
    return _norm(a) == _norm(b)


def _norm(value: str) -> str:
    return re.sub(r"^(?:the|a|an)\s+", "", value.lower()).strip()


def change_sentence(subject: str, stated: list[tuple[int, Slot]]) -> str | None:
    """'<subject> used to … until <date>; since <date> <subject> …' for one attribute, None if it never changed.

    `stated` is (as_of ms, slot) for every fact stating this attribute, in any order. Runs of the same
    value are one period; a period ends at the last fact stating it and the next begins at the first
    fact stating the new value. Months are used unless both ends fall in one month.
    """
    periods: list[tuple[str, int, int]] = []  # (value, first as_of, last as_of)
    for as_of, slot in sorted(stated, key=lambda s: s[0]):
        if periods and same_value(periods[-1][0], slot.value):
            periods[-1] = (periods[-1][0], periods[-1][1], as_of)
        else:
            periods.append((slot.value, as_of, as_of))
    if len(periods) < 2:
        return None
    attribute, key = stated[0][1].attribute, stated[0][1].key
    past, present = _TEMPLATES[attribute]
    parts = []
    for i, (value, _, last) in enumerate(periods[:-1]):
        start_next = periods[i + 1][1]
        fmt = day_month_year_of if month_year_of(last) == month_year_of(start_next) else month_year_of
        text = past.format(value=value, key=key) if i == 0 else f"then {_bare(past).format(value=value, key=key)}"
        parts.append(f"{text} until {fmt(last)}")
    value, first, _ = periods[-1]
    previous_last = periods[-2][2]
    fmt = day_month_year_of if month_year_of(previous_last) == month_year_of(first) else month_year_of
    now = present.format(value=value, key=key)
    return f"{subject} {', '.join(parts)}; since {fmt(first)} {subject} {now}."


def _bare(template: str) -> str:
    """'used to live in {value}' -> 'live in {value}' (for the middle periods of a longer history)."""
    return template.removeprefix("used to ")
