"""Observation vectors: the normalised mean of their facts' vectors, so recall(scope=observations) works.

An observation can hold dozens of facts while the model reads ~256 tokens, so embedding its text would
describe only its first lines; the mean of its facts' vectors describes all of them, and costs no model
call. Only current versions get one (recall never returns a superseded version).
"""

from __future__ import annotations

import numpy as np

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.vec0 import index_state
from nexus_memory.observations import store


def index_observation_vectors(stores: Stores, batch: int = 500) -> int:
    """Give every current observation without a vector its centroid vector; returns how many."""
    state = index_state(stores.conn)
    if state is None:
        return 0
    model, dimension = state
    search = VectorIndex(stores, model, dimension)
    rows = stores.conn.execute(
        f"""SELECT r.id, ep.platform, COALESCE(ep.end_time, r.created_at), ep.thread_id
            FROM analysis_runs r LEFT JOIN episodes ep ON ep.id = r.episode_id
            WHERE {store.CURRENT_SQL} AND NOT EXISTS (SELECT 1 FROM embeddings e
                  WHERE e.target_type = 'observation' AND e.target_id = r.id AND e.model = ?)""",
        (model,),
    ).fetchall()
    written = 0
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        members: dict[str, list[str]] = {}
        for run_id, fact_id in stores.conn.execute(
            f"SELECT analysis_run_id, fact_id FROM observation_facts WHERE analysis_run_id IN "
            f"({db.placeholders([r[0] for r in part])})",
            [r[0] for r in part],
        ):
            members.setdefault(run_id, []).append(fact_id)
        vectors = store.fact_vectors(stores.conn, model, [f for fs in members.values() for f in fs])
        out = []
        for run_id, platform, as_of, thread_id in part:
            found = [vectors[f] for f in members.get(run_id, []) if f in vectors]
            if not found:
                continue
            mean = np.mean(np.stack(found), axis=0)
            norm = float(np.linalg.norm(mean))
            if norm > 0:
                out.append((run_id, (mean / norm).astype(np.float32), platform, as_of, thread_id))
        search.add("observation", out)
        written += len(out)
    return written
