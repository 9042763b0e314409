"""The offline observation text: a header, what changed over time, then the facts in time order with dates.

    Alice Chen — home: boston, denver
    Alice Chen used to live in Boston until May 2023; since June 2023 Alice Chen lives in Denver.
    - 2 May 2023: Alice lives in Boston with her sister.
    - 14 June 2023: Alice moved to Denver for a new job at Acme.

Facts keep their own words (names, places, numbers survive); a fact repeated word for word is shown once.
The text is a pure function of the facts, so rendering the same facts again gives the same text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nexus_memory.core.ids import day_month_year_of
from nexus_memory.observations.slots import Slot, change_sentence


@dataclass(frozen=True)
class MemberFact:
    """A fact as an observation shows it."""

    id: str
    text: str
    as_of: int
    slot: Slot | None = None


def header(subject: str, topic: str) -> str:
    return f"{subject} — {topic}"


def fact_line(fact: MemberFact) -> str:
    return f"- {day_month_year_of(fact.as_of)}: {' '.join(fact.text.split())}"


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
