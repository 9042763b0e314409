"""The offline observation text: a header, what changed over time, then the facts in time order with dates.

    Alice Chen — home: boston, denver
    Alice Chen used to live in Boston until May 2023; since June 2023 Alice Chen lives in Denver.
    - 2 May 2023: Alice lives in Boston with her sister.
    - 14 June 2023: Alice moved to Denver for a new job at Acme.

A line is dated by when its fact was said, and the order is that of saying; the time a fact is about is in its
text ("until March 14", "on Friday (on 28 February 2025)"), or, when the text names none, after it
("(about 14 March 2025)").

Facts keep their own words (names, places, numbers survive); a fact repeated word for word is shown once.
The text is a pure function of the facts, so rendering the same facts again gives the same text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_memory.core.ids import day_month_year_of
from nexus_memory.observations.slots import Slot, change_sentence
from nexus_memory.writer.extractor.dates import about_label, names_a_date


@dataclass(frozen=True)
class MemberFact:
    """A fact as an observation shows it."""

    id: str
    text: str
    as_of: int  # when it was said
    slot: Slot | None = None
    about: tuple[int, int] | None = None  # the time it is about (facts.about_start, about_end)


def header(subject: str, topic: str) -> str:
    return f"{subject} — {topic}"


def fact_line(fact: MemberFact) -> str:
    return f"- {dated_text(fact.text, fact.as_of, fact.about)}"


def dated_text(text: str, said: int, about: tuple[int, int] | None) -> str:
    """'3 March 2025: <text>': dated by when it was said, naming the time it is about when its text does not."""
    return f"{day_month_year_of(said)}: {with_about(text, about)}"


def with_about(text: str, about: tuple[int, int] | None) -> str:
    """The text, and after it the time it is about when it names none itself: '... (about 14 March 2025)'."""
    text = " ".join(text.split())
    if about is not None and not names_a_date(text):
        text = f"{text} (about {about_label(about)})"
    return text


def about_of(row: Mapping[str, Any]) -> tuple[int, int] | None:
    """A fact row's about-time (about_start, about_end), None when its text names no time."""
    start = row.get("about_start")
    return None if start is None else (start, row.get("about_end") or start)


def render_observation(subject: str, topic: str, facts: Sequence[MemberFact]) -> str:
    """Header, one change sentence per attribute that changed, one dated line per distinct fact."""
    ordered = sorted(facts, key=lambda f: (f.as_of, f.id))
    lines = [header(subject, topic)]
    by_slot: dict[tuple[str, str], list[tuple[int, Slot]]] = {}
    for fact in ordered:
        if fact.slot is not None:
            by_slot.setdefault(fact.slot.ident, []).append((fact.as_of, fact.slot))
    lines += [s for stated in by_slot.values() if (s := change_sentence(subject, stated))]
    seen: set[str] = set()
    for fact in ordered:
        key = " ".join(fact.text.lower().split())
        if key not in seen:
            seen.add(key)
            lines.append(fact_line(fact))
    return "\n".join(lines)
