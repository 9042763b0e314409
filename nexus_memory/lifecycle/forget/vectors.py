"""embeddings.db rows of a forget, and the vector index files rewritten without them.

Vectors go for the forgotten facts, entities, observations and mental models, and for the facts whose
embedded text included a forgotten message as the question they answer (embeddings.fact_embedding_text):
those are embedded again by the next embedding run. After the transaction, the IVF index files of each
type that lost vectors are rewritten without them (centroids kept: no retraining, which the nightly
maintenance does), so no file under ann/ keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nexus_memory.core import db
from nexus_memory.core.stores import Stores

TARGET_TYPES = ("fact", "entity", "observation", "mental_model")


def facts_quoting(conn: db.Connection, event_ids: Sequence[str], doomed_facts: Sequence[str]) -> list[str]:
    """Surviving facts of the message right after a forgotten one in its thread and session (read before the
    events go): their vectors were made with the forgotten message as context."""
    doomed = set(doomed_facts)
    found: list[str] = []
    for event_id in event_ids:
        row = conn.execute(
            "SELECT rowid, thread_id, session_id, as_of FROM events WHERE id = ?", (event_id,)
        ).fetchone()
        if row is None or row[1] is None:
            continue
        following = conn.execute(
            """SELECT id, session_id FROM events WHERE thread_id = ? AND as_of >= ? AND (as_of > ? OR rowid > ?)
               ORDER BY as_of, rowid LIMIT 1""",
            (row[1], row[3], row[3], row[0]),
        ).fetchone()
        if following is None or following[1] != row[2]:
            continue
        found += [
            r[0]
            for r in conn.execute("SELECT id FROM facts WHERE source_event_id = ?", (following[0],))
            if r[0] not in doomed
        ]
    return found


def delete_vectors(conn: db.Connection, targets: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Delete canonical vectors and their vec0 rows for target_type -> ids; returns rows removed per type."""
    removed: dict[str, int] = {}
    for target_type, ids in targets.items():
        for part in db.chunked(list(dict.fromkeys(ids))):
            rowids = [
                r[0]
                for r in conn.execute(
                    f"SELECT rowid FROM embeddings WHERE target_type = ? AND target_id IN ({db.placeholders(part)})",
                    [target_type, *part],
                )
            ]
            if not rowids:
                continue
            marks = db.placeholders(rowids)
            conn.execute(f"DELETE FROM vec_embeddings WHERE rowid IN ({marks})", rowids)
            conn.execute(f"DELETE FROM embeddings WHERE rowid IN ({marks})", rowids)
            removed[target_type] = removed.get(target_type, 0) + len(rowids)
    return removed


def rewrite_index_files(stores: Stores, target_types: Sequence[str]) -> list[str]:
    """Rewrite the IVF files of these types (those that have any) without the rows gone from the canonical
    table; returns the types rewritten."""
    from nexus_memory.embeddings.vectors.ivf import prune_ivf
    from nexus_memory.embeddings.vectors.vec0 import index_state

    state = index_state(stores.conn)
    if state is None:
        return []
    model = state[0]
    return [t for t in target_types if prune_ivf(stores.conn, stores.data_dir, model, t) is not None]
