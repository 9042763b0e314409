"""The side effects of an agent's fact write: what the pipeline does for the facts it writes.

The write tools of agents/tools/fact_writes.py (remember_fact, correct_fact) call `fact_side_effects` after their
write commits, so every way an agent writes (`call_tool` in an OpenAI tool loop, the MCP server, the
skills `write` script, the CLI) does the same:
  - co-occurrences: each pair of entities the fact names counts once more (entity_cooccurrences);
  - merge candidates: an entity the write created whose name is part of a known entity's name, or the
    other way round ('Sarah' and 'Sarah Chen'), is proposed for merging, never merged (a person decides);
  - embeddings: the fact is embedded with the model of the store's vector index (the configured one
    for a store without an index yet), so semantic recall finds it at once, not after the next
    pipeline run; through the checked ONNX export when there is one (embeddings.embed_facts_now).
The write stands whatever happens here: a side effect that fails is reported in the result
(`side_effects`, one line) and logged. A fact left without a vector is embedded by the pipeline's next
embeddings run (layers.tool_facts_without_vectors: taken along with every partition's facts).
"""

from __future__ import annotations

import logging
from itertools import combinations
from typing import Any

from nexus_memory.core.stores import Stores
from nexus_memory.core.textcheck import one_line
from nexus_memory.identity import store as identity

log = logging.getLogger(__name__)

NAME_OVERLAP_CONFIDENCE = 0.5  # a shared name part is a lead for a person to check, not evidence
MAX_CANDIDATES_PER_ENTITY = 5


def last_entity_rowid(stores: Stores) -> int:
    """The newest entity's rowid: entities a write creates come after it."""
    return stores.conn.execute("SELECT coalesce(max(rowid), 0) FROM entities").fetchone()[0]


def fact_side_effects(
    stores: Stores, fact_id: str, entities_before: int, embedder: Any | None = None
) -> dict[str, Any]:
    """Co-occurrences, merge candidates for entities created after rowid `entities_before`, and the vector.

    Never raises. `embedder` None: the index's model (see _embed)."""
    effects: dict[str, Any] = {}
    try:
        with stores.transaction():
            effects["cooccurrences"] = _count_cooccurrences(stores, fact_id)
            effects["merge_candidates"] = _propose_name_overlaps(stores, fact_id, entities_before)
    except Exception as exc:  # the fact is stored; only the bookkeeping is missing
        log.exception("side effects of fact %s failed", fact_id)
        effects["error"] = one_line(f"{type(exc).__name__}: {exc}")
    effects.update(_embed(stores, fact_id, embedder))
    return effects


def _count_cooccurrences(stores: Stores, fact_id: str) -> int:
    conn = stores.conn
    as_of, entity_ids = _fact_entities(stores, fact_id)
    pairs = list(combinations(sorted(entity_ids), 2))
    for a, b in pairs:
        identity.count_cooccurrence(conn, a, b, as_of)
    return len(pairs)


def _fact_entities(stores: Stores, fact_id: str) -> tuple[int, list[str]]:
    rows = stores.conn.execute(
        "SELECT f.as_of, fe.entity_id FROM facts f JOIN fact_entities fe ON fe.fact_id = f.id WHERE f.id = ?",
        (fact_id,),
    ).fetchall()
    return (rows[0][0] if rows else 0), [r[1] for r in rows]


def _propose_name_overlaps(stores: Stores, fact_id: str, last_entity_rowid: int) -> list[dict[str, Any]]:
    """Merge candidates between each entity this write created and known entities sharing name parts."""
    conn = stores.conn
    created = conn.execute(
        """SELECT n.id, n.name, n.normalized FROM fact_entities fe JOIN entities n ON n.id = fe.entity_id
           WHERE fe.fact_id = ? AND n.rowid > ? AND n.merged_into IS NULL""",
        (fact_id, last_entity_rowid),
    ).fetchall()
    proposed: list[dict[str, Any]] = []
    for new_id, new_name, normalized in created:
        for other_id, other_name in name_overlaps(conn, new_id, normalized):
            reason = f"the name {new_name!r} (written by an agent tool) and {other_name!r} share their words"
            outcome = identity.propose_merge(conn, other_id, new_id, NAME_OVERLAP_CONFIDENCE, reason)
            proposed.append({"candidate_id": outcome.get("candidate_id"), "entity": new_name, "similar_to": other_name})
    return proposed


def name_overlaps(conn: Any, entity_id: str, normalized: str) -> list[tuple[str, str]]:
    """Live entities (id, matching name) with a name or alias whose words contain this name's words,
    or are contained in them ('Sarah' and 'Sarah Chen'), most mentioned first."""
    words = normalized.split()
    if not words or len("".join(words)) < 3:
        return []
    mine = set(words)
    has_a_word = " OR ".join(["instr(' ' || names.normalized || ' ', ?) > 0"] * len(words))
    rows = conn.execute(
        f"""WITH names AS (SELECT id AS entity_id, name, normalized FROM entities
                           UNION ALL SELECT entity_id, alias, normalized FROM aliases)
            SELECT e.id, names.name, names.normalized FROM names JOIN entities e ON e.id = names.entity_id
            WHERE e.merged_into IS NULL AND e.id != ? AND ({has_a_word})
            ORDER BY e.mention_count DESC, e.id LIMIT 200""",
        [entity_id, *(f" {w} " for w in words)],
    ).fetchall()
    found: dict[str, str] = {}
    for other_id, other_name, other_normalized in rows:
        theirs = set(other_normalized.split())
        if (mine < theirs or theirs < mine) and len("".join(mine & theirs)) >= 3:
            found.setdefault(other_id, other_name)
    return list(found.items())[:MAX_CANDIDATES_PER_ENTITY]


def _embed(stores: Stores, fact_id: str, embedder: Any | None) -> dict[str, Any]:
    """Embed the fact with the index's model (the configured one for a store without an index yet)."""
    from nexus_memory.embeddings.model import get_embedder
    from nexus_memory.embeddings.step import embed_facts_now
    from nexus_memory.embeddings.vectors.vec0 import index_state

    try:
        if embedder is None:
            state = index_state(stores.conn)
            embedder = get_embedder(state[0] if state else None, settings=stores.settings)
        return {"embedded": embed_facts_now(stores, embedder, [fact_id]).rows}
    except Exception as exc:  # recall still finds the fact by keyword and entity; the next run embeds it
        log.warning("fact %s not embedded: %s: %s", fact_id, type(exc).__name__, exc)
        reason = f"{type(exc).__name__}: {exc}; the fact is stored, found by keyword until the pipeline embeds it"
        return {"embedded": 0, "embedding_error": one_line(reason)}
