"""Who a fact is about: its subject entity, chosen among the entities it links, and how to name it.

An observation is about one entity, so each fact is consolidated under one subject: the linked entity
whose name (or alias) the text mentions first, people before things; when the text names none of them,
the linked entity of the most person-like type. Entities are told apart by id, never by name: two
people called Jess stay two.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from nexus_memory.core import db

# Types that are never what a fact is about (a date or a link is a detail of it).
NOT_SUBJECTS = frozenset({"date", "time", "url", "number", "money"})


@dataclass(frozen=True)
class EntityInfo:
    """An entity as consolidation sees it: id, type, the name to show, every name it goes by."""

    id: str
    type: str
    display: str
    names: tuple[str, ...] = field(default=())
    merged_into: str | None = None


def type_rank(entity_type: str) -> int:
    """0 for people, 1 for handles and contact points of people, then organisations, projects, places, rest."""
    if entity_type == "person":
        return 0
    if entity_type in ("email", "phone") or entity_type.endswith("_handle"):
        return 1
    return {"organization": 2, "project": 3, "location": 4}.get(entity_type, 5)


def load_entities(conn: db.Connection, entity_ids: Sequence[str]) -> dict[str, EntityInfo]:
    """EntityInfo for each id: display name = a person's name, else a handle's latest display name."""
    ids = list(dict.fromkeys(entity_ids))
    out: dict[str, EntityInfo] = {}
    for part in db.chunked(ids):
        marks = db.placeholders(part)
        rows = conn.execute(f"SELECT id, name, type, merged_into FROM entities WHERE id IN ({marks})", part).fetchall()
        aliases: dict[str, list[tuple[str, str]]] = {}
        for entity_id, alias, alias_type in conn.execute(
            f"""SELECT entity_id, alias, alias_type FROM aliases WHERE entity_id IN ({marks})
                ORDER BY created_at DESC, alias""",
            part,
        ):
            aliases.setdefault(entity_id, []).append((alias, alias_type))
        for entity_id, name, entity_type, merged_into in rows:
            own = aliases.get(entity_id, [])
            shown = [a for a, t in own if t == "display_name"]
            display = name if entity_type == "person" or not shown else shown[0]
            names = tuple(dict.fromkeys([display, name, *(a for a, _ in own)]))
            out[entity_id] = EntityInfo(entity_id, entity_type, display, names, merged_into)
    return out


def _first_mention(text: str, names: Sequence[str]) -> int | None:
    """Where in `text` any of `names` first appears as a whole word (case-insensitive)."""
    best: int | None = None
    for name in names:
        if len(name) < 2:
            continue
        match = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, flags=re.IGNORECASE)
        if match and (best is None or match.start() < best):
            best = match.start()
    return best


def pick_subject(text: str, entities: Sequence[EntityInfo]) -> EntityInfo | None:
    """The entity `text` is about (see module docstring); None when it links no possible subject."""
    candidates = [e for e in entities if e.type not in NOT_SUBJECTS]
    if not candidates:
        return None
    mentioned = [(e, pos) for e in candidates if (pos := _first_mention(text, e.names)) is not None]
    if mentioned:
        # A person (or a person's handle) mentioned anywhere beats a thing mentioned before it.
        return min(mentioned, key=lambda m: (type_rank(m[0].type) > 1, m[1], type_rank(m[0].type), m[0].id))[0]
    return min(candidates, key=lambda e: (type_rank(e.type), e.id))


def name_words(entity: EntityInfo) -> set[str]:
    """Lower-cased words of every name of an entity (left out of topic labels)."""
    return {w.lower() for name in entity.names for w in re.findall(r"\w+", name)}
