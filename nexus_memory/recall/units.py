"""A unit above the single fact that re-ranks what recall has already found: who said it.

The **speaker** list holds the semantic list's facts whose source message was sent by a person the
question names and who is busy (a conversation partner, the user: see query_entities). Such a name adds
no entity list (it would list almost everything), yet "What activities does Melanie partake in?" is
answered by what Melanie said; this list gives her own messages a second vote in RRF (weight 1, like
the keyword and entity lists). The sender is the message's handle read through `contacts`, so it counts
however the fact is worded. It is built from a list the filters have already applied to, and costs one
query over at most `limit` ids.

Chosen by leave-one-conversation-out on LoCoMo dev, against the facts *linked* to the person and other
weights; a session-level list was rejected (docs/recall.md, Hard questions).
"""

from __future__ import annotations

from collections.abc import Sequence

from nexus_memory.core import db
from nexus_memory.recall.fusion import Ranked, split_key
from nexus_memory.recall.prompt import Prompt


def add_speaker_list(conn: db.Connection, prompt: Prompt, lists: dict[str, list[Ranked]]) -> None:
    """Append to lists["speaker"] the speaker list, when the question names a busy person."""
    people = [e for e in prompt.entities if e in prompt.busy]
    if people and lists["semantic"]:
        # The last semantic list is the one over all time when a date in the query added a windowed one.
        lists["speaker"].append(speaker_list(conn, lists["semantic"][-1], people))


def speaker_list(conn: db.Connection, semantic: Ranked, people: Sequence[str]) -> Ranked:
    """The facts of `semantic`, in its order, whose source message was sent by one of `people`
    (entity ids; a sender's entity merged into one of them counts as that one)."""
    fact_ids = [split_key(key)[1] for key, _ in semantic if key.startswith("fact:")]
    if not fact_ids or not people:
        return []
    said: set[str] = set()
    for part in db.chunked(fact_ids):
        rows = conn.execute(
            f"""SELECT f.id FROM facts f JOIN events e ON e.id = f.source_event_id
                JOIN contacts c ON c.platform = e.platform AND c.handle = e.sender_id
                JOIN entities n ON n.id = c.entity_id
                WHERE f.id IN ({db.placeholders(part)})
                  AND coalesce(n.merged_into, n.id) IN ({db.placeholders(people)})""",
            [*part, *people],
        )
        said.update(r[0] for r in rows)
    return [(key, score) for key, score in semantic if key.startswith("fact:") and split_key(key)[1] in said]
