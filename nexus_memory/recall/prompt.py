"""A prompt read once: its time window, search terms, names and the entities they mean, for every reader.

`read_prompt(conn, "What did Sarah eat in May 2023?", participants=...)` is what recall's strategies
(engine.py, strategies.py), the noise gate of injection (`nexus_memory.injection.relevance`) and the
packer (`nexus_memory.injection.pack`) know of a prompt, read from its text and the store's entity
tables once instead of once per reader. Two texts are read, and they are one text unless a date came
out of the prompt:

- `searched`: the prompt with its date expressions taken out ("What did Sarah eat?"): what recall
  searches (its terms, the entities it names, which of those are busy);
- `text`: the prompt whole, dates and all, as the noise gate weighs it (its terms, its names).

Each distinct text is tokenised (`keyword.extract_terms`) and matched against entity names
(`match_query_entities`) at most once; a capitalised run that is the whole prompt, or a run said twice,
is looked up once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nexus_memory.core import db
from nexus_memory.core.textcheck import safe_text
from nexus_memory.identity.participant import Participant
from nexus_memory.recall import keyword
from nexus_memory.recall.arguments import check_reference_time
from nexus_memory.recall.participants import MeantNames, meant_names
from nexus_memory.recall.query_entities import busy_entities, match_query_entities
from nexus_memory.recall.timeparse import parse_time_window

__all__ = ["NAME_RUN", "Prompt", "read_prompt", "sanitize"]

# A run of capitalised words ("John", "Sarah Connor").
NAME_RUN = re.compile(r"(?<![\w'’])[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*")


@dataclass(frozen=True)
class Prompt:
    """What a prompt says, read against one store (see the module docstring)."""

    given: str  # as the caller wrote it (the packer embeds it; recall answers with it)
    text: str  # whole, dates and all, made storable and cut at keyword.MAX_QUERY_CHARS: what the gate reads
    searched: str  # sanitised, its date expressions taken out: what recall searches
    window: tuple[int | None, int | None] | None  # the time its dates name (after, before), None without one
    terms: tuple[str, ...]  # search terms of `searched` (keyword.extract_terms)
    text_terms: tuple[str, ...]  # search terms of `text` (the same as `terms` when no date came out)
    entities: tuple[str, ...]  # live entities `searched` names, most specific first (match_query_entities)
    busy: frozenset[str]  # those of `entities` linked to many facts (query_entities.busy_entities)
    named: frozenset[str]  # entities the prompt names, as the gate counts them (`_named_entities`)
    names: MeantNames  # who its names mean, read through the participants
    participants: tuple[Participant, ...] = ()


def read_prompt(
    conn: db.Connection,
    prompt: str | Prompt,
    *,
    participants: Sequence[Participant] = (),
    parse_dates: bool = True,
    reference_time: int | None = None,
) -> Prompt:
    """Read `prompt` against the store once (a Prompt already read is returned as it is).

    With `parse_dates`, an explicit date expression ("last week", "in May 2023", relative to
    `reference_time` or now) gives the window and comes out of the searched text. `participants`, the
    people in the conversation, say who a name in it means (`nexus_memory.recall.participants`).
    Raises RecallArgumentError for a `reference_time` recall() would refuse.
    """
    if isinstance(prompt, Prompt):
        return prompt
    reference_time = check_reference_time(reference_time)
    raw = sanitize(prompt)
    parsed = parse_time_window(raw, reference_time) if parse_dates else None
    searched = raw if parsed is None else parsed[2]
    text = safe_text(prompt, keyword.MAX_QUERY_CHARS)  # lone surrogates cannot reach SQLite
    matched: dict[str, tuple[str, ...]] = {}

    def entities_of(part: str) -> tuple[str, ...]:
        if part not in matched:
            matched[part] = tuple(match_query_entities(conn, part))
        return matched[part]

    terms = tuple(keyword.extract_terms(searched))
    entities = entities_of(searched)
    runs = [match.group(0) for match in NAME_RUN.finditer(text)]
    names = meant_names(conn, runs, participants, entities_of)
    named = (_named_entities(conn, text, runs, entities_of) - names.others) | {
        entity for ids in names.meant.values() for entity in ids
    }
    return Prompt(
        given=prompt,
        text=text,
        searched=searched,
        window=None if parsed is None else (parsed[0], parsed[1]),
        terms=terms,
        text_terms=terms if text == searched else tuple(keyword.extract_terms(text)),
        entities=entities,
        busy=frozenset(busy_entities(conn, entities)) if entities else frozenset(),
        named=frozenset(named),
        names=names,
        participants=tuple(participants),
    )


def sanitize(query: str) -> str:
    """Any str -> text SQLite and the tokenizer accept: lone surrogates and NULs replaced."""
    text = str(query or "")
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\x00", " ")


def _named_entities(
    conn: db.Connection, text: str, runs: Sequence[str], entities_of: Callable[[str], Sequence[str]]
) -> frozenset[str]:
    """Entities the prompt names: written as a name (capitalised), or, written any way, one that is not
    a common noun or a date ('concept', 'date': "dance" or "2023" match those, and name nobody)."""
    as_names = {entity for run in runs[: keyword.MAX_PROBES] for entity in entities_of(run)}
    anyhow = set(entities_of(text)) - as_names
    candidates = sorted(as_names | anyhow)
    if not candidates:
        return frozenset()
    rows = conn.execute(
        f"SELECT id, type FROM entities WHERE id IN ({db.placeholders(candidates)})", candidates
    ).fetchall()
    return frozenset(
        entity_id for entity_id, kind in rows if kind != "date" and (entity_id in as_names or kind != "concept")
    )
