"""Who a name in a prompt means, when the caller says who is in the conversation.

A memory that knows *a* John cannot tell from the text alone whether "What does John enjoy?" asks
about him. The conversation the prompt comes from can: its participants arrive as delivered handles
(platform + sender id, the only identity a platform vouches for). A name in the prompt that a
participant goes by means that participant:

- known here (a message was delivered from the handle): the participant's entity, and any entity of
  that name that is no other delivered contact (one inferred from conversation may be them: a
  duplicate, never a false merge); entities of that name with contacts of their own are someone else;
- unknown here: someone this memory never met, so every entity of that name is someone else, and the
  name is a stranger's.

Without participants nothing changes: a name means every entity it matches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nexus_memory.core import db
from nexus_memory.identity import store as identity
from nexus_memory.identity.participant import Participant
from nexus_memory.recall import keyword
from nexus_memory.recall.query_entities import NAME_ALIASES

_POSSESSIVE = re.compile(r"['’]s$")
MAX_PARTICIPANTS = 16  # a group chat's worth; more are ignored


@dataclass(frozen=True)
class MeantNames:
    """What the prompt's names mean, read through the participants."""

    meant: dict[str, frozenset[str]]  # a name as written (normalised) -> the participant entities it means
    others: frozenset[str]  # entities those names match that are someone else

    @property
    def newcomers(self) -> tuple[str, ...]:
        """Names meaning a participant this memory never heard from."""
        return tuple(name for name, ids in self.meant.items() if not ids)

    def word_meanings(self) -> dict[str, frozenset[str]]:
        """Each word of a meant name -> the participant entities it means (empty: a stranger's name)."""
        return {word: ids for name, ids in self.meant.items() for word in name.split()}


NO_PARTICIPANTS = MeantNames({}, frozenset())


def meant_names(
    conn: db.Connection,
    name_runs: Sequence[str],
    participants: Sequence[Participant],
    entities_of: Callable[[str], Sequence[str]],
) -> MeantNames:
    """Read the prompt's capitalised runs (`name_runs`, as `prompt.NAME_RUN` finds them) against the
    participants (see the module docstring); `entities_of` is the entities a text names
    (`match_query_entities`, read once per text)."""
    if not participants:
        return NO_PARTICIPANTS
    known = [(p, identity.delivered_entity(conn, p.platform, p.handle)) for p in participants[:MAX_PARTICIPANTS]]
    names = [(_names_of(conn, p, entity), entity) for p, entity in known]
    meant: dict[str, frozenset[str]] = {}
    others: set[str] = set()
    for run in _spoken_names(name_runs):
        key = identity.normalize(run)
        entities = [entity for spoken, entity in names if key in spoken]
        if not entities or key in meant:
            continue
        ids = frozenset(e for e in entities if e is not None)
        meant[key] = ids
        for match in entities_of(run):
            if match not in ids and (not ids or _has_contact(conn, match)):
                others.add(match)
    return MeantNames(meant, frozenset(others - {e for ids in meant.values() for e in ids}))


def _spoken_names(name_runs: Sequence[str]) -> list[str]:
    """Each capitalised run of the prompt, less the function words that open it ("Did John" -> "John").

    A run is matched whole: "John Greene" is not "John"."""
    runs: list[str] = []
    for run in name_runs:
        words = _POSSESSIVE.sub("", run).rstrip(".").split()
        while words and words[0].lower() in keyword.STOPWORDS:
            words = words[1:]
        if words:
            runs.append(" ".join(words))
    return runs


def _names_of(conn: db.Connection, participant: Participant, entity: str | None) -> set[str]:
    """The normalised names a participant goes by, each full and by its first word.

    A participant this memory knows goes by the names it has for them, and by the name the caller
    gives unless another delivered contact goes by it: the rule a display name follows at delivery
    (`identity.display_name`), so a handle cannot take over who "Sarah" means. A newcomer's name is
    taken as given: at worst it hides what memory knows of someone of that name, never shows it.
    """
    spoken = [participant.name] if participant.name and not _anothers_name(conn, participant.name, entity) else []
    if entity is not None:
        spoken += [r[0] for r in conn.execute("SELECT name FROM entities WHERE id = ? AND type = 'person'", (entity,))]
        spoken += [
            r[0]
            for r in conn.execute(
                f"SELECT alias FROM aliases WHERE entity_id = ? AND alias_type IN ({db.placeholders(NAME_ALIASES)})",
                (entity, *NAME_ALIASES),
            )
        ]
    keys = {identity.normalize(name) for name in spoken if name.strip()}
    return keys | {key.split()[0] for key in keys if " " in key}


def _anothers_name(conn: db.Connection, name: str, entity: str | None) -> bool:
    """`name` is a known participant's claim to a name another delivered contact goes by."""
    if entity is None:
        return False
    return any(other.id != entity and _has_contact(conn, other.id) for other in identity.find_entities(conn, name))


def _has_contact(conn: db.Connection, entity_id: str) -> bool:
    """A delivered handle belongs to this entity: it is a routable someone, not a name said in passing."""
    return conn.execute("SELECT 1 FROM contacts WHERE entity_id = ? LIMIT 1", (entity_id,)).fetchone() is not None
